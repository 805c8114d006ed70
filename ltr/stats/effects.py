"""Effect sizes and win/tie/loss counts of two systems paired by query.

With ``d_i = a_i − b_i`` over the ``n`` queries both systems scored:

* mean difference ``d̄ = mean(a) − mean(b)`` (in metric units — the number to lead with);
* paired Cohen's d (often called d_z) ``= d̄ / s_d``, ``s_d`` the sample sd of the differences (ddof 1);
  all differences equal → ``0`` if they are all zero, ``±inf`` otherwise;
* wins / ties / losses: ``d_i > τ``, ``|d_i| ≤ τ``, ``d_i < −τ`` for a tie tolerance ``τ ≥ 0``.

>>> e = effect_size([0.5, 0.7, 0.4, 0.9], [0.4, 0.7, 0.5, 0.6])
>>> round(e.mean_diff, 4), round(e.cohens_d, 4), e.n
(0.075, 0.4392, 4)
>>> win_tie_loss([0.5, 0.7, 0.4, 0.9], [0.4, 0.7, 0.5, 0.6])
WinTieLoss(wins=2, ties=1, losses=1)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ltr.stats._validate import NanPolicy, check_tolerance, need, paired_diffs


@dataclass(frozen=True, slots=True)
class EffectSize:
    """``mean_diff = mean(a − b)``, ``cohens_d = mean_diff / sd(a − b, ddof=1)``, ``n`` pairs used."""

    mean_diff: float
    cohens_d: float
    n: int


@dataclass(frozen=True, slots=True)
class WinTieLoss:
    """Queries where ``a`` beats ``b`` by more than the tolerance, is within it, or loses by more."""

    wins: int
    ties: int
    losses: int


def effect_size(a: ArrayLike, b: ArrayLike, *, nan_policy: NanPolicy = "omit") -> EffectSize:
    """Mean difference and paired Cohen's d of ``a`` over ``b`` (see the module docstring).

    >>> e = effect_size([0.2, 0.5, 0.9], [0.1, 0.5, 0.6])   # d = 0.1, 0, 0.3: mean 0.1333, sd 0.1528
    >>> round(e.mean_diff, 4), round(e.cohens_d, 4)
    (0.1333, 0.8729)
    """
    d = paired_diffs(a, b, nan_policy)
    need(d.shape[0], 2, "a paired effect size")
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd > 0.0:
        return EffectSize(mean, mean / sd, d.shape[0])
    cohens_d = 0.0 if mean == 0.0 else float(np.copysign(np.inf, mean))
    return EffectSize(mean, cohens_d, d.shape[0])


def win_tie_loss(
    a: ArrayLike, b: ArrayLike, *, tie_tolerance: float = 0.0, nan_policy: NanPolicy = "omit"
) -> WinTieLoss:
    """Counts of queries where ``a − b > τ`` (win), ``|a − b| ≤ τ`` (tie), ``a − b < −τ`` (loss).

    >>> win_tie_loss([0.2, 0.5, 0.9, 0.3], [0.1, 0.5, 0.6, 0.31], tie_tolerance=0.05)
    WinTieLoss(wins=2, ties=2, losses=0)
    """
    tie_tolerance = check_tolerance(tie_tolerance)
    d = paired_diffs(a, b, nan_policy)
    wins = int(np.count_nonzero(d > tie_tolerance))
    losses = int(np.count_nonzero(d < -tie_tolerance))
    return WinTieLoss(wins, d.shape[0] - wins - losses, losses)

"""Risk-sensitive comparison: does a system that wins on average hurt some queries badly?

Per query i of c, with the system's value r_i and the baseline's b_i (higher is better), δ_i = r_i − b_i.
A loss weighs (1 + α) times a win of the same size:

* **URisk** (Wang, Bennett & Collins-Thompson, SIGIR 2012; the TREC Web track's risk measure):
  z_i = δ_i if δ_i ≥ 0 else (1 + α)·δ_i, URisk_α = (1/c)·Σ_i z_i. α = 0 is the mean difference; URisk < 0:
  the losses (weighted) outweigh the wins.
* **TRisk** (Dinçer, Macdonald & Ounis, SIGIR 2014): URisk's t-statistic, TRisk_α = URisk_α / SE(z),
  SE(z) = sd(z)/√c (sample sd, ddof 1); under H0 (no risk-adjusted difference) Student's t with c − 1 df:
  TRisk < −2 says the system is significantly riskier than the baseline, > 2 significantly safer-and-better.
  :func:`trisk` returns it with its two-sided p-value (the same as ``scipy.stats.ttest_1samp(z, 0)``).
* **GeoRisk** (Dinçer, Macdonald & Ounis, SIGIR 2016), against all m systems at once rather than one
  baseline. With x_ij ≥ 0 the value of system j on query i, S_j = Σ_i x_ij, T_i = Σ_j x_ij, N = Σ_ij x_ij,
  the expected value e_ij = S_j·T_i/N and z_ij = (x_ij − e_ij)/√e_ij (0 where e_ij = 0):
  ZRisk_α(j) = Σ_i [z_ij if z_ij ≥ 0 else (1 + α)·z_ij] and GeoRisk_α(j) = √(S_j/c · Φ(ZRisk_α(j)/c)),
  Φ the standard normal CDF. The geometric mean of effectiveness (S_j/c, the mean) and of how consistently
  the system does as well as the query's difficulty predicts; higher is better.

A worked example (α = 1): r = (0.5, 0.3, 0.8, 0.2), b = (0.4, 0.5, 0.6, 0.2): δ = (0.1, −0.2, 0.2, 0),
z = (0.1, −0.4, 0.2, 0), URisk = −0.1/4 = −0.025 though the mean difference is +0.025;
sd(z) = √(0.2075/3) = 0.26300, TRisk = −0.025 / (0.26300/2) = −0.1901.

>>> r, b = [0.5, 0.3, 0.8, 0.2], [0.4, 0.5, 0.6, 0.2]
>>> round(urisk(r, b, alpha=1.0), 6), round(urisk(r, b, alpha=0.0), 6)
(-0.025, 0.025)
>>> t = trisk(r, b, alpha=1.0)
>>> round(t.statistic, 4), t.df
(-0.1901, 3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ltr.core.errors import ConfigError, DataError

#: the largest α: a loss weighing a million times a win is already a pure count of losses, and beyond it the
#: risk-adjusted differences lose their precision in float64
MAX_ALPHA = 1e6


def check_alpha(alpha: object) -> float:
    """The risk weight α: a number in [0, 10⁶] (a loss counts 1 + α times).

    >>> check_alpha(1)
    1.0
    """
    if (
        isinstance(alpha, bool) or not isinstance(alpha, int | float) or not math.isfinite(alpha)
        or not 0 <= alpha <= MAX_ALPHA
    ):  # fmt: skip
        raise ConfigError(
            f"risk_alpha must be a number in [0, {MAX_ALPHA:.0e}] (a loss weighs 1 + alpha), got {alpha!r}"
        )
    return float(alpha)


def _paired(system: ArrayLike, baseline: ArrayLike) -> np.ndarray:
    r = np.asarray(system, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if r.ndim != 1 or r.shape != b.shape:
        raise DataError(
            f"risk: system and baseline need one value per query each, got {r.shape} and {b.shape}"
        )
    if r.size == 0 or not (np.isfinite(r).all() and np.isfinite(b).all()):
        raise DataError(
            "risk: every query needs a finite value for both systems (drop skipped queries first)"
        )
    return r - b


def risk_adjusted(system: ArrayLike, baseline: ArrayLike, *, alpha: float = 1.0) -> np.ndarray:
    """z_i: the per-query difference, a loss multiplied by 1 + α.

    >>> risk_adjusted([0.5, 0.3], [0.4, 0.5], alpha=1.0).round(6).tolist()
    [0.1, -0.4]
    """
    delta = _paired(system, baseline)
    return np.where(delta >= 0, delta, (1.0 + check_alpha(alpha)) * delta)


def urisk(system: ArrayLike, baseline: ArrayLike, *, alpha: float = 1.0) -> float:
    """URisk_α = mean of :func:`risk_adjusted` (module docstring)."""
    return float(risk_adjusted(system, baseline, alpha=alpha).mean())


@dataclass(frozen=True)
class RiskTest:
    """TRisk: URisk's t-statistic, its degrees of freedom and two-sided p-value."""

    urisk: float
    statistic: float
    df: int
    pvalue: float


def trisk(system: ArrayLike, baseline: ArrayLike, *, alpha: float = 1.0) -> RiskTest:
    """TRisk_α = URisk_α / (sd(z)/√c), Student's t on c − 1 df (module docstring). Every z equal (no
    spread): the statistic is ±inf with p = 0 when URisk ≠ 0, NaN with p = 1 when it is 0."""
    from scipy.stats import t as student  # deferred: scipy.stats loads in ~0.5 s

    z = risk_adjusted(system, baseline, alpha=alpha)
    c = z.size
    if c < 2:
        raise DataError(f"TRisk needs at least 2 queries, got {c}")
    mean = float(z.mean())
    se = float(z.std(ddof=1)) / math.sqrt(c)
    if se == 0.0:
        return RiskTest(
            mean, math.copysign(math.inf, mean) if mean else math.nan, c - 1, 0.0 if mean else 1.0
        )
    statistic = mean / se
    return RiskTest(mean, statistic, c - 1, float(2.0 * student.sf(abs(statistic), c - 1)))


def georisk(values: ArrayLike, *, alpha: float = 1.0) -> np.ndarray:
    """GeoRisk_α of each system (a column of ``values``: queries × systems, values ≥ 0), module docstring.

    >>> georisk([[0.5, 0.4], [0.3, 0.5], [0.8, 0.6], [0.2, 0.2]], alpha=1.0).round(4).tolist()
    [0.4636, 0.4557]
    """
    from scipy.stats import norm  # deferred: scipy.stats loads in ~0.5 s

    alpha = check_alpha(alpha)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] < 2:
        raise DataError(
            f"GeoRisk needs a queries × systems table with at least 2 systems, got shape {x.shape}"
        )
    if not np.isfinite(x).all() or (x < 0).any():
        raise DataError(
            "GeoRisk needs finite values >= 0 (a metric like NDCG or AP) for every query and system"
        )
    c = x.shape[0]
    s, t, n = x.sum(axis=0), x.sum(axis=1), x.sum()
    if n == 0:
        return np.zeros(x.shape[1])
    e = np.outer(t, s) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(e > 0, (x - e) / np.sqrt(e), 0.0)
    zrisk = np.where(z >= 0, z, (1.0 + alpha) * z).sum(axis=0)
    return np.sqrt(s / c * norm.cdf(zrisk / c))

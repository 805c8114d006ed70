"""Power and sample size for comparing two systems' mean metric, two-sided, normal approximation.

For a true difference ``Δ`` at level ``α`` with power ``1 − β``, ``z_{α/2} = Φ⁻¹(1 − α/2)``,
``z_β = Φ⁻¹(1 − β)``:

* unpaired (two independent query samples of ``n`` each, per-query sd ``σ``):
  ``n = 2σ²(z_{α/2} + z_β)² / Δ²``;
* paired (the same ``n`` queries, sd of the per-query differences ``σ_d``):
  ``n = σ_d²(z_{α/2} + z_β)² / Δ²``.

Both round up; they neglect the chance of rejecting in the wrong direction (``Φ(−Δ/se − z_{α/2})``,
below 1e-5 for power ≥ 0.8 at α = 0.05), so :func:`achieved_power` of the result is ≥ the target. Example (docs/statistics.md): ``σ = 0.15, Δ = 0.01, α = 0.05``, power 0.8 →
``2·0.0225·(1.95996 + 0.84162)²/0.0001 = 3531.9`` → 3,532 queries (unpaired).

Achieved power for a given ``n`` with standard error ``se = σ√(2/n)`` (unpaired) or ``σ_d/√n`` (paired):
``normal``: ``Φ(|Δ|/se − z_{α/2}) + Φ(−|Δ|/se − z_{α/2})``; ``t``: the exact power of the t-test from the
noncentral t distribution (``df = n − 1`` paired, ``2n − 2`` unpaired, noncentrality ``Δ/se``), and
:func:`queries_needed` with ``method='t'`` returns the smallest ``n`` whose t-power reaches the target.

>>> queries_needed(0.01, 0.15)
3532
>>> round(achieved_power(3532, 0.01, 0.15), 4)
0.8
"""

from __future__ import annotations

import math
from typing import Literal

from scipy import special

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError
from ltr.stats._validate import check_choice, check_flag, check_level

PowerMethod = Literal["normal", "t"]


_POSITIVE = Constraint(low=0.0, open_low=True)


def _effect_size(delta: object) -> float:
    """``|delta|``: the difference to detect, a finite number other than 0 (its sign does not matter)."""
    size = abs(check_value(delta, float, None, "delta"))
    if size == 0.0:
        raise ConfigError(f"delta: must be a finite number other than 0, got {delta!r}")
    return size


def _standard_error(n: int, sigma: float, paired: bool) -> float:
    return sigma / math.sqrt(n) if paired else sigma * math.sqrt(2.0 / n)


def achieved_power(
    n: int,
    delta: float,
    sigma: float,
    *,
    alpha: float = 0.05,
    paired: bool = False,
    method: PowerMethod = "normal",
) -> float:
    """Probability that a two-sided test at ``alpha`` detects a true difference ``delta`` with ``n`` queries.

    ``sigma`` is the per-query sd (unpaired; ``n`` queries per system) or the sd of the per-query
    differences (``paired=True``). See the module docstring for both methods.

    >>> round(achieved_power(1766, 0.01, 0.15, paired=True), 4)
    0.8
    >>> round(achieved_power(30, 0.05, 0.08, paired=True, method="t"), 4)   # noncentral t, df 29
    0.9112
    """
    check_choice("method", method, ("normal", "t"))
    check_flag("paired", paired)
    alpha = check_level("alpha", alpha)
    delta = _effect_size(delta)
    sigma = check_value(sigma, float, _POSITIVE, "sigma")
    n = check_value(n, int, Constraint(low=2), "n")
    ncp = delta / _standard_error(n, sigma, paired)
    if method == "normal":
        z = -special.ndtri(alpha / 2.0)
        return float(special.ndtr(ncp - z) + special.ndtr(-ncp - z))
    df = n - 1 if paired else 2 * n - 2
    from scipy import stats  # deferred: scipy.stats loads in ~0.5 s (and `import ltr.train` with it)

    crit = stats.t.isf(alpha / 2.0, df)
    return float(stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp))


def queries_needed(
    delta: float,
    sigma: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    paired: bool = False,
    method: PowerMethod = "normal",
) -> int:
    """Queries needed to detect ``delta`` at two-sided ``alpha`` with probability ``power``.

    ``normal``: the closed forms in the module docstring, rounded up (per system when unpaired).
    ``t``: the smallest ``n`` with :func:`achieved_power` (``method='t'``) ≥ ``power``.

    >>> queries_needed(0.01, 0.15, paired=True)
    1766
    """
    check_choice("method", method, ("normal", "t"))
    check_flag("paired", paired)
    alpha = check_level("alpha", alpha)
    power = check_level("power", power)
    delta = _effect_size(delta)
    sigma = check_value(sigma, float, _POSITIVE, "sigma")
    z = -special.ndtri(alpha / 2.0) + special.ndtri(power)
    factor = 1.0 if paired else 2.0
    n = max(2, math.ceil(factor * sigma**2 * z**2 / delta**2))
    if method == "normal":
        return n
    while achieved_power(n, delta, sigma, alpha=alpha, paired=paired, method="t") < power:
        n += 1
    return n

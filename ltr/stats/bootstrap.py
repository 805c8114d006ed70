"""Bootstrap confidence intervals over queries for a mean and for a paired difference of means.

The statistic is the (optionally weighted) mean of per-query values, ``θ = Σ w_i x_i / Σ w_i``.
``B`` resamples of the queries are drawn with replacement (compiled kernel, memory O(B), seeded from a
:class:`numpy.random.Generator`), giving replicates ``θ*_1..θ*_B``. With ``α = 1 − confidence``:

* **percentile**: ``[q(α/2), q(1 − α/2)]``, ``q`` = linear-interpolated quantile of the ``θ*``.
* **BCa** (Efron 1987; Efron & Tibshirani 1993 §14.3): ``[q(α₁), q(α₂)]`` with
  ``α₁,₂ = Φ(z₀ + (z₀ + z)/(1 − a(z₀ + z)))`` for ``z = Φ⁻¹(α/2), Φ⁻¹(1 − α/2)``; bias correction
  ``z₀ = Φ⁻¹((#{θ* < θ} + #{θ* ≤ θ}) / 2B)``; acceleration from the jackknife values ``θ₍ᵢ₎`` (exact
  leave-one-out means, O(n)): ``a = Σ(θ̄ − θ₍ᵢ₎)³ / (6 [Σ(θ̄ − θ₍ᵢ₎)²]^{3/2})``. This is the same
  recipe as :func:`scipy.stats.bootstrap`.

A paired difference ``mean(a) − mean(b)`` resamples queries, i.e. pairs: its replicates are those of
the mean of ``d = a − b``, so :func:`paired_bootstrap_ci` is :func:`bootstrap_ci` over ``d``.

Degenerate inputs: fewer than 2 usable values raise :class:`~ltr.core.errors.DataError`; when every value is
equal the bootstrap distribution is a point mass and the interval is ``[θ, θ]`` (``degenerate=True``).

>>> import numpy as np
>>> r = bootstrap_ci(np.array([0.2, 0.5, 0.4, 0.9, 0.7, 0.3]), B=2000, seed=1)
>>> r.method, r.B, r.seed, round(r.estimate, 4), r.low < r.estimate < r.high
('bca', 2000, 1, 0.5, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtr, ndtri

from ltr.core.errors import DataError
from ltr.stats import _kernels
from ltr.stats._validate import (
    NanPolicy,
    Seed,
    as_values,
    check_B,
    check_choice,
    check_level,
    drop_nan,
    make_rng,
    need,
    raw_diffs,
)

CIMethod = Literal["bca", "percentile"]
CI_METHODS: tuple[str, ...] = get_args(CIMethod)


@dataclass(frozen=True, slots=True)
class BootstrapResult:
    """A bootstrap confidence interval: ``estimate`` (mean on the data), ``[low, high]``, and how it was made.

    ``seed`` is the int seed used (``None`` when a Generator was passed); ``n`` the number of queries used.
    """

    estimate: float
    low: float
    high: float
    method: CIMethod
    B: int
    seed: int | None
    confidence: float
    n: int
    degenerate: bool = False


def bootstrap_replicates(
    values: np.ndarray, *, weights: np.ndarray | None = None, B: int = 10_000, seed: Seed = 0
) -> np.ndarray:
    """``B`` bootstrap replicates of the (weighted) mean of ``values`` (float64, no NaN, checked by caller)."""
    rng, _ = make_rng(seed)
    out = np.empty(check_B(B), dtype=np.float64)
    w = np.empty(0) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    _kernels.bootstrap_sums(np.ascontiguousarray(values), w, _kernels.draw_seeds(rng, out.shape[0]), out)
    return out


def _jackknife_acceleration(values: np.ndarray, weights: np.ndarray | None) -> float:
    """BCa acceleration ``a`` from exact leave-one-out (weighted) means."""
    n = values.shape[0]
    if weights is None:
        loo = (values.sum() - values) / (n - 1)
    else:
        loo = ((weights * values).sum() - weights * values) / (weights.sum() - weights)
    u = loo.mean() - loo
    den = np.sum(u**2)
    if den == 0.0:
        return 0.0
    return float(np.sum(u**3) / (6.0 * den**1.5))


def interval_from_replicates(
    replicates: np.ndarray,
    estimate: float,
    *,
    method: CIMethod,
    confidence: float,
    acceleration: float = 0.0,
) -> tuple[float, float]:
    """Percentile or BCa interval from replicates ``θ*`` around ``estimate`` (see the module docstring)."""
    alpha = 1.0 - confidence
    if method == "percentile":
        probs = np.array([alpha / 2.0, 1.0 - alpha / 2.0])
    else:
        B = replicates.shape[0]
        share = (np.count_nonzero(replicates < estimate) + np.count_nonzero(replicates <= estimate)) / (
            2.0 * B
        )
        z0 = ndtri(share)
        if not np.isfinite(z0):
            raise DataError(
                f"BCa interval undefined: the estimate {estimate!r} lies outside all {B} bootstrap replicates "
                "(too few distinct values or resamples); use method='percentile'"
            )
        z = np.array([ndtri(alpha / 2.0), -ndtri(alpha / 2.0)])
        num = z0 + z
        probs = ndtr(z0 + num / (1.0 - acceleration * num))
    low, high = np.quantile(replicates, probs)
    return float(low), float(high)


def bootstrap_ci(
    values: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    method: CIMethod = "bca",
    B: int = 10_000,
    confidence: float = 0.95,
    seed: Seed = 0,
    nan_policy: NanPolicy = "omit",
) -> BootstrapResult:
    """Bootstrap CI of the (weighted) mean of per-query ``values``; NaN (skipped queries) dropped by default.

    ``weights`` (one positive weight per query) turn the statistic into ``Σ w x / Σ w``; queries are
    still resampled uniformly. See the module docstring for the percentile and BCa formulas.

    >>> r = bootstrap_ci([0.1, 0.4, 0.35, 0.8, float("nan")], method="percentile", B=1000, seed=3)
    >>> r.n, round(r.estimate, 4), r.low <= r.estimate <= r.high
    (4, 0.4125, True)
    """
    check_choice("method", method, CI_METHODS)
    confidence = check_level("confidence", confidence)
    B = check_B(B)
    x = as_values(values, "values")
    w: np.ndarray | None = None
    if weights is not None:
        w = as_values(weights, "weights")
        if w.shape != x.shape:
            raise DataError(f"weights: expected {x.shape[0]} weights (one per query), got {w.shape[0]}")
        if np.isnan(w).any() or (w <= 0).any():
            bad = int(np.flatnonzero(~(w > 0))[0])
            raise DataError(f"weights: every weight must be > 0; query position {bad} has {w[bad]}")
        keep = ~np.isnan(x)
        x = drop_nan(x, "values", nan_policy)
        w = w[keep]
    else:
        x = drop_nan(x, "values", nan_policy)
    return _bootstrap_clean(x, w, method=method, B=B, confidence=confidence, seed=seed)


def _bootstrap_clean(
    x: np.ndarray, w: np.ndarray | None, *, method: CIMethod, B: int, confidence: float, seed: Seed
) -> BootstrapResult:
    need(x.shape[0], 2, "a bootstrap confidence interval")
    rng, seed_used = make_rng(seed)
    estimate = float(np.mean(x) if w is None else np.sum(w * x) / np.sum(w))
    if np.all(x == x[0]):
        return BootstrapResult(
            estimate, estimate, estimate, method, B, seed_used, confidence, x.shape[0], True
        )
    reps = bootstrap_replicates(x, weights=w, B=B, seed=rng)
    accel = _jackknife_acceleration(x, w) if method == "bca" else 0.0
    low, high = interval_from_replicates(
        reps, estimate, method=method, confidence=confidence, acceleration=accel
    )
    return BootstrapResult(estimate, low, high, method, B, seed_used, confidence, x.shape[0])


def paired_bootstrap_ci(
    a: ArrayLike,
    b: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    method: CIMethod = "bca",
    B: int = 10_000,
    confidence: float = 0.95,
    seed: Seed = 0,
    nan_policy: NanPolicy = "omit",
) -> BootstrapResult:
    """Bootstrap CI of ``mean(a) − mean(b)`` over paired queries (pairs with a NaN on either side dropped).

    >>> a = [0.50, 0.62, 0.40, 0.71, 0.55, 0.48]
    >>> b = [0.45, 0.60, 0.41, 0.60, 0.50, 0.40]
    >>> r = paired_bootstrap_ci(a, b, B=2000, seed=0)
    >>> round(r.estimate, 4), r.low < r.estimate < r.high
    (0.05, True)
    """
    d = raw_diffs(a, b)
    return bootstrap_ci(
        d, weights=weights, method=method, B=B, confidence=confidence, seed=seed, nan_policy=nan_policy
    )

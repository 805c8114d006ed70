"""Paired two-sided tests of "system A and system B have the same mean per-query score".

All take per-query values of two systems on the same queries (``a``, ``b``; pairs with a NaN on either
side are dropped under the default ``nan_policy='omit'``) and work on the differences ``d = a − b``.

* :func:`paired_t_test` — ``t = d̄ / (s_d / √n)``, ``s_d`` the sample sd (ddof 1), ``p = 2·T_{n−1}(−|t|)``;
  identical to :func:`scipy.stats.ttest_rel`, except: all ``d = 0`` gives ``t = NaN, p = 1`` (scipy:
  NaN, NaN) and ``n < 2`` raises (scipy: NaN).
* :func:`randomization_test` — paired sign-flip test of ``d̄``: under H0 each ``d_i`` is as likely to have
  had the other sign. Exact when ``n ≤ 20`` (all ``2ⁿ`` sign vectors; ``p`` = exact proportion with
  ``|T*| ≥ |T|``), else ``B`` seeded random sign vectors and ``p = (b + 1)/(B + 1)``.
* :func:`wilcoxon_test` and :func:`sign_test` — for compatibility with older papers only: they test
  medians/signs, not the mean difference a metric average reports, and are poorly calibrated for it.

>>> a = [0.52, 0.61, 0.40, 0.73, 0.55, 0.48, 0.66, 0.59]
>>> b = [0.50, 0.55, 0.41, 0.62, 0.50, 0.40, 0.60, 0.61]
>>> r = paired_t_test(a, b)
>>> r.n, round(r.statistic, 4), round(r.pvalue, 4)
(8, 2.7882, 0.027)
>>> randomization_test(a, b).exact, round(randomization_test(a, b).pvalue, 4)
(True, 0.0469)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from ltr.core.errors import ConfigError
from ltr.stats import _kernels
from ltr.stats._validate import (
    NanPolicy,
    Seed,
    check_B,
    check_choice,
    check_flag,
    check_tolerance,
    make_rng,
    need,
    paired_diffs,
)

EXACT_MAX_N = 20

#: the paired tests a comparison can apply per measure (``ltr.analysis.comparison``, ``eval.compare.test``)
PairedTest = Literal["randomization", "t"]
PAIRED_TESTS: tuple[str, ...] = get_args(PairedTest)


@dataclass(frozen=True, slots=True)
class TestResult:
    """Outcome of a paired two-sided test.

    ``statistic`` is the test's own statistic (t; mean difference; Wilcoxon's min(R+, R−); number of
    positive differences), ``n`` the number of query pairs used, ``exact`` whether ``pvalue`` is an exact
    proportion/distribution value rather than a Monte-Carlo estimate or an asymptotic approximation.
    ``B``/``seed`` are set for Monte-Carlo tests only.
    """

    __test__ = False  # not a pytest class

    test: str
    statistic: float
    pvalue: float
    n: int
    exact: bool
    df: int | None = None
    B: int | None = None
    seed: int | None = None


def paired_t_test(a: ArrayLike, b: ArrayLike, *, nan_policy: NanPolicy = "omit") -> TestResult:
    """Paired two-sided t-test: ``t = mean(d) / sqrt(var(d, ddof=1) / n)``, ``p = 2·stdtr(n−1, −|t|)``.

    Computes exactly what :func:`scipy.stats.ttest_rel` computes (same operations, same special
    function). Deviations, by design: every ``d`` zero → ``t = NaN``, ``p = 1.0`` (no observed difference);
    fewer than 2 pairs → :class:`~ltr.core.errors.DataError`. Constant non-zero ``d`` gives ``t = ±inf, p = 0``
    like scipy.

    >>> a = [0.52, 0.61, 0.40, 0.73, 0.55, 0.48, 0.66, 0.59]
    >>> b = [0.50, 0.55, 0.41, 0.62, 0.50, 0.40, 0.60, 0.61]
    >>> r = paired_t_test(a, b)   # scipy.stats.ttest_rel(a, b): t = 2.78823, p = 0.0269767
    >>> round(r.statistic, 5), round(r.pvalue, 7), r.df
    (2.78823, 0.0269767, 7)
    """
    d = paired_diffs(a, b, nan_policy)
    n = d.shape[0]
    need(n, 2, "a paired t-test")
    mean = np.mean(d)
    var = np.mean((d - mean) ** 2) * (n / (n - 1.0))
    if mean == 0.0 and var == 0.0:
        return TestResult("t", float("nan"), 1.0, n, False, df=n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.divide(mean, np.sqrt(var / n)))
    p = float(2.0 * special.stdtr(n - 1.0, -abs(t)))
    return TestResult("t", t, p, n, False, df=n - 1)


def _tolerance(d: np.ndarray) -> float:
    """Slack for comparing resampled sums with the observed one: covers float rounding of a sum of n terms."""
    return max(d.shape[0], 1) * np.finfo(np.float64).eps * float(np.abs(d).sum())


def sign_flip_null(d: np.ndarray) -> np.ndarray:
    """All ``2ⁿ`` sign-flip sums ``Σ s_i d_i`` (exact null distribution; ``n ≤ 26`` to bound memory)."""
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate([sums + value, sums - value])
    return sums


def randomization_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    B: int = 10_000,
    seed: Seed = 0,
    exact: bool | None = None,
    nan_policy: NanPolicy = "omit",
) -> TestResult:
    """Paired two-sided randomisation (sign-flip) test of the mean difference.

    Statistic ``T = Σ d_i`` (equivalently ``d̄``); null replicates ``T* = Σ s_i d_i`` with fair random signs.
    ``exact=None`` enumerates all ``2ⁿ`` sign vectors when ``n ≤ 20`` and reports the exact proportion
    ``p = #{|T*| ≥ |T|} / 2ⁿ``; otherwise it draws ``B`` sign vectors (seeded) and reports
    ``p = (b + 1) / (B + 1)`` with ``b = #{|T*| ≥ |T|}``, which is never 0 and is a valid p-value.
    Comparisons allow a relative slack of ``n·ε·Σ|d_i|`` for floating-point rounding.

    >>> a = [0.52, 0.61, 0.40, 0.73, 0.55, 0.48, 0.66, 0.59]
    >>> b = [0.50, 0.55, 0.41, 0.62, 0.50, 0.40, 0.60, 0.61]
    >>> randomization_test(a, b).pvalue   # exact: 12 of the 2**8 sign vectors are as extreme
    0.046875
    >>> r = randomization_test(a, b, exact=False, B=2000, seed=1)
    >>> r.exact, r.B, r.seed, round(r.pvalue * 2001) - 1   # b resamples as extreme: p = (b + 1)/(B + 1)
    (False, 2000, 1, 78)
    """
    d = paired_diffs(a, b, nan_policy)
    n = d.shape[0]
    need(n, 1, "a randomisation test")
    B = check_B(B)
    check_flag("exact", exact, allow_none=True)
    if exact is None:
        exact = n <= EXACT_MAX_N
    if exact and n > 26:
        raise ConfigError(
            f"exact=True enumerates 2**n sign vectors; n = {n} > 26 is too many (use exact=None)"
        )
    rng, seed_used = make_rng(seed)  # validated even when the exact path does not use it
    observed = abs(float(d.sum()))
    tol = _tolerance(d)
    if exact:
        null = sign_flip_null(d)
        pvalue = np.count_nonzero(np.abs(null) >= observed - tol) / null.shape[0]
        return TestResult("randomization", float(d.mean()), float(pvalue), n, True)
    null = np.empty(B)
    _kernels.sign_flip_sums(np.ascontiguousarray(d), _kernels.draw_seeds(rng, B), null)
    hits = np.count_nonzero(np.abs(null) >= observed - tol)
    return TestResult(
        "randomization", float(d.mean()), float((hits + 1.0) / (B + 1.0)), n, False, B=B, seed=seed_used
    )


def _wilcoxon_exact_pmf(n: int) -> np.ndarray:
    """Null pmf of the signed-rank sum R+ for ``n`` untied non-zero differences (subset sums of 1..n)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return counts / 2.0**n


def wilcoxon_test(
    a: ArrayLike, b: ArrayLike, *, method: str = "auto", nan_policy: NanPolicy = "omit"
) -> TestResult:
    """Wilcoxon signed-rank test (zeros dropped, Wilcoxon's convention) — for compatibility only.

    Ranks ``|d_i|`` (average ranks for ties), ``R+ = Σ_{d_i>0} rank_i``, statistic ``min(R+, R−)``.
    ``method='auto'`` (scipy's rule): exact null distribution when ``n ≤ 50`` and there are no ties or
    zeros; an exact sign-flip enumeration of the signed ranks when ``n ≤ 13`` otherwise; else the normal
    approximation ``z = (R+ − m(m+1)/4) / sqrt((m(m+1)(2m+1) − Σ(t³ − t)/2) / 24)`` (m non-zero
    differences, t tie-group sizes, no continuity correction). ``'exact'``/``'asymptotic'`` force one.
    It tests symmetry of ``d`` about 0, not a zero mean difference: poorly calibrated for comparing the
    mean of a metric; prefer :func:`randomization_test` or :func:`paired_t_test`.

    >>> a = [0.52, 0.61, 0.40, 0.73, 0.55, 0.48, 0.66, 0.59]
    >>> b = [0.50, 0.55, 0.41, 0.62, 0.50, 0.40, 0.60, 0.61]
    >>> r = wilcoxon_test(a, b)   # ties in |d|, n <= 13: exact sign-flip of the signed ranks (= scipy)
    >>> r.statistic, r.pvalue, r.exact
    (3.5, 0.046875, True)
    """
    check_choice("method", method, ("auto", "exact", "asymptotic"))
    d_all = paired_diffs(a, b, nan_policy)
    n_total = d_all.shape[0]
    d = d_all[d_all != 0]
    m = d.shape[0]
    need(m, 1, "a Wilcoxon signed-rank test (non-zero differences)")
    from scipy.stats import rankdata  # deferred: scipy.stats loads in ~0.5 s

    ranks = rankdata(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    _, tie_sizes = np.unique(np.abs(d), return_counts=True)
    ties = bool((tie_sizes > 1).any())
    zeros = m < n_total
    if method == "auto":
        if n_total > 50:
            method = "asymptotic"
        elif not (ties or zeros):
            method = "exact"
        elif n_total <= 13:
            method = "permutation"
        else:
            method = "asymptotic"
    statistic = min(r_plus, r_minus)
    if method == "exact":
        pmf = _wilcoxon_exact_pmf(m)
        sf = pmf[int(np.floor(r_plus)) :].sum()
        cdf = pmf[: int(np.ceil(r_plus)) + 1].sum()
        p = float(np.clip(2.0 * min(sf, cdf), 0.0, 1.0))
        return TestResult("wilcoxon", statistic, p, m, True)
    if method == "permutation":
        signed = np.where(d > 0, ranks, -ranks)
        null = sign_flip_null(signed)
        observed = abs(float(signed.sum()))
        p = np.count_nonzero(np.abs(null) >= observed - _tolerance(signed)) / null.shape[0]
        return TestResult("wilcoxon", statistic, float(p), m, True)
    mean = m * (m + 1) * 0.25
    var = (m * (m + 1.0) * (2.0 * m + 1.0) - np.sum(tie_sizes**3 - tie_sizes) / 2.0) / 24.0
    z = (r_plus - mean) / np.sqrt(var)
    return TestResult("wilcoxon", statistic, float(2.0 * special.ndtr(-abs(z))), m, False)


def sign_test(
    a: ArrayLike, b: ArrayLike, *, tie_tolerance: float = 0.0, nan_policy: NanPolicy = "omit"
) -> TestResult:
    """Two-sided sign test — for compatibility only: it ignores how large each difference is.

    Pairs with ``|d_i| ≤ tie_tolerance`` are ties and dropped; with ``k`` wins among ``m`` untied pairs,
    ``p = min(1, 2·P(X ≤ min(k, m − k)))``, ``X ~ Binomial(m, 1/2)`` (= :func:`scipy.stats.binomtest`).
    No untied pair gives ``p = 1`` (statistic 0, n 0). Statistic: ``k`` (number of wins of ``a``).

    >>> a = [0.52, 0.61, 0.40, 0.73, 0.55, 0.48, 0.66, 0.59]
    >>> b = [0.50, 0.55, 0.41, 0.62, 0.50, 0.40, 0.60, 0.61]
    >>> r = sign_test(a, b)   # 6 wins of 8: scipy.stats.binomtest(6, 8).pvalue = 0.2890625
    >>> r.statistic, r.n, r.pvalue
    (6.0, 8, 0.2890625)
    """
    tie_tolerance = check_tolerance(tie_tolerance)
    d = paired_diffs(a, b, nan_policy)
    untied = np.abs(d) > tie_tolerance
    m = int(untied.sum())
    k = int((d[untied] > 0).sum())
    if m == 0:
        return TestResult("sign", 0.0, 1.0, 0, True)
    from scipy.stats import binom  # deferred: scipy.stats loads in ~0.5 s

    p = min(1.0, 2.0 * float(binom.cdf(min(k, m - k), m, 0.5)))
    return TestResult("sign", float(k), p, m, True)

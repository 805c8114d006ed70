"""Paired tests (ltr.stats.paired) against scipy: ttest_rel, permutation_test, wilcoxon, binomtest."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ltr.core.errors import ConfigError, DataError
from ltr.stats import paired_t_test, randomization_test, sign_test, wilcoxon_test


def _pair(n: int, shift: float, seed: int, grid: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.beta(2, 3, n)
    b = np.clip(a + shift + rng.normal(0, 0.12, n), 0, 1)
    if grid is not None:  # metric-like values on a grid → ties and zero differences
        a, b = np.round(a / grid) * grid, np.round(b / grid) * grid
    return a, b


def _scipy_sign_flip(a: np.ndarray, b: np.ndarray, n_resamples: float, rng: int = 0) -> float:
    return stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=n_resamples,
        vectorized=True,
        rng=rng,
    ).pvalue


# ---- t-test -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "shift", "seed"), [(2, 0.1, 0), (5, 0.0, 1), (30, 0.02, 2), (7000, 0.003, 3)])
def test_t_test_equals_scipy_ttest_rel(n: int, shift: float, seed: int) -> None:
    a, b = _pair(n, shift, seed)
    ours, ref = paired_t_test(a, b), stats.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-14, abs=0)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-13, abs=1e-300)
    assert (ours.df, ours.n, ours.test) == (n - 1, n, "t")


def test_t_test_nan_pairs_dropped_like_scipy_omit() -> None:
    a, b = _pair(50, 0.01, 4)
    a[[2, 9]] = np.nan
    b[[9, 30]] = np.nan
    ours, ref = paired_t_test(a, b), stats.ttest_rel(a, b, nan_policy="omit")
    assert ours.n == 47 and int(ref.df) == 46
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-14)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-13)
    with pytest.raises(DataError, match="NaN"):
        paired_t_test(a, b, nan_policy="raise")


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")
def test_t_test_zero_variance_behaviour() -> None:
    a = np.array([0.2, 0.5, 0.7])
    ours, ref = paired_t_test(a + 0.1, a), stats.ttest_rel(a + 0.1, a)
    # constant non-zero differences: t = ±inf, p = 0 (as scipy). 0.1 is inexact, so compute d exactly:
    exact = paired_t_test(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0]))
    assert exact.statistic == np.inf and exact.pvalue == 0.0
    assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    same = paired_t_test(a, a)  # deliberate deviation: scipy gives (nan, nan)
    assert np.isnan(same.statistic) and same.pvalue == 1.0
    assert np.isnan(stats.ttest_rel(a, a).pvalue)
    with pytest.raises(DataError, match="at least 2"):
        paired_t_test([0.1], [0.2])
    with pytest.raises(DataError, match="same queries"):
        paired_t_test([0.1, 0.2], [0.2])


# ---- randomisation test -------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "grid"), [(2, None), (6, None), (12, 0.1), (15, None), (16, 0.05)])
def test_exact_randomization_equals_scipy_exact_permutation_test(n: int, grid: float | None) -> None:
    a, b = _pair(n, 0.04, n, grid)
    ours = randomization_test(a, b)
    ref = _scipy_sign_flip(a, b, np.inf)
    assert ours.exact and ours.B is None and ours.n == n
    assert ours.pvalue == pytest.approx(ref, rel=1e-12)
    assert ours.statistic == pytest.approx(np.mean(a - b))


@pytest.mark.parametrize(("n", "shift"), [(200, 0.0), (200, 0.02), (800, 0.008)])
def test_monte_carlo_randomization_matches_scipy_within_mc_error(n: int, shift: float) -> None:
    a, b = _pair(n, shift, 10 + n)
    ours = randomization_test(a, b, B=10_000, seed=3)
    ref = _scipy_sign_flip(a, b, 9_999, rng=5)
    assert not ours.exact and ours.B == 10_000 and ours.seed == 3
    sd = np.sqrt(2 * max(ref, 1e-3) * (1 - ref) / 10_000)
    assert ours.pvalue == pytest.approx(ref, abs=5 * sd + 2e-4)
    assert round(ours.pvalue * 10_001, 6) == round(ours.pvalue * 10_001)  # p = (b + 1) / (B + 1)


def test_monte_carlo_matches_exact_enumeration_just_above_threshold() -> None:
    a, b = _pair(22, 0.03, 99)
    exact = randomization_test(a, b, exact=True)
    mc = randomization_test(a, b, B=20_000, seed=1)
    assert exact.exact and not mc.exact
    assert mc.pvalue == pytest.approx(
        exact.pvalue, abs=5 * np.sqrt(exact.pvalue * (1 - exact.pvalue) / 20_000)
    )


def test_randomization_reproducible_never_zero_and_validated() -> None:
    a, b = _pair(500, 0.1, 1)
    r1, r2 = randomization_test(a, b, seed=9), randomization_test(a, b, seed=9)
    assert r1 == r2 and r1.pvalue == 1 / 10_001  # huge effect: no resample as extreme, p = 1/(B+1)
    a, b = _pair(500, 0.0, 2)
    assert randomization_test(a, b, seed=1).pvalue != randomization_test(a, b, seed=2).pvalue
    assert randomization_test(a, a).pvalue == 1.0
    with pytest.raises(ConfigError, match="26"):
        randomization_test(a, b, exact=True)
    with pytest.raises(ConfigError, match="B: must be in \\[1, inf\\], got 0"):
        randomization_test(a, b, B=0)
    with pytest.raises(ConfigError, match="exact: expected true or false, got 'yes'"):
        randomization_test(a, b, exact="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seed: must be in"):
        randomization_test(a, b, seed=-3)
    with pytest.raises(ConfigError, match="seed: must be in"):
        randomization_test(a[:5], b[:5], seed=-3)  # exact path (n <= 20) checks the seed too
    with pytest.raises(DataError, match="numeric"):
        randomization_test(["x", "y"], [0.1, 0.2])


def test_exact_randomization_equals_brute_force_enumeration_at_n_20() -> None:
    a, b = _pair(20, 0.03, 20, grid=0.02)
    d = a - b
    bits = np.unpackbits(np.arange(2**20, dtype=">u4").view(np.uint8).reshape(-1, 4), axis=1)[:, -20:]
    null = (1.0 - 2.0 * bits) @ d
    expected = np.mean(np.abs(null) >= abs(d.sum()) - 1e-12)
    assert randomization_test(a, b).pvalue == pytest.approx(expected, rel=1e-12)


def test_randomization_p_values_are_calibrated_under_h0() -> None:
    rng = np.random.default_rng(5)
    p = np.array(
        [randomization_test(rng.normal(0, 1, 40), np.zeros(40), B=999, seed=i).pvalue for i in range(2000)]
    )
    for level in (0.01, 0.05, 0.2):
        assert np.mean(p <= level) == pytest.approx(level, abs=4 * np.sqrt(level * (1 - level) / 2000))


# ---- Wilcoxon and sign test -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "grid", "kind"),
    [
        (30, None, "exact"),
        (50, None, "exact"),
        (200, None, "asymptotic"),
        (10, 0.1, "permutation"),
        (40, 0.1, "asymptotic"),
        (300, 0.05, "asymptotic"),
    ],
)
def test_wilcoxon_equals_scipy(n: int, grid: float | None, kind: str) -> None:
    a, b = _pair(n, 0.02, n, grid)
    ours, ref = wilcoxon_test(a, b), stats.wilcoxon(a, b)
    assert ours.statistic == ref.statistic
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    assert ours.exact == (kind != "asymptotic")
    if kind == "exact":
        forced = stats.wilcoxon(a, b, method="asymptotic")
        assert wilcoxon_test(a, b, method="asymptotic").pvalue == pytest.approx(forced.pvalue, rel=1e-10)


def test_wilcoxon_forced_exact_and_errors() -> None:
    a, b = _pair(60, 0.02, 3)
    assert wilcoxon_test(a, b, method="exact").pvalue == pytest.approx(
        stats.wilcoxon(a, b, method="exact").pvalue, rel=1e-10
    )
    with pytest.raises(DataError, match="non-zero"):
        wilcoxon_test([0.1, 0.2], [0.1, 0.2])
    with pytest.raises(ConfigError, match="method"):
        wilcoxon_test(a, b, method="pratt")


@pytest.mark.parametrize(("n", "tol"), [(15, 0.0), (200, 0.0), (200, 0.03), (1000, 0.01)])
def test_sign_test_equals_binomtest(n: int, tol: float) -> None:
    a, b = _pair(n, 0.01, n, grid=0.05)
    d = a - b
    k, m = int((d > tol).sum()), int((np.abs(d) > tol).sum())
    ours = sign_test(a, b, tie_tolerance=tol)
    assert (ours.statistic, ours.n) == (k, m)
    assert ours.pvalue == pytest.approx(stats.binomtest(k, m, 0.5).pvalue, rel=1e-12)


def test_sign_test_all_ties() -> None:
    r = sign_test([0.1, 0.2], [0.1, 0.2])
    assert (r.pvalue, r.n) == (1.0, 0)
    for bad in (-1.0, float("nan"), "0.1"):
        with pytest.raises(ConfigError, match="tie_tolerance"):
            sign_test([0.1], [0.2], tie_tolerance=bad)  # type: ignore[arg-type]


@pytest.mark.slow
def test_randomization_matches_ranx_fisher_within_mc_error() -> None:
    """ranx's Fisher randomisation test (p = b/B, numba prange over global-state RNG) agrees within MC error.

    Slow: ranx compiles its parallel kernel on first use (~30 s on this machine).
    """
    fisher = pytest.importorskip("ranx.statistical_tests.fisher_randomization_test").fisher_randomization_test
    a, b = _pair(300, 0.01, 31)
    ref, _ = fisher(a, b, 10_000, 0.05, 42)
    ours = randomization_test(b, a, B=10_000, seed=0).pvalue
    assert ours == pytest.approx(ref, abs=5 * np.sqrt(2 * ref * (1 - ref) / 10_000) + 2e-4)

"""Bootstrap CIs (ltr.stats.bootstrap) against scipy.stats.bootstrap, exact resampling laws and invariants."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr, ndtri
from scipy.stats import _resampling

from ltr.core.errors import ConfigError, DataError
from ltr.stats import bootstrap_ci, paired_bootstrap_ci
from ltr.stats.bootstrap import _jackknife_acceleration, bootstrap_replicates, interval_from_replicates


def _skewed(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).gamma(0.5, 0.3, size=n)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_matches_scipy_bootstrap_within_monte_carlo_error(method: str) -> None:
    x = _skewed(400)
    ours = bootstrap_ci(x, method=method, B=10_000, seed=1)
    ref = stats.bootstrap((x,), np.mean, n_resamples=10_000, method=method, rng=7, vectorized=True)
    se = ref.standard_error
    # each endpoint has Monte-Carlo sd ≈ 0.03·se at B = 10,000: 0.25·se is > 5 sd of the difference
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.25 * se)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.25 * se)
    assert ours.estimate == pytest.approx(x.mean(), rel=1e-15)


def test_bca_interval_equals_scipy_recipe_on_the_same_replicates() -> None:
    """Given identical replicates, our BCa endpoints equal scipy's (z0, jackknife acceleration, quantiles)."""
    x = _skewed(300, seed=3)
    reps = bootstrap_replicates(x, B=5000, seed=2)
    alpha_1, alpha_2, a_hat = _resampling._bca_interval(
        (x,), lambda s, axis=-1: np.mean(s, axis=axis), -1, 0.025, reps, None, np
    )
    ref = np.quantile(reps, [alpha_1, alpha_2])
    accel = _jackknife_acceleration(x, None)
    assert accel == pytest.approx(float(a_hat), rel=1e-9)
    low, high = interval_from_replicates(
        reps, float(x.mean()), method="bca", confidence=0.95, acceleration=accel
    )
    assert (low, high) == pytest.approx(tuple(ref), rel=1e-12)


def _scipy_bca_on(x: np.ndarray, replicates: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """scipy's BCa interval of the mean of ``x`` computed on the given replicates (its public
    ``bootstrap_result`` argument: a previous bootstrap distribution, here with no new resamples)."""
    previous = SimpleNamespace(bootstrap_distribution=replicates)
    ref = stats.bootstrap(
        (x,), np.mean, n_resamples=0, bootstrap_result=previous, method="BCa",
        confidence_level=confidence, vectorized=True,
    )  # fmt: skip
    return float(ref.confidence_interval.low), float(ref.confidence_interval.high)


@pytest.mark.parametrize(
    ("n", "p", "data_seed"), [(25, 0.4, 0), (25, 0.4, 4), (25, 0.2, 1), (40, 0.5, 2), (12, 0.6, 3)]
)
def test_bca_with_replicates_tied_to_the_estimate_equals_scipy_on_the_same_replicates(
    n: int, p: float, data_seed: int
) -> None:
    """A 0/1 metric on n queries: replicates are multiples of 1/n and ~17 % of them equal the estimate.

    Kills (ltr/stats/bootstrap.py ``interval_from_replicates``, z0): ties counted as below the estimate
    (``#{θ* <= θ} / B``) or above it (``#{θ* < θ} / B``) instead of half each; on the first case the latter
    moved the interval from [0.20, 0.56] to [0.16, 0.52]. Both sides use the replicates ``bootstrap_ci``
    drew (same seed); scipy's ``bootstrap(method="BCa")`` computes z0, the acceleration and the quantiles
    itself.
    """
    x = (np.random.default_rng(data_seed).random(n) < p).astype(np.float64)
    ours = bootstrap_ci(x, B=10_000, seed=1)
    replicates = bootstrap_replicates(x, B=10_000, seed=1)  # the ones bootstrap_ci drew
    ties = float(np.mean(replicates == x.mean()))
    assert 0.1 < ties < 0.3, ties  # the premise: many replicates tied to the estimate
    low, high = _scipy_bca_on(x, replicates)
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=1e-12)
    if (n, data_seed) == (25, 0):
        assert (low, high) == pytest.approx((0.20, 0.56), abs=1e-12)  # the review's case, as scipy has it


def test_bca_on_scipys_own_tied_replicates_equals_scipy() -> None:
    """The other way round: scipy resamples a paired 0/1 difference (values -1, 0, 1, many ties at the
    estimate) and ltr's interval from scipy's replicates equals scipy's (kills the same z0 mutants)."""
    rng = np.random.default_rng(5)
    a, b = (rng.random(30) < 0.5).astype(float), (rng.random(30) < 0.35).astype(float)
    d = a - b
    ref = stats.bootstrap((d,), np.mean, n_resamples=8000, method="BCa", rng=9, vectorized=True)
    replicates = ref.bootstrap_distribution
    assert float(np.mean(replicates == d.mean())) > 0.05
    low, high = interval_from_replicates(
        replicates,
        float(d.mean()),
        method="bca",
        confidence=0.95,
        acceleration=_jackknife_acceleration(d, None),
    )
    assert (low, high) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high), abs=1e-12
    )


def test_bca_z0_counts_each_tie_as_half_below_half_above() -> None:
    """The tie convention by hand (docs/statistics.md: z0 = Φ⁻¹((#{θ* < θ} + #{θ* ≤ θ}) / 2B), scipy's).

    Eight replicates, estimate 3: 2 below, 4 tied, 2 above. Half the ties below: share 8/16, z0 = 0,
    so with no acceleration BCa is exactly the percentile interval. Counting the ties below (share 6/8)
    or above (2/8) gives z0 = ±0.674 and another interval.
    """
    reps = np.array([1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 4.0, 5.0])
    bca = interval_from_replicates(reps, 3.0, method="bca", confidence=0.95, acceleration=0.0)
    percentile = interval_from_replicates(reps, 3.0, method="percentile", confidence=0.95)
    assert percentile == pytest.approx(np.quantile(reps, [0.025, 0.975]), rel=1e-12)
    assert bca == pytest.approx(percentile, rel=1e-12)  # equal to rounding (Φ(Φ⁻¹(0.025)), 1 − 0.95)
    # scipy agrees: data [2, 4] have mean 3 and (symmetric) acceleration 0
    assert bca == pytest.approx(_scipy_bca_on(np.array([2.0, 4.0]), reps), rel=1e-12)
    # one below, two tied, five above: share (1 + 3) / 16 = 1/4, z0 = Φ⁻¹(1/4) = -0.6745;
    # α₁,₂ = Φ(2·z0 ∓ 1.96) = 0.000468, 0.7294; quantiles at α·7 = 0.00328 and 5.106 (linear)
    reps = np.array([1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0])
    z0 = ndtri(0.25)
    assert z0 == pytest.approx(-0.6744897501960817, rel=1e-15)
    alphas = ndtr(2 * z0 + np.array([-1.0, 1.0]) * ndtri(0.975))
    assert alphas == pytest.approx([0.000468, 0.7294], abs=1e-4)
    low, high = interval_from_replicates(reps, 2.0, method="bca", confidence=0.95, acceleration=0.0)
    assert low == pytest.approx(1.0 + alphas[0] * 7, rel=1e-12) and high == 3.0
    # scipy agrees: data [1, 3] have mean 2 and (symmetric) acceleration 0
    assert (low, high) == pytest.approx(_scipy_bca_on(np.array([1.0, 3.0]), reps), rel=1e-12)


def test_resampling_law_is_exactly_multinomial() -> None:
    """With x_i = 5**i, a replicate's sum encodes the whole count vector: compare with Multinomial(4, ¼…¼)."""
    n, B = 4, 40_000
    x = 5.0 ** np.arange(n)
    reps = np.rint(bootstrap_replicates(x, B=B, seed=11) * n).astype(np.int64)
    compositions = [c for c in itertools.product(range(n + 1), repeat=n) if sum(c) == n]
    codes = np.array([sum(ci * 5**i for i, ci in enumerate(c)) for c in compositions])
    probs = np.array([stats.multinomial.pmf(c, n, [1 / n] * n) for c in compositions])
    observed = np.array([(reps == code).sum() for code in codes])
    assert observed.sum() == B  # every replicate is a valid composition
    chi2 = stats.chisquare(observed, probs * B)
    assert chi2.pvalue > 1e-4


def test_replicate_moments_match_the_bootstrap_law() -> None:
    x = _skewed(500, seed=5)
    reps = bootstrap_replicates(x, B=20_000, seed=4)
    exact_se = x.std(ddof=0) / np.sqrt(x.shape[0])  # sd of the mean of n draws with replacement
    assert reps.mean() == pytest.approx(x.mean(), abs=4 * exact_se / np.sqrt(20_000))
    assert reps.std() == pytest.approx(exact_se, rel=0.03)


def test_weighted_replicates_match_naive_index_matrix_bootstrap() -> None:
    rng = np.random.default_rng(8)
    x, w = _skewed(200, seed=8), rng.uniform(0.5, 3.0, 200)
    reps = bootstrap_replicates(x, weights=w, B=20_000, seed=9)
    idx = rng.integers(0, 200, size=(20_000, 200))
    naive = (w[idx] * x[idx]).sum(1) / w[idx].sum(1)
    assert reps.mean() == pytest.approx(naive.mean(), abs=4 * naive.std() / np.sqrt(10_000))
    assert reps.std() == pytest.approx(naive.std(), rel=0.04)
    r = bootstrap_ci(x, weights=w, B=4000, seed=1)
    assert r.estimate == pytest.approx(np.average(x, weights=w), rel=1e-14)
    assert r.low < r.estimate < r.high


def test_equal_weights_equal_unweighted() -> None:
    x = _skewed(100, seed=2)
    a = bootstrap_ci(x, B=3000, seed=5)
    b = bootstrap_ci(x, weights=np.full(100, 2.5), B=3000, seed=5)
    assert (b.low, b.high, b.estimate) == pytest.approx((a.low, a.high, a.estimate), rel=1e-12)


def test_seed_reproducibility_and_record() -> None:
    x = _skewed(150)
    assert bootstrap_ci(x, B=2000, seed=3) == bootstrap_ci(x, B=2000, seed=3)
    assert bootstrap_ci(x, B=2000, seed=3) != bootstrap_ci(x, B=2000, seed=4)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    r = bootstrap_ci(x, B=2000, seed=g1)
    assert r.seed is None and r == bootstrap_ci(x, B=2000, seed=g2)
    r = bootstrap_ci(x, B=2000, seed=3, confidence=0.9, method="percentile")
    assert (r.method, r.B, r.seed, r.confidence, r.n) == ("percentile", 2000, 3, 0.9, 150)


def test_result_is_immutable() -> None:
    r = bootstrap_ci(_skewed(50), B=500)
    with pytest.raises(AttributeError):
        r.low = 0.0  # type: ignore[misc]


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_ci_contains_estimate_and_narrows_with_n(method: str) -> None:
    small = bootstrap_ci(_skewed(100, seed=1), method=method, B=4000, seed=0)
    large = bootstrap_ci(_skewed(1600, seed=1), method=method, B=4000, seed=0)
    for r in (small, large):
        assert r.low < r.estimate < r.high
    ratio = (small.high - small.low) / (large.high - large.low)
    assert 2.5 < ratio < 6.0  # width ∝ 1/√n → about 4


def test_higher_confidence_is_wider() -> None:
    x = _skewed(300)
    r90 = bootstrap_ci(x, confidence=0.9, B=4000, seed=1)
    r99 = bootstrap_ci(x, confidence=0.99, B=4000, seed=1)
    assert r99.low < r90.low and r99.high > r90.high


def test_degenerate_and_invalid_inputs() -> None:
    r = bootstrap_ci([0.5, 0.5, 0.5, np.nan])
    assert (r.estimate, r.low, r.high, r.n, r.degenerate) == (0.5, 0.5, 0.5, 3, True)
    with pytest.raises(DataError, match="at least 2"):
        bootstrap_ci([0.3])
    with pytest.raises(DataError, match="at least 2"):
        bootstrap_ci([0.3, np.nan])
    with pytest.raises(DataError, match="NaN"):
        bootstrap_ci([0.3, np.nan, 0.4], nan_policy="raise")
    with pytest.raises(DataError, match="finite"):
        bootstrap_ci([0.3, np.inf])
    with pytest.raises(DataError, match="1-D"):
        bootstrap_ci([[0.3, 0.2]])
    with pytest.raises(ConfigError, match="method"):
        bootstrap_ci([0.1, 0.2], method="basic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="confidence"):
        bootstrap_ci([0.1, 0.2], confidence=95)
    with pytest.raises(ConfigError, match=r"^B: must be in \[1, inf\], got 0$"):
        bootstrap_ci([0.1, 0.2], B=0)
    with pytest.raises(ConfigError, match="seed"):
        bootstrap_ci([0.1, 0.2], seed=-1)
    with pytest.raises(DataError, match="weights"):
        bootstrap_ci([0.1, 0.2], weights=[1.0])
    with pytest.raises(DataError, match="> 0"):
        bootstrap_ci([0.1, 0.2], weights=[1.0, 0.0])
    with pytest.raises(DataError, match="values: per-query values must be numeric"):
        bootstrap_ci(["a", "b"])
    with pytest.raises(ConfigError, match="nan_policy"):
        bootstrap_ci([0.1, 0.2], nan_policy="drop")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seed"):
        bootstrap_ci([0.1, 0.2], seed="1")  # type: ignore[arg-type]


def test_nan_queries_are_dropped_with_their_weights() -> None:
    x = np.array([0.1, np.nan, 0.5, 0.9, 0.3])
    w = np.array([1.0, 100.0, 2.0, 1.0, 1.0])
    r = bootstrap_ci(x, weights=w, B=1000, seed=0)
    keep = ~np.isnan(x)
    assert r.n == 4 and r.estimate == pytest.approx(np.average(x[keep], weights=w[keep]))


def test_paired_ci_is_the_ci_of_differences() -> None:
    rng = np.random.default_rng(4)
    a = rng.random(300)
    b = np.clip(a - 0.03 + rng.normal(0, 0.1, 300), 0, 1)
    a[[3, 7]] = np.nan
    b[11] = np.nan
    r = paired_bootstrap_ci(a, b, B=3000, seed=2)
    d = a - b
    d = d[~np.isnan(d)]
    assert r == bootstrap_ci(d, B=3000, seed=2)
    assert r.n == 297 and r.estimate == pytest.approx(np.nanmean(a - b))
    assert r.low > 0  # a true +0.03 difference over 300 queries is detected
    ref = stats.bootstrap(
        (a[~np.isnan(a - b)], b[~np.isnan(a - b)]),
        lambda x, y: np.mean(x - y),
        paired=True,
        n_resamples=3000,
        vectorized=False,
        rng=1,
        method="percentile",
    )
    ours = paired_bootstrap_ci(a, b, B=3000, seed=2, method="percentile")
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.3 * ref.standard_error)
    with pytest.raises(DataError, match="same queries"):
        paired_bootstrap_ci([0.1, 0.2], [0.1, 0.2, 0.3])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_coverage_on_simulated_normal_data(method: str) -> None:
    """95% intervals for the mean of N(0.3, 0.2²) samples of 60 queries cover 0.3 about 95% of the time."""
    rng = np.random.default_rng(2026)
    trials = 1500
    covered = 0
    for t in range(trials):
        x = rng.normal(0.3, 0.2, 60)
        r = bootstrap_ci(x, method=method, B=2000, seed=t)
        covered += r.low <= 0.3 <= r.high
    coverage = covered / trials
    # bootstrap intervals under-cover slightly at n = 60 (≈ 0.94); binomial sd at 1500 trials is 0.006
    assert 0.925 <= coverage <= 0.965, coverage


def test_weighted_paired_ci_is_the_weighted_ci_of_differences() -> None:
    rng = np.random.default_rng(12)
    a, b, w = rng.random(120), rng.random(120), rng.uniform(0.5, 2.0, 120)
    a[5] = np.nan
    r = paired_bootstrap_ci(a, b, weights=w, B=2000, seed=3)
    assert r == bootstrap_ci(a - b, weights=w, B=2000, seed=3)
    keep = ~np.isnan(a)
    assert r.n == 119 and r.estimate == pytest.approx(np.average((a - b)[keep], weights=w[keep]), rel=1e-13)


def test_bca_refuses_an_estimate_outside_every_replicate() -> None:
    """Two values and a single resample (seed 2 draws the same query twice): z0 = ±inf, BCa undefined."""
    with pytest.raises(DataError, match="BCa interval undefined"):
        bootstrap_ci([0.0, 1.0], B=1, seed=2)
    r = bootstrap_ci([0.0, 1.0], B=1, seed=2, method="percentile")
    assert r.low == r.high in (0.0, 1.0)


def test_benchmark_script_runs_on_a_small_problem() -> None:
    """Smoke test of benchmarks/bench_bootstrap.py (no timing asserted): it runs and prints its three rows."""
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run(
        [
            sys.executable,
            str(root / "benchmarks" / "bench_bootstrap.py"),
            "--n",
            "300",
            "--B",
            "300",
            "--repeats",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ") and "×" in line]
    labels = [r.split(" | ")[0] for r in rows]
    assert len(labels) == 3 and labels[:2] == ["| bca CI of the mean", "| percentile CI of the mean"]
    assert labels[2].startswith("| paired sign-flip test")

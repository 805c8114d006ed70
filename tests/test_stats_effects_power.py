"""Effect sizes, win/tie/loss, power and sample size (normal formula, noncentral t vs simulated scipy t-tests)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ltr.core.errors import ConfigError, DataError
from ltr.stats import achieved_power, effect_size, queries_needed, win_tie_loss


def test_effect_size_definitions() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random(100), rng.random(100)
    e = effect_size(a, b)
    d = a - b
    assert e.mean_diff == pytest.approx(a.mean() - b.mean(), rel=1e-12)
    assert e.cohens_d == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    # d_z is the one-sample t statistic divided by √n (scipy's ttest_rel)
    assert e.cohens_d == pytest.approx(stats.ttest_rel(a, b).statistic / np.sqrt(100), rel=1e-12)
    assert effect_size([1.0, 2.0], [1.0, 2.0]).cohens_d == 0.0
    assert effect_size([1.0, 2.0], [0.0, 1.0]).cohens_d == np.inf
    assert effect_size([0.0, 1.0, np.nan], [1.0, 2.0, 0.0]).cohens_d == -np.inf
    with pytest.raises(DataError, match="at least 2"):
        effect_size([0.1], [0.2])


def test_win_tie_loss_with_tolerance() -> None:
    a = np.array([0.50, 0.70, 0.40, 0.90, 0.30, np.nan])
    b = np.array([0.40, 0.70, 0.41, 0.60, 0.35, 0.20])
    w = win_tie_loss(a, b)
    assert (w.wins, w.ties, w.losses) == (2, 1, 2)
    w = win_tie_loss(a, b, tie_tolerance=0.02)
    assert (w.wins, w.ties, w.losses) == (2, 2, 1)
    w = win_tie_loss(a, b, tie_tolerance=0.5)
    assert (w.wins, w.ties, w.losses) == (0, 5, 0)
    for bad in (-0.1, float("nan"), "0.1", None):
        with pytest.raises(ConfigError, match="tie_tolerance"):
            win_tie_loss(a, b, tie_tolerance=bad)  # type: ignore[arg-type]
    assert win_tie_loss(a, b, tie_tolerance=np.float32(0.02)) == win_tie_loss(a, b, tie_tolerance=0.02)


def test_worked_example_3532() -> None:
    z = stats.norm.isf(0.025) + stats.norm.isf(0.2)
    assert queries_needed(0.01, 0.15) == 3532 == int(np.ceil(2 * 0.15**2 * z**2 / 0.01**2))
    assert queries_needed(0.01, 0.15, paired=True) == int(np.ceil(0.15**2 * z**2 / 0.01**2)) == 1766
    assert queries_needed(-0.01, 0.15) == 3532  # sign of Δ does not matter


@pytest.mark.parametrize("paired", [False, True])
def test_normal_power_is_the_inverse_of_the_sample_size(paired: bool) -> None:
    for delta, sigma, alpha, power in [
        (0.01, 0.15, 0.05, 0.8),
        (0.02, 0.25, 0.01, 0.9),
        (0.005, 0.1, 0.1, 0.95),
    ]:
        n = queries_needed(delta, sigma, alpha=alpha, power=power, paired=paired)
        assert achieved_power(n, delta, sigma, alpha=alpha, paired=paired) >= power
        assert achieved_power(n - 1, delta, sigma, alpha=alpha, paired=paired) < power


def test_t_power_matches_simulated_scipy_t_tests() -> None:
    """Rejection rates of scipy's ttest_rel / ttest_ind on simulated normal data equal the t-based power."""
    rng = np.random.default_rng(12)
    sims, n, delta, sigma = 20_000, 12, 0.05, 0.08
    d = rng.normal(delta, sigma, (sims, n))
    rate = np.mean(stats.ttest_1samp(d, 0.0, axis=1).pvalue <= 0.05)
    predicted = achieved_power(n, delta, sigma, paired=True, method="t")
    assert rate == pytest.approx(predicted, abs=4 * np.sqrt(predicted * (1 - predicted) / sims))
    assert achieved_power(n, delta, sigma, paired=True) > predicted  # the normal approximation is optimistic
    x, y = rng.normal(delta, sigma, (sims, n)), rng.normal(0, sigma, (sims, n))
    rate = np.mean(stats.ttest_ind(x, y, axis=1).pvalue <= 0.05)
    predicted = achieved_power(n, delta, sigma, method="t")
    assert rate == pytest.approx(predicted, abs=4 * np.sqrt(predicted * (1 - predicted) / sims))


def test_normal_power_counts_both_tails() -> None:
    """A two-sided level-α z-test rejects with probability α when Δ is (nearly) 0, and at a small effect
    its rejection rate in simulated z-tests includes the wrong-direction tail Φ(−Δ/se − z).

    Kills mutant #15 (``achieved_power`` without the ``Φ(−ncp − z)`` term: α/2 at Δ → 0).
    """
    assert achieved_power(100, 1e-9, 1.0) == pytest.approx(0.05, rel=1e-6)
    assert achieved_power(100, 1e-9, 1.0, alpha=0.2, paired=True) == pytest.approx(0.2, rel=1e-6)
    # n = 2 paired, σ_d = 1: se = 1/√2; Δ = 0.5·se → Φ(0.5 − 1.96) + Φ(−0.5 − 1.96) = 0.0721 + 0.0069
    rng = np.random.default_rng(3)
    sims, se = 400_000, 1 / np.sqrt(2)
    mean_d = rng.normal(0.5 * se, se, sims)  # the mean of 2 paired differences with σ_d = 1
    rate = np.mean(np.abs(mean_d) / se > stats.norm.isf(0.025))
    predicted = achieved_power(2, 0.5 * se, 1.0, paired=True)
    assert rate == pytest.approx(predicted, abs=4 * np.sqrt(predicted * (1 - predicted) / sims))


def test_t_power_of_a_tiny_unpaired_sample_matches_simulated_scipy_t_tests() -> None:
    """n = 3 per system: the unpaired t-test has 2n − 2 = 4 degrees of freedom (critical t 2.776, not 2.571
    at df 5), which a simulation of scipy's ``ttest_ind`` resolves at this size.

    Kills mutant #16 (``df = 2n − 1`` for the unpaired t power: the simulation at n = 12 cannot tell df 22 from 23).
    """
    rng = np.random.default_rng(21)
    sims, n, delta, sigma = 200_000, 3, 1.5, 1.0
    x, y = rng.normal(delta, sigma, (sims, n)), rng.normal(0.0, sigma, (sims, n))
    rate = np.mean(stats.ttest_ind(x, y, axis=1).pvalue <= 0.05)
    predicted = achieved_power(n, delta, sigma, method="t")
    assert rate == pytest.approx(predicted, abs=4 * np.sqrt(predicted * (1 - predicted) / sims))


def test_t_sample_size_is_smallest_n_reaching_power() -> None:
    n = queries_needed(0.05, 0.08, paired=True, method="t")
    assert n >= queries_needed(0.05, 0.08, paired=True)
    assert achieved_power(n, 0.05, 0.08, paired=True, method="t") >= 0.8
    assert achieved_power(n - 1, 0.05, 0.08, paired=True, method="t") < 0.8


def test_power_inputs_are_validated() -> None:
    with pytest.raises(ConfigError, match="delta"):
        queries_needed(0.0, 0.15)
    with pytest.raises(ConfigError, match="sigma"):
        queries_needed(0.01, -1.0)
    with pytest.raises(ConfigError, match="power"):
        queries_needed(0.01, 0.15, power=1.0)
    with pytest.raises(ConfigError, match=r"n: must be in \[2, inf\], got 1"):
        achieved_power(1, 0.01, 0.15)
    with pytest.raises(ConfigError, match="method"):
        achieved_power(10, 0.01, 0.15, method="exact")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="paired: expected true or false, got 'yes'"):
        queries_needed(0.01, 0.15, paired="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="alpha"):
        achieved_power(100, 0.01, 0.15, alpha=0.0)
    with pytest.raises(ConfigError, match="n: expected an integer, got 100.5"):
        achieved_power(100.5, 0.01, 0.15)  # type: ignore[arg-type]

"""Randomised Tukey HSD against a naive loop reference, the 2-system sign-flip test and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ltr.core.errors import DataError
from ltr.stats import randomization_test, tukey_hsd


def _systems(n: int, shifts: list[float], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 3, n)
    return np.column_stack([np.clip(base + s + rng.normal(0, 0.1, n), 0, 1) for s in shifts])


def _naive_hsd(table: np.ndarray, B: int, seed: int) -> np.ndarray:
    """The textbook loop: shuffle each query's row with Generator.permuted, record max − min column mean."""
    rng = np.random.default_rng(seed)
    means = table.mean(0)
    null = np.array([np.ptp(rng.permuted(table, axis=1).mean(0)) for _ in range(B)])
    diffs = np.abs(means[:, None] - means[None, :])
    p = ((null[None, None, :] >= diffs[:, :, None] - 1e-12).sum(-1) + 1) / (B + 1)
    np.fill_diagonal(p, 1.0)
    return p


def test_matches_naive_reference_within_monte_carlo_error() -> None:
    table = _systems(150, [0.0, 0.01, 0.025, 0.04], seed=1)
    ours = tukey_hsd(table, B=4000, seed=2)
    ref = _naive_hsd(table, B=4000, seed=3)
    sd = np.sqrt(2 * np.clip(ref, 1e-3, None) * (1 - ref) / 4000)
    assert np.all(np.abs(ours.pvalues - ref) <= 5 * sd + 1e-3)
    assert ours.pvalues.min() < 0.01 and ours.pvalues.max() == 1.0
    np.testing.assert_allclose(ours.means, table.mean(0), rtol=1e-15)


def test_two_systems_reduce_to_the_sign_flip_test() -> None:
    """With k = 2, shuffling labels within a query is a sign flip and the range is |mean difference|."""
    table = _systems(300, [0.0, 0.012], seed=4)
    hsd = tukey_hsd({"x": table[:, 0], "y": table[:, 1]}, B=10_000, seed=1)
    flip = randomization_test(table[:, 0], table[:, 1], B=10_000, seed=2)
    ref = stats.permutation_test(
        (table[:, 0], table[:, 1]),
        lambda a, b, axis: np.mean(a - b, axis=axis),
        permutation_type="samples",
        n_resamples=9_999,
        vectorized=True,
        rng=0,
    ).pvalue
    sd = np.sqrt(2 * ref * (1 - ref) / 10_000)
    assert hsd.pvalue("x", "y") == pytest.approx(flip.pvalue, abs=5 * sd)
    assert hsd.pvalue("x", "y") == pytest.approx(ref, abs=5 * sd)


def test_family_wise_error_is_controlled_under_h0() -> None:
    """Five exchangeable systems: the chance of any pair at p ≤ 0.05 stays near (below) 0.05."""
    rng = np.random.default_rng(7)
    hits = 0
    trials = 300
    for t in range(trials):
        base = rng.random(60)
        table = base[:, None] + rng.normal(0, 0.1, (60, 5))
        hits += tukey_hsd(table, B=400, seed=t).pvalues.min() <= 0.05
    assert hits / trials <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / trials)


def test_result_shape_reproducibility_and_nan_rows() -> None:
    table = _systems(80, [0.0, 0.02, 0.05], seed=5)
    table[[3, 10], 1] = np.nan
    r = tukey_hsd(table, names=["a", "b", "c"], B=2000, seed=4)
    assert r.n == 78 and r.systems == ("a", "b", "c") and r.B == 2000 and r.seed == 4
    again = tukey_hsd(table, names=["a", "b", "c"], B=2000, seed=4)
    assert r == again and r != tukey_hsd(table, names=["a", "b", "c"], B=2000, seed=5)
    frame = r.to_frame()
    assert list(frame.index) == ["a", "b", "c"] and frame.loc["a", "c"] == r.pvalue("a", "c")
    np.testing.assert_array_equal(r.pvalues, r.pvalues.T)
    complete = table[~np.isnan(table).any(axis=1)]  # the 78 queries every system scored
    np.testing.assert_allclose(r.means, complete.mean(axis=0), rtol=1e-15)
    assert r.diffs[0, 2] == pytest.approx(complete[:, 0].mean() - complete[:, 2].mean(), rel=1e-14)
    with pytest.raises(ValueError, match="read-only"):
        r.pvalues[0, 1] = 0.0
    with pytest.raises(DataError, match="unknown system"):
        r.pvalue("a", "zzz")


def test_invalid_inputs() -> None:
    with pytest.raises(DataError, match="at least 2 systems"):
        tukey_hsd({"a": [0.1, 0.2]})
    with pytest.raises(DataError, match="same queries"):
        tukey_hsd({"a": [0.1, 0.2], "b": [0.1]})
    with pytest.raises(DataError, match="names"):
        tukey_hsd(np.zeros((3, 2)), names=["a"])
    with pytest.raises(DataError, match="NaN"):
        tukey_hsd(np.array([[0.1, np.nan], [0.2, 0.3]]), nan_policy="raise")
    with pytest.raises(DataError, match="'a' is given more than once"):
        tukey_hsd(np.zeros((3, 2)), names=["a", "a"])
    with pytest.raises(DataError, match="numeric"):
        tukey_hsd({"a": ["x", "y"], "b": [0.1, 0.2]})
    with pytest.raises(DataError, match="numeric"):
        tukey_hsd([["x", "y"], ["z", "w"]])
    with pytest.raises(DataError, match="±inf"):
        tukey_hsd(np.array([[0.1, np.inf], [0.2, 0.3]]))


def test_identical_all_zero_systems_are_not_different() -> None:
    """Two systems scoring 0 on every query (e.g. nDCG on a hard test set): every resample's range is 0,
    as large as the observed 0, so p = (B + 1)/(B + 1) = 1 by the module's definition — never 1/(B + 1).

    Kills mutant #17 (``searchsorted(..., side="right")``: counts only R* > |Δ|, which differs only when the
    tolerance is 0, i.e. an all-zero table, and there calls two identical systems significantly different).
    """
    zeros = np.zeros(20)
    r = tukey_hsd({"a": zeros, "b": zeros, "c": zeros}, B=200, seed=0)
    assert r.pvalue("a", "b") == 1.0 and r.pvalue("b", "c") == 1.0

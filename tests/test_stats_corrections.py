"""Holm / Benjamini–Hochberg / Bonferroni adjustments against scipy and naive step-wise references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ltr.core.errors import ConfigError, DataError
from ltr.stats import adjust_pvalues, benjamini_hochberg, holm


def _naive_holm(p: list[float]) -> list[float]:
    """Holm (1979) as written: walk the sorted p-values, multiplier m − i, running maximum, cap 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def _family(seed: int, m: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 1, m - m // 3), rng.uniform(0, 0.01, m // 3)])
    p[: m // 4] = np.round(p[: m // 4], 2)  # ties
    return rng.permutation(p)


@pytest.mark.parametrize(("seed", "m"), [(0, 1), (1, 2), (2, 7), (3, 50), (4, 500)])
def test_holm_equals_naive_reference(seed: int, m: int) -> None:
    p = _family(seed, m)
    np.testing.assert_allclose(holm(p), _naive_holm(p.tolist()), rtol=0, atol=1e-15)


@pytest.mark.parametrize(("seed", "m"), [(0, 1), (1, 2), (2, 7), (3, 50), (4, 500)])
def test_bh_equals_scipy_false_discovery_control(seed: int, m: int) -> None:
    p = _family(seed, m)
    np.testing.assert_allclose(
        benjamini_hochberg(p), stats.false_discovery_control(p, method="bh"), rtol=1e-14
    )


def test_known_values_and_dispatch() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust_pvalues(p).tolist() == holm(p).tolist()
    assert adjust_pvalues(p, "bh").tolist() == benjamini_hochberg(p).tolist()
    assert adjust_pvalues(p, "bonferroni").tolist() == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert adjust_pvalues(p, "none").tolist() == p
    assert (holm(p) >= benjamini_hochberg(p)).all()  # FWER control is never less strict than FDR


def test_nan_entries_are_outside_the_family() -> None:
    p = np.array([0.01, np.nan, 0.02])
    h = holm(p)
    assert np.isnan(h[1]) and h[[0, 2]].tolist() == pytest.approx([0.02, 0.02])
    assert adjust_pvalues(p, "bonferroni")[[0, 2]].tolist() == pytest.approx([0.02, 0.04])
    assert holm([]).shape == (0,)


def test_invalid_inputs() -> None:
    with pytest.raises(DataError, match="outside"):
        holm([0.1, 1.2])
    with pytest.raises(DataError, match="1-D"):
        benjamini_hochberg([[0.1]])
    with pytest.raises(ConfigError, match="correction"):
        adjust_pvalues([0.1], "sidak")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="numeric"):
        holm(["a"])
    with pytest.raises(DataError, match="outside"):
        adjust_pvalues([0.1, -0.2], "bonferroni")


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_adjustment_invariants(p: list[float]) -> None:
    """raw ≤ BH ≤ Holm ≤ Bonferroni ≤ 1, and every adjustment keeps the order of the raw p-values."""
    raw = np.array(p)
    bh, ho, bo = benjamini_hochberg(raw), holm(raw), adjust_pvalues(raw, "bonferroni")
    tol = 1e-12
    assert np.all(raw <= bh + tol) and np.all(bh <= ho + tol) and np.all(ho <= bo + tol) and np.all(bo <= 1.0)
    order = np.argsort(raw, kind="stable")
    for adjusted in (bh, ho, bo):
        assert np.all(np.diff(adjusted[order]) >= -tol)
    np.testing.assert_allclose(bh, stats.false_discovery_control(raw, method="bh"), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ho, _naive_holm(p), rtol=0, atol=1e-15)

"""ltr.core.ranking: the one copy of the per-query helpers (offsets check, query index, ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata

import ltr.core.ranking as ranking
import ltr.models.ensembles.fusion as fusion
from ltr.core.errors import ConfigError, DataError, MetricError
from ltr.core.ranking import check_offsets, check_scores, descending_ranks, query_index, query_of_row
from ltr.metrics import evaluate


@pytest.mark.parametrize(
    ("offsets", "n", "message"),
    [
        ([0, 2, 5], 4, r"queries must start at 0 and end at the number of documents 4, got 0\.\.5"),
        ([1, 4], 4, r"start at 0 .* got 1\.\.4"),
        ([0, 3, 2, 4], 4, r"queries must be non-decreasing; query 1 has offsets 3 > 2"),
        ([0.0, 4.0], 4, r"queries must be a 1-d integer array"),
        ([[0, 4]], 4, r"queries must be a 1-d integer array .* shape \(1, 2\)"),
        ([], 0, r"queries must be a 1-d integer array"),
    ],
)
def test_check_offsets_names_the_argument_and_the_problem(offsets, n, message) -> None:
    with pytest.raises(MetricError, match=message):
        check_offsets(offsets, n, "queries")


def test_check_offsets_accepts_empty_queries_and_returns_int64() -> None:
    off = check_offsets(np.array([0, 0, 3, 3], dtype=np.int32), 3)
    assert off.dtype == np.int64 and off.tolist() == [0, 0, 3, 3]


def test_query_index_matches_a_loop_over_queries() -> None:
    sizes = np.random.default_rng(1).integers(0, 5, size=40)
    offsets = np.r_[0, np.cumsum(sizes)]
    expected = [q for q, size in enumerate(sizes) for _ in range(size)]
    assert query_index(offsets).tolist() == expected
    assert [query_of_row(offsets, row) for row in range(offsets[-1])] == expected  # empty queries own no row


@pytest.mark.parametrize("ties", ["average", "first"])
def test_descending_ranks_equal_scipy_rankdata_within_each_query(ties: str) -> None:
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 9, size=60)
    offsets = np.r_[0, np.cumsum(sizes)]
    scores = rng.integers(0, 4, size=offsets[-1]).astype(float)  # many ties
    got = descending_ranks(scores, offsets, ties=ties)
    method = "average" if ties == "average" else "ordinal"
    for q in range(sizes.shape[0]):
        rows = slice(offsets[q], offsets[q + 1])
        np.testing.assert_array_equal(got[rows], rankdata(-scores[rows], method=method))


def test_bad_inputs_raise_ltr_errors() -> None:
    with pytest.raises(ConfigError, match=r"ties: expected one of \['average', 'first'\], got 'min'"):
        descending_ranks([1.0], [0, 1], ties="min")
    with pytest.raises(DataError, match="scores must be 1-d"):
        descending_ranks(np.ones((2, 2)), [0, 2])
    with pytest.raises(DataError, match=r"score matrix: row 2 has a non-finite score"):
        check_scores([1.0, 2.0, np.inf], "score matrix")


def test_fusion_and_metrics_use_the_shared_copy() -> None:
    for name in ("check_offsets", "check_scores", "descending_ranks", "query_index"):
        assert getattr(fusion, name) is getattr(ranking, name), name
    with pytest.raises(MetricError, match="offsets must be non-decreasing; query 1 has offsets 2 > 1"):
        evaluate(["ndcg@10"], [1.0], [0.5], [0, 2, 1])

"""RankingData: offsets, subsets, validation and fingerprints."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ltr.data.dataset import RankingData, offsets_from_qid
from ltr.errors import DataError


def test_offsets_and_query_ids():
    d = RankingData(X=np.zeros((6, 2), np.float32), y=[0, 1, 2, 0, 0, 1], qid=[5, 5, 2, 2, 2, 9])
    assert d.offsets.tolist() == [0, 2, 5, 6]
    assert d.query_ids.tolist() == [5, 2, 9]
    assert d.group_sizes.tolist() == [2, 3, 1]


def test_non_contiguous_qid_names_qid_and_both_row_ranges():
    with pytest.raises(DataError, match=r"qid 4 appears in two separate blocks \(rows 1-2 and 4-5\)"):
        offsets_from_qid(np.array([4, 4, 1, 4, 4]), source="f.txt")


def test_length_mismatch_is_reported():
    with pytest.raises(DataError, match="same number of rows"):
        RankingData(X=np.zeros((3, 1)), y=[1, 2], qid=[1, 1, 1])


def test_float_qid_rejected():
    with pytest.raises(DataError, match="qid must be integers"):
        RankingData(X=np.zeros((2, 1)), y=[1, 2], qid=[1.5, 1.5])


def test_subset_keeps_order_and_weights():
    d = RankingData(
        X=np.arange(8, dtype=np.float32).reshape(4, 2), y=[1, 0, 2, 3], qid=[1, 1, 2, 3], weight=[1, 2, 3]
    )
    s = d.subset(np.array([2, 0]))
    assert s.qid.tolist() == [3, 1, 1]
    assert s.X[:, 0].tolist() == [6, 0, 2]
    assert s.weight.tolist() == [3, 1]


def test_fingerprint_same_for_dense_and_values_and_changes_with_labels():
    X = np.array([[0, 1.5], [2, 0]], np.float32)
    a = RankingData(X=X, y=[1, 0], qid=[1, 1])
    b = RankingData(X=X.copy(), y=[1, 0], qid=[1, 1])
    c = RankingData(X=X, y=[0, 1], qid=[1, 1])
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    s = RankingData(X=sp.csr_matrix(X), y=[1, 0], qid=[1, 1])
    assert s.is_sparse and np.array_equal(s.dense(), X)


def test_split_qid_error_names_the_first_split_in_row_order():
    # qid 9 splits first (rows 1-1 / 3-3); qid 2 splits later (rows 2-2 / 4-4): name qid 9
    with pytest.raises(DataError, match=r"qid 9 appears in two separate blocks \(rows 1-1 and 3-3\)"):
        offsets_from_qid(np.array([9, 2, 9, 2]))

"""RankingData: offsets, subsets, validation and fingerprints."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ltr.core.errors import DataError
from ltr.data.dataset import RankingData, offsets_from_qid


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


def _fp(X, y=(1, 0, 2), qid=(1, 1, 2)) -> str:
    return RankingData(X=X, y=list(y), qid=list(qid)).fingerprint()


X3 = np.array([[0, 1.5, 0], [2, 0, 0.25], [0, 0, 3]], np.float32)


def test_fingerprint_is_equal_for_the_same_values_in_any_storage():
    want = _fp(X3)
    assert _fp(sp.csr_matrix(X3)) == want  # dense float32 vs CSR float32 of the same matrix
    assert _fp(X3.astype(np.float64)) == want  # float64 storage of the same numbers
    assert _fp(sp.csr_matrix(X3.astype(np.float64))) == want
    assert _fp(np.asfortranarray(X3)) == want  # memory order
    assert _fp(X3.copy()) == want
    # CSR in non-canonical form: unsorted indices, a duplicate entry (summed), explicit zeros
    messy = sp.csr_matrix(
        (
            np.array([1.5, 0.0, 0.25, 1.0, 1.0, 0.0, 3.0], np.float32),
            np.array([1, 0, 2, 0, 0, 1, 2]),
            np.array([0, 2, 5, 7]),
        ),
        shape=(3, 3),
    )
    assert not messy.has_canonical_format
    assert _fp(messy) == want
    negative_zeros = X3.copy()
    negative_zeros[X3 == 0] = -0.0
    assert np.signbit(negative_zeros).any() and _fp(negative_zeros) == want  # -0.0 counts as zero


def test_fingerprint_changes_with_any_value_label_qid_or_shape():
    want = _fp(X3)
    moved = X3.copy()
    moved[0, 1], moved[0, 2] = 0, 1.5  # same values, another column
    nudged = X3.astype(np.float64)
    nudged[1, 2] += 1e-12  # below float32 resolution: values are hashed as float64
    others = {
        "value": _fp(X3 + np.eye(3, dtype=np.float32)),
        "column": _fp(moved),
        "float64 digits": _fp(nudged),
        "labels": _fp(X3, y=(0, 1, 2)),
        "qid": _fp(X3, qid=(1, 2, 2)),
        "extra zero column": _fp(np.c_[X3, np.zeros(3, np.float32)]),
    }
    assert want not in others.values(), others
    assert len(set(others.values())) == len(others)


def test_fingerprint_dense_and_csr_agree_across_blocks(monkeypatch):
    import ltr.data.dataset as dataset

    monkeypatch.setattr(dataset, "_BLOCK_ENTRIES", 8)  # 2 rows of 4 features per block
    rng = np.random.default_rng(3)
    X = rng.random((9, 4)).astype(np.float32)
    X[X < 0.5] = 0
    y, qid = np.zeros(9), np.repeat([1, 2, 3], 3)
    dense, csr = RankingData(X=X, y=y, qid=qid), RankingData(X=sp.csr_matrix(X), y=y, qid=qid)
    assert dense.fingerprint() == csr.fingerprint()
    last = X.copy()
    last[8, np.argmax(last[8] == 0)] = 7.0  # one new entry in the last block
    assert RankingData(X=sp.csr_matrix(last), y=y, qid=qid).fingerprint() != dense.fingerprint()


def test_dense_gives_float32_for_csr_and_the_array_itself_when_dense():
    s = RankingData(X=sp.csr_matrix(X3.astype(np.float64)), y=[1, 0, 2], qid=[1, 1, 2])
    assert s.is_sparse and s.dense().dtype == np.float32 and np.array_equal(s.dense(), X3)
    X64 = X3.astype(np.float64)
    d = RankingData(X=X64, y=[1, 0, 2], qid=[1, 1, 2])
    assert d.dense() is d.X and d.dense().dtype == np.float64


def test_split_qid_error_names_the_first_split_in_row_order():
    # qid 9 splits first (rows 1-1 / 3-3); qid 2 splits later (rows 2-2 / 4-4): name qid 9
    with pytest.raises(DataError, match=r"qid 9 appears in two separate blocks \(rows 1-1 and 3-3\)"):
        offsets_from_qid(np.array([9, 2, 9, 2]))

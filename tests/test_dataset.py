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


def _random_split(seed: int, n_rows: int = 40, n_features: int = 7) -> RankingData:
    """Rows of a few queries, about half the entries zero, some rows all zero, one NaN."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = 0
    X[rng.integers(0, n_rows, 3)] = 0
    X[rng.integers(0, n_rows), rng.integers(0, n_features)] = np.nan
    bounds = np.r_[0, np.sort(rng.choice(np.arange(1, n_rows), 7, replace=False)), n_rows]
    qid = np.repeat(rng.permutation(100)[:8], np.diff(bounds))
    return RankingData(X=X, y=rng.integers(0, 5, n_rows), qid=qid)


@pytest.mark.parametrize("seed", range(4))
def test_fingerprint_parts_of_any_row_ranges_combine_to_the_whole(seed):
    """Rows cut anywhere (inside a query too), each part stored its own way (dense float32, CSR float64,
    CSR with unsorted and duplicate entries), the parts given in any order: the whole's fingerprint.
    Before: there were no parts; a Dask split hashed its shards' fingerprints together."""
    from ltr.data.dataset import combine_fingerprint

    whole = _random_split(seed)
    rng = np.random.default_rng(seed)
    cuts = [
        0,
        *sorted(rng.choice(np.arange(1, whole.n_docs), rng.integers(1, 6), replace=False).tolist()),
        whole.n_docs,
    ]
    parts = []
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        X = whole.X[a:b]
        if k % 3 == 1:
            X = sp.csr_matrix(X.astype(np.float64))
        elif k % 3 == 2:  # each entry split in two halves, rows' entries reversed: the same values
            csr = sp.csr_matrix(X)
            halves = np.repeat(csr.data / 2, 2)
            rows = [np.arange(lo, hi)[::-1] for lo, hi in zip(csr.indptr[:-1], csr.indptr[1:], strict=True)]
            order = np.concatenate(rows) if rows else np.zeros(0, np.int64)
            X = sp.csr_matrix(
                (halves.reshape(-1, 2)[order].ravel(), np.repeat(csr.indices[order], 2), 2 * csr.indptr),
                shape=csr.shape,
            )
            assert not X.has_canonical_format
        part = RankingData(X=X, y=whole.y[a:b], qid=whole.qid[a:b], name=f"part{k}")
        parts.append(part.fingerprint_part(first_row=a))
    rng.shuffle(parts)
    assert combine_fingerprint(parts) == whole.fingerprint()


def test_combine_fingerprint_wants_every_row_once_and_one_width():
    from ltr.data.dataset import combine_fingerprint

    d = _random_split(0)
    top, rest = d.subset(np.arange(3)), d.subset(np.arange(3, d.n_queries))
    parts = [top.fingerprint_part(), rest.fingerprint_part(first_row=top.n_docs)]
    assert combine_fingerprint(parts) == d.fingerprint()
    for wrong in ([parts[1]], [parts[0], parts[0], parts[1]], [parts[0], rest.fingerprint_part(first_row=1)]):
        with pytest.raises(ValueError, match="cover every row once"):
            combine_fingerprint(wrong)
    wider = RankingData(X=np.c_[rest.X, np.zeros(rest.n_docs)], y=rest.y, qid=rest.qid)
    with pytest.raises(ValueError, match="different widths"):
        combine_fingerprint([parts[0], wider.fingerprint_part(first_row=top.n_docs)])


def test_fingerprint_changes_with_one_value_in_one_row_and_with_the_row_order():
    d = _random_split(5)
    want = d.fingerprint()
    r, c = np.argwhere(d.X != 0)[-1]
    changed = d.X.copy()
    changed[r, c] = np.nextafter(changed[r, c], np.float32(np.inf))  # one float32 ulp, in one row
    swapped = d.X[np.r_[1, 0, 2 : d.n_docs]]  # the first two rows (one query) swapped
    assert not np.array_equal(swapped[:2], d.X[:2], equal_nan=True)
    others = {
        "one value": RankingData(X=changed, y=d.y, qid=d.qid).fingerprint(),
        "row order": RankingData(X=swapped, y=d.y[np.r_[1, 0, 2 : d.n_docs]], qid=d.qid).fingerprint(),
        "a value moved to the next row": RankingData(
            X=np.roll(d.X, 1, axis=0), y=d.y, qid=d.qid
        ).fingerprint(),
    }
    assert want not in others.values(), others


def test_fingerprint_takes_every_nan_as_one_value_and_nan_apart_from_zero():
    X = X3.astype(np.float64)
    X[0, 0] = np.nan
    other_nan = X.copy()
    other_nan.view(np.uint64)[0, 0] = 0xFFF8_0000_0000_0001  # a negative NaN with a payload
    assert np.isnan(other_nan[0, 0]) and _fp(other_nan) == _fp(X) == _fp(X.astype(np.float32))
    assert _fp(X) != _fp(X3)


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

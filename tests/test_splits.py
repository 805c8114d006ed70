"""Query-aware splits: disjoint, complete, deterministic per seed; MSLR-style fold rotation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.splits import concat, mslr_folds, mslr_style_folds, query_kfold, split_queries, train_valid_test


def _data(n_q=23, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, n_q)
    qid = np.repeat(rng.permutation(10_000)[:n_q], sizes)
    n = qid.shape[0]
    X = rng.random((n, 4)).astype(np.float32)
    return RankingData(X=sp.csr_matrix(X) if sparse else X, y=rng.integers(0, 3, n), qid=qid)


def test_kfold_partitions_queries():
    folds = query_kfold(23, 5, seed=3)
    tests = np.concatenate([t for _, t in folds])
    assert sorted(tests.tolist()) == list(range(23))
    assert {len(t) for _, t in folds} <= {4, 5}
    for train, test in folds:
        assert not set(train) & set(test) and len(train) + len(test) == 23
    again = query_kfold(23, 5, seed=3)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True))
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(folds, query_kfold(23, 5, seed=4), strict=True))
    with pytest.raises(ConfigError):
        query_kfold(3, 5, seed=0)
    with pytest.raises(ConfigError):
        query_kfold(10, 1, seed=0)


def test_kfold_train_positions_are_sorted():
    """Each fold's training positions are sorted (a ``subset`` of them keeps the file's query order).

    Kills mutant #27 (``query_kfold`` returning the training positions in the shuffled order).
    """
    for train, test in query_kfold(23, 5, seed=3):
        assert train.tolist() == sorted(set(range(23)) - set(test.tolist()))


def test_kfold_agrees_with_sklearn_group_semantics():
    """Every test fold holds whole queries, like scikit-learn's GroupKFold (rows never straddle folds)."""
    from sklearn.model_selection import GroupKFold

    d = _data()
    for _, test in query_kfold(d.n_queries, 4, seed=1):
        rows = d.row_indices(test)
        assert set(d.qid[rows]).isdisjoint(set(np.delete(d.qid, rows)))
    # GroupKFold balances rows, we balance queries: both put every query in exactly one test fold
    sk_tests = sorted(q for _, t in GroupKFold(4).split(d.X, d.y, d.qid) for q in np.unique(d.qid[t]))
    ours = [d.query_ids[t] for _, t in query_kfold(d.n_queries, 4, seed=1)]
    assert sorted(np.concatenate(ours).tolist()) == sk_tests
    assert max(map(len, ours)) - min(map(len, ours)) <= 1


@pytest.mark.parametrize("sparse", [False, True])
def test_train_valid_test(sparse):
    d = _data(40, sparse=sparse)
    s = train_valid_test(d, (0.5, 0.25, 0.25), seed=9)
    assert [s[k].n_queries for k in ("train", "valid", "test")] == [20, 10, 10]
    assert sum(v.n_docs for v in s.values()) == d.n_docs
    ids = [set(v.query_ids.tolist()) for v in s.values()]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert train_valid_test(d, (0.5, 0.25, 0.25), seed=9)["test"].fingerprint() == s["test"].fingerprint()
    # query order inside a split follows the original data
    pos = {q: i for i, q in enumerate(d.query_ids.tolist())}
    assert np.all(np.diff([pos[q] for q in s["train"].query_ids.tolist()]) > 0)
    with pytest.raises(ConfigError):
        split_queries(10, [0.5, 0.6], seed=0)
    with pytest.raises(ConfigError, match="empty split"):
        split_queries(2, [0.8, 0.1, 0.1], seed=0)


def test_split_sizes_round_the_cumulative_fractions_to_the_nearest_query():
    """10 queries at (0.66, 0.2, 0.14): 0.66·10 = 6.6 → 7 training queries, 0.86·10 = 8.6 → 9, so 2 valid and
    the last split takes the remaining 1 (rounding each fraction gives the same 7, 2, 1; truncating 6, 2, 2).

    Kills mutant #28 (``np.floor`` for ``np.round`` in ``split_queries``).
    """
    assert [g.size for g in split_queries(10, [0.66, 0.2, 0.14], seed=0)] == [7, 2, 1]
    s = train_valid_test(_data(10), (0.66, 0.2, 0.14), seed=1)
    assert [s[k].n_queries for k in ("train", "valid", "test")] == [7, 2, 1]


def test_mslr_rotation_matches_the_published_layout():
    folds = mslr_folds(["S1", "S2", "S3", "S4", "S5"])
    assert folds[0] == {"train": ["S1", "S2", "S3"], "valid": "S4", "test": "S5"}
    assert folds[4] == {"train": ["S5", "S1", "S2"], "valid": "S3", "test": "S4"}
    assert sorted(f["test"] for f in folds) == ["S1", "S2", "S3", "S4", "S5"]
    # Fold k's test part is Fold k+1's validation part (as the MSLR files' checksums show)
    assert all(folds[k]["test"] == folds[(k + 1) % 5]["valid"] for k in range(5))
    with pytest.raises(ConfigError):
        mslr_folds([1, 2, 3])


def test_mslr_style_folds_on_data():
    d = _data(30)
    folds = mslr_style_folds(d, seed=2)
    assert len(folds) == 5
    for f in folds:
        assert f["train"].n_queries + f["valid"].n_queries + f["test"].n_queries == 30
        assert f["train"].n_docs + f["valid"].n_docs + f["test"].n_docs == d.n_docs
    assert sorted(q for f in folds for q in f["test"].query_ids.tolist()) == sorted(d.query_ids.tolist())
    c = concat([folds[0]["valid"], folds[0]["test"]])
    assert c.n_queries == folds[0]["valid"].n_queries + folds[0]["test"].n_queries

"""The loaders on real files from the real-data folder (LTR_TEST_DATA; facts from its SOURCES.md), cross-checked
against scikit-learn's and XGBoost's own loaders. Skipped when the folder is absent."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from ltr.core.errors import DataError
from ltr.data.svmlight import load_svmlight, read_positions, read_query_sizes

pytestmark = pytest.mark.shared_data


@pytest.fixture(params=["numba", "python"])
def engine(request):
    return request.param


def _label_counts(y):
    vals, counts = np.unique(y, return_counts=True)
    return dict(zip(vals.astype(int).tolist(), counts.tolist(), strict=True))


def test_lightgbm_sample_with_query_sidecar(shared_data, engine):
    path = shared_data / "lightgbm_lambdarank" / "rank.train"
    d = load_svmlight(path, engine=engine, output="csr")
    assert (d.n_docs, d.n_queries) == (3005, 201)
    assert _label_counts(d.y) == {0: 645, 1: 1211, 2: 858, 3: 222, 4: 69}
    assert d.X.nnz == 284_736
    assert np.unique(d.X.indices).shape[0] == 218
    assert d.n_features == 300  # 1-based indices up to 300
    sizes = d.group_sizes
    assert sizes.tolist() == read_query_sizes(str(path) + ".query").tolist()
    assert (sizes.min(), np.median(sizes), sizes.max()) == (1, 15, 27)
    per_q_max = np.maximum.reduceat(d.y, d.offsets[:-1])
    assert int((per_q_max == 0).sum()) == 3
    distinct = [np.unique(d.y[a:b]).shape[0] for a, b in zip(d.offsets[:-1], d.offsets[1:], strict=True)]
    assert sum(k == 1 for k in distinct) == 6
    assert int((sizes == 1).sum()) == 1
    # scikit-learn reads the same matrix (it has no qids; groups come from the sidecar only)
    Xs, ys = load_svmlight_file(str(path), zero_based=False, n_features=300, dtype=np.float32)
    np.testing.assert_array_equal(d.X.toarray(), Xs.toarray())
    np.testing.assert_array_equal(d.y, ys)


def test_lightgbm_sample_agrees_with_lightgbm_and_xgboost(shared_data):
    import lightgbm as lgb
    import xgboost as xgb

    path = shared_data / "lightgbm_lambdarank" / "rank.train"
    d = load_svmlight(path, output="csr")
    ds = lgb.Dataset(str(path), params={"verbose": -1, "num_threads": 1}).construct()
    np.testing.assert_array_equal(ds.get_label(), d.y)
    np.testing.assert_array_equal(np.diff(ds.get_field("group")), d.group_sizes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # XGBoost's text input is deprecated
        dm = xgb.DMatrix(f"{path}?format=libsvm", nthread=1)
    np.testing.assert_array_equal(dm.get_label(), d.y)
    # XGBoost reads LibSVM indices as 0-based: its column j is our column j-1 (it adds an empty column 0)
    Xx = dm.get_data().toarray()
    assert not Xx[:, 0].any()
    np.testing.assert_array_equal(Xx[:, 1:], d.X.toarray())


def test_lightgbm_position_sidecar_crlf(shared_data):
    pos = read_positions(shared_data / "lightgbm_lambdarank" / "_rank.train.position")
    assert pos.shape == (3005,)
    assert not any("\r" in p for p in pos)
    assert set(pos) == {f"pos_{i}" for i in range(1, 28)}


def test_mq2008_crlf_comments_dense(shared_data, engine):
    path = shared_data / "mq2008" / "vali.txt"
    raw = path.read_bytes()
    assert raw.count(b"\r\n") == raw.count(b"\n") == 2707
    d = load_svmlight(path, n_features=46, label_range=(0, 2), docid=True, engine=engine)
    assert not d.is_sparse and d.X.shape == (2707, 46)
    assert d.n_queries == 157
    assert d.query_ids.min() == 15928 and d.query_ids.max() == 18218
    assert np.all(np.diff(d.query_ids) > 0)
    assert _label_counts(d.y) == {0: 2140, 1: 400, 2: 167}
    sizes = d.group_sizes
    assert (sizes.min(), np.median(sizes), sizes.max()) == (6, 8, 118)
    assert int((np.maximum.reduceat(d.y, d.offsets[:-1]) == 0).sum()) == 37
    assert all(x.startswith("GX") for x in d.docid)
    Xs, ys, qs = load_svmlight_file(
        str(path), query_id=True, zero_based=False, n_features=46, dtype=np.float32
    )
    np.testing.assert_array_equal(d.X, Xs.toarray())
    np.testing.assert_array_equal(d.y, ys)
    np.testing.assert_array_equal(d.qid, qs)


def test_mq2008_label_range_enforced(shared_data, engine):
    with pytest.raises(DataError, match=r"vali\.txt:\d+: label 2 is outside label_range \[0, 1\]"):
        load_svmlight(shared_data / "mq2008" / "vali.txt", label_range=(0, 1), engine=engine)


def test_tfranking_unsorted_duplicates(shared_data, engine):
    path = shared_data / "tfranking_synthetic" / "train.txt"
    with pytest.raises(DataError, match=r"train\.txt:1: feature indices must be increasing: 5 after 115"):
        load_svmlight(path, engine=engine)
    # scikit-learn rejects the file outright
    with pytest.raises(ValueError, match="sorted and unique"):
        load_svmlight_file(str(path), query_id=True)
    d = load_svmlight(path, allow_unsorted=True, n_features=136, engine=engine, output="dense")
    assert (d.n_docs, d.n_queries) == (119, 27)
    assert set(np.unique(d.y).tolist()) == {0, 1, 2}
    assert int((d.group_sizes == 1).sum()) == 6
    assert int((np.maximum.reduceat(d.y, d.offsets[:-1]) == 0).sum()) == 3
    # an independent reading of the text: per line, the last value of each index wins
    lines = path.read_text().splitlines()
    dup_rows = 0
    for i, line in enumerate(lines):
        toks = line.split("#")[0].split()[2:]
        seen: dict[int, float] = {}
        for t in toks:
            k, v = t.split(":")
            seen[int(k)] = float(v)
        dup_rows += len(seen) < len(toks)
        want = np.zeros(136, np.float32)
        want[np.array(list(seen)) - 1] = list(seen.values())
        np.testing.assert_array_equal(d.X[i], want)
    assert dup_rows == 82
    # first line: index 17 appears twice (-0.763873 then 0.369905); last wins
    assert d.X[0, 16] == np.float32(0.369905)


def test_tfranking_xgboost_keeps_duplicates(shared_data):
    """For contrast: XGBoost accepts the file silently and keeps both entries (they add up)."""
    import xgboost as xgb

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dm = xgb.DMatrix(f"{shared_data / 'tfranking_synthetic' / 'train.txt'}?format=libsvm", nthread=1)
    row0 = dm.get_data()[0].toarray()[0]
    assert row0[17] == pytest.approx(-0.763873 + 0.369905, abs=1e-6)

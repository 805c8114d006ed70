"""Normalisation: naive per-query references, scikit-learn scalers, fit-on-train-only, NaN handling."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.normalize import METHODS, Normalizer, normalize_splits


def _data(seed=0, n_q=12):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, n_q)
    n = int(sizes.sum())
    X = (rng.normal(size=(n, 5)) * [1, 10, 100, 0, 3]).astype(np.float32)
    X[:, 3] = 7.0  # constant everywhere
    return RankingData(X=X, y=rng.integers(0, 3, n), qid=np.repeat(np.arange(n_q), sizes))


def test_query_minmax_matches_sklearn_per_query():
    d = _data()
    got = Normalizer("query_minmax").fit(d).transform(d).X
    for a, b in zip(d.offsets[:-1], d.offsets[1:], strict=True):
        block = d.X[a:b].astype(np.float64)
        want = MinMaxScaler().fit_transform(block)  # scikit-learn maps constant columns to 0 too
        np.testing.assert_allclose(got[a:b], want, rtol=1e-6, atol=1e-6)


def test_query_zscore_matches_sklearn_per_query():
    d = _data(1)
    got = Normalizer("query_zscore").fit(d).transform(d).X
    for a, b in zip(d.offsets[:-1], d.offsets[1:], strict=True):
        want = StandardScaler().fit_transform(d.X[a:b].astype(np.float64))
        np.testing.assert_allclose(got[a:b], want, rtol=1e-5, atol=1e-5)


def test_global_zscore_is_fitted_on_train_only():
    tr, te = _data(2), _data(3)
    out = normalize_splits({"train": tr, "test": te}, "zscore")
    sk = StandardScaler().fit(tr.X.astype(np.float64))
    want = sk.transform(te.X.astype(np.float64))
    want[:, 3] = 0.0  # constant in training: scikit-learn divides by 1 (7 - 7 = 0); same here
    np.testing.assert_allclose(out["test"].X, want, rtol=1e-5, atol=1e-5)
    assert out["test"].X.dtype == np.float32
    with pytest.raises(ConfigError, match="must be fitted"):
        Normalizer("zscore").transform(tr)


def test_log1p_and_none_and_sparse():
    d = _data(4)
    np.testing.assert_allclose(
        Normalizer("log1p").transform(d).X, np.sign(d.X) * np.log1p(np.abs(d.X)), rtol=1e-6
    )
    assert Normalizer("none").fit(d).transform(d) is d
    s = RankingData(X=sp.csr_matrix(d.X), y=d.y, qid=d.qid)
    ls = Normalizer("log1p").transform(s)
    assert ls.is_sparse
    np.testing.assert_allclose(ls.X.toarray(), Normalizer("log1p").transform(d).X, rtol=1e-6)
    np.testing.assert_allclose(
        Normalizer("query_minmax").transform(s).X, Normalizer("query_minmax").transform(d).X
    )


def test_nan_stays_missing():
    d = _data(5)
    X = d.X.copy()
    X[0, 0] = np.nan
    dn = RankingData(X=X, y=d.y, qid=d.qid)
    for m in ("query_minmax", "query_zscore", "zscore", "log1p"):
        out = Normalizer(m).fit(dn).transform(dn).X
        assert np.isnan(out[0, 0]) and np.isfinite(out[1:, :]).all(), m


def test_unknown_method():
    with pytest.raises(ConfigError, match=r"^method: expected one of \['none', .*\], got 'l2'$"):
        Normalizer("l2")
    assert set(METHODS) == {"none", "query_minmax", "query_zscore", "zscore", "log1p"}

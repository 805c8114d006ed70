"""Feature normalisation for ranking data, fitted on the training split only.

Methods (``x`` one feature value, per column):

* ``none`` — unchanged (the default: tree ensembles do not need it);
* ``query_minmax`` — LETOR QueryLevelNorm: ``(x - min_q) / (max_q - min_q)`` over the documents of
  the same query, 0 where the feature is constant within the query;
* ``query_zscore`` — ``(x - mean_q) / std_q`` within each query (population std), 0 where constant;
* ``zscore`` — global ``(x - mean) / std`` with mean and std **fitted on the training split**, 0 for
  features constant in training;
* ``log1p`` — ``sign(x) · log(1 + |x|)`` (stateless; keeps sparsity).

Per-query methods use only each query's own documents, so they need no fitted state and leak
nothing across splits; ``zscore`` stores the training statistics and applies them to every split.
NaN (missing) values stay NaN and are ignored by the statistics.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> tr = RankingData(X=np.array([[1, 5], [3, 5], [10, 0]], np.float32), y=[1, 0, 1], qid=[1, 1, 2])
>>> Normalizer("query_minmax").fit(tr).transform(tr).X.tolist()
[[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
>>> Normalizer("zscore").fit(tr).transform(tr).X[:, 0].astype(float).round(3).tolist()  # (x - 14/3) / 3.859
[-0.95, -0.432, 1.382]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError
from ltr.data.dataset import RankingData

METHODS = ("none", "query_minmax", "query_zscore", "zscore", "log1p")


def _with_X(data: RankingData, X) -> RankingData:
    return RankingData(X=X, y=data.y, qid=data.qid, name=data.name, weight=data.weight, docid=data.docid)


def _dense64(data: RankingData) -> np.ndarray:
    X = data.X.toarray() if data.is_sparse else np.asarray(data.X)
    return X.astype(np.float64)


def _group_reduce(X: np.ndarray, offsets: np.ndarray, how: str) -> np.ndarray:
    """Per query and column: nan-aware min / max / mean / std, shape (n_queries, n_features)."""
    starts = offsets[:-1]
    if how == "min":
        return np.fmin.reduceat(X, starts, axis=0)
    if how == "max":
        return np.fmax.reduceat(X, starts, axis=0)
    ok = ~np.isnan(X)
    cnt = np.add.reduceat(ok, starts, axis=0).astype(np.float64)
    s = np.add.reduceat(np.where(ok, X, 0.0), starts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / cnt
        if how == "mean":
            return mean
        dev = np.where(ok, X - np.repeat(mean, np.diff(offsets), axis=0), 0.0)
        return np.sqrt(np.add.reduceat(dev * dev, starts, axis=0) / cnt)


@dataclass
class Normalizer:
    """``Normalizer(method).fit(train).transform(split)``; only ``zscore`` learns state from ``train``."""

    method: str = "none"
    mean_: np.ndarray | None = field(default=None, repr=False)
    scale_: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_value(self.method, str, Constraint(choices=METHODS), "method")

    def fit(self, train: RankingData) -> Normalizer:
        if self.method == "zscore":
            X = _dense64(train)
            self.mean_ = np.nanmean(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
            std = np.nanstd(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
            self.scale_ = np.where(std > 0, std, np.inf)  # constant in training -> 0 after scaling
        return self

    def transform(self, data: RankingData) -> RankingData:
        m = self.method
        if m == "none":
            return data
        if m == "log1p":
            if data.is_sparse:
                X = sp.csr_matrix(data.X, copy=True)
                X.data = (np.sign(X.data) * np.log1p(np.abs(X.data))).astype(X.dtype)
                return _with_X(data, X)
            X = np.asarray(data.X)
            return _with_X(data, (np.sign(X) * np.log1p(np.abs(X))).astype(X.dtype))
        dtype = data.X.dtype if data.X.dtype in (np.float32, np.float64) else np.float32
        X = _dense64(data)
        if m == "zscore":
            if self.mean_ is None or self.scale_ is None:
                raise ConfigError(
                    "Normalizer('zscore') must be fitted on the training split before transform"
                )
            if self.mean_.shape[0] != X.shape[1]:
                raise ConfigError(f"fitted on {self.mean_.shape[0]} features, got data with {X.shape[1]}")
            return _with_X(data, ((X - self.mean_) / self.scale_).astype(dtype))
        sizes = np.diff(data.offsets)
        if m == "query_minmax":
            lo = np.repeat(_group_reduce(X, data.offsets, "min"), sizes, axis=0)
            hi = np.repeat(_group_reduce(X, data.offsets, "max"), sizes, axis=0)
            span = hi - lo
            out = np.where(
                span > 0, (X - lo) / np.where(span > 0, span, 1.0), np.where(np.isnan(X), np.nan, 0.0)
            )
        else:  # query_zscore
            mu = np.repeat(_group_reduce(X, data.offsets, "mean"), sizes, axis=0)
            sd = np.repeat(_group_reduce(X, data.offsets, "std"), sizes, axis=0)
            out = np.where(sd > 0, (X - mu) / np.where(sd > 0, sd, 1.0), np.where(np.isnan(X), np.nan, 0.0))
        return _with_X(data, out.astype(dtype))


def normalize_splits(splits: dict[str, RankingData], method: str = "none") -> dict[str, RankingData]:
    """Fit on ``splits["train"]`` and transform every split."""
    if "train" not in splits:
        raise ConfigError("normalize_splits needs a 'train' split to fit on")
    norm = Normalizer(method).fit(splits["train"])
    return {name: norm.transform(d) for name, d in splits.items()}

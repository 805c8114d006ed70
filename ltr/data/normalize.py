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
NaN (missing) values stay NaN and are ignored by the statistics. A feature constant in training
(``std == 0``) maps every non-missing value to 0 (±inf included).

A fitted normaliser is plain JSON (:meth:`Normalizer.to_manifest` / :meth:`Normalizer.from_manifest`:
method, and for ``zscore`` the per-column ``mean`` and ``std``), which a saved model keeps in its
manifest. Statistics of data held in parts (Dask shards) combine exactly: :func:`column_moments` per
part (count, mean, M2 = Σ(x − mean)² per column, NaN ignored) and :func:`combine_moments` (Chan et
al.'s pairwise update ``M2 = M2_a + M2_b + δ²·n_a·n_b/n``, δ = mean_b − mean_a), never raw sums of
squares, which cancel catastrophically for large means.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> tr = RankingData(X=np.array([[1, 5], [3, 5], [10, 0]], np.float32), y=[1, 0, 1], qid=[1, 1, 2])
>>> Normalizer("query_minmax").fit(tr).transform(tr).X.tolist()
[[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
>>> Normalizer("zscore").fit(tr).transform(tr).X[:, 0].astype(float).round(3).tolist()  # (x - 14/3) / 3.859
[-0.95, -0.432, 1.382]
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError
from ltr.data.dataset import RankingData

METHODS = ("none", "query_minmax", "query_zscore", "zscore", "log1p")
#: methods whose value for a document depends on the other documents of its query
PER_QUERY = ("query_minmax", "query_zscore")


def _with_X(data: RankingData, X) -> RankingData:
    """``data`` with new features; everything else kept (``position``, and ``features``: the columns a
    ``data.features`` selection kept, which a model trained on the normalised split must know)."""
    return dataclasses.replace(data, X=X)


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


def signed_log1p(x: np.ndarray) -> np.ndarray:
    """``sign(x) · log(1 + |x|)`` elementwise, in ``x``'s float type (NaN stays NaN, 0 stays 0): the ``log1p``
    method here and the neural rankers' ``log1p_zscore`` transform.

    >>> signed_log1p(np.array([-np.e + 1, 0.0, np.nan])).round(12).tolist()
    [-1.0, 0.0, nan]
    """
    return np.sign(x) * np.log1p(np.abs(x))


@dataclass(frozen=True)
class Moments:
    """Per column of some rows: non-NaN ``count``, ``mean`` and ``m2`` (sum of squared deviations from the mean)."""

    count: np.ndarray
    mean: np.ndarray
    m2: np.ndarray


def column_moments(X: Any) -> Moments:
    """:class:`Moments` of the columns of ``X`` (dense or CSR), NaN ignored (a Dask shard's part of ``zscore``).

    >>> m = column_moments(np.array([[1.0, np.nan], [3.0, 4.0]]))
    >>> m.count.tolist(), m.mean.tolist(), m.m2.tolist()
    ([2.0, 1.0], [2.0, 4.0], [2.0, 0.0])
    """
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    X = X.astype(np.float64)
    ok = ~np.isnan(X)
    count = ok.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, np.where(ok, X, 0.0).sum(axis=0) / count, 0.0)
    dev = np.where(ok, X - mean, 0.0)
    return Moments(count, mean, (dev * dev).sum(axis=0))


def combine_moments(parts: list[Moments]) -> Moments:
    """The :class:`Moments` of all the rows of ``parts`` (Chan et al.'s pairwise update, in order):
    ``n = n_a + n_b``, ``δ = mean_b − mean_a``, ``mean = mean_a + δ·n_b/n``, ``M2 = M2_a + M2_b + δ²·n_a·n_b/n``.

    >>> X = np.array([[1.0], [2.0], [4.0], [8.0]])
    >>> m = combine_moments([column_moments(X[:1]), column_moments(X[1:])])
    >>> float(m.mean[0]), float(m.m2[0]) / 4 == float(np.var(X))
    (3.75, True)
    """
    if not parts:
        raise ConfigError("combine_moments: no parts to combine")
    total = parts[0]
    for part in parts[1:]:
        n = total.count + part.count
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(n > 0, part.count / np.where(n > 0, n, 1.0), 0.0)
        delta = part.mean - total.mean
        total = Moments(
            n, total.mean + delta * share, total.m2 + part.m2 + delta * delta * total.count * share
        )
    return total


@dataclass
class Normalizer:
    """``Normalizer(method).fit(train).transform(split)``; only ``zscore`` learns state from ``train``."""

    method: str = "none"
    mean_: np.ndarray | None = field(default=None, repr=False)
    scale_: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_value(self.method, str, Constraint(choices=METHODS), "method")

    @property
    def per_query(self) -> bool:
        """True when a document's value depends on its query's other documents (needs query ids)."""
        return self.method in PER_QUERY

    def fit(self, train: RankingData) -> Normalizer:
        if self.method == "zscore":
            X = _dense64(train)
            with warnings.catch_warnings():  # a column with no value in training: mean NaN -> std 0 below
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
                std = np.nanstd(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
            self._set_statistics(mean, std)
        return self

    def _set_statistics(self, mean: np.ndarray, std: np.ndarray) -> None:
        ok = np.isfinite(std) & (std > 0)
        self.mean_ = np.where(ok, mean, 0.0).astype(np.float64)
        self.scale_ = np.where(ok, std, np.inf).astype(np.float64)  # constant in training -> 0 after scaling

    @classmethod
    def from_moments(cls, moments: Moments) -> Normalizer:
        """A fitted ``zscore`` from combined :func:`column_moments` (population std = sqrt(M2 / count)).

        >>> Normalizer.from_moments(column_moments(np.array([[1.0], [3.0]]))).scale_.tolist()
        [1.0]
        """
        norm = cls("zscore")
        count = moments.count
        std = np.sqrt(np.where(count > 0, moments.m2 / np.maximum(count, 1.0), 0.0))
        norm._set_statistics(np.asarray(moments.mean, np.float64), std)
        return norm

    def to_manifest(self) -> dict[str, Any]:
        """The fitted normaliser as JSON: ``{"method", "mean", "std"}`` (``std`` 0 = constant in training).

        >>> Normalizer.from_manifest({"method": "zscore", "mean": [1.0], "std": [0.0]}, "m").scale_.tolist()
        [inf]
        """
        out: dict[str, Any] = {"method": self.method}
        if self.method == "zscore":
            if self.mean_ is None or self.scale_ is None:
                raise ConfigError("Normalizer('zscore') must be fitted before it is saved")
            out["mean"] = [float(v) for v in self.mean_]
            out["std"] = [float(v) if np.isfinite(v) else 0.0 for v in self.scale_]
        return out

    @classmethod
    def from_manifest(cls, entry: Any, where: str) -> Normalizer | None:
        """The normaliser a manifest entry describes (None for none / no entry); errors name ``where``."""
        if entry is None:
            return None
        if not isinstance(entry, dict) or entry.get("method") not in METHODS:
            raise ConfigError(
                f"{where}: 'normalize' must be {{method: one of {', '.join(METHODS)}}}, got {entry!r}"
            )
        norm = cls(entry["method"])
        if norm.method == "none":
            return None
        if norm.method == "zscore":
            try:
                mean = np.asarray(entry["mean"], dtype=np.float64)
                std = np.asarray(entry["std"], dtype=np.float64)
            except (KeyError, TypeError, ValueError):
                raise ConfigError(
                    f"{where}: 'normalize' zscore needs numeric lists 'mean' and 'std'"
                ) from None
            if mean.ndim != 1 or mean.shape != std.shape:
                raise ConfigError(f"{where}: 'normalize' mean and std must be lists of one length")
            norm._set_statistics(mean, std)
        return norm

    def values(self, x: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """The float32 value :meth:`transform` gives float32 ``x`` in feature ``columns`` (elementwise;
        global methods only): the one formula transform and export's threshold folding both use."""
        x = np.asarray(x, dtype=np.float32)
        if self.method == "log1p":
            return signed_log1p(x).astype(np.float32)
        if self.method == "zscore":
            mean, scale = self.mean_[columns], self.scale_[columns]  # type: ignore[index]
            with np.errstate(invalid="ignore"):
                out = (x.astype(np.float64) - mean) / scale
            constant = ~np.isfinite(scale) & ~np.isnan(x)
            return np.where(constant, 0.0, out).astype(np.float32)
        if self.method == "none":
            return x
        raise ConfigError(f"Normalizer({self.method!r}).values: a per-query method has no per-value formula")

    def transform(self, data: RankingData) -> RankingData:
        m = self.method
        if m == "none":
            return data
        if m == "log1p":
            if data.is_sparse:
                X = sp.csr_matrix(data.X, copy=True)
                X.data = signed_log1p(X.data).astype(X.dtype)
                return _with_X(data, X)
            X = np.asarray(data.X)
            return _with_X(data, signed_log1p(X).astype(X.dtype))
        dtype = data.X.dtype if data.X.dtype in (np.float32, np.float64) else np.float32
        X = _dense64(data)
        if m == "zscore":
            if self.mean_ is None or self.scale_ is None:
                raise ConfigError(
                    "Normalizer('zscore') must be fitted on the training split before transform"
                )
            if self.mean_.shape[0] != X.shape[1]:
                raise ConfigError(f"fitted on {self.mean_.shape[0]} features, got data with {X.shape[1]}")
            with np.errstate(invalid="ignore"):
                out = (X - self.mean_) / self.scale_
            constant = ~np.isfinite(self.scale_) & ~np.isnan(X)  # ±inf too: 0, not inf/inf = NaN
            return _with_X(data, np.where(constant, 0.0, out).astype(dtype))
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

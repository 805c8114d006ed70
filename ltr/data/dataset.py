"""The in-memory ranking dataset every stage of ``ltr`` passes around.

A :class:`RankingData` holds one split of a LETOR-style dataset: a feature matrix ``X`` (one row
per document), graded relevance labels ``y``, and the query id ``qid`` of each row. Rows of one
query are contiguous, so the queries are described by ``offsets``: query ``i`` owns rows
``offsets[i]:offsets[i + 1]``.

Example
-------
>>> import numpy as np
>>> d = RankingData(X=np.zeros((5, 2), np.float32), y=np.array([2, 0, 1, 0, 3]),
...                 qid=np.array([7, 7, 7, 9, 9]))
>>> d.n_queries, d.offsets.tolist(), d.query_ids.tolist(), d.group_sizes.tolist()
(2, [0, 3, 5], [7, 9], [3, 2])
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ltr.errors import DataError

FeatureMatrix = np.ndarray | sp.csr_matrix | sp.csr_array


def offsets_from_qid(qid: np.ndarray, *, source: str = "data") -> np.ndarray:
    """Group offsets of contiguous qid blocks: ``offsets[i]:offsets[i+1]`` are the rows of query ``i``.

    Raises :class:`DataError` naming the qid and both row ranges (1-based, inclusive) when a qid
    appears in two separate blocks.

    >>> offsets_from_qid(np.array([3, 3, 1, 1, 1])).tolist()
    [0, 2, 5]
    """
    qid = np.asarray(qid)
    n = qid.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    offsets = np.r_[starts, n].astype(np.int64)
    block_q = qid[starts]
    _, first_block, inverse = np.unique(block_q, return_index=True, return_inverse=True)
    repeated = np.flatnonzero(first_block[inverse] != np.arange(block_q.shape[0]))
    if repeated.size:  # name the first split in row order
        second = int(repeated[0])
        first = int(first_block[inverse[second]])
        q = block_q[second]
        raise DataError(
            f"{source}: qid {q} appears in two separate blocks "
            f"(rows {offsets[first] + 1}-{offsets[first + 1]} and {offsets[second] + 1}-{offsets[second + 1]}); "
            "rows of one query must be contiguous (regroup them, or load with regroup=True)"
        )
    return offsets


@dataclass(frozen=True, eq=False)
class RankingData:
    """One split of a ranking dataset: features, labels and contiguous query blocks.

    Attributes
    ----------
    X : (n_docs, n_features) float32 ndarray or CSR matrix.
    y : (n_docs,) relevance labels (float64; graded labels are whole numbers).
    qid : (n_docs,) int64 query id of each row; each query's rows are contiguous.
    name : a label for messages (usually the source file).
    weight : optional per-query weights, shape (n_queries,).
    docid : optional per-row document ids (e.g. LETOR ``#docid = ...`` comments).
    position : optional per-row display position ids (int64; LightGBM's ``.position`` sidecar, click
        logs), used by position-debiased training.
    """

    X: FeatureMatrix
    y: np.ndarray
    qid: np.ndarray
    name: str = "data"
    weight: np.ndarray | None = None
    docid: np.ndarray | None = None
    position: np.ndarray | None = None
    offsets: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        y = np.asarray(self.y, dtype=np.float64)
        qid = np.asarray(self.qid)
        if qid.dtype.kind not in "iu":
            raise DataError(f"{self.name}: qid must be integers, got dtype {qid.dtype}")
        qid = qid.astype(np.int64, copy=False)
        X = self.X
        if not sp.issparse(X):
            X = np.asarray(X)
            if X.ndim != 2:
                raise DataError(f"{self.name}: X must be 2-D, got shape {X.shape}")
        if y.ndim != 1 or qid.ndim != 1 or not (X.shape[0] == y.shape[0] == qid.shape[0]):
            raise DataError(
                f"{self.name}: X, y and qid must have the same number of rows, got "
                f"{X.shape[0]}, {y.shape[0]} and {qid.shape[0]}"
            )
        offsets = offsets_from_qid(qid, source=self.name)
        if self.weight is not None:
            w = np.asarray(self.weight, dtype=np.float64)
            if w.shape != (offsets.shape[0] - 1,):
                raise DataError(
                    f"{self.name}: weight must have one value per query ({offsets.shape[0] - 1}), got shape {w.shape}"
                )
            object.__setattr__(self, "weight", w)
        if self.position is not None:
            pos = np.asarray(self.position)
            if pos.shape != y.shape or pos.dtype.kind not in "iu":
                raise DataError(
                    f"{self.name}: position must hold one integer per row ({y.shape[0]}), "
                    f"got shape {pos.shape} and dtype {pos.dtype}"
                )
            object.__setattr__(self, "position", pos.astype(np.int64, copy=False))
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "qid", qid)
        object.__setattr__(self, "offsets", offsets)

    # --- shape -----------------------------------------------------------------------------
    @property
    def n_docs(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_queries(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def group_sizes(self) -> np.ndarray:
        """Documents per query, in row order (LightGBM's ``group`` / ``.query`` file)."""
        return np.diff(self.offsets)

    @property
    def query_ids(self) -> np.ndarray:
        """The qid of each query, in row order."""
        return self.qid[self.offsets[:-1]]

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X)

    # --- selection -------------------------------------------------------------------------
    def row_indices(self, queries: np.ndarray) -> np.ndarray:
        """Row indices of the given query positions (0-based positions, not qids), in that order."""
        queries = np.asarray(queries, dtype=np.int64)
        starts = self.offsets[queries]
        sizes = self.offsets[queries + 1] - starts
        if sizes.sum() == 0:
            return np.zeros(0, dtype=np.int64)
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return np.repeat(starts, sizes) + within

    def subset(self, queries: np.ndarray, *, name: str | None = None) -> RankingData:
        """A new dataset with the given query positions (0-based), in the given order.

        >>> d = RankingData(X=np.eye(4, dtype=np.float32), y=[1, 0, 2, 0], qid=[1, 1, 2, 3])
        >>> d.subset(np.array([2, 0])).qid.tolist()
        [3, 1, 1]
        """
        rows = self.row_indices(queries)
        return RankingData(
            X=self.X[rows],
            y=self.y[rows],
            qid=self.qid[rows],
            name=name or self.name,
            weight=None if self.weight is None else self.weight[np.asarray(queries)],
            docid=None if self.docid is None else self.docid[rows],
            position=None if self.position is None else self.position[rows],
        )

    def dense(self) -> np.ndarray:
        """Features as a dense float32 array (converted from CSR when needed)."""
        if self.is_sparse:
            return np.asarray(self.X.toarray(), dtype=np.float32)
        return np.asarray(self.X)

    # --- identity --------------------------------------------------------------------------
    def fingerprint(self) -> str:
        """A short content hash of X, y and qid (sha256, first 16 hex digits), for run records."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.y).tobytes())
        h.update(np.ascontiguousarray(self.qid).tobytes())
        if self.is_sparse:
            X = sp.csr_matrix(self.X)
            for part in (X.indptr, X.indices, X.data):
                h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(np.ascontiguousarray(self.X).tobytes())
        h.update(str(self.X.shape).encode())
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        kind = "csr" if self.is_sparse else "dense"
        return (
            f"RankingData(name={self.name!r}, queries={self.n_queries}, docs={self.n_docs}, "
            f"features={self.n_features}, {kind})"
        )

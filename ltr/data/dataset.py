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

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import DataError

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


#: Matrix entries per block of rows while fingerprinting: bounds the temporary memory of a matrix
#: that must be converted (another dtype, not C-contiguous). Parts add up, so blocks change nothing.
_BLOCK_ENTRIES = 1 << 22

#: the fingerprint's version: fingerprints of another version are never equal to these
FINGERPRINT_VERSION = b"ltr.RankingData/2"
_LANE_MODULUS = 1 << 64
#: the dtypes the fingerprint kernels are compiled for (:mod:`ltr.data._fingerprint`); others are converted
_FLOATS, _INDICES = (np.float32, np.float64), (np.int32, np.int64)


def _kernel_dtype(dtype: np.dtype, compiled: tuple[type, ...]) -> type:
    """``dtype`` when the fingerprint kernels are compiled for it, else the last (widest) of ``compiled``.

    >>> _kernel_dtype(np.dtype(np.int8), (np.float32, np.float64)).__name__
    'float64'
    """
    return next((t for t in compiled if dtype == t), compiled[-1])


@dataclass(frozen=True)
class FingerprintPart:
    """The fingerprint's sums over rows ``first_row .. first_row + n_rows - 1`` of a split
    (:meth:`RankingData.fingerprint_part`); :func:`combine_fingerprint` turns the parts of all the
    rows into the split's fingerprint. Small: a Dask worker sends one per shard."""

    first_row: int
    n_rows: int
    n_features: int
    lanes: tuple[int, int]


def combine_fingerprint(parts: Iterable[FingerprintPart]) -> str:
    """The fingerprint of a split from the parts of its rows: ``sha256(version, shape, lane sums)``,
    first 16 hex digits, where the lane sums are the parts' lanes added mod 2^64.

    The parts (any order) must cover rows ``0 .. n - 1`` once each, and have one width (a ``ValueError``
    otherwise): parts of shards cut anywhere give the fingerprint of the rows in one piece.

    >>> d = RankingData(X=np.eye(3, dtype=np.float32), y=[1, 0, 2], qid=[1, 1, 2])
    >>> parts = [d.subset(np.array([1])).fingerprint_part(first_row=2), d.subset(np.array([0])).fingerprint_part()]
    >>> combine_fingerprint(parts) == d.fingerprint()
    True
    """
    parts = sorted(parts, key=lambda p: p.first_row)
    if not parts:
        raise ValueError("combine_fingerprint: no parts")
    widths = {p.n_features for p in parts}
    if len(widths) > 1:
        raise ValueError(f"combine_fingerprint: parts of one split have different widths {sorted(widths)}")
    lanes = [0, 0]
    row = 0
    for p in parts:
        if p.first_row != row:
            raise ValueError(
                f"combine_fingerprint: a part starts at row {p.first_row}, expected {row} "
                "(the parts must cover every row once)"
            )
        row += p.n_rows
        lanes = [(a + b) % _LANE_MODULUS for a, b in zip(lanes, p.lanes, strict=True)]
    h = hashlib.sha256(FINGERPRINT_VERSION)
    h.update(np.array([row, widths.pop()], dtype="<i8").tobytes())
    h.update(np.array(lanes, dtype="<u8").tobytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class FeatureSelection:
    """The columns a run kept of a wider dataset (``data.features``, :mod:`ltr.data.features`).

    ``ids``: the kept 1-based feature ids of the original rows, ascending; ``n_features``: the
    original width; ``names``: their names when a names file gave them. A model trained on selected
    columns keeps this and applies :meth:`select` to full-width rows.

    >>> s = FeatureSelection(ids=(1, 3), n_features=4)
    >>> s.select(np.arange(8.0).reshape(2, 4)).tolist(), s.columns.tolist()
    ([[0.0, 2.0], [4.0, 6.0]], [0, 2])
    >>> FeatureSelection.from_json(s.to_json()) == s
    True
    """

    ids: tuple[int, ...]
    n_features: int
    names: tuple[str, ...] | None = None

    @property
    def columns(self) -> np.ndarray:
        """The kept 0-based column indices of the original rows."""
        return np.asarray(self.ids, dtype=np.int64) - 1

    def select(self, X: FeatureMatrix) -> FeatureMatrix:
        """The kept columns of a full-width matrix (dense or CSR), in ``ids`` order."""
        if X.shape[1] != self.n_features:
            raise DataError(
                f"feature selection: expected {self.n_features} feature columns (the original width), got {X.shape[1]}"
            )
        return X[:, self.columns]

    def widen(self, X: np.ndarray, fill: float = np.nan) -> np.ndarray:
        """Rows of the kept columns (dense) as full-width rows: each at its id, ``fill`` in the others.

        >>> FeatureSelection(ids=(2,), n_features=3).widen(np.array([[5.0]])).tolist()
        [[nan, 5.0, nan]]
        """
        X = np.asarray(X)
        full = np.full((X.shape[0], self.n_features), fill, dtype=np.result_type(X.dtype, np.float32))
        full[:, self.columns] = X
        return full

    def to_json(self) -> dict:
        """A JSON-able record (a saved model's manifest ``feature_selection``)."""
        return {
            "ids": list(self.ids),
            "n_features": self.n_features,
            "names": None if self.names is None else list(self.names),
        }

    @classmethod
    def from_json(cls, record: dict | None) -> FeatureSelection | None:
        """The selection a manifest records (``None`` when it records none)."""
        if not record:
            return None
        names = record.get("names")
        return cls(
            ids=tuple(int(i) for i in record["ids"]),
            n_features=int(record["n_features"]),
            names=None if names is None else tuple(str(n) for n in names),
        )


@dataclass(frozen=True, eq=False)
class RankingData:
    """One split of a ranking dataset: features, labels and contiguous query blocks.

    Attributes
    ----------
    X : (n_docs, n_features) ndarray or CSR matrix (the parser gives float32 by default, float64 with
        ``dtype="float64"``; arrays built by hand keep their dtype).
    y : (n_docs,) relevance labels (float64; graded labels are whole numbers).
    qid : (n_docs,) int64 query id of each row; each query's rows are contiguous.
    name : a label for messages (usually the source file).
    weight : optional per-query weights, shape (n_queries,).
    docid : optional per-row document ids (e.g. LETOR ``#docid = ...`` comments).
    position : optional per-row display position ids (int64; LightGBM's ``.position`` sidecar, click
        logs), used by position-debiased training.
    features : the :class:`FeatureSelection` ``X``'s columns are of a wider file (``data.features``);
        ``None``: every column of the file.
    """

    X: FeatureMatrix
    y: np.ndarray
    qid: np.ndarray
    name: str = "data"
    weight: np.ndarray | None = None
    docid: np.ndarray | None = None
    position: np.ndarray | None = None
    features: FeatureSelection | None = None
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
            features=self.features,
        )

    def with_features(self, selection: FeatureSelection) -> RankingData:
        """This split cut to a :class:`FeatureSelection`'s columns, recording it (rows unchanged).

        >>> d = RankingData(X=np.eye(3, dtype=np.float32), y=[1, 0, 2], qid=[1, 1, 2])
        >>> d.with_features(FeatureSelection(ids=(2,), n_features=3)).X.tolist()
        [[0.0], [1.0], [0.0]]
        """
        return dataclasses.replace(self, X=selection.select(self.X), features=selection)

    def dense(self) -> np.ndarray:
        """Features as a dense ndarray: a CSR ``X`` is expanded to float32 (the parser's default width;
        a float64 CSR matrix is narrowed), a dense ``X`` is returned as it is (its own dtype, no copy).

        >>> d = RankingData(X=sp.csr_matrix(np.array([[0.0, 1.5]])), y=[1], qid=[1])
        >>> d.dense().dtype.name, d.dense().tolist()
        ('float32', [[0.0, 1.5]])
        >>> RankingData(X=np.zeros((1, 2)), y=[1], qid=[1]).dense().dtype.name
        'float64'
        """
        if self.is_sparse:
            return np.asarray(self.X.toarray(), dtype=np.float32)
        return np.asarray(self.X)

    # --- identity --------------------------------------------------------------------------
    def fingerprint(self) -> str:
        """A content hash of ``X``, ``y`` and ``qid``: 16 hex digits (version ``ltr.RankingData/2``).

        It hashes the values, not their storage: the shape of ``X``, and for every row ``r`` a term
        of ``(r, y[r], qid[r])`` and for every non-zero entry a term of ``(r, column, value as
        float64)``, summed mod 2^64 in two lanes (:mod:`ltr.data._fingerprint`), then
        ``sha256(version, shape, lanes)``. So a dense and a CSR matrix of the same values, float32
        or float64 storage of the same numbers, and CSR matrices with unsorted indices, duplicate
        entries (summed) or explicit zeros all give the same fingerprint; any changed value, label,
        qid, row order or shape gives another. ``-0.0`` counts as zero, every NaN as one value.
        ``weight``, ``docid``, ``position`` and ``name`` are not part of it. The sums of a range of
        rows (:meth:`fingerprint_part`) add up, so Dask workers fingerprint their shards and the
        driver gets this same value (:func:`combine_fingerprint`).

        >>> X = np.array([[0.0, 1.5], [2.0, 0.0]], dtype=np.float32)
        >>> a = RankingData(X=X, y=[1, 0], qid=[1, 1])
        >>> a.fingerprint() == RankingData(X=sp.csr_matrix(X.astype(np.float64)), y=[1, 0], qid=[1, 1]).fingerprint()
        True
        >>> a.fingerprint() == RankingData(X=X * 2, y=[1, 0], qid=[1, 1]).fingerprint()
        False
        """
        return combine_fingerprint([self.fingerprint_part()])

    def fingerprint_part(self, first_row: int = 0) -> FingerprintPart:
        """The fingerprint's sums over these rows, taken as rows ``first_row ..`` of a larger split
        (:func:`combine_fingerprint` adds the parts of all its rows).

        >>> d = RankingData(X=np.eye(2, dtype=np.float32), y=[1, 0], qid=[1, 1])
        >>> d.fingerprint_part().n_rows, d.fingerprint_part(5).lanes == d.fingerprint_part().lanes
        (2, False)
        """
        # deferred: numba (~0.3 s to import); import ltr.data stays light
        from ltr.data._fingerprint import csr_lanes, dense_lanes

        X = self.X
        n_rows, n_features = X.shape
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            if not X.has_canonical_format:  # duplicate entries: summed on a copy (as they mean)
                X = X.copy()
                X.sum_duplicates()
            data = np.ascontiguousarray(X.data, dtype=_kernel_dtype(X.data.dtype, _FLOATS))
            indices = np.ascontiguousarray(X.indices, dtype=_kernel_dtype(X.indices.dtype, _INDICES))
        rows_per_block = max(1, _BLOCK_ENTRIES // max(1, n_features))
        lanes = [0, 0]
        for start in range(0, n_rows, rows_per_block):  # the kernels are called per block of rows
            stop = min(start + rows_per_block, n_rows)
            y, qid = np.ascontiguousarray(self.y[start:stop]), np.ascontiguousarray(self.qid[start:stop])
            row = first_row + start
            if sp.issparse(X):
                indptr = X.indptr[start : stop + 1].astype(np.int64)
                got = csr_lanes(data, indices, indptr, y, qid, row)
            else:
                block = np.ascontiguousarray(X[start:stop], dtype=_kernel_dtype(X.dtype, _FLOATS))
                got = dense_lanes(block, y, qid, row)
            lanes = [(a + int(b)) % _LANE_MODULUS for a, b in zip(lanes, got, strict=True)]
        return FingerprintPart(int(first_row), int(n_rows), int(n_features), (lanes[0], lanes[1]))

    def __repr__(self) -> str:
        kind = "csr" if self.is_sparse else "dense"
        return (
            f"RankingData(name={self.name!r}, queries={self.n_queries}, docs={self.n_docs}, "
            f"features={self.n_features}, {kind})"
        )

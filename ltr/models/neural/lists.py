"""Query lists as padded blocks for the neural rankers: a batch at a time, never the whole file.

A batch of ``B`` queries becomes ``rows[B, L]`` — the row numbers of each query's documents, ``-1``
on padding — and from it ``x[B, L, F]``, ``labels[B, L]`` and ``mask[B, L]``. ``L`` is the longest
list of the batch rounded up to a power of two (at least :data:`MIN_LENGTH`), so a file's lists
compile into a handful of shapes, not one per length.

* **Training** (:func:`training_batches`): the queries are shuffled each epoch and cut into batches
  of exactly ``batch_size`` (the last one is filled with empty lists of weight 0); a query longer
  than the list cap ``max_list_size`` is represented by a uniform sample of that many of its
  documents, drawn anew each epoch.
* **Scoring** (:func:`scoring_groups`): every document is scored, no cap; queries are grouped by
  length, so little of each block is padding, with at most ``max_cells`` documents a block.

>>> import numpy as np
>>> offsets = np.array([0, 3, 4, 14])
>>> rows = list_rows(offsets, np.array([0, 1]), cap=None, rng=None)
>>> rows.tolist()
[[0, 1, 2, -1, -1, -1, -1, -1], [3, -1, -1, -1, -1, -1, -1, -1]]
>>> list_rows(offsets, np.array([2]), cap=4, rng=np.random.default_rng(0)).shape
(1, 8)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ltr.data import RankingData

MIN_LENGTH = 8


def power_of_two(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n <= 1``).

    >>> [power_of_two(n) for n in (0, 1, 3, 8, 9)]
    [1, 1, 4, 8, 16]
    """
    return 1 << max(int(n) - 1, 0).bit_length()


def padded_length(n: int) -> int:
    """The padded list length for a longest list of ``n``: a power of two, at least :data:`MIN_LENGTH`.

    >>> [padded_length(n) for n in (1, 8, 9, 200)]
    [8, 8, 16, 256]
    """
    return max(MIN_LENGTH, power_of_two(n))


def list_rows(
    offsets: np.ndarray, queries: np.ndarray, *, cap: int | None, rng: np.random.Generator | None
) -> np.ndarray:
    """``rows[len(queries), L]``: each query's row numbers (a sample of ``cap`` when longer), ``-1`` after."""
    starts = offsets[queries]
    sizes = offsets[queries + 1] - starts
    kept = np.minimum(sizes, cap) if cap is not None else sizes
    rows = np.full((len(queries), padded_length(int(kept.max(initial=1)))), -1, dtype=np.int64)
    for i, (start, size, k) in enumerate(zip(starts, sizes, kept, strict=True)):
        if k < size:
            pick = np.sort(rng.choice(size, size=k, replace=False))  # type: ignore[union-attr]
            rows[i, :k] = start + pick
        else:
            rows[i, :k] = np.arange(start, start + size)
    return rows


def row_blocks(n: int, max_rows: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` blocks covering rows ``0..n``: whole blocks of ``max_rows`` (a power of two), then
    the rest in decreasing powers of two, and the last rows (fewer than :data:`MIN_LENGTH`) — so at
    most ``log2(max_rows)`` shapes compile and rows are scored as slices, without a padded copy.

    >>> list(row_blocks(45, 16))
    [(0, 16), (16, 32), (32, 40), (40, 45)]
    """
    start = 0
    while n - start >= MIN_LENGTH:
        size = min(max_rows, 1 << ((n - start).bit_length() - 1))
        yield start, start + size
        start += size
    if start < n:
        yield start, n


def gather(X: np.ndarray | sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """``x[*rows.shape, F]`` float32: the rows' features, zeros on padding (``-1``)."""
    flat = rows.reshape(-1)
    real = flat >= 0
    block = np.zeros((flat.size, X.shape[1]), dtype=np.float32)
    picked = X[flat[real]]
    block[real] = picked.toarray() if sp.issparse(picked) else picked
    return block.reshape(*rows.shape, X.shape[1])


@dataclass(frozen=True)
class Batch:
    """One padded block of lists (numpy; the ranker hands it to JAX)."""

    x: np.ndarray  # [B, L, F] float32
    labels: np.ndarray  # [B, L] float32 (0 on padding)
    mask: np.ndarray  # [B, L] bool: a real document
    weights: np.ndarray  # [B] float32: the query's weight; 0 for a filler list

    @classmethod
    def of(cls, data: RankingData, rows: np.ndarray, weights: np.ndarray) -> Batch:
        mask = rows >= 0
        labels = np.where(mask, data.y[np.maximum(rows, 0)], 0.0).astype(np.float32)
        empty = ~mask.any(axis=1)
        mask[empty, 0] = True  # a filler list holds one zero document: every loss is finite on it
        return cls(gather(data.X, rows), labels, mask, weights.astype(np.float32))


def training_batches(
    data: RankingData, *, batch_size: int, cap: int | None, rng: np.random.Generator
) -> Iterator[Batch]:
    """One epoch: every query once, shuffled, ``batch_size`` lists a batch (see the module docstring)."""
    order = rng.permutation(data.n_queries)
    weights = data.weight if data.weight is not None else np.ones(data.n_queries)
    for start in range(0, len(order), batch_size):
        queries = order[start : start + batch_size]
        rows = list_rows(data.offsets, queries, cap=cap, rng=rng)
        w = weights[queries]
        filler = batch_size - len(queries)
        if filler:
            rows = np.vstack([rows, np.full((filler, rows.shape[1]), -1, dtype=np.int64)])
            w = np.concatenate([w, np.zeros(filler)])
        yield Batch.of(data, rows, w)


def scoring_groups(offsets: np.ndarray, *, max_cells: int) -> Iterator[np.ndarray]:
    """Query positions in groups of similar length, each group's padded block ≤ ``max_cells`` documents
    (a longer query alone). Every query appears once; scores are written back by row number.

    >>> [g.tolist() for g in scoring_groups(np.array([0, 2, 12, 14]), max_cells=16)]
    [[0, 2], [1]]
    """
    sizes = np.diff(offsets)
    order = np.argsort(sizes, kind="stable")
    group: list[int] = []
    for q in order:
        length = padded_length(int(sizes[q]))
        if group and (len(group) + 1) * length > max_cells:
            yield np.asarray(group)
            group = []
        group.append(int(q))
    if group:
        yield np.asarray(group)

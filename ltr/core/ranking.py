"""Per-query helpers over ``offsets`` shared by metrics, click simulation and fusion (numpy only).

Query ``q`` owns rows ``offsets[q]:offsets[q+1]`` (docs/architecture.md). This module sits in the
lowest layer, next to :mod:`ltr.core.errors`, so every stage that works per query uses one copy of:

* :func:`check_offsets` — offsets as int64, starting at 0, ending at the number of rows, non-decreasing
  (:class:`~ltr.core.errors.MetricError` otherwise);
* :func:`check_scores` — scores as a finite float64 array, 1-d or 2-d (:class:`~ltr.core.errors.DataError`);
* :func:`query_index` — the query position of every row; :func:`query_of_row` — of one row;
* :func:`descending_ranks` — the 1-based rank of every row within its query by score descending;
  ``ties="average"`` gives tied rows the mean of the ranks they occupy (scipy's ``rankdata``
  ``"average"`` on the negated scores), ``"first"`` ranks earlier rows first (a stable sort).

>>> import numpy as np
>>> offsets = check_offsets([0, 3, 4], 4)
>>> query_index(offsets).tolist()
[0, 0, 0, 1]
>>> descending_ranks(np.array([0.5, 0.9, 0.5, 0.1]), offsets).tolist()
[2.5, 1.0, 2.5, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr.core.errors import ConfigError, DataError, MetricError

#: How :func:`descending_ranks` orders rows with equal scores.
RANK_TIES = ("average", "first")


def check_offsets(offsets: Any, n_docs: int, what: str = "offsets") -> np.ndarray:
    """``offsets`` as int64 after checking: 1-d integers, ``offsets[0] == 0``, ``offsets[-1] == n_docs``,
    non-decreasing (an empty query is allowed). ``what`` names the argument in the error.

    >>> check_offsets([0, 2, 1], 1)
    Traceback (most recent call last):
    ...
    ltr.core.errors.MetricError: offsets must be non-decreasing; query 1 has offsets 2 > 1
    """
    off = np.asarray(offsets)
    if off.ndim != 1 or off.shape[0] < 1 or not np.issubdtype(off.dtype, np.integer):
        raise MetricError(
            f"{what} must be a 1-d integer array [0, ..., n_docs], got shape {off.shape} {off.dtype}"
        )
    off = off.astype(np.int64)
    if off[0] != 0 or off[-1] != n_docs:
        raise MetricError(
            f"{what} must start at 0 and end at the number of documents {n_docs}, got {off[0]}..{off[-1]}"
        )
    bad = np.flatnonzero(np.diff(off) < 0)
    if bad.size:
        raise MetricError(
            f"{what} must be non-decreasing; query {bad[0]} has offsets {off[bad[0]]} > {off[bad[0] + 1]}"
        )
    return off


def check_scores(scores: Any, what: str = "scores") -> np.ndarray:
    """``scores`` as a finite float64 array (1-d, or 2-d rows × members); names the first bad row.

    >>> check_scores([[1.0, 2.0], [3.0, float("nan")]])
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: scores: row 1 has a non-finite score ([ 3. nan])
    """
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise DataError(
            f"{what} must be 1-d (one score per row) or 2-d (rows × members), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        row = int(np.flatnonzero(~np.isfinite(arr).reshape(arr.shape[0], -1).all(axis=1))[0])
        raise DataError(f"{what}: row {row} has a non-finite score ({arr[row]})")
    return arr


def query_index(offsets: np.ndarray) -> np.ndarray:
    """The query position of every row: ``[0]*n_0 + [1]*n_1 + ...`` for checked ``offsets``.

    >>> query_index(np.array([0, 2, 2, 3])).tolist()
    [0, 0, 2]
    """
    return np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))


def query_of_row(offsets: np.ndarray, row: int) -> int:
    """The position of the query that owns ``row`` (an empty query owns no row).

    >>> query_of_row(np.array([0, 2, 2, 5]), 2)
    2
    """
    return int(np.searchsorted(offsets, row, side="right") - 1)


def descending_ranks(scores: Any, offsets: Any, *, ties: str = "average") -> np.ndarray:
    """1-based rank of every row within its query by score descending (float64).

    ``ties="average"``: tied rows share the mean of the ranks they occupy; ``"first"``: earlier rows
    rank first (a stable sort).

    >>> descending_ranks(np.array([0.5, 0.9, 0.5, 0.1]), np.array([0, 3, 4]), ties="first").tolist()
    [2.0, 1.0, 3.0, 1.0]
    """
    if ties not in RANK_TIES:
        raise ConfigError(f"ties: expected one of {list(RANK_TIES)}, got {ties!r}")
    s = check_scores(scores)
    if s.ndim != 1:
        raise DataError(f"scores must be 1-d, got shape {s.shape}")
    off = check_offsets(offsets, s.shape[0])
    n = s.shape[0]
    ranks = np.empty(n, dtype=np.float64)
    if n == 0:
        return ranks
    qidx = query_index(off)
    order = np.lexsort((-s, qidx))  # stable: ties keep input order
    position = np.arange(n) - off[qidx[order]]  # 0-based position within the query
    if ties == "first":
        ranks[order] = position + 1.0
        return ranks
    s_sorted, q_sorted = s[order], qidx[order]
    new_run = np.r_[True, (s_sorted[1:] != s_sorted[:-1]) | (q_sorted[1:] != q_sorted[:-1])]
    run_id = np.cumsum(new_run) - 1
    starts = np.flatnonzero(new_run)
    ends = np.r_[starts[1:], n] - 1
    mean_position = (position[starts] + position[ends]) / 2.0
    ranks[order] = mean_position[run_id] + 1.0
    return ranks

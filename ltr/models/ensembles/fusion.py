"""Per-query score normalisation and rank fusion: pure, vectorised functions over scores + offsets.

Every function takes scores of documents grouped by query (query ``q`` owns rows
``offsets[q]:offsets[q+1]``) and works on all queries at once; nothing here knows about models.
Definitions follow ranx (``ranx.fusion`` / ``ranx.normalization``), against which they are tested.

Per-query normalisation (:func:`normalize_scores`), for the scores ``s`` of one query of ``n`` docs:

* ``zscore``:  (s − mean(s)) / max(std(s), 1e-9), population std (ranx ``zmuv``)
* ``minmax``:  (s − min(s)) / max(max(s) − min(s), 1e-9) (all-equal scores → 0)
* ``rank``:    1 − (r − 1) / n, with r the 1-based descending rank (ties: average rank), so the top
  document gets 1 and the last 1/n (ranx ``rank``)
* ``none``:    s unchanged

Rank fusion of ``m`` members (columns of a score matrix), r_j(d) = descending rank of d by member j:

* reciprocal rank fusion (Cormack et al. 2009): RRF(d) = Σ_j w_j / (k + r_j(d)), k = 60 by default
* Borda count (Aslam & Montague 2001): Borda(d) = Σ_j w_j · (n − r_j(d) + 1)
* weighted sum (CombSUM): Σ_j w_j · norm(s_j)(d)

Ties within a member's scores get their **average** rank (so fusion never depends on row order);
``ties="first"`` uses input order instead (what a sorted run file gives).

>>> import numpy as np
>>> offsets = np.array([0, 3])
>>> normalize_scores(np.array([3.0, 1.0, 2.0]), offsets, "minmax").tolist()
[1.0, 0.0, 0.5]
>>> descending_ranks(np.array([3.0, 1.0, 3.0]), offsets).tolist()
[1.5, 3.0, 1.5]
>>> S = np.array([[3.0, 0.1], [2.0, 0.3], [1.0, 0.2]])   # two members, one query of 3 docs
>>> reciprocal_rank_fusion(S, offsets, k=1).round(4).tolist()    # 1/(1+1)+1/(1+3), 1/3+1/2, ...
[0.75, 0.8333, 0.5833]
>>> borda_fusion(S, offsets).tolist()                            # (3−1+1)+(3−3+1), ...
[4.0, 5.0, 3.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError, DataError
from ltr.core.ranking import check_offsets, check_scores, descending_ranks, query_index

NORMALIZATIONS = ("none", "zscore", "minmax", "rank")
EPS = 1e-9  # floor of the z-score and min-max denominators (ranx's value)


def normalize_scores(scores: Any, offsets: Any, method: str = "zscore") -> np.ndarray:
    """Normalise each query's scores (``zscore``, ``minmax``, ``rank`` or ``none``; module docstring).

    A 2-d ``scores`` (rows × members) normalises every column separately.

    >>> normalize_scores(np.array([1.0, 3.0, 5.0, 7.0]), np.array([0, 3, 4]), "zscore").round(4).tolist()
    [-1.2247, 0.0, 1.2247, 0.0]
    >>> normalize_scores(np.array([1.0, 3.0, 3.0]), np.array([0, 3]), "rank").round(4).tolist()
    [0.3333, 0.8333, 0.8333]
    """
    if method not in NORMALIZATIONS:
        raise ConfigError(f"normalization: expected one of {list(NORMALIZATIONS)}, got {method!r}")
    s = check_scores(scores)
    if s.ndim == 2:
        return np.column_stack(
            [normalize_scores(s[:, j], offsets, method) for j in range(s.shape[1])]
        ).reshape(s.shape)
    off = check_offsets(offsets, s.shape[0])
    if method == "none" or s.shape[0] == 0:
        return s.copy()
    if method == "rank":
        return 1.0 - (descending_ranks(s, off) - 1.0) / np.diff(off)[query_index(off)]
    location, spread = _location_spread(s, off, method)
    return (s - location) / spread


#: the per-query normalisations that are affine maps of a query's scores (:func:`affine_normalization`)
AFFINE_NORMALIZATIONS = ("none", "zscore", "minmax")


def affine_normalization(scores: Any, offsets: Any, method: str) -> tuple[np.ndarray, np.ndarray]:
    """``(location, spread)`` per row with ``normalize_scores(s) == (s - location) / spread`` (both
    constant within a query): ``none`` → (0, 1), ``zscore`` → (mean, max(std, 1e-9)), ``minmax`` →
    (min, max(max − min, 1e-9)). What lets a blend of per-query normalised scores be explained as a
    linear combination of its members' (``ltr.attribution``). ``rank`` is not affine: a ConfigError.

    >>> affine_normalization(np.array([1.0, 3.0, 5.0]), np.array([0, 3]), "minmax")
    (array([1., 1., 1.]), array([4., 4., 4.]))
    """
    if method not in AFFINE_NORMALIZATIONS:
        raise ConfigError(
            f"normalization {method!r} is not an affine map of the scores; affine ones: {list(AFFINE_NORMALIZATIONS)}"
        )
    s = check_scores(scores)
    off = check_offsets(offsets, s.shape[0])
    if method == "none" or s.shape[0] == 0:
        return np.zeros_like(s), np.ones_like(s)
    return _location_spread(s, off, method)


def _location_spread(s: np.ndarray, off: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the query's location and spread of ``zscore`` (mean, std) or ``minmax`` (min, range)."""
    sizes = np.diff(off)
    qidx = query_index(off)
    if method == "zscore":
        count = np.maximum(sizes, 1)
        mean = np.bincount(qidx, weights=s, minlength=sizes.shape[0]) / count
        centred = s - mean[qidx]
        std = np.sqrt(np.bincount(qidx, weights=centred**2, minlength=sizes.shape[0]) / count)
        return mean[qidx], np.maximum(std, EPS)[qidx]
    # minmax: the first and last row of each query in sorted order hold its min and max
    nonempty = sizes > 0
    low = np.zeros(sizes.shape[0])
    high = np.zeros(sizes.shape[0])
    low[nonempty] = np.minimum.reduceat(s, off[:-1][nonempty])
    high[nonempty] = np.maximum.reduceat(s, off[:-1][nonempty])
    return low[qidx], np.maximum(high - low, EPS)[qidx]


def _member_matrix(score_matrix: Any, offsets: Any) -> tuple[np.ndarray, np.ndarray]:
    S = check_scores(score_matrix, "score matrix")
    if S.ndim != 2 or S.shape[1] < 1:
        raise DataError(
            f"score matrix must be 2-d (rows × members) with at least one member, got shape {S.shape}"
        )
    return S, check_offsets(offsets, S.shape[0])


def check_weights(weights: Sequence[float] | np.ndarray | None, n_members: int) -> np.ndarray:
    """Member weights as float64 (default: all ones); must be finite, one per member."""
    if weights is None:
        return np.ones(n_members)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_members,) or not np.all(np.isfinite(w)):
        raise ConfigError(f"weights: expected {n_members} finite numbers (one per member), got {weights!r}")
    return w


def _rank_sum(
    score_matrix: Any,
    offsets: Any,
    weights: Sequence[float] | np.ndarray | None,
    ties: str,
    points: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Σ_j w_j · points(r_j, n_q): the skeleton of rank-based fusion."""
    S, off = _member_matrix(score_matrix, offsets)
    w = check_weights(weights, S.shape[1])
    sizes = np.diff(off)[query_index(off)].astype(np.float64)
    out = np.zeros(S.shape[0])
    for j in range(S.shape[1]):
        out += w[j] * points(descending_ranks(S[:, j], off, ties=ties), sizes)
    return out


def weighted_sum(
    score_matrix: Any,
    offsets: Any,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    normalization: str = "zscore",
) -> np.ndarray:
    """CombSUM: Σ_j w_j · norm(s_j), each member normalised per query first.

    >>> weighted_sum(np.array([[1.0, 10.0], [3.0, 0.0]]), np.array([0, 2]), normalization="minmax").tolist()
    [1.0, 1.0]
    """
    S, off = _member_matrix(score_matrix, offsets)
    w = check_weights(weights, S.shape[1])
    return normalize_scores(S, off, normalization) @ w


def reciprocal_rank_fusion(
    score_matrix: Any,
    offsets: Any,
    *,
    k: float = 60.0,
    weights: Sequence[float] | np.ndarray | None = None,
    ties: str = "average",
) -> np.ndarray:
    """RRF(d) = Σ_j w_j / (k + r_j(d)), r_j the 1-based descending rank of d by member j."""
    k = check_value(k, float, Constraint(low=0.0), "rrf k")
    return _rank_sum(score_matrix, offsets, weights, ties, lambda ranks, sizes: 1.0 / (k + ranks))


def borda_fusion(
    score_matrix: Any,
    offsets: Any,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    ties: str = "average",
) -> np.ndarray:
    """Borda(d) = Σ_j w_j · (n_q − r_j(d) + 1): the top of a query of n_q documents gets n_q points."""
    return _rank_sum(score_matrix, offsets, weights, ties, lambda ranks, sizes: sizes - ranks + 1.0)


FUSIONS = ("mean", "rrf", "borda")


def fuse(
    score_matrix: Any,
    offsets: Any,
    method: str,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    normalization: str = "zscore",
    k: float = 60.0,
) -> np.ndarray:
    """Dispatch by name: ``mean`` (:func:`weighted_sum` of normalised scores, divided by Σw), ``rrf``, ``borda``."""
    if method == "mean":
        S, off = _member_matrix(score_matrix, offsets)
        w = check_weights(weights, S.shape[1])
        total = w.sum()
        if total == 0:
            raise ConfigError(f"weights: sum to zero ({w.tolist()}); a mean needs a non-zero total")
        return weighted_sum(S, off, weights=w / total, normalization=normalization)
    if method == "rrf":
        return reciprocal_rank_fusion(score_matrix, offsets, k=k, weights=weights)
    if method == "borda":
        return borda_fusion(score_matrix, offsets, weights=weights)
    raise ConfigError(f"fusion method: expected one of {list(FUSIONS)}, got {method!r}")

"""Learned combinations of member scores: a linear blend by coordinate ascent, and stacking helpers.

**Linear blend** (:func:`coordinate_ascent`): find weights ``w`` maximising the mean over queries of a
ranking metric (``ndcg@10``, ``err@10``, ... computed by :func:`ltr.metrics.evaluate` with explicit
conventions) of the blended score ``X @ w``, where column ``j`` of ``X`` holds member ``j``'s
(usually per-query normalised) scores. The search is RankLib's Coordinate Ascent (Metzler & Croft
2007; RankLib ``CoordinateAscent``):

* visit the weights one at a time in a seeded random order; for weight ``j`` try
  ``w_j + t`` for ``t = d·δ, d·δ(1+2), d·δ(1+2+4), ...`` (``max_steps`` growing steps, ``δ`` = 0.001,
  or ``step_base·|w_j|`` when 0.001 is more than half of ``|w_j|``), first in direction ``d = +1``,
  then ``d = −1`` if that found nothing better, then ``w_j = 0``; keep the best value found
  (strict improvement only);
* after each update rescale ``w`` to ``Σ|w_j| = 1`` (a positive rescaling never changes a ranking);
* a pass over all weights that gains less than ``tolerance`` ends a restart; each restart starts from
  other weights: the best single member (one-hot), uniform ``1/m``, then random positive weights.

Because the first restart starts at the best single member and only strict improvements are kept,
the blend's validation score is never below that of its best member.

**Stacking** uses :func:`stack_features` (member scores, optionally with per-query normalised copies,
as the features of a second-level ranker) and :func:`query_folds` (seeded query-grouped folds for
cross-fitting, so the second level is never evaluated on queries it was fit on).

>>> import numpy as np
>>> labels = np.array([1, 0, 1, 0])            # two queries of two documents
>>> X = np.array([[1.0, 0.0], [0.0, 0.5],      # member 0 right on query 1, member 1 wrong
...               [0.0, 1.0], [0.5, 0.0]])     # and the other way round on query 2
>>> fit = coordinate_ascent(X, labels, np.array([0, 2, 4]), metric="ndcg@10", seed=0)
>>> fit.member_scores.round(4).tolist(), round(fit.score, 4), bool(fit.weights.min() > 0)
([0.8155, 0.8155], 1.0, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import DataError
from ltr.core.ranking import check_offsets, check_scores
from ltr.metrics import evaluate, parse_metric
from ltr.models.ensembles.fusion import normalize_scores


@dataclass(frozen=True)
class BlendFit:
    """Result of :func:`coordinate_ascent`.

    ``weights`` (Σ|w| = 1), ``score`` (mean metric of the blend on the fitting data), ``member_scores``
    (mean metric of each member alone), ``restart_scores`` (best score of each restart),
    ``n_evaluations`` (metric evaluations spent).
    """

    weights: np.ndarray
    score: float
    member_scores: np.ndarray
    restart_scores: list[float] = field(default_factory=list)
    n_evaluations: int = 0


class _Objective:
    """Mean over non-skipped queries of one metric of ``X @ w`` (counts its evaluations)."""

    def __init__(
        self,
        X: np.ndarray,
        labels: np.ndarray,
        offsets: np.ndarray,
        metric: str,
        preset: str,
        conventions: Mapping,
    ) -> None:
        self.name = parse_metric(metric).name
        self.X, self.labels, self.offsets = X, labels, offsets
        self.preset, self.conventions = preset, dict(conventions)
        self._evaluate = evaluate
        self.count = 0
        values = evaluate([self.name], labels, X[:, 0], offsets, preset=preset, **self.conventions)[self.name]
        if np.isnan(values).all():
            raise DataError(
                f"blend: every query is skipped by {metric} (no query has a relevant document under the "
                f"'{preset}' conventions); fit the blend on data with relevant documents"
            )

    def __call__(self, w: np.ndarray) -> float:
        self.count += 1
        v = self._evaluate(
            [self.name], self.labels, self.X @ w, self.offsets, preset=self.preset, **self.conventions
        )[self.name]
        return float(np.nanmean(v))


def _l1(w: np.ndarray) -> np.ndarray:
    total = np.abs(w).sum()
    return w / total if total > 0 else w


def _line_search(
    objective: _Objective,
    w: np.ndarray,
    j: int,
    best: float,
    max_steps: int,
    step_base: float,
    step_scale: float,
) -> tuple[np.ndarray, float]:
    """RankLib's search along weight ``j``: growing steps up, then down, then zero; best strict gain wins."""
    origin = w[j]
    best_delta: float | None = None
    trial = w.copy()
    for direction in (1.0, -1.0, 0.0):
        if direction == 0.0:
            deltas = [-origin] if origin != 0.0 else []
        else:
            step = 0.001 * direction
            if origin != 0.0 and abs(step) > 0.5 * abs(origin):
                step = step_base * abs(origin) * direction
            deltas, total = [], 0.0
            for _ in range(max_steps):
                total += step
                deltas.append(total)
                step *= step_scale
        found = False
        for delta in deltas:
            trial[j] = origin + delta
            if not np.any(trial):
                continue
            score = objective(trial)
            if score > best:
                best, best_delta, found = score, delta, True
        if found:
            break
    if best_delta is None:
        return w, best
    w = w.copy()
    w[j] = origin + best_delta
    return _l1(w), best


def coordinate_ascent(
    score_matrix: Any,
    labels: Any,
    offsets: Any,
    *,
    metric: str = "ndcg@10",
    preset: str = "ltr",
    conventions: Mapping[str, Any] | None = None,
    n_restarts: int = 5,
    max_steps: int = 25,
    max_passes: int = 20,
    step_base: float = 0.05,
    step_scale: float = 2.0,
    tolerance: float = 1e-4,
    seed: int = 0,
) -> BlendFit:
    """Weights maximising mean ``metric`` of ``score_matrix @ w`` over the queries (module docstring)."""
    X = check_scores(score_matrix, "score matrix")
    if X.ndim != 2 or X.shape[1] < 1:
        raise DataError(f"score matrix must be 2-d (rows × members), got shape {X.shape}")
    y = np.asarray(labels, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise DataError(f"labels has shape {y.shape} but the score matrix has {X.shape[0]} rows")
    off = check_offsets(offsets, X.shape[0])
    n_restarts, max_steps, max_passes = (
        check_value(value, int, Constraint(low=1), f"blend.{name}")
        for name, value in (("n_restarts", n_restarts), ("max_steps", max_steps), ("max_passes", max_passes))
    )
    step_scale = check_value(step_scale, float, Constraint(low=1.0, open_low=True), "blend.step_scale")
    step_base = check_value(step_base, float, Constraint(low=0.0, open_low=True), "blend.step_base")
    tolerance = check_value(tolerance, float, Constraint(low=0.0), "blend.tolerance")
    objective = _Objective(X, y, off, metric, preset, conventions or {})
    m = X.shape[1]
    eye = np.eye(m)
    member_scores = np.array([objective(eye[j]) for j in range(m)])
    rng = np.random.default_rng(seed)
    starts = [eye[int(np.argmax(member_scores))], np.full(m, 1.0 / m)]
    while len(starts) < n_restarts:
        starts.append(_l1(rng.random(m) + 1e-3))
    best_w, best_score, restart_scores = starts[0], float(member_scores.max()), []
    for start in starts[:n_restarts]:
        w = _l1(start.astype(np.float64))
        score = objective(w)
        for _ in range(max_passes):
            before = score
            for j in rng.permutation(m):
                w, score = _line_search(objective, w, int(j), score, max_steps, step_base, step_scale)
            if m == 1 or score - before < tolerance:
                break
        restart_scores.append(score)
        if score > best_score:
            best_w, best_score = w, score
    return BlendFit(
        weights=_l1(best_w.astype(np.float64)),
        score=float(best_score),
        member_scores=member_scores,
        restart_scores=restart_scores,
        n_evaluations=objective.count,
    )


def stack_features(score_matrix: Any, offsets: Any, normalizations: tuple[str, ...] = ()) -> np.ndarray:
    """Features of a stacking ranker: the raw member scores, then one normalised copy per method.

    >>> stack_features(np.array([[1.0], [3.0]]), np.array([0, 2]), ("minmax",)).tolist()
    [[1.0, 0.0], [3.0, 1.0]]
    """
    S = check_scores(score_matrix, "score matrix")
    blocks = [S] + [normalize_scores(S, offsets, method) for method in normalizations]
    return np.hstack(blocks).astype(np.float32)


def query_folds(n_queries: int, n_folds: int, seed: int) -> np.ndarray:
    """A fold number ``0..n_folds-1`` per query: a seeded shuffle cut into near-equal parts.

    >>> np.bincount(query_folds(10, 3, seed=1)).tolist()
    [4, 3, 3]
    """
    n_folds = check_value(n_folds, int, Constraint(low=2), "stack.n_folds")
    if n_queries < n_folds:
        raise DataError(f"stacking: {n_queries} validation queries cannot be split into {n_folds} folds")
    folds = np.empty(n_queries, dtype=np.int64)
    folds[np.random.default_rng(seed).permutation(n_queries)] = np.arange(n_queries) % n_folds
    return folds

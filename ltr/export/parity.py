"""The parity check: the written file, scored as its engine would, against the model's own scores.

``check_parity(ranker, target, out, names, data)`` scores every row of ``data`` two ways — the
fitted ranker's ``predict`` (of the rows normalised by its own ``data.normalize`` transform, if any:
the exported file takes raw features, :mod:`ltr.export.normalize`) and the target's ``score`` of the written file (:mod:`ltr.export.formats`)
— on float32 features. A target exported for **missing = 0** (Solr, RankLib) sees NaN as 0, and
the model is then scored on the same zero-filled rows (the engine never passes NaN).

Besides the given rows, :func:`probe_rows` adds rows that hit the exact edges: for every split
threshold ``t`` of the model, a row with that feature at ``t`` and at the next float32 above it
(where ``<=`` and ``<`` part ways), one with it NaN (the default direction), and values far outside
any training range (±1e30, ±inf).

Agreement (both must hold):

* scores: ``|exported − model| ≤ 1e-5 · max(1, |model|)`` per row (float32 arithmetic in the
  engines; the absolute floor keeps scores near zero comparable); the worst ratio is reported;
* rankings: within each query, no pair the model orders by more than that tolerance is tied or
  reversed by the exported scores.

>>> report = ParityReport(rows=3, queries=1, worst=2e-7, worst_row=1, inversions=0)
>>> report.ok, report.summary()
(True, 'parity: 3 rows in 1 queries, worst relative difference 2.0e-07 (row 1), 0 ranking inversions: OK')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.export.formats import Target
from ltr.export.neural import NeuralScorer
from ltr.export.reading import from_ranker, raw_feature_model
from ltr.export.trees import (
    FLOAT32,
    ExpectedGrade,
    Gap,
    TreeEnsemble,
    Written,
    float32_above,
    zero_for_missing,
)
from ltr.models.normalized import predict_raw

TOLERANCE = 1e-5
FAR = 1e30
#: pairs compared at once by :func:`ranking_inversions` (4M: ~100 MB of temporaries)
PAIR_CELLS = 1 << 22
#: the probe rows are checked for inversions in groups of this many (they are rows of different queries,
#: grouped only to be compared; one group of all of them was n² pairs: 11.6 GB per array at 38,084 probes)
PROBE_GROUP = 1024


@dataclass(frozen=True)
class ParityReport:
    """The outcome of one parity check."""

    rows: int
    queries: int
    worst: float  # max over rows of |exported - model| / max(1, |model|)
    worst_row: int
    inversions: int  # pairs within a query the exported scores tie or reverse

    @property
    def ok(self) -> bool:
        return self.worst <= TOLERANCE and self.inversions == 0

    def summary(self) -> str:
        verdict = "OK" if self.ok else f"FAILED (tolerance {TOLERANCE:g})"
        return (
            f"parity: {self.rows} rows in {self.queries} queries, worst relative difference {self.worst:.1e} "
            f"(row {self.worst_row}), {self.inversions} ranking inversions: {verdict}"
        )


def relative_differences(
    exported: np.ndarray, expected: np.ndarray, scale: np.ndarray | None = None
) -> np.ndarray:
    """``|exported − expected| / max(1, |expected|, scale)`` per row; equal values agree (the same infinity
    too: ``inf − inf`` is no difference), both NaN agree, one NaN or opposite infinities are ``inf``.
    ``scale``: the size of the terms summed into each score, when rounding is relative to them (a network's
    output layer, :meth:`~ltr.export.neural.NeuralScorer.term_magnitude`); trees and linear models: none.

    >>> relative_differences(np.array([1.0, 200.0, np.nan, 1.0]), np.array([1.5, 100.0, np.nan, np.nan])).tolist()
    [0.3333333333333333, 1.0, 0.0, inf]
    >>> relative_differences(np.array([np.inf, -np.inf, np.inf, 5.0]), np.array([np.inf, -np.inf, -np.inf, np.inf])).tolist()
    [0.0, 0.0, inf, inf]
    """
    with np.errstate(invalid="ignore"):
        denominator = np.maximum(1.0, np.abs(expected))
        if scale is not None:
            finite = np.isfinite(scale)  # a NaN or inf magnitude leaves |expected| in charge
            denominator = np.where(finite, np.maximum(denominator, np.where(finite, scale, 0.0)), denominator)
        diffs = np.abs(exported - expected) / denominator
    same = (exported == expected) | (np.isnan(exported) & np.isnan(expected))
    return np.where(same, 0.0, np.where(np.isnan(diffs), np.inf, diffs))


def ranking_inversions(exported: np.ndarray, expected: np.ndarray, offsets: np.ndarray) -> int:
    """Pairs (i, j) of one query with ``expected_i − expected_j`` beyond tolerance but ``exported_i <= exported_j``.

    Each query is compared a block of rows at a time (at most :data:`PAIR_CELLS` pairs in memory), so
    the memory is bounded whatever the query's size; the time is quadratic in each query's rows.

    >>> ranking_inversions(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]), np.array([0, 3]))
    1
    """
    count = 0
    for start, end in zip(offsets[:-1], offsets[1:], strict=True):
        e, x = expected[start:end], exported[start:end]
        size = np.abs(e)
        block = max(1, PAIR_CELLS // max(len(e), 1))
        for lo in range(0, len(e), block):
            ei, xi, si = e[lo : lo + block, None], x[lo : lo + block, None], size[lo : lo + block, None]
            tol = TOLERANCE * np.maximum(1.0, np.maximum(si, size[None, :]))
            with np.errstate(invalid="ignore"):  # inf - inf: no order between equal infinities
                ordered = (ei - e[None, :]) > tol
            count += int(np.sum(ordered & (xi <= x[None, :])))
    return count


def probe_rows(model: Any, X: np.ndarray, seed: int = 0, gaps: tuple[Gap, ...] = ()) -> np.ndarray:
    """Rows at the model's split thresholds, just above them, NaN, ±1e30 and ±inf (module docstring).

    Each probe copies a random row of ``X`` and changes one feature; a linear model gets the
    far-value probes only. Values inside a stated :class:`~ltr.export.trees.Gap` are left out.
    """
    X = np.asarray(X, dtype=FLOAT32)
    rng = np.random.default_rng(seed)
    base = X if X.shape[0] else np.zeros((1, model.n_features), dtype=FLOAT32)
    probes: list[tuple[int, float]] = []
    ensembles = model.classes if isinstance(model, ExpectedGrade) else (model,)
    for ensemble in (e for e in ensembles if isinstance(e, TreeEnsemble)):
        for feature, thresholds in ensemble.thresholds().items():
            for t in thresholds:
                probes += [(feature, float(t)), (feature, float(float32_above(t)))]
            probes.append((feature, float("nan")))
    for feature in range(model.n_features):
        probes += [(feature, FAR), (feature, -FAR), (feature, np.inf), (feature, -np.inf)]
    probes = [(f, v) for f, v in probes if not any(g.holds(f, v) for g in gaps)]
    rows = base[rng.integers(0, base.shape[0], size=len(probes))].copy()
    for r, (feature, value) in enumerate(probes):
        rows[r, feature] = value
    return rows


def check_parity(
    ranker: Any,
    target: Target,
    out: Path,
    names: list[str],
    written: Written,
    data: RankingData | None = None,
) -> ParityReport:
    """Score ``data`` (plus :func:`probe_rows`, as extra queries of at most :data:`PROBE_GROUP` rows) both
    ways; the report of agreement."""
    model = None if target.native else raw_feature_model(ranker)  # data.normalize folded in: raw features
    n_features = int(ranker.input_width_)  # the original width (data.features)
    X = (
        np.zeros((0, n_features), dtype=FLOAT32)
        if data is None
        else np.asarray(data.X.toarray() if data.is_sparse else data.X, dtype=FLOAT32)
    )
    sizes = [] if data is None else list(data.group_sizes)
    stand_in = model if model is not None else from_ranker_or_none(ranker, n_features)
    probes = probe_rows(stand_in, X, gaps=written.gaps)
    X = np.vstack([X, probes])
    sizes += [min(PROBE_GROUP, probes.shape[0] - lo) for lo in range(0, probes.shape[0], PROBE_GROUP)] or [0]
    if written.missing == "zero":
        X = zero_for_missing(X)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rows = RankingData(X=X, y=np.zeros(X.shape[0]), qid=qid, name="parity rows")
    expected = np.asarray(predict_raw(ranker, rows, "parity rows"))  # normalised as the model was trained
    exported = np.asarray(target.score(out, X, names), dtype=np.float64)
    scale = model.term_magnitude(X) if isinstance(model, NeuralScorer) else None
    diffs = relative_differences(exported, expected, scale)
    worst_row = int(np.argmax(diffs)) if diffs.size else 0
    return ParityReport(
        rows=int(X.shape[0]),
        queries=len(sizes),
        worst=float(diffs.max()) if diffs.size else 0.0,
        worst_row=worst_row,
        inversions=ranking_inversions(exported, expected, offsets),
    )


def from_ranker_or_none(ranker: Any, n_features: int) -> Any:
    """The canonical model for the probes of a native export, or a stand-in with no thresholds."""
    try:
        return from_ranker(ranker)
    except ConfigError:  # a model only its own engine reads (native export): far-value probes only
        return _NoThresholds(n_features)


@dataclass(frozen=True)
class _NoThresholds:
    n_features: int

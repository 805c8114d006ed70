"""The validation metric rankers monitor each round, computed with ltr's conventions.

Engines report their own NDCG with their own conventions (LightGBM and XGBoost score a query
without relevant documents as 1 and break score ties by input order). Early stopping in ``ltr``
uses :func:`ltr.metrics.evaluate` instead — the same numbers the run reports at the end — on the
predictions the engine already holds for the validation set, so no extra prediction pass is needed.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> m = RankingMetric.from_config({"metric": "ndcg@10", "preset": "ltr", "conventions": {}})
>>> d = RankingData(X=np.zeros((5, 1), np.float32), y=[3, 2, 3, 0, 1], qid=[1] * 5)
>>> round(m.mean(d, -np.arange(5.0)), 6)
0.957478
>>> m.same_conventions("ltr"), m.same_conventions("lightgbm")
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.data import RankingData
from ltr.metrics import evaluate, parse_metric, resolve_conventions


@dataclass(frozen=True)
class RankingMetric:
    """One metric name + conventions, reduced to the mean over non-skipped queries."""

    name: str
    family: str
    k: int | None
    preset: str = "ltr"
    conventions: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, es: Mapping[str, Any]) -> RankingMetric:
        """From an early-stopping block ``{metric, preset, conventions}`` (already validated)."""
        spec = parse_metric(es["metric"])
        return cls(spec.name, spec.family, spec.k, es.get("preset", "ltr"), dict(es.get("conventions") or {}))

    def per_query(self, labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Per-query values (NaN = skipped query), via :func:`ltr.metrics.evaluate`."""
        return evaluate([self.name], labels, scores, offsets, preset=self.preset, **self.conventions)[
            self.name
        ]

    def mean(self, data: RankingData, scores: np.ndarray) -> float:
        """Mean over the queries of ``data`` that are not skipped (NaN when every query is skipped)."""
        return self.mean_of(data.y, scores, data.offsets)

    def mean_of(self, labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray) -> float:
        """:meth:`mean` from plain arrays."""
        values = self.per_query(labels, scores, offsets)
        keep = ~np.isnan(values)
        return float(values[keep].mean()) if keep.any() else float("nan")

    def same_conventions(self, preset: str) -> bool:
        """True when our conventions equal the named preset's (e.g. an engine's own)."""
        return resolve_conventions(self.preset, **self.conventions) == resolve_conventions(preset)

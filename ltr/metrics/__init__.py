"""Ranking metrics with explicit conventions: per-query values for every query at once.

Modules: ``registry`` (metric names), ``conventions`` (conventions and presets), ``compute``
(:func:`evaluate`, :func:`mean`), ``_kernels`` (compiled per-query loops), ``trec`` (qrels/runs and
trec_eval measure names, used by ``python -m ltr.evaluate``), ``uncertain`` (expected metrics under
label distributions, tie sensitivity). Formulas, conventions and presets: ``docs/metrics.md``.

>>> import numpy as np
>>> v = evaluate(["ndcg@10", "err@10"], [3, 2, 3, 0, 1], -np.arange(5.0), [0, 5])
>>> round(float(v["ndcg@10"][0]), 6), round(float(v["err@10"][0]), 6)
(0.957478, 0.560098)
>>> metric_key("ndcg@10")
'ndcg_at_10'
"""

from ltr.core.errors import MetricError
from ltr.metrics.compute import MetricMean, evaluate, mean, rank_lists
from ltr.metrics.conventions import (
    PRESETS,
    Conventions,
    describe_conventions,
    resolve_conventions,
)
from ltr.metrics.registry import REGISTRY, MetricSpec, metric_key, parse_metric

__all__ = [
    "PRESETS",
    "REGISTRY",
    "Conventions",
    "MetricError",
    "MetricMean",
    "MetricSpec",
    "describe_conventions",
    "evaluate",
    "mean",
    "metric_key",
    "parse_metric",
    "rank_lists",
    "resolve_conventions",
]

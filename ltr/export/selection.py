"""Exported models of a ranker trained on a feature selection (``data.features``) index the ORIGINAL ids.

A ranker trained on the kept columns ``ids`` (1-based) of an ``n_features``-wide file numbers its
features 0..len(ids)−1; the serving engine feeds the file's full vector. :func:`widen` rewrites the
canonical model so feature ``j`` becomes column ``ids[j] − 1`` of ``n_features``: a tree split on
column ``j`` reads ``ids[j] − 1``; a linear weight moves to ``ids[j] − 1`` (0 elsewhere). The
function is unchanged on full rows: ``widen(m, s).predict(X) == m.predict(s.select(X))``.
A native engine file (``--format lightgbm|xgboost``) is the engine's own model of the kept
columns; it is refused (:func:`refuse_native`), naming the formats that work.

>>> import numpy as np
>>> from ltr.data.dataset import FeatureSelection
>>> s = FeatureSelection(ids=(2, 4), n_features=4)
>>> widen(LinearScorer(np.array([1.0, 10.0]), 0.5), s).weights.tolist()
[0.0, 1.0, 0.0, 10.0]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data.dataset import FeatureSelection
from ltr.export.trees import ExpectedGrade, Exportable, LinearScorer, TreeEnsemble


def selection_of(ranker: Any) -> FeatureSelection | None:
    """The feature selection a fitted ranker was trained on (``feature_selection_``), or ``None``."""
    return getattr(ranker, "feature_selection_", None)


def widen(model: Exportable, selection: FeatureSelection | None) -> Exportable:
    """``model`` (over the kept columns) as a model over the original ``selection.n_features`` columns."""
    if selection is None:
        return model
    columns = selection.columns
    if isinstance(model, LinearScorer):
        weights = np.zeros(selection.n_features, dtype=np.float64)
        weights[columns] = model.weights
        return LinearScorer(weights, model.bias)
    if isinstance(model, ExpectedGrade):
        return ExpectedGrade(tuple(_widen_trees(c, selection) for c in model.classes))
    return _widen_trees(model, selection)


def _widen_trees(model: TreeEnsemble, selection: FeatureSelection) -> TreeEnsemble:
    columns = selection.columns
    trees = tuple(
        replace(t, feature=np.where(t.feature >= 0, columns[np.maximum(t.feature, 0)], t.feature))
        for t in model.trees
    )
    return replace(model, trees=trees, n_features=selection.n_features)


def refuse_native(ranker: Any, fmt: str) -> None:
    """A ConfigError for a native-file export of a ranker trained on a feature selection."""
    selection = selection_of(ranker)
    if selection is not None:
        raise ConfigError(
            f"--format {fmt}: the model was trained on a feature selection ({len(selection.ids)} of "
            f"{selection.n_features} features, data.features); a native {fmt} file numbers only the kept "
            "columns, so a serving engine feeding the full feature vector would read the wrong ones. Use "
            "--format onnx, opensearch, elasticsearch, solr or vespa: they index the original feature ids"
        )

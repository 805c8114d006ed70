"""``feature``: rank by one feature — the sanity baseline every learning-to-rank paper should show.

``params.feature`` is a feature id, 1-based like the ids of an SVMlight file (feature ``j`` is column
``j - 1`` of X; ``docs/data.md`` states the one numbering) or ``"best"``; ``params.direction`` is ``desc``
(higher value ranks first), ``asc`` or ``"best"``. With ``best``, every candidate column and
direction is scored with the early-stopping metric (``early_stopping.metric``, ltr conventions) on
the validation split — on the training split when there is none — and the best one is kept (ties: the
lowest column, ``desc`` before ``asc``); ``selection_`` records every candidate's value (keys
``"<column>:<direction>"``, 0-based columns). The fitted ``feature_`` is the 0-based column;
:meth:`SingleFeature.learned_choices` reports it 1-based (logged and printed by every run).

Score = value (``desc``) or −value (``asc``); a missing value (NaN) always ranks last (−inf).

>>> import numpy as np
>>> from ltr.data import RankingData
>>> X = np.array([[1, 9], [3, 8], [2, 7]], dtype=np.float32)
>>> d = RankingData(X=X, y=[2, 1, 0], qid=[1, 1, 1])
>>> r = SingleFeature({"feature": "best", "direction": "best"}).fit(d)
>>> r.feature_, r.direction_, r.predict(d).tolist()
(1, 'desc', [9.0, 8.0, 7.0])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.core.config_check import join
from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models.base import NonIterativeRanker, Resolved
from ltr.models.evaluation import RankingMetric

DIRECTIONS = ("desc", "asc")


def column(X: Any, j: int) -> np.ndarray:
    """Column ``j`` of a dense or CSR matrix as float64."""
    if sp.issparse(X):
        return np.asarray(X[:, [j]].toarray(), dtype=np.float64).ravel()
    return np.asarray(X[:, j], dtype=np.float64)


def feature_scores(values: np.ndarray, direction: str) -> np.ndarray:
    """Ranking scores of one feature: ``values`` or ``-values``, NaN → −inf (ranked last).

    >>> feature_scores(np.array([1.0, np.nan, 3.0]), "asc").tolist()
    [-1.0, -inf, -3.0]
    """
    scores = values if direction == "desc" else -values
    return np.where(np.isnan(scores), -np.inf, scores)


class SingleFeature(NonIterativeRanker):
    """Ranks documents by one feature column (see the module docstring)."""

    name = "feature"
    engine = "none"

    def _check_params(self, params: dict[str, Any]) -> None:
        if self.engine_params:
            raise ConfigError("model feature: has no engine, so engine_params must be empty")

    def _fit_model(self, train: RankingData, valid: RankingData | None, cfg: Resolved, metric: Any) -> None:
        params = cfg.params
        where = join(join(getattr(self, "_where", "model"), "params"), "feature")
        selection = train.features  # data.features: ``feature`` is an id of the file, kept or refused
        if selection is not None and params["feature"] != "best":
            if int(params["feature"]) not in selection.ids:
                raise ConfigError(
                    f"{where}={params['feature']} is not one of the features data.features keeps "
                    f"({len(selection.ids)} of {selection.n_features}: ids as in the file)"
                )
            columns = [selection.ids.index(int(params["feature"]))]
        elif params["feature"] != "best" and params["feature"] > train.n_features:
            raise ConfigError(
                f"{where}={params['feature']} but {train.name} has {train.n_features} features "
                f"(1-based ids 1-{train.n_features}, as in SVMlight files)"
            )
        else:
            columns = range(train.n_features) if params["feature"] == "best" else [int(params["feature"]) - 1]
        self.engine_params_ = {}
        directions = DIRECTIONS if params["direction"] == "best" else (params["direction"],)
        self.selection_: dict[str, float] = {}
        if len(columns) * len(directions) == 1:
            self.feature_, self.direction_ = columns[0], directions[0]
            return
        data = valid if valid is not None else train
        metric = metric or RankingMetric.from_config(cfg.early_stopping)
        best = (-np.inf, 0, "desc")
        for j in columns:
            values = column(data.X, j)
            for direction in directions:
                value = metric.mean(data, feature_scores(values, direction))
                self.selection_[f"{j}:{direction}"] = value
                if np.isfinite(value) and value > best[0]:
                    best = (value, j, direction)
        self.feature_, self.direction_ = best[1], best[2]

    def _predict(self, X: Any) -> np.ndarray:
        return feature_scores(column(X, self.feature_), self.direction_)

    def learned_choices(self) -> tuple[dict[str, Any], dict[str, float]]:
        """Params ``feature.id`` (1-based) / ``feature.direction``; metrics ``feature.selection.f<id>_<dir>``.

        >>> X = np.array([[1, 9], [3, 8], [2, 7]], dtype=np.float32)
        >>> d = RankingData(X=X, y=[2, 1, 0], qid=[1, 1, 1])
        >>> r = SingleFeature({"feature": 2, "direction": "asc"}).fit(d)
        >>> r.feature_, r.learned_choices()
        (1, ({'feature.id': 2, 'feature.direction': 'asc'}, {}))
        """
        self._check_fitted()
        chosen = getattr(self, "feature_selection_", None)  # data.features: ids of the file's columns

        def file_id(j: int) -> int:
            return int(chosen.ids[j]) if chosen is not None else j + 1

        params = {"feature.id": file_id(self.feature_), "feature.direction": self.direction_}
        metrics = {}
        for key, value in self.selection_.items():
            j, direction = key.split(":")
            metrics[f"feature.selection.f{file_id(int(j))}_{direction}"] = float(value)
        return params, metrics

    def _extra_state(self) -> dict[str, Any]:
        return {"feature": self.feature_, "direction": self.direction_, "selection": self.selection_}

    def _save_native(self, path: Path) -> dict[str, str]:
        return {}  # the whole model is the manifest's "state"

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        state = manifest["state"]
        self.feature_, self.direction_ = int(state["feature"]), str(state["direction"])
        self.selection_ = dict(state["selection"])
        if self.direction_ not in DIRECTIONS or not 0 <= self.feature_ < self.n_features_in_:
            raise ConfigError(f"{path}: invalid feature model state {state}")

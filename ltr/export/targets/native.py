"""The engines' own files: LightGBM's text model and XGBoost's JSON/UBJSON model, best iteration only.

``lightgbm``: ``Booster.save_model(path, num_iteration=best)`` — the text format LightGBM (and its
C API, and every LightGBM binding) loads with ``lightgbm.Booster(model_file=path)``; the file keeps
the objective and LightGBM's own ``<=`` / missing-value semantics, and holds only the trees of the
best iteration (a dump of the whole booster would not). ``xgboost``: the booster cut to the best
iteration, saved by ``Booster.save_model`` (``.json`` or ``.ubj`` by the output's suffix; both keep
``base_score`` and the objective, unlike ``get_dump``). Only a single model of that engine maps to
its file; ensembles and other engines are refused (use onnx or a search-engine format).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.export.trees import Exportable, Written

MISSING = "nan"
SUFFIX = {"lightgbm": ".txt", "xgboost": ".json"}


def _single(ranker: Any, engine: str) -> Any:
    if (
        getattr(ranker, "engine", "") != engine
        or not hasattr(ranker, "booster_")
        or hasattr(ranker, "rankers_")
    ):
        raise ConfigError(
            f"--format {engine}: writes a single {engine} model's own file; this is a "
            f"{getattr(ranker, 'name', type(ranker).__name__)} model — export it to onnx or a search-engine format"
        )
    if getattr(ranker, "name", "") == "classification":
        raise ConfigError(
            f"--format {engine}: a classification (McRank) booster predicts class probabilities; its ltr score "
            "Σ_k k·p_k is computed outside the file, so the file alone does not reproduce the scores"
        )
    return ranker.booster_


def writer(engine: str) -> Any:
    """The ``write`` function for ``engine`` (``lightgbm`` or ``xgboost``)."""

    def write(model: Exportable, out: Path, names: list[str], *, ranker: Any, **_: Any) -> Written:
        booster = _single(ranker, engine)
        n = ranker.n_iterations_
        if engine == "lightgbm":
            booster.save_model(str(out), num_iteration=n)
            load = f"lightgbm.Booster(model_file={str(out)!r}).predict(X)"
        else:
            if n is not None and n < booster.num_boosted_rounds():
                booster = booster[:n]
            booster.save_model(str(out))
            load = f"xgboost.Booster(model_file={str(out)!r}).inplace_predict(X)"
        return Written(missing=MISSING, how_to_load=(load,))

    return write


def scorer(engine: str) -> Any:
    """The ``score`` function for ``engine``: the written file loaded by the engine itself."""

    def score(out: Path, X: np.ndarray, names: list[str]) -> np.ndarray:
        if engine == "lightgbm":
            import lightgbm as lgb  # deferred: the engine loads only to check its own file

            return np.asarray(lgb.Booster(model_file=str(out)).predict(X), dtype=np.float64)
        import xgboost as xgb  # deferred: the engine loads only to check its own file

        return np.asarray(xgb.Booster(model_file=str(out)).inplace_predict(X), dtype=np.float64)

    return score

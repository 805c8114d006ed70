"""The model registry: config name → ranker class, imported lazily (engines load only when used).

``conf/model/NAME.yaml`` files and this registry name the same models; a test keeps them equal.
Other modules add models with :func:`register_model` (``"module:Class"`` targets keep imports lazy).

>>> "lambdamart" in available_models()
True
>>> get_ranker_class("nope")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: unknown model 'nope'; known models: catboost, classification, ..., xendcg
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ltr.core.config_check import plain
from ltr.core.errors import ConfigError
from ltr.models.base import read_manifest

_REGISTRY: dict[str, str] = {
    "lambdamart": "ltr.models.engines.lgbm:LambdaMART",
    "xendcg": "ltr.models.engines.lgbm:XENDCG",
    "regression": "ltr.models.engines.lgbm:Regression",
    "classification": "ltr.models.engines.lgbm:Classification",
    "lambdamart_xgb": "ltr.models.engines.xgb:XGBoostLambdaMART",
    "random_forest": "ltr.models.engines.sk:RandomForest",
    "linear": "ltr.models.engines.sk:Linear",
    "feature": "ltr.models.engines.feature:SingleFeature",
    "catboost": "ltr.models.engines.cat:CatBoostYetiRank",
    "ensemble_mean": "ltr.models.ensembles.ensemble:MeanEnsemble",
    "ensemble_bagging": "ltr.models.ensembles.ensemble:BaggingEnsemble",
    "ensemble_rrf": "ltr.models.ensembles.ensemble:RRFEnsemble",
    "ensemble_borda": "ltr.models.ensembles.ensemble:BordaEnsemble",
    "ensemble_blend": "ltr.models.ensembles.ensemble:BlendEnsemble",
    "ensemble_stack": "ltr.models.ensembles.ensemble:StackEnsemble",
    "lambdamart_unbiased": "ltr.models.clicks.unbiased:UnbiasedLambdaMART",
    "lambdamart_clicks": "ltr.models.clicks.unbiased:ClickLambdaMART",
    "lambdamart_xgb_unbiased": "ltr.models.clicks.unbiased_xgb:UnbiasedXGBoost",
    "lambdamart_xgb_clicks": "ltr.models.clicks.unbiased_xgb:ClickXGBoost",
    "neural_softmax": "ltr.models.neural.ranker:NeuralSoftmax",
    "neural_listmle": "ltr.models.neural.ranker:NeuralListMLE",
    "neural_approxndcg": "ltr.models.neural.ranker:NeuralApproxNDCG",
    "neural_pairwise": "ltr.models.neural.ranker:NeuralPairwise",
    "neural_lambdaloss": "ltr.models.neural.ranker:NeuralLambdaLoss",
    "neural_attention": "ltr.models.neural.ranker:NeuralAttention",
}


def register_model(name: str, target: str) -> None:
    """Register ``name`` → ``"package.module:ClassName"`` (a :class:`~ltr.models.base.BaseRanker` subclass)."""
    if ":" not in target:
        raise ConfigError(f"register_model({name!r}): target must be 'module:Class', got {target!r}")
    if name in _REGISTRY and _REGISTRY[name] != target:
        raise ConfigError(f"model {name!r} is already registered as {_REGISTRY[name]}")
    _REGISTRY[name] = target


def available_models() -> list[str]:
    """Registered model names, sorted (each has a ``conf/model/NAME.yaml``)."""
    return sorted(_REGISTRY)


def get_ranker_class(name: str) -> Any:
    """The ranker class registered under ``name``; unknown names list the known ones."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ConfigError(f"unknown model {name!r}; known models: {', '.join(available_models())}")
    module, _, attr = _REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def build_ranker(
    model_cfg: Mapping[str, Any], *, seed: int = 0, num_threads: int = 0, where: str = "model"
) -> Any:
    """A ranker from a model config ``{name, params, early_stopping, engine_params}`` (dict or DictConfig).

    The config is validated now (unknown keys, bad values), before any data is read; errors name the
    key under ``where`` (the config path of this model, e.g. ``model.members.0``).

    >>> r = build_ranker({"name": "lambdamart", "params": {"n_trees": 50}}, seed=1, num_threads=1)
    >>> type(r).__name__, r.get_params()["params"]
    ('LambdaMART', {'n_trees': 50})
    """
    cfg = plain(model_cfg)
    if not isinstance(cfg, Mapping) or "name" not in cfg:
        raise ConfigError(
            f"{where}: a model config needs a 'name' (one of {', '.join(available_models())}), got {model_cfg!r}"
        )
    cls = get_ranker_class(cfg["name"])
    return cls.from_config(cfg, seed=seed, num_threads=num_threads, where=where)


def load_ranker(path: str | Path) -> Any:
    """Load any saved ranker folder; the manifest's model name picks the class (never a pickled object)."""
    manifest = read_manifest(path)
    return get_ranker_class(manifest["model"]).load(path)

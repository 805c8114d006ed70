"""Rankers: one interface over LightGBM, XGBoost, CatBoost and scikit-learn (see docs/models.md).

>>> from ltr.models import build_ranker
>>> ranker = build_ranker({"name": "lambdamart", "params": {"n_trees": 100}}, seed=7, num_threads=1)
>>> type(ranker).__name__
'LambdaMART'

``build_ranker(cfg).fit(train, valid)`` → ``predict(data)`` → ``save(folder)``; ``load_ranker(folder)``
restores any saved ranker. Engines are imported only when a model that needs them is built.
"""

from ltr.models.base import BaseRanker, Ranker, read_manifest
from ltr.models.registry import available_models, build_ranker, get_ranker_class, load_ranker, register_model

# ensembles (ltr/models/ensemble.py, conf/model/ensemble_*.yaml); registered lazily by "module:Class"
for _name, _cls in {
    "ensemble_mean": "MeanEnsemble",
    "ensemble_bagging": "BaggingEnsemble",
    "ensemble_rrf": "RRFEnsemble",
    "ensemble_borda": "BordaEnsemble",
    "ensemble_blend": "BlendEnsemble",
    "ensemble_stack": "StackEnsemble",
}.items():
    register_model(_name, f"ltr.models.ensemble:{_cls}")

__all__ = [
    "BaseRanker",
    "Ranker",
    "available_models",
    "build_ranker",
    "get_ranker_class",
    "load_ranker",
    "read_manifest",
    "register_model",
]

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

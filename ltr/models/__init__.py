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

# ensembles (ltr/models/ensemble.py) and click-trained models (ltr/models/unbiased.py, unbiased_xgb.py), one
# conf/model/NAME.yaml each; registered lazily by "module:Class"
for _name, _target in {
    "ensemble_mean": "ensemble:MeanEnsemble",
    "ensemble_bagging": "ensemble:BaggingEnsemble",
    "ensemble_rrf": "ensemble:RRFEnsemble",
    "ensemble_borda": "ensemble:BordaEnsemble",
    "ensemble_blend": "ensemble:BlendEnsemble",
    "ensemble_stack": "ensemble:StackEnsemble",
    "lambdamart_unbiased": "unbiased:UnbiasedLambdaMART",
    "lambdamart_clicks": "unbiased:ClickLambdaMART",
    "lambdamart_xgb_unbiased": "unbiased_xgb:UnbiasedXGBoost",
    "lambdamart_xgb_clicks": "unbiased_xgb:ClickXGBoost",
}.items():
    register_model(_name, f"ltr.models.{_target}")

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

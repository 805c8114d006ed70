"""The XGBoost click-trained rankers (``lambdamart_xgb_unbiased``, ``lambdamart_xgb_clicks``).

Same :class:`~ltr.models.clicks.unbiased.ClickTrained` flow as the LightGBM ones in :mod:`ltr.models.clicks.unbiased`
(simulate click logs from the training labels, train on them, evaluate on the true labels); a
module of their own so that only these models load XGBoost.

>>> r = UnbiasedXGBoost({"n_trees": 5}, clicks={"model": "pbm"}, seed=1)
>>> r.translate(r._resolve().params, {}, None)["lambdarank_unbiased"], r.name
(True, 'lambdamart_xgb_unbiased')
"""

from __future__ import annotations

from typing import Any

from ltr.models.clicks.unbiased import ClickTrained
from ltr.models.engines.xgb import XGBoostLambdaMART


class UnbiasedXGBoost(ClickTrained, XGBoostLambdaMART):
    """XGBoost ``rank:ndcg`` with ``lambdarank_unbiased`` on click logs (rows in display order)."""

    name = "lambdamart_xgb_unbiased"

    def translate(self, params: dict[str, Any], engine_params: dict[str, Any], metric: Any) -> dict[str, Any]:
        # bias_norm 1 (regularisation 1/(norm+1) of the position-bias estimates) as in XGBoost's demo
        unbiased = {"lambdarank_unbiased": True, "lambdarank_bias_norm": 1.0}
        return self.with_engine_params({**super().translate(params, {}, metric), **unbiased}, engine_params)


class ClickXGBoost(ClickTrained, XGBoostLambdaMART):
    """Naive baseline: XGBoost ``rank:ndcg`` on click logs, clicks taken as relevance labels."""

    name = "lambdamart_xgb_clicks"

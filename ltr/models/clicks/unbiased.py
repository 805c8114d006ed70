"""Rankers trained on simulated click logs: position-debiased LambdaMART and naive baselines.

Each model's ``fit(train, valid)`` turns the labelled ``train`` split into click logs with
:func:`ltr.clicks.clicks_from_config` (the model config's ``clicks:`` block: click model, η, ε,
shown depth, sessions per query, production ranker; seeded with the model seed), trains on the
clicks, and is then evaluated like any ranker on the TRUE labels of ``valid``/``test``:

=============================  =====================================================================
``lambdamart_unbiased``        LightGBM lambdarank with ``Dataset(position=...)`` (LightGBM ≥ 4.1
                               learns a bias factor per position jointly with the ranker; Unbiased
                               LambdaMART, Hu et al. WWW 2019)
``lambdamart_xgb_unbiased``    XGBoost ``rank:ndcg`` with ``lambdarank_unbiased=true`` (positions
                               are read from the row order within a query: the log is in display order)
``lambdamart_clicks``          naive: LightGBM lambdarank on the clicks as if they were labels; with
                               ``clicks.propensities=PATH.json`` (estimated examination per position,
                               ``python -m ltr.clicks propensity LOG --output PATH.json``) pairwise
                               IPS LambdaMART: every (clicked, non-clicked) pair's lambda is weighted by
                               ``1/max(θ_r, clicks.propensity_floor)`` of the clicked position ``r``
                               (a custom objective, :mod:`ltr.models.clicks.pairwise_ips`)
``lambdamart_xgb_clicks``      naive: the same on XGBoost
=============================  =====================================================================

Early stopping is off by default (``patience: null``): real click logs have no true labels to
stop on, and stopping on the simulation's true validation labels would leak them.

The XGBoost twins live in :mod:`ltr.models.clicks.unbiased_xgb`, so that training a LightGBM model on
clicks never loads XGBoost (and the reverse).

>>> r = UnbiasedLambdaMART(clicks={"model": "cascade", "sessions": 3}, seed=1)
>>> r.get_params()["clicks"], r.name
({'model': 'cascade', 'sessions': 3}, 'lambdamart_unbiased')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr.clicks import ClickLog, clicks_from_config, resolve_click_config
from ltr.clicks.logs import read_propensities
from ltr.core.config_check import join
from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.models.base import OnIteration, Resolved
from ltr.models.clicks.pairwise_ips import PairwiseIPSObjective, ips_pair_weights
from ltr.models.engines.lgbm import LambdaMART


class ClickTrained:
    """Mixin: ``fit`` simulates click logs from the training labels and trains the engine on them."""

    _click_log: ClickLog | None = None
    takes_propensities = False  # True: clicks.propensities weights pairs by 1/θ of the clicked side (IPS)
    propensities_: np.ndarray | None = None

    def __init__(
        self,
        params: Mapping[str, Any] | None = None,
        *,
        clicks: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ):
        self.clicks = clicks
        super().__init__(params, **kwargs)  # type: ignore[call-arg]

    def _resolve(self) -> Resolved:
        resolved = super()._resolve()  # type: ignore[misc]
        where = join(self._where, "clicks")  # type: ignore[attr-defined]
        self.clicks_ = resolve_click_config(self.clicks, where)
        path = self.clicks_.get("propensities")
        self.propensities_ = None
        if path is None and self.clicks_["propensity_floor"] > 0:
            raise ConfigError(
                f"{join(where, 'propensity_floor')}: clips propensities, but {join(where, 'propensities')} "
                "gives none (set both, or neither)"
            )
        if path is not None:
            if not self.takes_propensities:
                raise ConfigError(
                    f"{join(where, 'propensities')}: {self.name} does not take propensities "  # type: ignore[attr-defined]
                    f"(lambdamart_clicks does: pairwise IPS LambdaMART)"
                )
            theta = read_propensities(path, join(where, "propensities"))
            if theta.shape[0] < int(self.clicks_["top_k"]):
                raise ConfigError(
                    f"{join(where, 'propensities')}: {path} covers positions 1..{theta.shape[0]}, "
                    f"but {join(where, 'top_k')} shows {self.clicks_['top_k']}"
                )
            self.propensities_ = theta
        return resolved

    def fit(
        self, train: RankingData, valid: RankingData | None = None, *, on_iteration: OnIteration | None = None
    ) -> Any:
        """Simulate clicks on ``train`` (seeded), train on them; ``valid`` keeps its true labels."""
        if not isinstance(train, RankingData):
            raise DataError(f"{self.name}.fit: train must be an ltr.data.RankingData")  # type: ignore[attr-defined]
        log = clicks_from_config(train, self.clicks, seed=int(self.seed))  # type: ignore[attr-defined]
        self.click_stats_ = {
            "sessions": log.data.n_queries,
            "rows": log.data.n_docs,
            "click_rate": log.click_rate,
            **{k: v for k, v in self.clicks_.items() if k != "logging"},
        }
        if self.propensities_ is not None:
            self.click_stats_["propensities_used"] = self.propensities_.tolist()
        self._click_log = log
        try:
            return super().fit(log.data, valid, on_iteration=on_iteration)  # type: ignore[misc]
        finally:
            self._click_log = None

    def _extra_state(self) -> dict[str, Any]:
        state = {**super()._extra_state(), "clicks": self.clicks_}  # type: ignore[misc]
        if self.propensities_ is not None:  # the examination the IPS weights used, saved with the model
            state["propensities"] = self.propensities_.tolist()
        return state


class UnbiasedLambdaMART(ClickTrained, LambdaMART):
    """LightGBM position-aware lambdarank on click logs (positions in the training Dataset)."""

    name = "lambdamart_unbiased"

    def _dataset(self, data: RankingData, reference: Any) -> Any:
        ds = super()._dataset(data, reference)
        log = self._click_log
        if log is not None and data is log.data:
            ds.set_position(log.position)
        return ds


class ClickLambdaMART(ClickTrained, LambdaMART):
    """LightGBM lambdarank on click logs: clicks as labels (naive), or pairwise IPS with propensities.

    With propensities the objective LightGBM trains is :class:`~ltr.models.clicks.pairwise_ips.PairwiseIPSObjective`
    over the click log (``engine_params_["objective"]`` records ``"custom"``, LightGBM's name for it);
    it takes LightGBM's ``sigmoid``, ``lambdarank_norm``, ``lambdarank_truncation_level`` and
    ``label_gain`` from the engine parameters, so with every θ = 1 it trains the naive model (to the
    resolution of LightGBM's sigmoid table).
    """

    name = "lambdamart_clicks"
    takes_propensities = True

    def translate(
        self, params: dict[str, Any], engine_params: dict[str, Any], **kwargs: Any
    ) -> dict[str, Any]:
        lgb = super().translate(params, engine_params, **kwargs)
        if self.propensities_ is not None:
            lgb["objective"] = "custom"
        return lgb

    def _train_params(self, train: RankingData) -> dict[str, Any]:
        params = super()._train_params(train)
        log = self._click_log
        if log is None or train is not log.data or self.propensities_ is None:
            return params
        params["objective"] = PairwiseIPSObjective(
            offsets=log.data.offsets,
            labels=log.data.y,
            pair_weight=ips_pair_weights(
                log.position, self.propensities_, float(self.clicks_["propensity_floor"])
            ),
            sigmoid=float(params.get("sigmoid", 1.0)),
            norm=bool(params.get("lambdarank_norm", True)),
            truncation_level=int(params.get("lambdarank_truncation_level", 30)),
            label_gain=params.get("label_gain"),
        )
        return params

"""``lambdamart_xgb``: LambdaMART on XGBoost (``rank:ndcg``; ``objective`` also ``rank:pairwise`` / ``rank:map``).

The ltr vocabulary is translated by the table of :mod:`ltr.models.vocabulary` (XGBoost column:
``n_trees`` → ``num_boost_round``, ``learning_rate`` → ``eta``, ``lambda_l1`` / ``lambda_l2`` →
``alpha`` / ``lambda``, ``min_sum_hessian_in_leaf`` → ``min_child_weight``, ``truncation_level`` →
``lambdarank_num_pair_per_sample`` with ``lambdarank_pair_method=topk``, ``label_gain`` →
``ndcg_exp_gain``, …; ``docs/models.md`` prints the whole table). The result is ``engine_params_``:
the dict given to ``xgboost.train`` plus ``num_boost_round``, its round-count argument.

**Query ids.** XGBoost requires ``qid`` sorted non-decreasingly ("qid must be sorted in
non-decreasing order"). :class:`~ltr.data.RankingData` already keeps each query's rows contiguous,
so ltr hands XGBoost each row's *query position* (0, 0, 0, 1, 1, 2, …) instead of the raw qid: that
is the stable sort of the queries by first appearance, it is sorted by construction whatever the
original qids are, no row moves, and predictions come back in the caller's row order (the mapping
back is the identity). The raw qids are never needed by XGBoost.

**Weights.** ``RankingData.weight`` is per query, which is what XGBoost's ranking objectives expect
(one weight per group).

>>> import numpy as np
>>> from ltr.data import RankingData
>>> X = np.random.default_rng(0).normal(size=(40, 2)).astype(np.float32)
>>> data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat([9, 3, 7, 1], 10))  # unsorted qids
>>> r = XGBoostLambdaMART({"n_trees": 3}, num_threads=1).fit(data)
>>> r.engine_params_["lambdarank_pair_method"], r.predict(data).shape
('topk', (40,))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models import vocabulary
from ltr.models.base import BaseRanker, OnIteration, Resolved
from ltr.models.checks import check_integer_labels, check_label_limit
from ltr.models.engines.binned import BINNED, binning_key
from ltr.models.evaluation import RankingMetric
from ltr.models.monitor import LTR_PREFIX, IterationMonitor, history_name, watch
from ltr.models.params import gain_table

MODEL_FILE = "model.ubj"
XGBOOST_MAX_EXP_LABEL = 31  # rank:ndcg with ndcg_exp_gain accepts relevance degrees 0..31
_XGB_METRIC = {"rank:ndcg": "ndcg", "rank:pairwise": "ndcg", "rank:map": "map"}


def query_positions(data: RankingData) -> np.ndarray:
    """Row → position of its query (0-based): sorted by construction, usable as XGBoost's ``qid``.

    >>> d = RankingData(X=np.zeros((5, 1), np.float32), y=[0] * 5, qid=[42, 42, 7, 7, 7])
    >>> query_positions(d).tolist()
    [0, 0, 1, 1, 1]
    """
    return np.repeat(np.arange(data.n_queries, dtype=np.int64), data.group_sizes)


class XGBoostLambdaMART(BaseRanker):
    """LambdaMART on XGBoost's ``hist`` trees (see the module docstring for the translation)."""

    name = "lambdamart_xgb"
    engine = "xgboost"
    unsupported_params = vocabulary.refused("xgboost")

    def _check_params(self, params: dict[str, Any]) -> None:
        gain = params["label_gain"]
        if isinstance(gain, list):
            if gain in (gain_table("exp2", len(gain) - 1), gain_table("linear", len(gain) - 1)):
                return
            raise ConfigError(
                f"model {self.name}: params.label_gain {gain} is neither 2^l - 1 nor l; XGBoost only offers those "
                "two gains (ndcg_exp_gain true/false) — use a LightGBM model for a custom gain table"
            )

    def translate(
        self, params: dict[str, Any], engine_params: dict[str, Any], metric: RankingMetric | None
    ) -> dict[str, Any]:
        """The ``xgboost.train`` parameter dict (plus ``num_boost_round``); ``engine_params`` win.

        The vocabulary part comes from :func:`ltr.models.vocabulary.translate`; this adds
        ``tree_method=hist``, XGBoost's own metric and ``verbosity``.
        """
        out: dict[str, Any] = {"tree_method": "hist", **vocabulary.translate(self.engine, params)}
        own = _XGB_METRIC[params["objective"]]
        if (
            metric is not None
            and metric.family == own
            and metric.k
            and not metric.same_conventions("xgboost")
        ):
            out["eval_metric"] = f"{own}@{metric.k}"
        else:
            out["disable_default_eval_metric"] = True
        out.update(vocabulary.translate(self.engine, {"seed": self.seed, "num_threads": self.num_threads}))
        out["verbosity"] = 0
        out.update(engine_params)
        return out

    def _check_data(self, data: RankingData, role: str, params: dict[str, Any]) -> None:
        check_integer_labels(data, role, engine="XGBoost ranking")
        if params["objective"] == "rank:map":
            check_label_limit(
                data,
                role,
                2,
                engine="XGBoost rank:map (binary relevance)",
                hint="binarise the labels (e.g. y >= 1) or use rank:ndcg",
            )
        if vocabulary.xgboost_exp_gain(params["label_gain"]) and params["objective"] == "rank:ndcg":
            check_label_limit(
                data,
                role,
                XGBOOST_MAX_EXP_LABEL + 1,
                engine="XGBoost rank:ndcg with the exponential gain 2^l - 1",
                hint="set model.params.label_gain: linear (XGBoost ndcg_exp_gain=false)",
            )

    def _matrix(self, data: RankingData, ref: Any, max_bin: int, nthread: int) -> Any:
        return xgb.QuantileDMatrix(
            data.X,
            label=data.y,
            qid=query_positions(data),
            weight=data.weight,
            ref=ref,
            max_bin=max_bin,
            nthread=nthread,
        )

    def _binned(self, train: RankingData, splits: dict[str, RankingData]) -> tuple[Any, dict[str, Any]]:
        """The train QuantileDMatrix and one per evaluated split (binned against train's): shared through
        :data:`ltr.models.engines.binned.BINNED` by fits with the same data objects, ``max_bin`` and threads.

        A QuantileDMatrix is built from the data and these arguments only (training parameters never
        reach it; XGBoost >= 2.0 refuses a training ``max_bin`` other than the matrix's): they are the key.
        """
        args = {"max_bin": int(self.engine_params_["max_bin"]), "nthread": int(self.num_threads)}
        return BINNED.matrices(
            binning_key(self, args, args), train, splits, lambda d, ref: self._matrix(d, ref, **args)
        )

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        params, es = cfg.params, cfg.early_stopping
        w = watch(train, valid, es, on_iteration, lambda d, role, _: self._check_data(d, role, params))
        self.engine_params_ = self.translate(params, cfg.engine_params, w.metric)
        train_params = dict(self.engine_params_)
        rounds = int(train_params.pop("num_boost_round"))
        dtrain, dsets = self._binned(train, w.splits)
        by_set = w.by_id({id(d): role for role, d in dsets.items()})
        roles = {id(d): role for role, d in dsets.items()}
        metric = w.metric
        exact: dict[tuple[str, str], float] = {}  # XGBoost's log rounds to 6 digits; keep full precision
        custom_metric = None
        if metric is not None:

            def custom_metric(predt: np.ndarray, dmat: Any) -> tuple[str, float]:
                value = metric.mean(by_set[id(dmat)], predt)
                exact[(roles[id(dmat)], metric.name)] = value
                return LTR_PREFIX + metric.name, value

        booster = xgb.train(
            train_params,
            dtrain,
            num_boost_round=rounds,
            evals=[(d, role) for role, d in dsets.items()],
            custom_metric=custom_metric,
            callbacks=[_MonitorCallback(w.monitor, exact)] if w.splits or on_iteration else None,
            verbose_eval=False,
        )
        self.evals_result_ = w.monitor.history
        self.best_iteration_ = w.monitor.best_iteration if w.monitor.patience is not None else None
        # keep exactly the rounds the model predicts with, so booster_ (logged by MLflow) agrees
        self.booster_ = booster[: self.best_iteration_ + 1] if self.best_iteration_ is not None else booster

    def _predict(self, X: Any) -> np.ndarray:
        return self.booster_.inplace_predict(X)

    def _n_rounds(self) -> int | None:
        return int(self.booster_.num_boosted_rounds())

    def _save_native(self, path: Path) -> dict[str, str]:
        self.booster_.save_model(str(path / MODEL_FILE))
        return {"model": MODEL_FILE}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        self.booster_ = xgb.Booster(model_file=str(path / manifest["files"]["model"]))
        self.booster_.set_param({"nthread": int(self.num_threads)})


class _MonitorCallback(xgb.callback.TrainingCallback):
    """Feeds XGBoost's per-round evaluation log to the IterationMonitor; returns True to stop.

    ``exact`` holds the full-precision values of ltr's metric for this round (set by the custom
    metric just before the callbacks run); they replace the 6-digit values of XGBoost's log.
    """

    def __init__(self, monitor: IterationMonitor, exact: dict[tuple[str, str], float]) -> None:
        super().__init__()
        self.monitor = monitor
        self.exact = exact

    def after_iteration(self, model: Any, epoch: int, evals_log: dict[str, dict[str, list[float]]]) -> bool:
        values = {
            (split, history_name(name, "xgboost")): float(curve[-1])
            for split, curves in evals_log.items()
            for name, curve in curves.items()
        }
        values.update(self.exact)
        return self.monitor.update(epoch, values)

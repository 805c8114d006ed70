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

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from ltr.core.config_check import join, plain
from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models import vocabulary
from ltr.models.base import BaseRanker, OnIteration, Resolved
from ltr.models.checks import check_integer_labels, check_label_limit
from ltr.models.engines.binned import BINNED, binning_key
from ltr.models.engines.files import check_xgboost_model, engine_error
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


#: the settings that decide which of XGBoost's components (booster, tree updater, objective) are configured,
#: and so which parameters it takes; the ranker's values unless ``engine_params`` (or ``params.objective``) set them
SETUP_DEFAULTS = {"booster": "gbtree", "tree_method": "hist", "objective": "rank:ndcg"}
#: names XGBoost's own check (``validate_parameters``, learner.cc) accepts besides its configured parameters
XGBOOST_VALIDATOR_EXTRAS = ("eval_metric", "num_output_group")
#: the ``xgboost.train`` argument the ranker takes from ``engine_params`` (its round count)
ROUNDS = "num_boost_round"


def _parameter_blocks(config: Any) -> dict[str, dict[str, str]]:
    """The ``*_param`` objects of a ``Booster.save_config()`` tree, by path (``learner/generic_param``, ...)."""
    blocks: dict[str, dict[str, str]] = {}
    stack: list[tuple[str, Any]] = [("", config)]
    while stack:
        path, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(key, str) and key.endswith("_param") and isinstance(value, dict):
                blocks[f"{path}/{key}"] = {str(k): str(v) for k, v in value.items()}
            elif isinstance(value, dict | list):
                stack.append((f"{path}/{key}", value))
    return blocks


def _configured(setup: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """XGBoost's parameter blocks for a booster built with ``setup`` (XGBoostError when it refuses them);
    silent, and XGBoost's global config (which a booster's ``verbosity`` would change) left as it was."""
    with xgb.config_context(verbosity=0):
        dmat = xgb.DMatrix(np.zeros((2, 1), np.float32), label=[0, 1], qid=[0, 0])
        booster = xgb.Booster(dict(setup), [dmat])
        return _parameter_blocks(json.loads(booster.save_config()))


@functools.cache
def xgboost_parameter_names(
    booster: str = "gbtree", tree_method: str = "hist", objective: str = "rank:ndcg"
) -> dict[str, str]:
    """Every parameter name XGBoost takes for this setup → one name per alias group, found by asking XGBoost.

    The names are those its own check (``validate_parameters``, which warns "Parameters: { ... } are
    not used") compares against: every ``*_param`` block of ``Booster.save_config()`` for a booster
    built with this ``booster``, ``tree_method`` and ``objective`` (learner, booster, tree updaters,
    objective), the global config (``xgboost.get_config()``: ``verbosity``, ...) and
    :data:`XGBOOST_VALIDATOR_EXTRAS`; plus :data:`ROUNDS`, which the ranker passes to ``xgboost.train``.
    Aliases (``eta``/``learning_rate``, ``alpha``/``reg_alpha``, ``seed``/``random_state``) are the
    names of a block that XGBoost sets together: setting one to a new value shows it under both.
    Raises ``xgboost.core.XGBoostError`` when XGBoost refuses the setup itself (``booster=gbtre``).

    >>> names = xgboost_parameter_names()
    >>> names["reg_alpha"] == names["alpha"], names["eta"] == names["learning_rate"], "max_bin" in names
    (True, True, True)
    >>> "rate_drop" in names, "rate_drop" in xgboost_parameter_names(booster="dart")  # dart's own parameter
    (False, True)
    """
    setup = {"booster": booster, "tree_method": tree_method, "objective": objective}
    blocks = _configured(setup)
    names = {name: name for name in [*xgb.get_config(), *XGBOOST_VALIDATOR_EXTRAS, ROUNDS]}
    for block in blocks.values():
        names.update({name: name for name in block})
    for path, block in blocks.items():
        values = list(block.values())
        shared = [name for name in block if values.count(block[name]) > 1]  # aliases print alike
        for name in shared:
            probed = _probe(setup, path, name, block[name])
            if name not in probed:
                continue
            group = [n for n in shared if probed.get(n) == probed[name] != block[n]]
            for n in group:
                names[n] = min(names[n], *group)
    return names


def _probe(setup: Mapping[str, Any], path: str, name: str, default: str) -> dict[str, str]:
    """Block ``path`` after setting ``name`` to a value other than its ``default`` (empty when XGBoost refuses both)."""
    for value in ("2", "0.5"):
        if value == default:
            continue
        try:
            return _configured({**setup, name: value}).get(path, {})
        except xgb.core.XGBoostError:
            continue
    return {}


@functools.cache
def xgboost_sklearn_round_names() -> dict[str, str]:
    """The scikit-learn wrapper's spelling of ``xgboost.train``'s round count, found by asking ``XGBRanker``
    which of its arguments outside the booster's parameters sets ``get_num_boosting_rounds()``.

    >>> xgboost_sklearn_round_names()
    {'n_estimators': 'num_boost_round'}
    """
    native = xgboost_parameter_names()
    probe = 7919
    out = {}
    for name in xgb.XGBRanker().get_params():
        if name not in native and xgb.XGBRanker(**{name: probe}).get_num_boosting_rounds() == probe:
            out[name] = ROUNDS
    return out


class XGBoostLambdaMART(BaseRanker):
    """LambdaMART on XGBoost's ``hist`` trees (see the module docstring for the translation)."""

    name = "lambdamart_xgb"
    engine = "xgboost"
    input_dtype = "float32"  # XGBoost keeps float32 (its text loader is not correctly rounded: docs/data.md)
    unsupported_params = vocabulary.refused("xgboost")

    # --- engine_params: XGBoost's own parameter list for the setup this model trains ----------------------
    def xgboost_setup(self) -> dict[str, str]:
        """``booster``, ``tree_method`` and ``objective`` as the fit will set them (``engine_params`` win)."""
        params, given = plain(self.params), plain(self.engine_params)
        setup = dict(SETUP_DEFAULTS)
        if isinstance(params, Mapping) and isinstance(params.get("objective"), str):
            setup["objective"] = params["objective"]
        if isinstance(given, Mapping):
            setup.update({k: given[k] for k in SETUP_DEFAULTS if isinstance(given.get(k), str)})
        return setup

    def engine_parameter_names(self) -> Mapping[str, str]:
        """XGBoost's parameters for this model's setup (:func:`xgboost_parameter_names`); the default
        setup's when XGBoost refuses this one (:meth:`_check_engine_params` says why)."""
        try:
            return xgboost_parameter_names(**self.xgboost_setup())
        except xgb.core.XGBoostError:
            return xgboost_parameter_names()

    def engine_spellings(self) -> Mapping[str, str]:
        """XGBoost's parameter names plus its scikit-learn wrapper's name for the round count
        (``n_estimators``: the ``XGBRanker`` argument that becomes ``get_num_boosting_rounds()``)."""
        return {**self.engine_parameter_names(), **xgboost_sklearn_round_names()}

    def engine_parameter_kind(self) -> str:
        setup = ", ".join(f"{k}={v}" for k, v in self.xgboost_setup().items())
        return f"an XGBoost parameter with {setup}"

    def _check_engine_params(self, engine_params: Mapping[str, Any], where: str) -> None:
        """XGBoost must accept the setup (booster, tree method, objective) before its parameters can be listed."""
        if not engine_params:
            return
        try:
            xgboost_parameter_names(**self.xgboost_setup())
        except xgb.core.XGBoostError as exc:
            given = [f"{join(where, k)}={engine_params[k]}" for k in SETUP_DEFAULTS if k in engine_params]
            reason = re.sub(r"^\[[\d:]+\] \S+: ", "", str(exc).splitlines()[0])
            raise ConfigError(
                f"model {self.name}: XGBoost refuses {', '.join(given) or 'the setup'}: {reason}"
            ) from None
        super()._check_engine_params(engine_params, where)

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
        return self.with_engine_params(out, engine_params)

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
        file = path / manifest["files"]["model"]
        check_xgboost_model(
            file
        )  # a damaged file can crash XGBoost or exhaust memory (ltr.models.engines.files)
        try:
            self.booster_ = xgb.Booster(model_file=str(file))
        except xgb.core.XGBoostError as exc:
            raise engine_error(file, "XGBoost", exc) from None
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

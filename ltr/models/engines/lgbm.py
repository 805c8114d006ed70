"""LightGBM rankers: ``lambdamart`` (lambdarank), ``xendcg`` (rank_xendcg), ``regression`` and
``classification`` (multiclass; score = expected relevance Σ_k p_k·k, as in McRank).

All four train with ``lightgbm.train`` on the Booster API. The ltr vocabulary is translated into
LightGBM's names by the table of :mod:`ltr.models.vocabulary` (:meth:`LightGBMRanker.translate`,
exposed after fitting as ``engine_params_``, the exact dict handed to ``lightgbm.train``);
``engine_params`` from the config are applied last.
Runs are deterministic for a seed: ``seed``, ``deterministic=True`` and ``force_col_wise=True``
(LightGBM otherwise picks row- or column-wise histograms by timing both).

Early stopping and the per-round history use one LightGBM callback that feeds
:class:`~ltr.models.monitor.IterationMonitor`; the validation metric is computed with ltr's own
conventions (see :mod:`ltr.models.evaluation`) from the predictions LightGBM already holds, and
LightGBM's own metric is recorded next to it as ``lightgbm_<name>``.

Example (tiny data; ``n_trees`` kept small):

>>> import numpy as np
>>> from ltr.data import RankingData
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(60, 3)).astype(np.float32)
>>> data = RankingData(X=X, y=(X[:, 0] > 0).astype(int), qid=np.repeat(np.arange(6), 10))
>>> r = LambdaMART({"n_trees": 5, "min_data_in_leaf": 2}, num_threads=1).fit(data)
>>> r.predict(data).shape, r.engine_params_["objective"]
((60,), 'lambdarank')
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models import vocabulary
from ltr.models.base import BaseRanker, OnIteration, Resolved
from ltr.models.checks import (
    LIGHTGBM_MAX_QUERY_ROWS,
    check_integer_labels,
    check_label_limit,
    check_labels_finite,
    check_query_size,
    row_weights,
)
from ltr.models.engines.binned import BINNED, binning_key
from ltr.models.engines.files import check_lightgbm_text, engine_error
from ltr.models.evaluation import RankingMetric
from ltr.models.monitor import LTR_PREFIX, IterationMonitor, history_name, watch

MODEL_FILE = "model.txt"
LIGHTGBM_DEFAULT_GAIN_SIZE = 31  # LightGBM's default label_gain is 2^i - 1 for i in 0..30


@functools.cache
def lightgbm_parameter_names() -> dict[str, str]:
    """Every LightGBM parameter name and alias → its canonical name, from LightGBM's own table
    (``LGBM_DumpParamAliases``: the C++ config's full list, ~140 parameters).

    >>> names = lightgbm_parameter_names()
    >>> names["num_boost_round"], names["min_gain_to_split"], "min_gain_to_splitt" in names
    ('num_iterations', 'min_gain_to_split', False)
    """
    import lightgbm as lgb  # deferred: the engine loads when a LightGBM model is built

    table = lgb.basic._ConfigAliases._get_all_param_aliases()
    return {alias: name for name, aliases in table.items() for alias in (name, *aliases)}


class LightGBMRanker(BaseRanker):
    """Shared LightGBM adapter; subclasses fix the objective."""

    engine = "lightgbm"
    objective: ClassVar[str] = ""
    ranking_objective: ClassVar[bool] = True  # the objective itself uses query groups

    def engine_parameter_names(self) -> Mapping[str, str]:
        """LightGBM's own parameter list with every alias (its C API's dump, :func:`lightgbm_parameter_names`)."""
        return lightgbm_parameter_names()

    # --- translation -------------------------------------------------------------------------------
    def translate(
        self,
        params: dict[str, Any],
        engine_params: dict[str, Any],
        *,
        max_label: int,
        metric: RankingMetric | None,
    ) -> dict[str, Any]:
        """The ``lightgbm.train`` parameter dict for resolved ltr ``params`` (``engine_params`` win).

        The vocabulary part comes from :func:`ltr.models.vocabulary.translate`; this adds the
        objective, LightGBM's own metric and ``verbosity``.
        """
        lgb: dict[str, Any] = {
            "objective": self.objective,
            "boosting": "gbdt",
            **vocabulary.translate(self.engine, params, max_label=max_label),
        }
        lgb["metric"] = self._engine_metric(metric)
        if lgb["metric"] in ("ndcg", "map"):
            lgb["eval_at"] = [metric.k]
        lgb.update(vocabulary.translate(self.engine, {"seed": self.seed, "num_threads": self.num_threads}))
        lgb["verbosity"] = -1
        return self.with_engine_params(lgb, engine_params)

    def _engine_metric(self, metric: RankingMetric | None) -> str:
        """LightGBM's own counterpart of the early-stopping metric, logged next to ours when they differ.

        ``ndcg@k`` / ``map@k`` for the ranking objectives; ``"None"`` when LightGBM has no counterpart
        or its conventions (preset ``lightgbm``) equal ours, so the value would be a duplicate.
        """
        if (
            metric is not None
            and self.ranking_objective
            and metric.family in ("ndcg", "map")
            and metric.k
            and not metric.same_conventions("lightgbm")
        ):
            return metric.family
        return "None"

    # --- data checks -------------------------------------------------------------------------------
    def _check_data(self, data: RankingData, role: str, params: dict[str, Any], max_label: int) -> None:
        if not self.ranking_objective:
            check_labels_finite(data, role)
            return
        check_integer_labels(data, role, engine="LightGBM")
        gain = params.get("label_gain", "exp2")
        if gain == "exp2":
            check_label_limit(
                data,
                role,
                LIGHTGBM_DEFAULT_GAIN_SIZE,
                engine="LightGBM's default gain table (2^l - 1)",
                hint="give model.params.label_gain a table with one gain per label, or label_gain: linear",
            )
        elif isinstance(gain, list):
            check_label_limit(
                data,
                role,
                len(gain),
                engine=f"model.params.label_gain ({len(gain)} entries)",
                hint="add gains for the higher labels",
            )
        check_query_size(data, role, LIGHTGBM_MAX_QUERY_ROWS, engine="LightGBM")

    # --- training ------------------------------------------------------------------------------------
    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        import lightgbm as lgb  # deferred: engine loads only when a LightGBM model is fitted or loaded

        params, es = cfg.params, cfg.early_stopping
        w = watch(train, valid, es, on_iteration, lambda d, role, top: self._check_data(d, role, params, top))
        self._prepare(train, valid, params, w.max_label)
        self.engine_params_ = self.translate(
            params, cfg.engine_params, max_label=w.max_label, metric=w.metric
        )

        dtrain, dsets = self._binned(train, w.splits)
        by_set = w.by_id({id(d): role for role, d in dsets.items()})
        metric = w.metric
        feval = None
        if metric is not None:

            def feval(preds: np.ndarray, dset: Any) -> tuple[str, float, bool]:
                data = by_set[id(dset)]
                return LTR_PREFIX + metric.name, metric.mean(data, self._scores_from_engine(preds)), True

        self.booster_ = lgb.train(
            self._train_params(train),
            dtrain,
            num_boost_round=int(self.engine_params_["num_iterations"]),
            valid_sets=list(dsets.values()),
            valid_names=list(dsets),
            feval=feval,
            callbacks=[_monitor_callback(w.monitor, lgb)] if w.splits or on_iteration else [],
        )
        self.evals_result_ = w.monitor.history
        self.best_iteration_ = w.monitor.best_iteration if w.monitor.patience is not None else None

    def _prepare(
        self, train: RankingData, valid: RankingData | None, params: dict[str, Any], max_label: int
    ) -> None:
        """Fitted state needed before translation (e.g. the number of classes)."""

    def _binned(self, train: RankingData, splits: dict[str, RankingData]) -> tuple[Any, dict[str, Any]]:
        """The train Dataset and one per evaluated split (``reference`` = train's): shared through
        :data:`ltr.models.engines.binned.BINNED` by fits with the same data objects and :func:`dataset_params`."""
        key = binning_key(self, self.engine_params_, dataset_params(self.engine_params_))
        return BINNED.matrices(key, train, splits, self._dataset)

    def _train_params(self, train: RankingData) -> dict[str, Any]:
        """The parameter dict for ``lightgbm.train``: ``engine_params_`` (a subclass may put a callable
        custom objective in place of the name it records there)."""
        return dict(self.engine_params_)

    def _dataset(self, data: RankingData, reference: Any) -> Any:
        import lightgbm as lgb  # deferred: engine loads only when a LightGBM model is fitted or loaded

        return lgb.Dataset(
            data.X,
            label=data.y,
            group=data.group_sizes if self.ranking_objective else None,
            weight=row_weights(data),
            reference=reference,
            free_raw_data=True,
        )

    def _scores_from_engine(self, preds: np.ndarray) -> np.ndarray:
        """Ranking scores from what LightGBM hands a feval (raw scores; class probabilities for multiclass)."""
        return preds

    # --- prediction / persistence -------------------------------------------------------------------
    def _predict(self, X: Any) -> np.ndarray:
        raw = self.booster_.predict(X, num_iteration=self.n_iterations_)
        return self._scores_from_engine(raw)

    def _n_rounds(self) -> int | None:
        return int(self.booster_.current_iteration())

    def _save_native(self, path: Path) -> dict[str, str]:
        self.booster_.save_model(str(path / MODEL_FILE), num_iteration=self.n_iterations_)
        return {"model": MODEL_FILE}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        import lightgbm as lgb  # deferred: engine loads only when a LightGBM model is fitted or loaded

        file = path / manifest["files"]["model"]
        check_lightgbm_text(file)  # a damaged file aborts LightGBM (ltr.models.engines.files)
        try:
            self.booster_ = lgb.Booster(model_file=str(file))
        except lgb.basic.LightGBMError as exc:
            raise engine_error(file, "LightGBM", exc) from None


#: LightGBM parameters that shape a binned Dataset (LightGBM refuses to change them on a built one), the
#: key under which a sweep's trials share Datasets (:data:`ltr.models.engines.binned.BINNED`);
#: ``min_data_in_leaf`` / ``min_sum_hessian_in_leaf`` too while ``feature_pre_filter`` is on (LightGBM's
#: default), because the filter drops the features they make unsplittable when the Dataset is built
DATASET_PARAMS = (
    "max_bin", "max_bin_by_feature", "min_data_in_bin", "bin_construct_sample_cnt", "data_random_seed",
    "seed", "is_enable_sparse", "enable_bundle", "use_missing", "zero_as_missing", "feature_pre_filter",
    "categorical_feature", "forcedbins_filename", "linear_tree", "min_data_in_leaf",
    "min_sum_hessian_in_leaf", "precise_float_parser",
)  # fmt: skip
#: the leaf-size parameters that are Dataset parameters only through ``feature_pre_filter``
PRE_FILTER_PARAMS = ("min_data_in_leaf", "min_sum_hessian_in_leaf")


def dataset_params(engine_params: dict[str, Any]) -> tuple[str, ...]:
    """The :data:`DATASET_PARAMS` that shape this fit's Dataset: without ``feature_pre_filter`` (set to
    false) the leaf sizes do not, so trials that differ only in them share one Dataset.

    >>> "min_data_in_leaf" in dataset_params({}), "min_data_in_leaf" in dataset_params({"feature_pre_filter": False})
    (True, False)
    """
    if engine_params.get("feature_pre_filter", True):
        return DATASET_PARAMS
    return tuple(name for name in DATASET_PARAMS if name not in PRE_FILTER_PARAMS)


def _monitor_callback(monitor: IterationMonitor, lgb: Any) -> Any:
    """A LightGBM callback feeding ``monitor``; raises EarlyStopException with the best round (or, when
    ``on_iteration`` asked to stop without early stopping, with this round)."""
    best_list: list[Any] = []

    def callback(env: Any) -> None:
        values: dict[tuple[str, str], float] = {}
        for data_name, eval_name, result, *_ in env.evaluation_result_list or []:
            values[(data_name, history_name(eval_name, "lightgbm"))] = float(result)
        iteration = env.iteration - env.begin_iteration
        best_before = monitor.best_iteration
        stop = monitor.update(iteration, values)
        if monitor.best_iteration != best_before:
            best_list[:] = list(env.evaluation_result_list or [])
        last = env.iteration == env.end_iteration - 1
        if monitor.patience is not None and monitor.best_iteration is not None and (stop or last):
            raise lgb.callback.EarlyStopException(monitor.best_iteration, best_list)
        if monitor.stopped_at is not None:  # on_iteration asked to stop (no early stopping to pick a round)
            raise lgb.callback.EarlyStopException(iteration, list(env.evaluation_result_list or []))

    callback.order = 30  # after LightGBM's own recording callbacks
    return callback


class LambdaMART(LightGBMRanker):
    """LambdaMART: LightGBM ``lambdarank`` (pairwise lambdas weighted by |ΔNDCG| over the top positions)."""

    name = "lambdamart"
    objective = "lambdarank"


class XENDCG(LightGBMRanker):
    """XE-NDCG (Bruch 2021): LightGBM ``rank_xendcg``, a listwise cross-entropy bound on NDCG."""

    name = "xendcg"
    objective = "rank_xendcg"


class Regression(LightGBMRanker):
    """Pointwise GBDT regression on the labels (L2); documents are ranked by the predicted grade."""

    name = "regression"
    objective = "regression"
    ranking_objective = False


class Classification(LightGBMRanker):
    """McRank (Li et al. 2007): multiclass GBDT over the grades; score = expected relevance Σ_k p_k·k.

    ``num_classes`` (``None`` = max label of train/valid + 1) fixes the classes 0..K−1.
    """

    name = "classification"
    objective = "multiclass"
    ranking_objective = False

    def _check_data(self, data: RankingData, role: str, params: dict[str, Any], max_label: int) -> None:
        check_integer_labels(data, role, engine="multiclass classification")
        if params["num_classes"] is not None:
            check_label_limit(
                data,
                role,
                params["num_classes"],
                engine=f"classification with num_classes={params['num_classes']}",
                hint="raise model.params.num_classes or leave it null",
            )

    def _prepare(
        self, train: RankingData, valid: RankingData | None, params: dict[str, Any], max_label: int
    ) -> None:
        self.num_classes_ = vocabulary.n_classes(params["num_classes"], max_label)
        if self.num_classes_ < 2:
            raise ConfigError(
                f"model classification: the labels of {train.name} have a single grade (0); need at least two classes"
            )

    def _scores_from_engine(self, preds: np.ndarray) -> np.ndarray:
        probs = np.asarray(preds).reshape(-1, self.num_classes_)
        return probs @ np.arange(self.num_classes_, dtype=np.float64)

    def predict_proba(self, data: RankingData | Any) -> np.ndarray:
        """P(label = g) per row, shape (n_rows, num_classes) (the label distributions of ``ltr.labelnext``)."""
        X = self.selected_columns(data.X if isinstance(data, RankingData) else data)  # data.features
        raw = self.booster_.predict(X, num_iteration=self.n_iterations_)
        return np.asarray(raw, dtype=np.float64).reshape(-1, self.num_classes_)

    def _extra_state(self) -> dict[str, Any]:
        return {"num_classes": self.num_classes_}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        super()._load_native(path, manifest)
        self.num_classes_ = int(manifest["state"]["num_classes"])

"""``catboost``: CatBoost YetiRank (optional: the ``catboost`` extra, :mod:`ltr.core.extras`; imported lazily).

The ltr vocabulary is translated by the table of :mod:`ltr.models.vocabulary` (CatBoost column:
``n_trees`` → ``iterations``, ``max_depth`` → ``depth`` (symmetric trees), ``lambda_l2`` →
``l2_leaf_reg``, ``max_bin`` → ``border_count``, ``feature_fraction`` → ``rsm``,
``bagging_fraction`` < 1 → ``bootstrap_type=Bernoulli`` + ``subsample``, …); the result is
``engine_params_`` (``engine_params`` win). The rest of the vocabulary (leaves, per-leaf counts,
truncation level, gain tables, query bagging) has no YetiRank counterpart and is refused with the
reason the table gives.

Queries go to CatBoost as ``group_id`` = query position (contiguous, as CatBoost requires);
per-query weights as ``group_weight`` (repeated on the rows of each query, CatBoost's layout).

Early stopping uses ltr's metric through a CatBoost custom ``eval_metric`` (computed with
:func:`ltr.metrics.evaluate` on CatBoost's current validation predictions) and a CatBoost callback
feeding :class:`~ltr.models.monitor.IterationMonitor`; CatBoost's own ``NDCG:top=k`` (linear gain,
pessimistic ties — ltr preset ``catboost``) is recorded as ``catboost_ndcg@k``. After early
stopping the model is shrunk to the best round. Saved as CatBoost's native ``model.cbm``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError, DataError
from ltr.core.extras import import_optional
from ltr.data import RankingData
from ltr.models import vocabulary
from ltr.models.base import BaseRanker, OnIteration, Resolved
from ltr.models.checks import check_integer_labels, row_weights
from ltr.models.engines.files import check_catboost_model, engine_error
from ltr.models.evaluation import RankingMetric
from ltr.models.monitor import IterationMonitor, watch

MODEL_FILE = "model.cbm"


def import_catboost() -> Any:
    """The ``catboost`` module, or a ConfigError saying how to install the optional extra."""
    return import_optional("catboost", extra="catboost", needed_for="model catboost")


@functools.cache
def catboost_parameter_names() -> dict[str, str]:
    """Every parameter CatBoost's ranker takes (the keyword arguments of ``CatBoostRanker``, synonyms
    included) → its canonical name, as CatBoost's own synonym handling (``_process_synonyms``, which
    every fit applies) renames it: ``n_estimators`` → ``iterations``, ``reg_lambda`` → ``l2_leaf_reg``.

    >>> names = catboost_parameter_names()
    >>> names["n_estimators"], names["reg_lambda"], names["random_strength"], "l2_leaf_regg" in names
    ('iterations', 'l2_leaf_reg', 'random_strength', False)
    """
    catboost = import_catboost()
    names = [
        name for name in inspect.signature(catboost.CatBoostRanker.__init__).parameters if name != "self"
    ]
    return {name: _catboost_synonym(catboost, name) for name in names}


def _catboost_synonym(catboost: Any, name: str) -> str:
    """The name CatBoost's synonym handling gives ``name`` (``name`` itself when it renames nothing)."""
    rename = getattr(catboost.core, "_process_synonyms", None)
    params = {name: 1}
    try:
        if rename is not None:
            rename(params)
    except catboost.CatBoostError:  # a type check on the probe value (silent, logging_level): not a synonym
        return name
    return next(iter(params)) if len(params) == 1 else name


class _LtrMetric:
    """CatBoost custom ``eval_metric``: ltr's metric on whichever split CatBoost is evaluating."""

    no_jit = True  # keep CatBoost from trying to numba-compile this class

    def __init__(self, metric: RankingMetric, by_rows: dict[int, RankingData], skip: set[int]) -> None:
        self.metric = metric
        self.by_rows = by_rows  # split size -> RankingData (equal sizes imply equal offsets, checked in fit)
        self.skip = skip  # split sizes whose value nobody reads (the train split unless eval_train)

    def is_max_optimal(self) -> bool:
        return True

    def evaluate(self, approxes: Any, target: Any, weight: Any) -> tuple[float, float]:
        n = len(target)
        if n in self.skip:
            return 0.0, 1.0
        scores = np.asarray(approxes[0], dtype=np.float64)
        return self.metric.mean_of(np.asarray(target, dtype=np.float64), scores, self.by_rows[n].offsets), 1.0

    def get_final_error(self, error: float, weight: float) -> float:
        return error


class _Callback:
    """CatBoost ``after_iteration`` hook → IterationMonitor; returns False to stop."""

    def __init__(self, monitor: IterationMonitor, names: dict[str, str], splits: set[str]) -> None:
        self.monitor = monitor
        self.names = names  # CatBoost metric name -> history name
        self.splits = splits

    def after_iteration(self, info: Any) -> bool:
        values: dict[tuple[str, str], float] = {}
        for cb_split, curves in info.metrics.items():
            split = "train" if cb_split == "learn" else "valid"
            if split not in self.splits:
                continue
            for cb_name, curve in curves.items():
                if cb_name in self.names and curve:
                    values[(split, self.names[cb_name])] = float(curve[-1])
        return not self.monitor.update(info.iteration - 1, values)


class CatBoostYetiRank(BaseRanker):
    """CatBoost with the YetiRank loss (Gulin et al. 2011), as an optional extra."""

    name = "catboost"
    engine = "catboost"
    input_dtype = "float32"  # CatBoost's libsvm:// loader gives these float32 values, bit for bit
    unsupported_params = vocabulary.refused("catboost")

    def engine_parameter_names(self) -> Mapping[str, str]:
        """CatBoost's own parameter list (:func:`catboost_parameter_names`; the extra is needed to build the model)."""
        return catboost_parameter_names()

    def _check_params(self, params: dict[str, Any]) -> None:
        import_catboost()  # the optional extra, named when missing before any data is read
        if params["max_depth"] is None or params["max_depth"] > 16:
            raise ConfigError(
                f"model catboost: params.max_depth must be 1-16 (CatBoost depth), got {params['max_depth']}"
            )

    def translate(
        self, params: dict[str, Any], engine_params: dict[str, Any], metric: RankingMetric | None
    ) -> dict[str, Any]:
        """CatBoost parameters for resolved ltr ``params`` (``engine_params`` win).

        The vocabulary part comes from :func:`ltr.models.vocabulary.translate`; this adds the
        YetiRank loss, CatBoost's own NDCG and the fixed settings (no files, no best-model cut).
        """
        out: dict[str, Any] = {"loss_function": "YetiRank", **vocabulary.translate(self.engine, params)}
        if (
            metric is not None
            and metric.family == "ndcg"
            and metric.k
            and not metric.same_conventions("catboost")
        ):
            out["custom_metric"] = [f"NDCG:top={metric.k};type=Base"]
        out.update(vocabulary.translate(self.engine, {"seed": self.seed, "num_threads": self.num_threads}))
        out.update({"use_best_model": False, "allow_writing_files": False, "verbose": False})
        return self.with_engine_params(out, engine_params)

    def _pool(self, data: RankingData) -> Any:
        catboost = import_catboost()
        return catboost.Pool(
            data.X,
            label=data.y,
            group_id=np.repeat(np.arange(data.n_queries), data.group_sizes),
            group_weight=row_weights(data),
        )

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        catboost = import_catboost()
        w = watch(
            train,
            valid,
            cfg.early_stopping,
            on_iteration,
            lambda d, role, _: check_integer_labels(d, role, engine="CatBoost YetiRank"),
        )
        self.engine_params_ = self.translate(cfg.params, cfg.engine_params, w.metric)
        params = dict(self.engine_params_)
        names: dict[str, str] = {}
        if w.metric is not None and valid is not None:
            if train.n_docs == valid.n_docs and not np.array_equal(train.offsets, valid.offsets):
                raise DataError(
                    f"catboost: {train.name} (train) and {valid.name} (valid) have the same number of rows "
                    f"({train.n_docs}) but different queries; CatBoost's metric hook identifies a split only "
                    "by its size — drop or add one document in either split"
                )
            skip = set() if "train" in w.splits else {train.n_docs} - {valid.n_docs}
            params["eval_metric"] = _LtrMetric(w.metric, {train.n_docs: train, valid.n_docs: valid}, skip)
            names["_LtrMetric"] = w.metric.name
            for cb_metric in params.get("custom_metric", []):
                names[cb_metric] = f"catboost_ndcg@{w.metric.k}"
        self.model_ = catboost.CatBoost(params)
        self.model_.fit(
            self._pool(train),
            eval_set=self._pool(valid) if valid is not None else None,
            callbacks=[_Callback(w.monitor, names, set(w.splits))] if valid is not None else None,
        )
        self.evals_result_ = w.monitor.history
        self.best_iteration_ = w.monitor.best_iteration if w.monitor.patience is not None else None
        if self.best_iteration_ is not None:
            self.model_.shrink(ntree_end=self.best_iteration_ + 1)

    def _predict(self, X: Any) -> np.ndarray:
        return self.model_.predict(
            X, prediction_type="RawFormulaVal", thread_count=int(self.num_threads) or -1
        )

    def _n_rounds(self) -> int | None:
        return int(self.model_.tree_count_)

    def _save_native(self, path: Path) -> dict[str, str]:
        self.model_.save_model(str(path / MODEL_FILE), format="cbm")
        return {"model": MODEL_FILE}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        catboost = import_catboost()
        self.model_ = catboost.CatBoost()
        file = path / manifest["files"]["model"]
        check_catboost_model(file)  # ltr.models.engines.files
        try:
            self.model_.load_model(str(file), format="cbm")
        except catboost.CatBoostError as exc:
            raise engine_error(file, "CatBoost", exc) from None

"""Distributed LambdaMART: LightGBM ``lambdarank`` trained with ``lightgbm.dask`` on a Dask cluster.

``build_dask_ranker(model_cfg, backend_cfg, seed=..., num_threads=...)`` (:mod:`ltr.distributed.backend`)
returns, for ``model=lambdamart``, a :class:`DaskLambdaMART` with the usual interface (``fit`` /
``predict`` / ``save``) whose ``fit`` trains on a Dask cluster:

* **data**: :class:`~ltr.distributed.shards.ShardedSplit`\\ s the workers parsed themselves (trained
  on the cluster that holds them), or in-memory ``RankingData`` splits cut into ``n_workers ×
  partitions_per_worker`` chunks of whole queries and near-equal size, scattered round-robin to
  the workers of a cluster started for the fit (``backend.scheduler_address``: a running one);
* **partitions**: one per shard, each holding whole queries, with the ``group`` chunks aligned to
  the ``X`` chunks (LightGBM needs every query inside one partition). No ``eval_set`` is passed:
  with one, ``lightgbm.dask`` fetches every partition to the client to check which workers hold
  eval data (``part.result()`` in ``lightgbm/dask.py``'s ``_train``, LightGBM 4.7), which would
  bring the whole training set to the driver;
* **early stopping**: ``DaskLGBMRanker`` has none (LightGBM issues #3712, #4189), so the model is
  trained for ``n_trees`` rounds and the stopping rule is applied afterwards from the validation
  curve computed on the workers (:class:`~ltr.distributed.backend.DaskTraining`); the extra rounds
  cost training time but are never used for prediction.

The fitted model is an ordinary LightGBM booster: ``save`` writes a ``lambdamart`` folder that
:func:`ltr.models.load_ranker` reads without Dask.

>>> r = build_dask_ranker({"name": "lambdamart", "params": {"n_trees": 10}}, {"name": "dask"}, seed=1, num_threads=1)
>>> type(r).__name__, r.backend_["n_workers"], r.backend_["scheduler_address"]
('DaskLambdaMART', 2, None)
"""

from __future__ import annotations

import logging
import operator
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from ltr.data import RankingData
from ltr.distributed.backend import (  # re-exported: where users and the config schemas found them
    BackendSchema,
    ClusterFit,
    DaskTraining,
    Rounds,
    build_dask_ranker,
    curve_sums,
    dask_client,
    resolve_backend,
)
from ltr.distributed.console import ltr_verbose
from ltr.distributed.shards import ShardedSplit, query_chunks, shard_arrays
from ltr.models.engines.lgbm import LambdaMART

log = logging.getLogger(__name__)

__all__ = [
    "BackendSchema",
    "DaskLambdaMART",
    "build_dask_ranker",
    "dask_client",
    "query_chunks",
    "resolve_backend",
    "wrapper_arguments",
]

#: LightGBM native names → the scikit-learn wrapper's argument names (so neither silently wins)
_SKLEARN_NAMES = {
    "num_iterations": "n_estimators",
    "boosting": "boosting_type",
    "min_data_in_leaf": "min_child_samples",
    "min_sum_hessian_in_leaf": "min_child_weight",
    "lambda_l1": "reg_alpha",
    "lambda_l2": "reg_lambda",
    "bagging_fraction": "subsample",
    "bagging_freq": "subsample_freq",
    "feature_fraction": "colsample_bytree",
    "seed": "random_state",
    "num_threads": "n_jobs",
}


def wrapper_arguments(engine_params: Mapping[str, Any]) -> tuple[dict[str, Any], list[int] | None]:
    """``DaskLGBMRanker`` keyword arguments for LightGBM-native ``engine_params``, and ``eval_at``.

    Native names become the scikit-learn wrapper's (``lambda_l1`` → ``reg_alpha``, …, see
    ``_SKLEARN_NAMES``); ``num_threads`` is dropped (each worker uses ``threads_per_worker``);
    ``eval_at`` is returned apart (an argument of ``fit``, not of the estimator).

    >>> wrapper_arguments({"lambda_l1": 0.3, "lambda_l2": 0.7, "num_threads": 2, "eval_at": [10]})
    ({'reg_alpha': 0.3, 'reg_lambda': 0.7}, [10])
    """
    params = dict(engine_params)
    params.pop("num_threads", None)
    eval_at = params.pop("eval_at", None)
    return {_SKLEARN_NAMES.get(k, k): v for k, v in params.items()}, eval_at


def dask_arrays(client: Any, split: ShardedSplit) -> tuple[Any, Any, Any]:
    """Dask arrays ``(X, y, group sizes)`` with one chunk per shard, each on the shard's worker; X in the
    dtype the shards were parsed into (float64 for LightGBM: the values its own loader reads)."""
    import dask.array as da  # deferred: optional 'dask' extra, only for the dask backend

    arrays = split.map(client, shard_arrays)
    Xs, ys, gs = [], [], []
    for a, w, s in zip(arrays, split.workers, split.summaries, strict=True):
        fx, fy, fg = (
            client.submit(operator.getitem, a, k, workers=[w], allow_other_workers=False, pure=False)
            for k in range(3)
        )
        Xs.append(da.from_delayed(fx, shape=(s.n_rows, split.n_features), dtype=split.dtype))
        ys.append(da.from_delayed(fy, shape=(s.n_rows,), dtype=np.float64))
        gs.append(da.from_delayed(fg, shape=(s.group_sizes.shape[0],), dtype=np.int64))
    return da.concatenate(Xs), da.concatenate(ys), da.concatenate(gs)


class BoosterRounds:
    """Per-round raw scores of a LightGBM model (a picklable scorer sent to the workers)."""

    def __init__(self, model: str) -> None:
        self.model = model

    def __call__(self, X: np.ndarray) -> Iterator[np.ndarray]:
        import lightgbm as lgb  # deferred: runs on a worker; the engine loads only when fitting

        booster = lgb.Booster(model_str=self.model)
        scores = np.zeros(X.shape[0])
        for i in range(booster.current_iteration()):
            scores += booster.predict(X, start_iteration=i, num_iteration=1, raw_score=True)
            yield scores


def _curve_sums(
    X: np.ndarray, y: np.ndarray, sizes: np.ndarray, model: str, metric: str, preset: str, conventions: dict
) -> tuple[np.ndarray, np.ndarray]:
    """Per round, the sum and count (non-skipped queries) of ``metric`` over one chunk of a LightGBM model."""
    offsets = np.r_[0, np.cumsum(sizes)]
    return curve_sums(BoosterRounds(model)(X), y, offsets, metric, preset, conventions)


class LightGBMLog:
    """LightGBM's Python-side logger (``lightgbm.register_logger``) on the driver while ltr trains
    with ``lightgbm.dask``: its info messages (``Finding random open ports for workers``) go to
    DEBUG on this module's logger, its warnings stay Python warnings (as without a logger).

    The native library's lines on the workers (``[LightGBM] [Info] Trying to bind port …``: it
    logs the network set-up before it reads ``verbosity``, and per thread) are the workers' console
    output, which ltr's LocalCluster holds back (:mod:`ltr.distributed.console`).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     LightGBMLog().info("Finding random open ports for workers")
    ...     LightGBMLog().warning("Parameter n_jobs will be ignored.")
    >>> [str(w.message) for w in caught]
    ['Parameter n_jobs will be ignored.']
    """

    def info(self, msg: str) -> None:
        log.debug("%s", msg.rstrip())

    def warning(self, msg: str) -> None:
        warnings.warn(msg, UserWarning, stacklevel=3)


@contextmanager
def lightgbm_logs() -> Iterator[None]:
    """LightGBM logs through :class:`LightGBMLog` in this process while the block runs; its previous
    logger is put back after (left as it is by a LightGBM whose logger this cannot read)."""
    import lightgbm  # deferred: the engine loads only when fitting
    from lightgbm import basic  # deferred: as above

    previous = getattr(basic, "_LOGGER", None)
    names = (getattr(basic, "_INFO_METHOD_NAME", "info"), getattr(basic, "_WARNING_METHOD_NAME", "warning"))
    if previous is None:
        yield
        return
    lightgbm.register_logger(LightGBMLog())
    try:
        yield
    finally:
        lightgbm.register_logger(previous, *names)


class DaskLambdaMART(DaskTraining, LambdaMART):
    """LambdaMART trained by ``lightgbm.dask.DaskLGBMRanker`` (module docstring); saved as ``lambdamart``."""

    def _check_shard(self, data: RankingData, role: str, params: dict[str, Any], max_label: int) -> None:
        self._check_data(data, role, params, max_label)

    def _train_on(self, fit: ClusterFit) -> Rounds:
        from lightgbm.dask import DaskLGBMRanker  # deferred: imports dask (optional extra) and lightgbm

        self.engine_params_ = self.translate(
            fit.cfg.params, fit.cfg.engine_params, max_label=fit.max_label, metric=fit.metric
        )
        kwargs, _ = wrapper_arguments(self.engine_params_)  # eval_at: no eval_set is given (below)
        X, y, group = dask_arrays(fit.client, fit.train)
        # no eval_set: lightgbm.dask's _train calls .result() on every partition future when one is
        # given (to see which workers hold eval data), pulling all training data to the client; the
        # validation curve is computed on the workers afterwards instead (DaskTraining)
        model = DaskLGBMRanker(client=fit.client, **kwargs)
        quiet = nullcontext() if ltr_verbose() else lightgbm_logs()  # LightGBM's info lines at DEBUG
        with quiet, warnings.catch_warnings():
            # threads come from the workers, as intended: not a user error
            warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
            model.fit(X, y, group=group)
        self.booster_ = model.booster_
        return BoosterRounds(self.booster_.model_to_string())

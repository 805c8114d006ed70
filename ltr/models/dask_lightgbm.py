"""Distributed LambdaMART: LightGBM ``lambdarank`` trained with ``lightgbm.dask`` on a Dask cluster.

``build_dask_ranker(model_cfg, backend_cfg, seed=..., num_threads=...)`` returns a ranker with the
usual interface (``fit`` / ``predict`` / ``save``) whose ``fit`` trains on a Dask cluster:

* **cluster**: ``backend.scheduler_address`` (e.g. ``tcp://10.0.0.5:8786``) connects to a running
  cluster; ``null`` starts a ``LocalCluster`` (worker processes on 127.0.0.1, ``n_workers`` ×
  ``threads_per_worker``, no dashboard) for the duration of ``fit`` and closes it afterwards;
* **partitions on query boundaries**: the training rows are cut into ``n_workers ×
  partitions_per_worker`` chunks of near-equal size, each holding whole queries, and the group
  sizes are chunked identically (LightGBM needs every query inside one partition); chunks are
  scattered round-robin over the workers, so every worker holds data;
* **validation spread over the workers** the same way (at least one chunk per worker: a worker
  without eval data reports empty results), passed to ``DaskLGBMRanker`` as ``eval_set``;
* **early stopping**: ``DaskLGBMRanker`` has none (LightGBM issues #3712, #4189), so the model is
  trained for ``n_trees`` rounds and the stopping rule is applied afterwards: every validation
  chunk computes, on its worker, the per-query metric of ``early_stopping.metric`` (ltr
  conventions) after each round from per-tree predictions; the sums give the exact validation
  curve, and the same rule as local training (best round, stop after ``patience`` rounds without
  improvement) picks ``best_iteration_``. The curve and the chosen round are what local training
  would report; the extra rounds cost training time but are never used for prediction.

The fitted model is an ordinary LightGBM booster: ``save`` writes a ``lambdamart`` folder that
:func:`ltr.models.load_ranker` reads without Dask.

>>> r = build_dask_ranker({"name": "lambdamart", "params": {"n_trees": 10}}, {"name": "dask"}, seed=1, num_threads=1)
>>> type(r).__name__, r.backend_["n_workers"], r.backend_["scheduler_address"]
('DaskLambdaMART', 2, None)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.config_check import check_block, plain, setting
from ltr.data import RankingData
from ltr.errors import ConfigError, DataError
from ltr.metrics import evaluate
from ltr.models.base import OnIteration, Resolved
from ltr.models.lgbm import LambdaMART
from ltr.models.monitor import watch


def _scheduler_address(value: str, where: str) -> str:
    if "://" not in value:
        raise ConfigError(f"{where}: expected e.g. 'tcp://host:8786' or null, got {value!r}")
    return value


@dataclass
class BackendSchema:
    """The ``backend`` config group (``conf/backend/*.yaml``): where training runs."""

    name: str = setting("local", choices=("local", "dask"))  # local: this machine; dask: lightgbm.dask
    scheduler_address: str | None = setting(
        None, check=_scheduler_address
    )  # tcp://HOST:8786; None = LocalCluster
    n_workers: int = setting(2, low=1)  # LocalCluster worker processes
    threads_per_worker: int = setting(1, low=1)  # LightGBM threads on each worker
    partitions_per_worker: int = setting(1, low=1)  # data chunks per worker (whole queries each)


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


def resolve_backend(backend_cfg: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``backend`` block (``conf/backend/dask.yaml``) checked against :class:`BackendSchema`; must be dask."""
    cfg = check_block(BackendSchema, {"name": "dask", **plain(backend_cfg)}, "backend")
    if cfg["name"] != "dask":
        raise ConfigError(f"backend.name: build_dask_ranker needs the 'dask' backend, got {cfg['name']!r}")
    return cfg


def query_chunks(offsets: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """``n_parts`` query ranges ``(q_start, q_stop)`` with near-equal row counts, none empty.

    >>> query_chunks(np.array([0, 5, 10, 12, 20]), 2)
    [(0, 2), (2, 4)]
    """
    n_queries = offsets.shape[0] - 1
    if n_queries < n_parts:
        raise DataError(f"cannot cut {n_queries} queries into {n_parts} partitions (one per worker at least)")
    targets = offsets[-1] * np.arange(1, n_parts) / n_parts
    cuts = np.searchsorted(offsets, targets)  # first query boundary at or after each target
    bounds = [0]
    for i, cut in enumerate(cuts.tolist()):
        cut = min(max(int(cut), bounds[-1] + 1), n_queries - (n_parts - 1 - i))  # keep every part non-empty
        bounds.append(cut)
    bounds.append(n_queries)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _scatter(client: Any, data: RankingData, n_parts: int, workers: list[str]) -> tuple[Any, Any, Any, list]:
    """Dask arrays (X, y, group) chunked on query boundaries, chunk ``i`` placed on worker ``i mod W``."""
    import dask.array as da  # deferred: optional 'dask' extra, only for the dask backend

    X = data.dense().astype(np.float32, copy=False)
    sizes = data.group_sizes
    Xs, ys, gs, parts = [], [], [], []
    for i, (q0, q1) in enumerate(query_chunks(data.offsets, n_parts)):
        r0, r1 = int(data.offsets[q0]), int(data.offsets[q1])
        where = [workers[i % len(workers)]]
        fx, fy, fg = (
            client.scatter(a, workers=where, hash=False) for a in (X[r0:r1], data.y[r0:r1], sizes[q0:q1])
        )
        Xs.append(da.from_delayed(fx, shape=(r1 - r0, X.shape[1]), dtype=X.dtype))
        ys.append(da.from_delayed(fy, shape=(r1 - r0,), dtype=data.y.dtype))
        gs.append(da.from_delayed(fg, shape=(q1 - q0,), dtype=sizes.dtype))
        parts.append((fx, fy, fg))
    return da.concatenate(Xs), da.concatenate(ys), da.concatenate(gs), parts


def _curve_sums(
    X: np.ndarray, y: np.ndarray, sizes: np.ndarray, model: str, metric: str, preset: str, conventions: dict
) -> tuple[np.ndarray, np.ndarray]:
    """On a worker: per round, the sum and count (non-skipped queries) of ``metric`` over this chunk."""
    import lightgbm as lgb  # deferred: runs on a worker; the engine loads only when fitting

    booster = lgb.Booster(model_str=model)
    offsets = np.r_[0, np.cumsum(sizes)]
    n_rounds = booster.current_iteration()
    sums, counts = np.zeros(n_rounds), np.zeros(n_rounds, dtype=np.int64)
    scores = np.zeros(X.shape[0])
    for i in range(n_rounds):
        scores += booster.predict(X, start_iteration=i, num_iteration=1, raw_score=True)
        v = evaluate([metric], y, scores, offsets, preset=preset, **conventions)[metric]
        sums[i], counts[i] = np.nansum(v), int((~np.isnan(v)).sum())
    return sums, counts


@contextmanager
def dask_client(backend: Mapping[str, Any]) -> Iterator[Any]:
    """A ``distributed.Client``: to ``scheduler_address``, or to a LocalCluster closed on exit.

    Dask's INFO chatter (scheduler/nanny start and stop) is held back to warnings while it runs: an
    app that logs at INFO, such as Hydra's ``ltr.train``, would otherwise print dozens of lines.
    """
    from distributed import Client, LocalCluster  # deferred: optional 'dask' extra

    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(max(level, logging.WARNING))
    try:
        if backend["scheduler_address"]:
            with Client(backend["scheduler_address"], timeout="30s") as client:
                yield client
            return
        cluster = LocalCluster(
            n_workers=backend["n_workers"],
            threads_per_worker=backend["threads_per_worker"],
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
    finally:
        quiet.setLevel(level)


class DaskLambdaMART(LambdaMART):
    """LambdaMART trained by ``lightgbm.dask.DaskLGBMRanker`` (module docstring); saved as ``lambdamart``."""

    def __init__(
        self, params: Mapping[str, Any] | None = None, *, backend: Mapping[str, Any] | None = None, **kw: Any
    ):
        self.backend = backend
        self.backend_ = resolve_backend(backend)
        super().__init__(params, **kw)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {**super().get_params(deep), "backend": self.backend}

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        from lightgbm.dask import DaskLGBMRanker  # deferred: imports dask (optional extra) and lightgbm

        params, es = cfg.params, {**cfg.early_stopping, "eval_train": False}
        w = watch(train, valid, es, on_iteration, lambda d, role, top: self._check_data(d, role, params, top))
        self.engine_params_ = self.translate(
            params, cfg.engine_params, max_label=w.max_label, metric=w.metric
        )
        kwargs, eval_at = wrapper_arguments(self.engine_params_)
        backend = self.backend_
        with dask_client(backend) as client:
            workers = sorted(client.scheduler_info()["workers"])
            if not workers:
                raise ConfigError(
                    f"backend.scheduler_address {backend['scheduler_address']}: the cluster has no workers"
                )
            n_parts = len(workers) * backend["partitions_per_worker"]
            X, y, group, _ = _scatter(client, train, n_parts, workers)
            fit_kw: dict[str, Any] = {}
            valid_parts: list = []
            if valid is not None:
                Xv, yv, gv, valid_parts = _scatter(client, valid, n_parts, workers)
                fit_kw = {"eval_X": (Xv,), "eval_y": (yv,), "eval_group": [gv], "eval_names": ["valid"]}
                if eval_at:
                    fit_kw["eval_at"] = list(eval_at)
            model = DaskLGBMRanker(client=client, **kwargs)
            with warnings.catch_warnings():  # threads come from the workers, as intended: not a user error
                warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored")
                model.fit(X, y, group=group, **fit_kw)
            self.booster_ = model.booster_
            self.engine_evals_result_ = dict(getattr(model, "evals_result_", {}) or {})
            curve = self._validation_curve(client, valid_parts, w.metric) if valid_parts else None
        if curve is not None:
            for i, value in enumerate(curve):
                if w.monitor.update(i, {("valid", w.metric.name): float(value)}):
                    break
        self.evals_result_ = w.monitor.history
        self.best_iteration_ = w.monitor.best_iteration if w.monitor.patience is not None else None

    def _validation_curve(self, client: Any, parts: list, metric: Any) -> np.ndarray:
        """Mean of ``metric`` on the validation chunks after every round, computed on the workers."""
        model = self.booster_.model_to_string()
        futures = [
            client.submit(
                _curve_sums,
                fx,
                fy,
                fg,
                model,
                metric.name,
                metric.preset,
                dict(metric.conventions),
                pure=False,
            )
            for fx, fy, fg in parts
        ]
        results = client.gather(futures)
        sums = np.sum([r[0] for r in results], axis=0)
        counts = np.sum([r[1] for r in results], axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def build_dask_ranker(
    model_cfg: Mapping[str, Any], backend_cfg: Mapping[str, Any] | None, *, seed: int, num_threads: int
) -> DaskLambdaMART:
    """A LambdaMART ranker that trains on Dask (``backend=dask``); only ``model=lambdamart`` configs.

    ``num_threads`` is used for prediction on the caller's machine; worker threads come from
    ``backend.threads_per_worker``.
    """
    cfg = plain(model_cfg)
    if not isinstance(cfg, Mapping) or cfg.get("name") != "lambdamart":
        raise ConfigError(
            f"backend=dask trains LightGBM LambdaMART only (model=lambdamart), got model {cfg.get('name')!r}; "
            "use backend=local for other models"
        )
    return DaskLambdaMART.from_config(cfg, seed=seed, num_threads=num_threads, backend=backend_cfg)  # type: ignore[return-value]

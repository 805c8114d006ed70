"""``backend=dask``: the cluster, the config block, and what LightGBM and XGBoost on Dask share.

* :class:`BackendSchema` / :func:`resolve_backend`: the ``backend`` config group;
* :func:`dask_client`: a client to ``backend.scheduler_address``, or to a ``LocalCluster`` that is
  closed on exit; Dask's and the workers' own output is held back, shown if the run fails
  (:mod:`ltr.distributed.console`);
* :class:`DaskTraining`: the ``fit`` of a Dask ranker. It takes either
  :class:`~ltr.distributed.shards.ShardedSplit`\\ s that the workers parsed themselves (what
  ``ltr.train`` gives it for every data kind, :mod:`ltr.distributed.data`; trained on the cluster
  that holds them, nothing is gathered) or in-memory :class:`~ltr.data.RankingData` splits given
  through the Python API (cut into query-aligned chunks and scattered to the workers of a cluster
  started for the fit: the one case in which the driver holds the data).
  The engine data checks run on the workers, shard by shard. Early stopping is applied after
  training ``n_trees`` rounds: every validation shard computes, on its worker, per round the sum
  and count of ``early_stopping.metric`` over its queries (ltr conventions); their totals are the
  exact validation curve of the whole split, and the local rule (best round, stop ``patience``
  rounds after it) picks ``best_iteration_``;
* :func:`build_dask_ranker`: ``model=lambdamart`` → ``lightgbm.dask``,
  ``model=lambdamart_xgb`` → ``xgboost.dask``.

>>> resolve_backend({"n_workers": 3})["n_workers"]
3
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core.config_check import check_block, plain, setting
from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.distributed.console import quiet_cluster, redirect_worker_console
from ltr.distributed.shards import ShardedSplit, scatter_split
from ltr.distributed.watch import current_workers, gather, watched
from ltr.metrics import evaluate
from ltr.models.base import OnIteration, Resolved
from ltr.models.evaluation import RankingMetric
from ltr.models.monitor import IterationMonitor

log = logging.getLogger(__name__)


def _scheduler_address(value: str, where: str) -> str:
    if "://" not in value:
        raise ConfigError(f"{where}: expected e.g. 'tcp://host:8786' or null, got {value!r}")
    return value


@dataclass
class BackendSchema:
    """The ``backend`` config group (``conf/backend/*.yaml``): where training runs."""

    name: str = setting("local", choices=("local", "dask"))  # local: this machine; dask: a Dask cluster
    scheduler_address: str | None = setting(
        None, check=_scheduler_address
    )  # tcp://HOST:8786; None = LocalCluster
    n_workers: int = setting(2, low=1)  # LocalCluster worker processes
    threads_per_worker: int = setting(1, low=1)  # engine threads on each worker
    partitions_per_worker: int = setting(1, low=1)  # data chunks per worker (whole queries each)
    memory_limit: str | None = None  # LocalCluster worker memory limit, e.g. '2GB' (None: Dask's default)


def resolve_backend(backend_cfg: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``backend`` block (``conf/backend/dask.yaml``) checked against :class:`BackendSchema`; must be dask."""
    cfg = check_block(BackendSchema, {"name": "dask", **plain(backend_cfg)}, "backend")
    if cfg["name"] != "dask":
        raise ConfigError(f"backend.name: build_dask_ranker needs the 'dask' backend, got {cfg['name']!r}")
    return cfg


@contextmanager
def dask_client(backend: Mapping[str, Any]) -> Iterator[Any]:
    """A ``distributed.Client``: to ``scheduler_address``, or to a LocalCluster closed on exit.

    Dask's own log records are held back while it runs and the LocalCluster's workers write their
    console to files (:func:`~ltr.distributed.console.quiet_cluster`), shown only if the run fails:
    an app that logs at INFO, such as Hydra's ``ltr.train``, would otherwise print Dask's chatter,
    LightGBM's ``[LightGBM] [Info]`` lines from every worker, the nanny's warnings as the cluster
    stops and, now and then, a closing connection's traceback on a run that succeeded.
    """
    from distributed import Client, LocalCluster  # deferred: optional 'dask' extra

    with ExitStack() as stack:
        consoles = stack.enter_context(quiet_cluster())  # None: ltr logs at DEBUG, workers print
        start = time.perf_counter()
        if backend["scheduler_address"]:
            log.info("Dask: connecting to %s …", backend["scheduler_address"])
            client = stack.enter_context(Client(backend["scheduler_address"], timeout="30s"))
            workers = len(current_workers(client))
            log.info("Dask: connected, %d workers (%.1f s)", workers, time.perf_counter() - start)
            yield client
            return
        extra = {"memory_limit": backend["memory_limit"]} if backend.get("memory_limit") else {}
        log.info(
            "Dask: starting a local cluster of %d workers × %d threads …",
            backend["n_workers"],
            backend["threads_per_worker"],
        )
        cluster = LocalCluster(
            n_workers=backend["n_workers"],
            threads_per_worker=backend["threads_per_worker"],
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
            **extra,
        )
        stack.callback(cluster.close)
        client = stack.enter_context(Client(cluster))
        if consoles is not None:
            client.run(redirect_worker_console, str(consoles), os.getpid())
        log.info("Dask: cluster ready (%.1f s)", time.perf_counter() - start)
        yield client


def cluster_workers(client: Any, backend: Mapping[str, Any]) -> list[str]:
    """The workers' addresses, sorted; a cluster without workers is a ``ConfigError``."""
    workers = sorted(current_workers(client))
    if not workers:
        raise ConfigError(
            f"backend.scheduler_address {backend['scheduler_address']}: the cluster has no workers"
        )
    return workers


#: per-round scores of a fitted model: ``rounds(X)`` yields the scores after rounds 1, 2, …
Rounds = Callable[[np.ndarray], Iterable[np.ndarray]]


@dataclass(frozen=True)
class ClusterFit:
    """What an engine trains from: the client, the training shards, the resolved model config, the
    largest label (train and valid) and the early-stopping metric (``None`` without valid)."""

    client: Any
    train: ShardedSplit
    cfg: Resolved
    max_label: int
    metric: RankingMetric | None


def curve_sums(
    rounds: Iterable[np.ndarray],
    y: np.ndarray,
    offsets: np.ndarray,
    metric: str,
    preset: str,
    conventions: dict,
) -> tuple[np.ndarray, np.ndarray]:
    """Per round, the sum of ``metric`` over the queries and the count of non-skipped queries.

    ``rounds`` yields the scores after each round (any constant shift is harmless: ranking metrics
    only see the order).

    >>> s, c = curve_sums([np.array([0.0, 1.0]), np.array([1.0, 0.0])], np.array([0, 1]), np.array([0, 2]), "ndcg@10", "ltr", {})
    >>> s.tolist(), c.tolist()
    ([1.0, 0.6309297535714575], [1, 1])
    """
    sums, counts = [], []
    for scores in rounds:
        v = evaluate([metric], y, scores, offsets, preset=preset, **conventions)[metric]
        sums.append(np.nansum(v))
        counts.append(int((~np.isnan(v)).sum()))
    return np.asarray(sums, dtype=float), np.asarray(counts, dtype=np.int64)


def _shard_curve(
    data: RankingData,
    rounds: Callable[[np.ndarray], Iterable[np.ndarray]],
    metric: str,
    preset: str,
    conventions: dict,
) -> tuple[np.ndarray, np.ndarray]:
    """On a worker: :func:`curve_sums` of one validation shard, scores from ``rounds(X)`` (the features
    as parsed, as the final evaluation scores them)."""
    X = data.dense()
    return curve_sums(rounds(X), data.y, data.offsets, metric, preset, conventions)


def validation_curve(
    client: Any,
    valid: ShardedSplit,
    rounds: Callable[[np.ndarray], Iterable[np.ndarray]],
    metric: RankingMetric,
) -> np.ndarray:
    """Mean of ``metric`` on ``valid`` after every round, computed shard by shard on the workers."""
    args = (metric.name, metric.preset, dict(metric.conventions))
    results = gather(client, valid.map(client, _shard_curve, rounds, *args), "the validation curve")
    sums = np.sum([r[0] for r in results], axis=0)
    counts = np.sum([r[1] for r in results], axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


class DaskTraining:
    """``fit`` for Dask rankers (module docstring); a subclass implements :meth:`_train_on`.

    Mixed in before the local ranker class (``class DaskLambdaMART(DaskTraining, LambdaMART)``), so
    ``predict`` and ``save`` are the local ones: the fitted booster is an ordinary one.
    """

    def __init__(
        self, params: Mapping[str, Any] | None = None, *, backend: Mapping[str, Any] | None = None, **kw: Any
    ):
        # a plain copy: an OmegaConf node would drag the whole run config (and its dynamically made
        # dataclasses, pickled by value) to the workers with every task that carries the ranker
        self.backend = None if backend is None else plain(backend)
        self.backend_ = resolve_backend(backend)
        super().__init__(params, **kw)  # type: ignore[call-arg]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {**super().get_params(deep), "backend": self.backend}  # type: ignore[misc]

    def fit(
        self,
        train: RankingData | ShardedSplit,
        valid: RankingData | ShardedSplit | None = None,
        *,
        on_iteration: OnIteration | None = None,
    ) -> Any:
        if isinstance(train, RankingData):
            return super().fit(train, valid, on_iteration=on_iteration)  # type: ignore[misc]
        if not isinstance(train, ShardedSplit) or not isinstance(valid, (ShardedSplit, type(None))):
            raise DataError(
                f"{self.name}.fit: train and valid must both be RankingData or both ShardedSplit "  # type: ignore[attr-defined]
                f"(ltr.distributed.shards.load_sharded), got {type(train).__name__} and {type(valid).__name__}"
            )
        if train.n_docs == 0:
            raise DataError(f"{train.name} (train): no documents")
        if valid is not None and valid.n_features != train.n_features:
            raise DataError(
                f"{valid.name} (valid): has {valid.n_features} feature columns but train has "
                f"{train.n_features}; set n_features so the splits align"
            )
        cfg = self._begin_fit(train.n_features)  # type: ignore[attr-defined]
        self._train_sharded(train.client, train, valid, cfg, on_iteration)
        return self

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        """In-memory splits: start (or connect to) the cluster, scatter query-aligned chunks, train."""
        with dask_client(self.backend_) as client:
            workers = cluster_workers(client, self.backend_)
            n_parts = len(workers) * self.backend_["partitions_per_worker"]
            sharded_train = scatter_split(client, train, n_parts, workers)
            sharded_valid = None if valid is None else scatter_split(client, valid, n_parts, workers)
            self._train_sharded(client, sharded_train, sharded_valid, cfg, on_iteration)

    def _train_sharded(
        self,
        client: Any,
        train: ShardedSplit,
        valid: ShardedSplit | None,
        cfg: Resolved,
        on_iteration: OnIteration | None,
    ) -> None:
        es = cfg.early_stopping
        max_label = int(max(s.max_label for s in (train, valid) if s is not None))
        for role, split in (("train", train), ("valid", valid)):
            if split is not None:  # the engine's input checks, on the workers (errors come back as raised)
                gather(
                    client,
                    split.map(client, self._check_shard, role, cfg.params, max_label),
                    f"the {role} data checks",
                )
        metric = RankingMetric.from_config(es) if valid is not None else None
        monitor = IterationMonitor(es["metric"], es["patience"] if valid is not None else None, on_iteration)
        fit = ClusterFit(client, train, cfg, max_label, metric)
        # a lost worker ends the fit at once (lightgbm.dask / xgboost.dask would wait for it: a hang)
        rounds = watched(client, lambda: self._train_on(fit), f"{self.engine} training")  # type: ignore[attr-defined]
        if valid is not None and metric is not None:
            for i, value in enumerate(validation_curve(client, valid, rounds, metric)):
                if monitor.update(i, {("valid", metric.name): float(value)}):
                    break
        self.evals_result_ = monitor.history
        self.best_iteration_ = monitor.best_iteration if monitor.patience is not None else None
        self._keep_rounds()

    def _check_shard(self, data: RankingData, role: str, params: dict[str, Any], max_label: int) -> None:
        raise NotImplementedError

    def _train_on(self, fit: ClusterFit) -> Rounds:
        """Train on the cluster; set ``booster_`` and ``engine_params_``; return the per-round scorer."""
        raise NotImplementedError

    def _keep_rounds(self) -> None:
        """After early stopping: trim the booster to the rounds it predicts with (engine-specific)."""


#: model name → "module:class" of its Dask ranker
DASK_MODELS = {
    "lambdamart": "ltr.distributed.lgbm:DaskLambdaMART",
    "lambdamart_xgb": "ltr.distributed.xgb:DaskXGBoostLambdaMART",
}


def build_dask_ranker(
    model_cfg: Mapping[str, Any], backend_cfg: Mapping[str, Any] | None, *, seed: int, num_threads: int
) -> Any:
    """A ranker that trains on Dask (``backend=dask``): ``model=lambdamart`` (LightGBM) or
    ``model=lambdamart_xgb`` (XGBoost, ``rank:ndcg`` / ``rank:pairwise`` / ``rank:map``).

    ``num_threads`` is used for prediction on the caller's machine; worker threads come from
    ``backend.threads_per_worker``.
    """
    import importlib  # deferred: the engine module (and its engine) loads only for the model asked for

    cfg = plain(model_cfg)
    name = cfg.get("name") if isinstance(cfg, Mapping) else None
    if name not in DASK_MODELS:
        raise ConfigError(
            "backend=dask trains LightGBM LambdaMART (model=lambdamart) and XGBoost LambdaMART "
            f"(model=lambdamart_xgb) only, got model {name!r}; use backend=local for other models"
        )
    module, cls = DASK_MODELS[name].split(":")
    ranker_cls = getattr(importlib.import_module(module), cls)
    return ranker_cls.from_config(cfg, seed=seed, num_threads=num_threads, backend=backend_cfg)

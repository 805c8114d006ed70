"""Distributed XGBoost LambdaMART: ``xgboost.dask.train`` on the shards the workers hold.

For ``model=lambdamart_xgb`` with ``backend=dask`` (``objective`` ``rank:ndcg``, ``rank:pairwise``
or ``rank:map``; the same vocabulary translation as locally, :mod:`ltr.models.vocabulary`):

* **partitions and qid**: one partition per shard (each shard holds whole queries), and each row's
  ``qid`` is its query's position in the whole split (shard ``i``'s queries are numbered after
  those of shards ``0..i-1``). So ``qid`` is sorted within every partition and over the partitions
  a worker holds in order, as XGBoost requires, and no query crosses a worker. That is why the
  data goes in as Dask *arrays* through ``xgboost.dask.DaskQuantileDMatrix`` — the equivalent of
  ``DaskXGBRanker(allow_group_split=True)``. XGBoost's default for the ranker,
  ``allow_group_split=False``, exists for data whose partitions may cut a query: it requires Dask
  *dataframes* and re-partitions them with a global sort on qid (a shuffle, one partition per
  query), which ``ltr`` never needs because its shards are cut on query boundaries;
* **early stopping** as for LightGBM on Dask (:class:`~ltr.distributed.backend.DaskTraining`):
  ``n_trees`` rounds, then the validation curve with ltr's conventions computed shard by shard on
  the workers picks ``best_iteration_``, and the booster is cut to ``best_iteration_ + 1`` rounds
  (as locally: ``booster_`` is what predicts and is saved);
* **threads**: each worker trains with its own Dask threads (``backend.threads_per_worker``);
  ``nthread`` from the vocabulary translation is dropped.

The fitted booster is an ordinary ``xgboost.Booster``: ``save`` writes a ``lambdamart_xgb`` folder.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np
import xgboost as xgb

from ltr.data import RankingData
from ltr.distributed.backend import ClusterFit, DaskTraining, Rounds
from ltr.distributed.shards import ShardedSplit, shard_arrays
from ltr.models.engines.xgb import XGBoostLambdaMART


def _shard_xgb_arrays(data: RankingData, first_query: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """On a worker: ``(X, y, qid)`` of one shard, qid = the query's position in the split."""
    X, y, sizes = shard_arrays(data)
    qid = np.repeat(np.arange(first_query, first_query + sizes.shape[0], dtype=np.int64), sizes)
    return X, y, qid


def dask_xgb_arrays(client: Any, split: ShardedSplit) -> tuple[Any, Any, Any]:
    """Dask arrays ``(X, y, qid)``, one chunk per shard on its worker; qid increases over the shards."""
    import dask.array as da  # deferred: optional 'dask' extra, only for the dask backend

    starts = np.r_[0, np.cumsum([s.group_sizes.shape[0] for s in split.summaries])][:-1]
    Xs, ys, qs = [], [], []
    for f, w, s, q0 in zip(split.futures, split.workers, split.summaries, starts.tolist(), strict=True):
        arrays = client.submit(
            _shard_xgb_arrays, f, int(q0), workers=[w], allow_other_workers=False, pure=False
        )
        fx, fy, fq = (
            client.submit(operator.getitem, arrays, k, workers=[w], allow_other_workers=False, pure=False)
            for k in range(3)
        )
        Xs.append(da.from_delayed(fx, shape=(s.n_rows, split.n_features), dtype=split.dtype))
        ys.append(da.from_delayed(fy, shape=(s.n_rows,), dtype=np.float64))
        qs.append(da.from_delayed(fq, shape=(s.n_rows,), dtype=np.int64))
    return da.concatenate(Xs), da.concatenate(ys), da.concatenate(qs)


class XGBoostRounds:
    """Per-round margins of an XGBoost model (a picklable scorer sent to the workers).

    Round ``i``'s trees are predicted alone on a zero ``base_margin`` (so ``base_score`` is not
    re-added) and accumulated.
    """

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __call__(self, X: np.ndarray) -> Iterator[np.ndarray]:
        booster = xgb.Booster()
        booster.load_model(bytearray(self.raw))
        booster.set_param({"nthread": 1})
        matrix = xgb.DMatrix(X, base_margin=np.zeros(X.shape[0]))
        scores = np.zeros(X.shape[0])
        for i in range(booster.num_boosted_rounds()):
            scores += booster.predict(matrix, output_margin=True, iteration_range=(i, i + 1))
            yield scores


class DaskXGBoostLambdaMART(DaskTraining, XGBoostLambdaMART):
    """LambdaMART trained by ``xgboost.dask`` (module docstring); saved as ``lambdamart_xgb``."""

    def _check_shard(self, data: RankingData, role: str, params: dict[str, Any], max_label: int) -> None:
        self._check_data(data, role, params)

    def _train_on(self, fit: ClusterFit) -> Rounds:
        from xgboost import dask as dxgb  # deferred: imports dask (optional extra)

        self.engine_params_ = self.translate(fit.cfg.params, fit.cfg.engine_params, fit.metric)
        params = dict(self.engine_params_)
        rounds = int(params.pop("num_boost_round"))
        params.pop("nthread", None)  # each worker uses its Dask threads
        params.pop("eval_metric", None)  # the curve is ltr's, computed on the workers afterwards
        params["disable_default_eval_metric"] = True
        X, y, qid = dask_xgb_arrays(fit.client, fit.train)
        dtrain = dxgb.DaskQuantileDMatrix(fit.client, X, y, qid=qid, max_bin=int(params["max_bin"]))
        out = dxgb.train(fit.client, params, dtrain, num_boost_round=rounds, verbose_eval=False)
        self.booster_ = out["booster"]
        self.booster_.set_param({"nthread": int(self.num_threads)})
        return XGBoostRounds(bytes(self.booster_.save_raw("ubj")))

    def _keep_rounds(self) -> None:
        if self.best_iteration_ is not None:
            self.booster_ = self.booster_[: self.best_iteration_ + 1]

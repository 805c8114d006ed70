"""Distributed LambdaMART on Dask: partitioning, config checks, and a real 2-worker LocalCluster run."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from ltr.core.config_check import defaults
from ltr.core.errors import ConfigError, DataError
from ltr.data.synthetic import generate
from ltr.distributed.lgbm import (
    BackendSchema,
    _curve_sums,
    build_dask_ranker,
    query_chunks,
    resolve_backend,
)
from ltr.metrics import evaluate
from ltr.models import build_ranker, load_ranker

CONF = Path(__file__).resolve().parents[1] / "conf" / "backend"


@pytest.mark.parametrize("seed", range(20))
def test_query_chunks_cut_whole_queries_into_balanced_nonempty_parts(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 50, rng.integers(3, 40))
    offsets = np.r_[0, np.cumsum(sizes)]
    n_parts = int(rng.integers(1, len(sizes) + 1))
    chunks = query_chunks(offsets, n_parts)
    assert len(chunks) == n_parts
    assert chunks[0][0] == 0 and chunks[-1][1] == len(sizes)
    assert all(a < b for a, b in chunks) and all(chunks[i][1] == chunks[i + 1][0] for i in range(n_parts - 1))
    # naive reference: cut at the first query boundary at or after each ideal row count i/n_parts,
    # moved only as far as needed to keep every part non-empty
    bounds = [0]
    for i in range(1, n_parts):
        q = next(q for q in range(len(offsets)) if offsets[q] >= offsets[-1] * i / n_parts)
        bounds.append(min(max(q, bounds[-1] + 1), len(sizes) - (n_parts - i)))
    bounds.append(len(sizes))
    assert chunks == list(zip(bounds[:-1], bounds[1:], strict=True))


def test_query_chunks_refuses_more_parts_than_queries():
    with pytest.raises(DataError, match="cannot cut 2 queries into 3 partitions"):
        query_chunks(np.array([0, 4, 9]), 3)


def test_backend_configs_and_errors():
    assert OmegaConf.load(CONF / "local.yaml").name == "local"
    dask_cfg = OmegaConf.to_container(OmegaConf.load(CONF / "dask.yaml"))
    assert dask_cfg.pop("defaults") == ["schema", "_self_"]  # the defaults live in BackendSchema only
    resolved = resolve_backend(dask_cfg)
    assert resolved == {"name": "dask", **{k: v for k, v in defaults(BackendSchema).items() if k != "name"}}
    assert resolved["scheduler_address"] is None and resolved["n_workers"] == 2
    assert resolve_backend({"n_workers": np.int64(3)})["n_workers"] == 3
    with pytest.raises(ConfigError, match=r"backend.n_workers: must be in \[1, inf\], got 0"):
        resolve_backend({"n_workers": 0})
    with pytest.raises(ConfigError, match="scheduler_address: expected e.g. 'tcp://host:8786'"):
        resolve_backend({"scheduler_address": "localhost"})
    with pytest.raises(
        ConfigError, match=r"backend: unknown key\(s\) workers; accepted: name, scheduler_address, n_workers"
    ):
        resolve_backend({"workers": 3})
    with pytest.raises(
        ConfigError,
        match=r"trains LightGBM LambdaMART \(model=lambdamart\) and XGBoost LambdaMART \(model=lambdamart_xgb\) only",
    ):
        build_dask_ranker({"name": "regression"}, dask_cfg, seed=0, num_threads=1)


def test_dask_ranker_takes_the_lambdamart_block_and_refuses_other_keys():
    ranker = build_dask_ranker(
        {"name": "lambdamart", "params": {"n_trees": 7}, "engine_params": {"verbosity": -1}},
        {"n_workers": 3},
        seed=4,
        num_threads=2,
    )
    assert ranker.params == {"n_trees": 7} and ranker.engine_params == {"verbosity": -1}
    assert (ranker.seed, ranker.num_threads, ranker.backend_["n_workers"]) == (4, 2, 3)
    assert ranker._resolve().params["n_trees"] == 7
    with pytest.raises(
        ConfigError, match=r"^model: unknown key\(s\) clicks; lambdamart accepts: name, params, "
    ):
        build_dask_ranker({"name": "lambdamart", "clicks": {}}, None, seed=0, num_threads=1)


@pytest.mark.slow  # starts a 2-process LocalCluster: 20-60 s on a busy 2-core machine
def test_two_worker_local_cluster_matches_local_training(tmp_path):
    train = generate(300, seed=1, max_docs=80)
    valid = generate(100, seed=2, max_docs=80, qid_start=100_000)
    test = generate(150, seed=3, max_docs=80, qid_start=1_000_000)
    cfg = {
        "name": "lambdamart",
        "params": {"n_trees": 100, "num_leaves": 15},
        "early_stopping": {"patience": 20},
    }

    def ndcg10(scores):
        return float(np.nanmean(evaluate(["ndcg@10"], test.y, scores, test.offsets)["ndcg@10"]))

    local = build_ranker(cfg, seed=1, num_threads=1).fit(train, valid)
    backend = {"name": "dask", "n_workers": 2, "threads_per_worker": 1}
    dask = build_dask_ranker(cfg, backend, seed=1, num_threads=1).fit(train, valid)
    assert not multiprocessing.active_children()  # the LocalCluster was closed
    assert abs(ndcg10(dask.predict(test)) - ndcg10(local.predict(test))) <= 0.01

    # the validation curve gathered from the workers is the exact curve of the trained model ...
    curve = np.array(dask.evals_result_["valid"]["ndcg@10"])
    sums, counts = _curve_sums(
        valid.dense(), valid.y, valid.group_sizes, dask.booster_.model_to_string(), "ndcg@10", "ltr", {}
    )
    np.testing.assert_allclose(curve, (sums / counts)[: curve.size], rtol=1e-12)
    # ... and early stopping applied to it picks the first best round, stopping `patience` rounds later
    assert dask.best_iteration_ == int(np.argmax(curve))
    assert curve.size == min(100, dask.best_iteration_ + 21)
    np.testing.assert_allclose(
        dask.predict(test), dask.booster_.predict(test.X, num_iteration=dask.best_iteration_ + 1), rtol=1e-12
    )
    # a saved distributed model is an ordinary lambdamart folder
    dask.save(tmp_path / "m")
    again = load_ranker(tmp_path / "m")
    assert type(again).__name__ == "LambdaMART"
    np.testing.assert_array_equal(again.predict(test), dask.predict(test))


@pytest.mark.slow  # starts a LocalCluster of its own (the "running cluster")
def test_scheduler_address_uses_a_running_cluster_and_leaves_it_running():
    from distributed import Client, LocalCluster

    train = generate(80, seed=4, max_docs=30)
    valid = generate(40, seed=5, max_docs=30, qid_start=10_000)
    cfg = {
        "name": "lambdamart",
        "params": {"n_trees": 20, "num_leaves": 7},
        "early_stopping": {"patience": 5},
    }
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster:
        backend = {"name": "dask", "scheduler_address": cluster.scheduler_address}
        ranker = build_dask_ranker(cfg, backend, seed=2, num_threads=1).fit(train, valid)
        with Client(cluster) as client:  # the cluster the ranker used is still up, with both workers
            assert len(client.nthreads()) == 2
    assert ranker.best_iteration_ is not None and len(ranker.evals_result_["valid"]["ndcg@10"]) >= 6
    assert ranker.predict(valid).shape == (valid.n_docs,)

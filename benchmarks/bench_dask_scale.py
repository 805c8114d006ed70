"""Proof of scale for ``backend=dask``: data many times larger than the driver may hold, parsed and
trained on a 2-worker LocalCluster while the driver's address space is capped.

Three runs, each in its own process (so each peak RSS is its own):

1. ``dask-full``: the whole generated training set (many shard files) and the valid/test files
   (cut into byte ranges) are parsed *on the workers* (:func:`ltr.distributed.shards.load_sharded`),
   LambdaMART is trained with ``lightgbm.dask`` (early stopping from the validation curve computed
   on the workers) and test NDCG@10 is computed on the workers. After the cluster is up, the
   driver caps its own address space with ``RLIMIT_AS`` at its current size plus ``--driver-cap-mb``
   (the workers, started before, are not capped; they get ``--worker-memory`` each from Dask), so a
   driver that tried to hold the data would fail with ``MemoryError``.
2. ``dask-subset``: the same on the first ``--subset-shards`` training files only;
3. ``local-subset``: ordinary local training (``load_svmlight`` of those files, one process) with
   the same model and threads, for the quality comparison (test NDCG@10 within 0.01).

Usage (the figures in docs/benchmarks.md)::

    python benchmarks/bench_dask_scale.py --dir /tmp/ltr-dask-scale --queries 4800 --shards 16

The data is one file from ``python -m ltr.data synth DIR --queries N`` (~120 documents per query,
136 features, one label function), cut on query boundaries into ``--shards`` training files, a
valid and a test file (:func:`prepare`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

MODEL = {
    "name": "lambdamart",
    "params": {"n_trees": 100, "num_leaves": 31, "learning_rate": 0.1},
    "early_stopping": {"patience": 20},
}


def prepare(directory: Path, queries: int, shards: int, seed: int) -> dict[str, Any]:
    """Generate the data with ``python -m ltr.data synth`` (once) and cut it on query boundaries.

    One file of ``queries`` queries is generated and cut into ``shards + 4`` byte
    ranges (:func:`ltr.data.shards.byte_ranges`): ``shards`` training files, then valid (2 ranges)
    and test (2 ranges), query-disjoint by construction.
    """
    from ltr.data.shards import byte_ranges  # deferred: the parent process imports ltr only here

    shard_dir = directory / "train"
    if not (directory / "test.txt").is_file():
        cmd = [sys.executable, "-m", "ltr.data", "synth", str(directory / "all"), "--queries", str(queries)]
        subprocess.run([*cmd, "--seed", str(seed)], check=True)
        (source,) = (directory / "all").glob("*.txt")
        shutil.rmtree(shard_dir, ignore_errors=True)
        shard_dir.mkdir()
        ranges = byte_ranges(source, shards + 4)
        if len(ranges) != shards + 4:
            raise SystemExit(f"{source}: too few queries for {shards + 4} parts")
        with open(source, "rb") as f:

            def piece(a: int, b: int) -> bytes:
                f.seek(a)
                return f.read(b - a)

            for i, (a, b) in enumerate(ranges[:shards]):
                (shard_dir / f"train-{i:03d}.txt").write_bytes(piece(a, b))
            (directory / "vali.txt").write_bytes(
                b"".join(piece(a, b) for a, b in ranges[shards : shards + 2])
            )
            (directory / "test.txt").write_bytes(b"".join(piece(a, b) for a, b in ranges[shards + 2 :]))
        shutil.rmtree(directory / "all")
    sizes = {p.name: p.stat().st_size for p in sorted(shard_dir.glob("train-*.txt"))}
    return {
        "train_files": len(sizes),
        "train_mb": sum(sizes.values()) / 2**20,
        "valid_mb": (directory / "vali.txt").stat().st_size / 2**20,
        "test_mb": (directory / "test.txt").stat().st_size / 2**20,
    }


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cap_address_space(extra_mb: int) -> float:
    """Limit this process's address space to its current size + ``extra_mb``; returns the limit in MB."""
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))  # kB
    limit = (vm + extra_mb * 1024) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    return limit / 2**20


def run_dask(directory: Path, n_files: int | None, cap_mb: int, worker_memory: str, n_features: int) -> dict:
    """Parse, train and evaluate on the workers; the driver capped (module docstring)."""
    import logging

    import dask.array  # noqa: F401  (loaded before the cap: imports are not data)
    import lightgbm.dask  # noqa: F401
    import pandas  # noqa: F401
    from distributed import Client, LocalCluster

    from ltr.data import _fastparse  # noqa: F401  (numba kernels)
    from ltr.distributed.backend import build_dask_ranker
    from ltr.distributed.shards import load_sharded, per_query_metrics

    files = sorted((directory / "train").glob("train-*.txt"))[: n_files or None]
    opts = {"n_features": n_features}
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            memory_limit=worker_memory,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        rss_start = _rss_mb()
        # threads started under the cap (ltr's cluster watch, Dask's) reserve 2 MiB of stack address space,
        # not the 8 MiB default: the cap measures data, not stack reservations
        threading.stack_size(2 * 2**20)
        limit = _cap_address_space(cap_mb) if cap_mb else None
        t0 = time.perf_counter()
        train = load_sharded(client, [str(p) for p in files], opts, name="train")
        valid = load_sharded(client, directory / "vali.txt", opts, name="valid")
        test = load_sharded(client, directory / "test.txt", opts, name="test")
        t_load = time.perf_counter() - t0
        ranker = build_dask_ranker(MODEL, {"name": "dask"}, seed=1, num_threads=1).fit(train, valid)
        t_fit = time.perf_counter() - t0 - t_load
        ndcg = per_query_metrics(client, test, ranker, ["ndcg@10"], "ltr")["ndcg@10"]
        t_all = time.perf_counter() - t0
        return {
            "train_rows": train.n_docs,
            "train_queries": train.n_queries,
            "train_dense_mb": train.n_docs * n_features * 4 / 2**20,
            "driver_rss_after_cluster_start_mb": rss_start,
            "driver_address_space_limit_mb": limit,
            "driver_peak_rss_mb": _rss_mb(),
            "best_iteration": ranker.best_iteration_,
            "test_ndcg@10": float(np.nanmean(ndcg)),
            "seconds_load": t_load,
            "seconds_fit": t_fit,
            "seconds_total": t_all,
        }


def run_local(directory: Path, n_files: int, n_features: int) -> dict:
    """Ordinary training on one machine on the first ``n_files`` training shards."""
    from ltr.data.svmlight import load_svmlight
    from ltr.metrics import evaluate
    from ltr.models import build_ranker

    files = sorted((directory / "train").glob("train-*.txt"))[:n_files]
    t0 = time.perf_counter()
    parts = [load_svmlight(p, n_features=n_features) for p in files]
    from ltr.data import RankingData

    train = RankingData(
        X=np.vstack([p.dense() for p in parts]),
        y=np.concatenate([p.y for p in parts]),
        qid=np.concatenate([p.qid for p in parts]),
        name="train",
    )
    valid = load_svmlight(directory / "vali.txt", n_features=n_features)
    test = load_svmlight(directory / "test.txt", n_features=n_features)
    t_load = time.perf_counter() - t0
    ranker = build_ranker(MODEL, seed=1, num_threads=2).fit(train, valid)
    t_fit = time.perf_counter() - t0 - t_load
    ndcg = evaluate(["ndcg@10"], test.y, ranker.predict(test), test.offsets)["ndcg@10"]
    return {
        "train_rows": train.n_docs,
        "driver_peak_rss_mb": _rss_mb(),
        "best_iteration": ranker.best_iteration_,
        "test_ndcg@10": float(np.nanmean(ndcg)),
        "seconds_load": t_load,
        "seconds_fit": t_fit,
        "seconds_total": time.perf_counter() - t0,
    }


def _child(args: argparse.Namespace, mode: str) -> dict:
    cmd = [sys.executable, __file__, "--dir", str(args.dir), "--mode", mode, "--shards", str(args.shards)]
    cmd += ["--subset-shards", str(args.subset_shards), "--driver-cap-mb", str(args.driver_cap_mb)]
    cmd += ["--worker-memory", args.worker_memory]
    # one malloc arena: glibc reserves 64 MB of address space per thread arena (not memory), and the cap
    # is on address space; without this the first helper thread (ltr's cluster watch) hits the cap
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env)  # stderr shown
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ltr-dask-scale"))
    parser.add_argument(
        "--queries", type=int, default=4800, help="total queries (about shards/(shards+4) of them train)"
    )
    parser.add_argument("--shards", type=int, default=16, help="training files")
    parser.add_argument("--subset-shards", type=int, default=4, help="training files of the local comparison")
    parser.add_argument("--driver-cap-mb", type=int, default=200, help="driver address space above its size")
    parser.add_argument("--worker-memory", default="3GB", help="Dask memory_limit of each worker")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", choices=("all", "dask-full", "dask-subset", "local-subset"), default="all")
    args = parser.parse_args(argv)
    n_features = 136  # what `ltr.data synth` writes
    if args.mode == "dask-full":
        print(json.dumps(run_dask(args.dir, None, args.driver_cap_mb, args.worker_memory, n_features)))
    elif args.mode == "dask-subset":
        print(
            json.dumps(
                run_dask(args.dir, args.subset_shards, args.driver_cap_mb, args.worker_memory, n_features)
            )
        )
    elif args.mode == "local-subset":
        print(json.dumps(run_local(args.dir, args.subset_shards, n_features)))
    else:
        data = prepare(args.dir, args.queries, args.shards, args.seed)
        print(json.dumps({"data": data}), flush=True)
        results = {"data": data}
        for mode in ("dask-full", "dask-subset", "local-subset"):
            results[mode] = _child(args, mode)
            print(json.dumps({mode: results[mode]}), flush=True)
        gap = abs(results["dask-subset"]["test_ndcg@10"] - results["local-subset"]["test_ndcg@10"])
        print(json.dumps({"subset_ndcg_gap": gap, "within_0.01": gap <= 0.01}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

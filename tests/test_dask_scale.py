"""Proof of scale on one machine (slow): benchmarks/bench_dask_scale.py at a small size.

The driver caps its own address space (RLIMIT_AS) at its size after the 2-worker LocalCluster is up
plus 40 MB, while the training files are ~120 MB of text (~45 MB as dense float32) and valid/test
another ~60 MB: a driver that read the data would fail with MemoryError. Training must complete,
the driver's peak RSS must stay within the cap of where it started, and test NDCG@10 of Dask
training on a subset of the shards must be within 0.01 of local training on the same subset.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_dask_scale.py"
CAP_MB = 40


@pytest.mark.slow  # generates ~180 MB, starts two LocalClusters and trains three models: minutes
def test_workers_train_on_data_the_capped_driver_could_not_hold(tmp_path):
    cmd = [sys.executable, str(SCRIPT), "--dir", str(tmp_path / "data"), "--queries", "1100", "--shards", "8"]
    cmd += ["--subset-shards", "3", "--driver-cap-mb", str(CAP_MB), "--worker-memory", "2GB"]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-4000:]  # the capped child's own error, when it fails
    rows = {
        k: v for line in out.stdout.splitlines() if line.startswith("{") for k, v in json.loads(line).items()
    }
    data, full = rows["data"], rows["dask-full"]
    assert data["train_files"] == 8 and data["train_mb"] > 2 * CAP_MB
    assert full["train_dense_mb"] > CAP_MB and 650 < full["train_queries"] < 820
    assert full["driver_address_space_limit_mb"] is not None
    assert full["driver_peak_rss_mb"] - full["driver_rss_after_cluster_start_mb"] < CAP_MB
    assert full["best_iteration"] is not None and full["test_ndcg@10"] > 0
    assert rows["within_0.01"], rows


@pytest.mark.slow  # two `python -m ltr.train` runs, each with a 2-process LocalCluster
def test_train_cli_has_the_workers_parse_a_glob_and_reports_a_straddling_query(tmp_path):
    from helpers import run_train_cli, store_client

    from ltr.data.svmlight import write_svmlight
    from ltr.data.synthetic import generate

    data = tmp_path / "data"
    data.mkdir()
    for i in range(4):
        write_svmlight(generate(30, seed=i, qid_start=1 + 30 * i), data / f"train-{i}.txt")
    write_svmlight(generate(40, seed=9, qid_start=1000), data / "valid.txt")
    write_svmlight(generate(40, seed=8, qid_start=2000), data / "test.txt")
    args = ["+model=lambdamart", "backend=dask", "data=svmlight", f"data.train={data}/train-*.txt"]
    args += [f"data.valid={data}/valid.txt", f"data.test={data}/test.txt", "data.n_features=136"]
    args += ["model.params.n_trees=10", f"paths.root={tmp_path}"]
    done = run_train_cli(args, tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"train\s+120 queries", done.stdout)
    client = store_client(tmp_path)
    (experiment,) = [e for e in client.search_experiments() if e.name == "ltr"]
    (logged,) = client.search_runs([experiment.experiment_id])
    assert "test/ndcg_at_10" in logged.data.metrics and "valid/ndcg_at_10" in logged.data.metrics
    # a query cut between two files is refused, naming both
    write_svmlight(generate(5, seed=4, qid_start=120), data / "train-4.txt")  # qid 120 is also in train-3
    failed = run_train_cli(args, tmp_path, timeout=900)
    assert failed.returncode != 0
    assert (
        f"qid 120 has rows in {data}/train-3.txt and in {data}/train-4.txt" in failed.stderr + failed.stdout
    )

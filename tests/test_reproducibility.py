"""Reproducibility: same config + seed → identical numbers; a run reruns from its recorded command."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from helpers import PROJECT_ROOT, TINY_DATA, cli_env, compose_config, quick_model, store_client

from ltr.train import execute

TINY = [*TINY_DATA, *quick_model(30), "num_threads=1"]


@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb"])
def test_same_config_and_seed_give_identical_per_query_metrics(tmp_path, model):
    overrides = [f"+model={model}", *TINY, "tracking=none", f"paths.root={tmp_path}"]
    first, second = (execute(compose_config(overrides)).outcome for _ in range(2))
    assert first.value == second.value
    for split in ("train", "valid", "test"):
        pd.testing.assert_frame_equal(first.frames[split], second.frames[split], check_exact=True)


def test_cfg_job_prints_the_composed_config_without_running(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.train", "--cfg", "job", "+model=lambdamart", "model.params.learning_rate=0.05"],
        cwd=PROJECT_ROOT, env=cli_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cfg = yaml.safe_load(proc.stdout)
    assert cfg["model"]["name"] == "lambdamart" and cfg["model"]["params"]["learning_rate"] == 0.05
    assert cfg["eval"]["bootstrap"]["B"] == 10000 and cfg["backend"]["name"] == "local"
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "data").exists()


@pytest.mark.slow
def test_a_run_reruns_from_its_recorded_command(tmp_path):
    first = subprocess.run(
        [sys.executable, "-m", "ltr.train", "+model=lambdamart", *TINY, "model.params.num_leaves=15"],
        cwd=PROJECT_ROOT, env=cli_env(tmp_path), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    client = store_client(tmp_path)
    exp = client.get_experiment_by_name("ltr")
    (original,) = client.search_runs([exp.experiment_id])
    command = original.data.tags["ltr.command"]
    assert "model.params.num_leaves=15" in command
    rerun = subprocess.run(
        shlex.split(command),
        cwd=original.data.tags["ltr.cwd"],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr
    runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])
    assert len(runs) == 2
    again = runs[1]
    assert again.data.params == original.data.params
    final = {k: v for k, v in original.data.metrics.items()}
    assert final and again.data.metrics == final
    frames = [
        pd.read_parquet(
            client.download_artifacts(r.info.run_id, "per_query/test.parquet", str(tmp_path / r.info.run_id))
        )
        for r in (original, again)
    ]
    pd.testing.assert_frame_equal(frames[0], frames[1], check_exact=True)

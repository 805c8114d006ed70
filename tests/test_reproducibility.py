"""Reproducibility: same config + seed → identical numbers; a run reruns from its recorded command."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from ltr.schemas import register_configs
from ltr.train import CONF_DIR, execute

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "data.n_queries.train=60",
    "data.n_queries.valid=20",
    "data.n_queries.test=20",
    "data.max_docs=40",
    "model.params.n_trees=30",
    "model.early_stopping.patience=10",
    "num_threads=1",
]


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "LTR_ROOT": str(root), "MLFLOW_DISABLE_TELEMETRY": "true", "CI": "true"}


def _compose(overrides: list[str]):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb"])
def test_same_config_and_seed_give_identical_per_query_metrics(tmp_path, model):
    overrides = [f"+model={model}", *TINY, "tracking=none", f"paths.root={tmp_path}"]
    first, second = execute(_compose(overrides)), execute(_compose(overrides))
    assert first.value == second.value
    for split in ("train", "valid", "test"):
        pd.testing.assert_frame_equal(first.frames[split], second.frames[split], check_exact=True)


def test_cfg_job_prints_the_composed_config_without_running(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.train", "--cfg", "job", "+model=lambdamart", "model.params.learning_rate=0.05"],
        cwd=PROJECT_ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
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
        cwd=PROJECT_ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path.resolve()}/mlflow.db")
    exp = client.get_experiment_by_name("ltr")
    (original,) = client.search_runs([exp.experiment_id])
    command = original.data.tags["ltr.command"]
    assert "model.params.num_leaves=15" in command
    rerun = subprocess.run(
        shlex.split(command),
        cwd=original.data.tags["ltr.cwd"],
        env=_env(tmp_path),
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

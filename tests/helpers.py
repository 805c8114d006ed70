"""Helpers shared by the tests that drive the Hydra app, the MLflow store it writes, and local servers.

Imported as ``from helpers import ...`` (pytest puts ``tests/`` on ``sys.path``; it is not a package).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# tiny synthetic splits: a whole training run takes seconds
TINY_DATA = [
    "data.n_queries.train=60",
    "data.n_queries.valid=20",
    "data.n_queries.test=20",
    "data.max_docs=40",
]


def quick_model(n_trees: int, patience: int = 10) -> list[str]:
    """Overrides for a small GBDT: ``n_trees`` rounds, early stopping after ``patience``."""
    return [f"model.params.n_trees={n_trees}", f"model.early_stopping.patience={patience}"]


def cli_env(root: Path, *, ci: bool = True) -> dict[str, str]:
    """Environment of a ``python -m ltr.train`` child: outputs under ``root``, no telemetry, CI-quiet."""
    env = {**os.environ, "LTR_ROOT": str(root), "MLFLOW_DISABLE_TELEMETRY": "true"}
    if ci:
        env["CI"] = "true"
    return env


def run_train_cli(
    args: list[str], root: Path, *, timeout: int = 600, ci: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ltr.train ARGS`` from the project root with outputs under ``root``."""
    return subprocess.run(
        [sys.executable, "-m", "ltr.train", *args],
        cwd=PROJECT_ROOT,
        env=cli_env(root, ci=ci),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def compose_config(overrides: list[str], **kwargs: Any):
    """The app's config for ``overrides``, composed as ``python -m ltr.train`` would (typed groups too)."""
    from hydra import compose, initialize_config_dir

    from ltr.resources import config_dir
    from ltr.schemas import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=overrides, **kwargs)


def store_client(root: Path) -> MlflowClient:
    """Client of the SQLite store a run with ``paths.root=root`` writes."""
    return MlflowClient(tracking_uri=f"sqlite:///{root.resolve()}/mlflow.db")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

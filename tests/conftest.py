"""Shared test fixtures: the real datasets in ../shared/data (skipped when absent), temp MLflow stores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# before any engine loads: OpenMP threads must not busy-wait on a shared 2-core machine
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data`` (real LETOR samples and trec_eval's test files); skip when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real test data not found at {SHARED_DATA} (see ../shared/data/SOURCES.md)")
    return SHARED_DATA

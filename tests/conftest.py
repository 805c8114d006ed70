"""Shared test fixtures: the real-data folder (``LTR_TEST_DATA``, skipped when absent), temp MLflow stores."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: Environment variable naming the real-data folder (real LETOR samples and trec_eval's test files,
#: described by the SOURCES.md inside it). It lives outside the checkout; the one place tests look it up.
REAL_DATA_ENV = "LTR_TEST_DATA"

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# before any engine loads: OpenMP threads must not busy-wait on a shared 2-core machine
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def real_data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The real-data folder: ``$LTR_TEST_DATA`` when set (and not empty), else ``shared/data`` beside the checkout."""
    given = environ.get(REAL_DATA_ENV, "")
    return Path(given).expanduser() if given else PROJECT_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder (:func:`real_data_dir`); the test is skipped when it is absent."""
    folder = real_data_dir()
    if not folder.is_dir():
        pytest.skip(f"real test data not found at {folder} (set {REAL_DATA_ENV} to the real-data folder)")
    return folder


@pytest.fixture
def mlflow_server(tmp_path):
    """A real ``mlflow server`` on 127.0.0.1 with its store under ``tmp_path``: ``(process, url)``.

    Tests may kill it (:func:`helpers.kill_server`); it is killed at the end otherwise.
    """
    from helpers import kill_server, start_mlflow_server  # deferred: imports mlflow, which few tests need

    proc, url = start_mlflow_server(tmp_path)
    yield proc, url
    if proc.poll() is None:
        kill_server(proc)


#: set to skip the warm-up of numba's compile cache (``tests/warm_kernels.py``) at the start of a session
NO_WARMUP_ENV = "LTR_TEST_NO_WARMUP"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the numba kernels once before any test (and before xdist starts its workers).

    Runs ``tests/warm_kernels.py``'s two groups as two processes at once in the controlling process
    only (an xdist worker has ``workerinput``); a warm cache costs a second or two, a fresh clone the
    compilation once, which the suite would otherwise pay inside its tests, once per worker.
    """
    config = session.config
    if hasattr(config, "workerinput") or os.environ.get(NO_WARMUP_ENV) or config.option.collectonly:
        return
    import subprocess  # deferred: only the controlling process warms the cache
    import sys
    import time

    script = Path(__file__).with_name("warm_kernels.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), group], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for group in ("parse", "metrics")
    ]
    outputs = [proc.communicate()[0].decode(errors="replace") for proc in procs]
    elapsed = time.monotonic() - start
    failed = [out for proc, out in zip(procs, outputs, strict=True) if proc.returncode != 0]
    if failed:  # the tests that use the kernels will fail with the reason; say it once here too
        raise pytest.UsageError("tests/warm_kernels.py failed:\n" + "\n".join(out[-2000:] for out in failed))
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and elapsed > 10:
        reporter.write_line(
            f"numba: ltr's kernels compiled into numba's cache in {elapsed:.0f} s (once per clone)"
        )

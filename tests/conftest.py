"""Shared test fixtures: the real-data folder (``LTR_TEST_DATA``, skipped when absent), one MLflow server per
session with a killable proxy per test, an experiment name per test."""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: Environment variable naming the real-data folder (real LETOR samples and trec_eval's test files,
#: described by the SOURCES.md inside it). It lives outside the checkout; the one place tests look it up.
REAL_DATA_ENV = "LTR_TEST_DATA"

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# before any engine loads: OpenMP threads must not busy-wait on a shared 2-core machine
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _absl_writes_to_the_real_stderr() -> None:
    """absl's logging handler (imported by optax, so by the neural rankers) keeps the ``sys.stderr`` of the
    moment absl was imported — under pytest, the capture's stream — and its ``close()`` closes that stream
    unless it is the ``sys.stderr`` of the moment it closes. Hydra's logging set-up (``dictConfig``) closes
    every handler of the process: a command run in-process inside ``capsys`` then closed pytest's own
    capture file, and every later test of the worker failed ("I/O operation on closed file")."""
    try:
        import absl.logging
    except ImportError:  # without the neural extra there is no absl
        return
    absl.logging.get_absl_handler().python_handler.stream = sys.__stderr__


_absl_writes_to_the_real_stderr()


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


@pytest.fixture(scope="session", autouse=True)
def copied_mlflow_schema() -> Iterator[None]:
    """A new SQLite MLflow store starts as a byte copy of the session's first one.

    MLflow builds a new SQLite store by creating its tables and running its schema migrations (alembic),
    1-3 s each time, and the tests create well over a hundred stores. The first new store of the session
    (in this process) is built by MLflow as usual and its bytes are kept right after; every later new
    store (an empty SQLite file that MLflow is about to initialise) gets those bytes instead. What MLflow
    then does with the store (its schema check, the default experiment) is unchanged. Child processes
    build their stores as usual. A session whose tests never imported MLflow by the time they were
    collected (most import it through ``helpers``) is left alone: importing it here would cost seconds.
    """
    import sys
    import threading

    if "mlflow" not in sys.modules:
        yield
        return

    import mlflow.store.db.utils as db_utils
    import mlflow.store.model_registry.sqlalchemy_store as registry_store

    real = db_utils._initialize_tables
    template: list[bytes] = []
    lock = threading.Lock()

    def initialize(engine: Any) -> None:
        url = engine.url
        path = Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None
        with lock:
            new = path is not None and path.is_file() and path.stat().st_size == 0
            if new and template:
                engine.dispose()
                with path.open("r+b") as f:  # in place: the same file every engine of it has open
                    f.write(template[0])
                if db_utils._all_tables_exist(engine):
                    return
            real(engine)
            if new and not template:
                template.append(path.read_bytes())

    db_utils._initialize_tables = initialize
    registry_store._initialize_tables = initialize
    yield
    db_utils._initialize_tables = real
    registry_store._initialize_tables = real


@pytest.fixture(scope="session")
def mlflow_session_server(tmp_path_factory) -> Iterator[str]:
    """One real ``mlflow server`` on 127.0.0.1 for the whole session (under pytest-xdist: one per worker),
    its store in a session temp folder: its URL. A server start costs ~10 s; tests share it and keep
    apart by experiment (:func:`experiment_name`) and run ids. Nobody kills it: see :func:`mlflow_server`.
    """
    from helpers import kill_server, start_mlflow_server  # deferred: imports mlflow, which few tests need

    proc, url = start_mlflow_server(tmp_path_factory.mktemp("mlflow-server"))
    yield url
    kill_server(proc)


@pytest.fixture
def mlflow_server(mlflow_session_server) -> Iterator[tuple[Any, str]]:
    """A killable MLflow server for one test: ``(server, url)``.

    ``server`` is a proxy of the test's own (:func:`helpers.killable_server`) in front of the session's
    shared server; ``server.kill()`` looks to every client as a killed server does (connection refused,
    connections in progress reset) while the real server lives on for the other tests. ``url`` is the
    proxy's; ``server.upstream`` is the shared server's (a server "back" after the kill: the same store).
    """
    from helpers import killable_server

    server = killable_server(mlflow_session_server)
    server.upstream = mlflow_session_server
    yield server, server.url
    server.kill()


@pytest.fixture
def experiment_name(request) -> str:
    """An MLflow experiment name of this test's own (tests share one server: :func:`mlflow_session_server`)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:80] + "-" + uuid.uuid4().hex[:8]


#: set to skip the warm-up of numba's compile cache (``python -m ltr.warmup``) at the start of a session
NO_WARMUP_ENV = "LTR_TEST_NO_WARMUP"
#: the kernel groups the suite uses (float64: the few tests that parse to ``dtype=float64``)
WARMUP = ["--jobs", "2", "parse", "metrics", "float64"]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the numba kernels once before any test (and before xdist starts its workers).

    ``make env`` compiles them after installing (``python -m ltr.warmup``); this catches a kernel
    edited since, in the controlling process only (an xdist worker has ``workerinput``): a warm cache
    costs a second or two, a changed kernel its compilation once instead of once per worker.
    """
    config = session.config
    if hasattr(config, "workerinput") or os.environ.get(NO_WARMUP_ENV) or config.option.collectonly:
        return
    import subprocess  # deferred: only the controlling process warms the cache
    import sys
    import time

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.warmup", *WARMUP], env=env, cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
    )  # fmt: skip
    elapsed = time.monotonic() - start
    if proc.returncode != 0:  # the tests that use the kernels will fail with the reason; say it once here too
        raise pytest.UsageError("python -m ltr.warmup failed:\n" + proc.stdout[-4000:])
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and elapsed > 10:
        reporter.write_line(f"numba: ltr's kernels compiled into numba's cache in {elapsed:.0f} s")


#: The longest test files (measured: docs/benchmarks.md, "Test suite"), run first: xdist hands out whole
#: files (``--dist loadfile``) in collection order, so a long file collected last would run alone at the
#: end while the other worker idles. A file missing here keeps its place after these.
LONGEST_FIRST = (
    "test_compare.py",
    "test_fail_early.py",
    "test_export.py",
    "test_optuna_sweeper.py",
    "test_train.py",
    "test_ensemble.py",
    "test_fetch.py",
    "test_mlflow_panels.py",
    "test_compressed.py",
    "test_folds.py",
    "test_dask_shards.py",
    "test_architecture.py",
    "test_tracking.py",
)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Put the files of :data:`LONGEST_FIRST` first, in that order (a stable sort: tests keep their order)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))

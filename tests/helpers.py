"""Helpers shared by the tests that drive the Hydra app, the MLflow store it writes, and local servers.

Imported as ``from helpers import ...`` (pytest puts ``tests/`` on ``sys.path``; it is not a package).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

PROJECT_ROOT = Path(__file__).resolve().parents[1]
#: ``python PAUSED_RUN HANDSHAKE_DIR K MODULE ARGS``: ``python -m MODULE ARGS`` pausing in boosting round K
PAUSED_RUN = str(PROJECT_ROOT / "tests" / "paused_run.py")

# tiny synthetic splits: a whole training run takes seconds
TINY_DATA = [
    "data.n_queries.train=60",
    "data.n_queries.valid=20",
    "data.n_queries.test=20",
    "data.max_docs=40",
]


def benchmark_module(name: str) -> Any:
    """``benchmarks/<name>.py`` imported as a module (its sibling benchmark modules importable meanwhile)."""
    import importlib.util

    folder = str(PROJECT_ROOT / "benchmarks")
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, PROJECT_ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def held_out_spearman(train: Any, test: Any) -> float:
    """Spearman correlation of labels and the scores of LightGBM lambdarank (30 trees) fitted on
    ``train``, on ``test``: how well a model of one split ranks another."""
    import lightgbm as lgb
    from scipy.stats import spearmanr

    booster = lgb.train(
        {"objective": "lambdarank", "verbose": -1, "num_threads": 1, "seed": 0},
        lgb.Dataset(train.X, train.y, group=train.group_sizes),
        num_boost_round=30,
    )
    return float(spearmanr(booster.predict(test.X), test.y).statistic)


def default_sigint() -> None:
    """``preexec_fn`` of a child that a test interrupts with SIGINT: the default disposition, as in a
    terminal. A shell without job control starts background jobs with SIGINT ignored, the ignore is
    inherited through exec, and a Python child then never turns SIGINT into ``KeyboardInterrupt`` (a
    fresh-clone CI run in the background hung so, until the test timed out)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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


def train_main_in_process(args: list[str], root: Path, monkeypatch: Any, *, ci: bool = True) -> int:
    """``python -m ltr.train ARGS`` in this process, as its ``__main__`` runs it (process set-up, then the
    Hydra app under :func:`ltr.cli.running.run_hydra_app`), with :func:`cli_env`'s environment: the exit code.

    Its output goes to this process's ``sys.stdout`` / ``sys.stderr`` (read it with ``capsys``). For the
    error paths, where a child process adds nothing but its start-up (seconds); the tests that need a real
    process (a traceback left out by the interpreter, a signal, a closed pipe) use :func:`run_train_cli`.
    The logging set-up Hydra makes for a job is undone afterwards.
    """
    import ltr.train
    from ltr.cli.running import configure_process_environment

    for name, value in cli_env(root, ci=ci).items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "argv", [str(Path(ltr.train.__file__)), *args])
    with restored_logging(), restored_environment():
        try:
            configure_process_environment()
            ltr.train._hydra_entry()
        except SystemExit as exc:
            return 0 if exc.code is None else int(exc.code)
    return 0


@contextlib.contextmanager
def restored_environment() -> Iterator[None]:
    """``os.environ`` as it was before the block (a command sets MLflow's and ltr's variables for its
    process; in-process they would leak into the tests that follow)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def restored_logging() -> Iterator[None]:
    """Undo the logging set-up made inside the block (Hydra configures logging for every job it runs):
    each logger's handlers, filters, level, propagation and disabled flag as they were; handlers added
    inside are closed (they may write to a captured stream that is gone after the test)."""
    import logging

    def state() -> dict[str, tuple]:
        loggers = [
            logging.root,
            *(v for v in logging.root.manager.loggerDict.values() if isinstance(v, logging.Logger)),
        ]
        return {
            lg.name: (lg, lg.handlers[:], lg.level, lg.propagate, lg.disabled, lg.filters[:])
            for lg in loggers
        }

    before = state()
    try:
        yield
    finally:
        for name, (lg, handlers, *_rest) in state().items():
            kept = before.get(name, (lg, [], logging.NOTSET, True, False, []))
            for handler in handlers:
                if handler not in kept[1]:
                    lg.removeHandler(handler)
                    handler.close()
            for handler in kept[1]:
                if handler not in lg.handlers:
                    lg.addHandler(handler)
            lg.setLevel(kept[2])
            lg.propagate, lg.disabled = kept[3], kept[4]
            lg.filters[:] = kept[5]  # e.g. a failed sweep's ltr.sweep.console.LaunchLines


def command_in_process(module: str, args: list[str], *, run_cli: bool = True) -> int:
    """``python -m MODULE ARGS`` (``ltr.data``, ``ltr.evaluate``, ``ltr.labelnext``, ``ltr.clicks``, …) in this
    process, as its ``__main__`` block runs it: the module's ``main(ARGS)`` under :func:`ltr.cli.running.run_cli`
    (``run_cli=False``: ``sys.exit(main())``, as ``ltr.export`` does); argparse's own exits included.
    Returns the exit code; the output is on this process's streams (``capsys``). An exception that a real
    process would end in with a traceback escapes from here (the test fails with it)."""
    import importlib

    from ltr.cli import running as cli

    command = importlib.import_module(module)
    if not hasattr(command, "main"):
        command = importlib.import_module(f"{module}.__main__")
    with restored_environment():
        try:
            if run_cli:
                cli.run_cli(lambda: command.main(list(args)))
            sys.exit(command.main(list(args)))
        except SystemExit as exc:
            return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1


def completed_in_process(
    module: str, args: list[str], capsys: Any, *, run_cli: bool = True
) -> subprocess.CompletedProcess[str]:
    """:func:`command_in_process` as a :class:`subprocess.CompletedProcess` (exit code, stdout, stderr read
    with ``capsys``), for tests written against ``subprocess.run``."""
    capsys.readouterr()
    code = command_in_process(module, args, run_cli=run_cli)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["python", "-m", module, *args], code, out, err)


def compose_config(overrides: list[str], **kwargs: Any):
    """The app's config for ``overrides``, composed as ``python -m ltr.train`` would (typed groups too)."""
    from hydra import compose, initialize_config_dir

    from ltr.core.resources import config_dir
    from ltr.experiment.schemas import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=overrides, **kwargs)


def store_client(root: Path) -> MlflowClient:
    """Client of the SQLite store a run with ``paths.root=root`` writes."""
    uri = f"sqlite:///{root.resolve()}/mlflow.db"
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a user's own config group, outside the package (tests/test_resources.py, tests/test_install.py) ---

USER_DATA = """\
defaults:
  - svmlight          # ltr's own data/svmlight.yaml: every option and its default
  - _self_

name: mydata
train: ${paths.data_dir}/mydata/train.txt
valid: ${paths.data_dir}/mydata/vali.txt
test: ${paths.data_dir}/mydata/test.txt
n_features: 10
label_range: [0, 4]
"""


def write_user_data(folder: Path) -> None:
    """A user's own data config ``folder/myconf/data/mydata.yaml`` and its files ``folder/data/mydata/*.txt``.

    Used as ``--config-dir myconf data=mydata`` (or ``hydra.searchpath=[file://myconf]``) from ``folder``:
    12 train, 4 valid and 3 test queries of 5 documents each.
    """
    (folder / "myconf" / "data").mkdir(parents=True)
    (folder / "myconf" / "data" / "mydata.yaml").write_text(USER_DATA)
    (folder / "data" / "mydata").mkdir(parents=True)
    for name, n, first in (("train", 12, 1), ("vali", 4, 100), ("test", 3, 200)):
        write_letor(folder / "data" / "mydata" / f"{name}.txt", n, first)


def write_letor(path: Path, n_queries: int, first_qid: int) -> None:
    """Tiny LETOR text: ``n_queries`` queries of 5 documents, 10 features, labels 0..4."""
    lines = [
        f"{(q + d) % 5} qid:{first_qid + q} "
        + " ".join(f"{f + 1}:{(q * 7 + d * 3 + f) % 11 / 10}" for f in range(10))
        for q in range(n_queries)
        for d in range(5)
    ]
    path.write_text("\n".join(lines) + "\n")


def start_mlflow_server(
    root: Path, *, timeout: float = 180, backend_store: str | None = None
) -> tuple[subprocess.Popen, str]:
    """``mlflow server`` on a free 127.0.0.1 port in its own process group; returns (process, url).

    Store ``backend_store`` (an SQLAlchemy URL; default ``root/mlflow.db``), artifacts ``root/artifacts``, log ``root/server.log``; one worker and no
    job execution (2 processes). Waits for ``/health``; a server that does not come up within
    ``timeout`` seconds is killed (its whole group) and its log tail raised.
    """
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "MLFLOW_DISABLE_TELEMETRY": "true"}
    cmd = [
        str(Path(sys.executable).with_name("mlflow")),
        "server",
        "--backend-store-uri", backend_store or f"sqlite:///{root}/mlflow.db",
        "--artifacts-destination", str(root / "artifacts"),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--workers", "1",
    ]  # fmt: skip
    with (root / "server.log").open("w") as log:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            kill_server(proc)
            raise RuntimeError("mlflow server did not start:\n" + (root / "server.log").read_text()[-3000:])
        time.sleep(0.5)


def kill_server(proc: subprocess.Popen) -> None:
    """SIGKILL the server's whole process group (its workers too) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


class ForwardingProxy:
    """A real HTTP proxy on a free 127.0.0.1 port in front of the server ``upstream`` (``http://host:port``).

    ``intercept(handler, body)`` sees each request first: it returns True when it has dealt with the
    request itself (answered it, or dropped the connection); otherwise the request goes upstream
    without the headers named in ``drop_headers`` and the answer comes back. ``url`` is the proxy's.
    """

    def __init__(
        self, upstream: str, intercept: Any = None, drop_headers: tuple[str, ...] = ("host",)
    ) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        host, port = upstream.removeprefix("http://").split(":")
        dropped = {h.lower() for h in drop_headers} | {"host"}
        proxy = self
        #: set by :meth:`kill`: every request from then on has its connection reset, unanswered
        self.dead = False

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None: ...

            def reset(self) -> None:
                """Drop the connection with a TCP reset, as the kernel does for a killed server's sockets."""
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.dead:
                    return self.reset()
                if intercept is not None and intercept(self, body):
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                conn.close()
                if proxy.dead:  # killed while the server worked: the client never hears back
                    return self.reset()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.handle_error = lambda request, address: None  # a client gone mid-answer is no news
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self._closed = False

    def close(self) -> None:
        """Stop listening (new connections are refused); requests in progress are still answered."""
        if not self._closed:
            self._closed = True
            self.server.shutdown()
            self.server.server_close()

    def kill(self) -> None:
        """Die as a SIGKILLed server looks to its clients: nothing listens on the port any more (connection
        refused), and every request in progress or still to be read has its connection reset, unanswered."""
        self.dead = True
        self.close()


def killable_server(upstream: str) -> ForwardingProxy:
    """A server that a test may kill (:meth:`ForwardingProxy.kill`): a proxy of its own in front of the
    session's shared ``mlflow server`` (``upstream``), which lives on for the other tests."""
    return ForwardingProxy(upstream)


@contextlib.contextmanager
def in_process_dask_client() -> Iterator[Any]:
    """A client of a 2-worker ``LocalCluster`` whose workers are threads of this process (fast to start;
    tests/test_dask_shards.py, tests/test_dask_data.py)."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client


# --- stand-ins for the LETOR-layout datasets (tests/test_folds.py, tests/test_recipes.py) ---


def write_fold_standin(
    directory: Path, *, n_queries: int = 60, max_label: int = 2, max_docs: int = 20, seed: int = 0
) -> Path:
    """Synthetic data (:func:`ltr.data.synthetic.generate`, labels capped at ``max_label``) in the LETOR
    layout ``directory/Fold1..Fold5/{train,vali,test}.txt``: five query-disjoint parts rotated like
    MSLR's folds (:func:`ltr.data.splits.mslr_style_folds`), so each query is a test query once."""
    import numpy as np

    from ltr.data import RankingData
    from ltr.data.splits import mslr_style_folds
    from ltr.data.svmlight import write_svmlight
    from ltr.data.synthetic import generate

    raw = generate(n_queries, seed=seed, min_docs=3, max_docs=max_docs)
    data = RankingData(X=raw.X, y=np.minimum(raw.y, max_label), qid=raw.qid, name="standin")
    for k, fold in enumerate(mslr_style_folds(data, seed=seed), start=1):
        (directory / f"Fold{k}").mkdir(parents=True, exist_ok=True)
        for split, file in (("train", "train.txt"), ("valid", "vali.txt"), ("test", "test.txt")):
            write_svmlight(fold[split], directory / f"Fold{k}" / file)
    return directory


@contextlib.contextmanager
def captured_figures() -> Iterator[list]:
    """The matplotlib Figures saved inside the block (to read their axes, ticks and labels)."""
    from matplotlib.figure import Figure

    figures: list = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        figures.append(self)
        return original(self, *args, **kwargs)

    Figure.savefig = keep
    try:
        yield figures
    finally:
        Figure.savefig = original

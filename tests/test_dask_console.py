"""What a Dask run prints (ltr.distributed.console): Dask's and the engines' own output is held back
at ltr's log level and shown when the run fails. Before: a successful ``backend=dask`` run printed
LightGBM's ``[LightGBM] [Info]`` lines from every worker, ``Finding random open ports for workers``,
the nanny's ``Worker process still alive after 4.0 seconds, killing`` and now and then a worker's
traceback."""

from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import sys

import pytest
from helpers import PROJECT_ROOT

from ltr.core.errors import DataError

pytest.importorskip("distributed")

NANNY = "Worker process still alive after 4.0 seconds, killing"


def test_dask_records_are_held_back_on_success_and_summarised_at_debug(capfd, caplog):
    from ltr.distributed.console import quiet_cluster

    before = _state()
    with caplog.at_level(logging.DEBUG, logger="ltr.distributed.console"), quiet_cluster() as folder:
        (folder / "worker-1.log").write_text("[LightGBM] [Info] Trying to bind port 41171...\n")
        logging.getLogger("distributed.nanny").warning(NANNY)
        logging.getLogger("distributed.nanny").info("chatter")
        logging.getLogger("tornado.application").error("Exception in callback")
    out, err = capfd.readouterr()
    assert NANNY not in out + err and "LightGBM" not in out + err
    shown = [r for r in caplog.records if r.name.startswith(("distributed", "tornado"))]
    assert not shown, shown
    summary = [r.getMessage() for r in caplog.records if r.name == "ltr.distributed.console"]
    assert summary == [
        "held back: 2 Dask records: 1x distributed.nanny: " + NANNY + "; 1x tornado.application: "
        "Exception in callback; worker consoles: worker-1: 1 lines"
    ]
    assert not folder.exists()
    assert _state() == before  # the loggers are as they were


def test_a_failure_shows_what_dask_and_the_workers_printed_before_it(caplog):
    from ltr.distributed.console import TAIL_LINES, quiet_cluster

    lines = [f"line {i}" for i in range(TAIL_LINES + 5)]
    with (
        pytest.raises(RuntimeError, match="boom"),
        caplog.at_level(logging.WARNING),
        quiet_cluster() as folder,
    ):
        (folder / "worker-7.log").write_text("\n".join(lines) + "\n")
        logging.getLogger("distributed.nanny").warning("Restarting worker")
        raise RuntimeError("boom")
    messages = [(r.name, r.getMessage()) for r in caplog.records]
    assert ("distributed.nanny", "Restarting worker") in messages
    console = [m for n, m in messages if m.startswith("worker-7 printed")]
    assert console == [
        f"worker-7 printed (the last {TAIL_LINES} of {TAIL_LINES + 5} lines):\n" + "\n".join(lines[5:])
    ]


def test_ltrs_own_errors_are_reported_alone(caplog):
    from ltr.distributed.console import quiet_cluster

    with pytest.raises(DataError), caplog.at_level(logging.WARNING), quiet_cluster() as folder:
        (folder / "worker-1.log").write_text("[LightGBM] [Info] Listening...\n")
        logging.getLogger("distributed.nanny").warning(NANNY)
        raise DataError("train.txt:2: expected a numeric feature value, got '1:abc'")
    assert not caplog.records


class _Seen(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("ltr_level", [logging.DEBUG, logging.INFO], ids=["ltr at DEBUG", "ltr at INFO"])
def test_dask_records_reach_their_handlers_only_when_ltr_logs_at_debug(caplog, ltr_level):
    from ltr.distributed.console import quiet_cluster

    seen = _Seen()
    nanny = logging.getLogger("distributed.nanny")
    nanny.addHandler(seen)
    try:
        with caplog.at_level(ltr_level, logger="ltr"), quiet_cluster() as folder:
            nanny.warning(NANNY)
    finally:
        nanny.removeHandler(seen)
    verbose = ltr_level == logging.DEBUG
    assert (folder is None) == verbose
    assert seen.messages == ([NANNY] if verbose else [])


def _state() -> list[tuple]:
    return [
        (
            name,
            logging.getLogger(name).level,
            logging.getLogger(name).propagate,
            logging.getLogger(name).handlers,
        )
        for name in (
            "distributed",
            "distributed.nanny",
            "distributed.client",
            "tornado",
            "tornado.application",
        )
    ]


def test_a_worker_process_console_goes_to_its_file_with_what_native_code_prints(tmp_path):
    """Standard output and error as file descriptors: what a native library writes (``os.write``) too."""
    code = (
        "import os, sys\n"
        "from ltr.distributed.console import redirect_worker_console\n"
        f"path = redirect_worker_console({str(tmp_path)!r}, driver_pid={os.getpid()})\n"
        "os.write(1, b'[LightGBM] [Info] Listening...\\n')\n"
        "os.write(2, b'[12:00:00] Task [xgboost.dask-0] got rank 0\\n')\n"
        "print('python print'); print('python stderr', file=sys.stderr)\n"
        "sys.stdout.flush(); sys.stderr.flush()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""
    (log,) = tmp_path.glob("worker-*.log")
    assert log.read_text().splitlines() == [
        "[LightGBM] [Info] Listening...",
        "[12:00:00] Task [xgboost.dask-0] got rank 0",
        "python print",
        "python stderr",
    ]


def test_the_driver_process_is_never_redirected(tmp_path):
    from ltr.distributed.console import redirect_worker_console

    assert redirect_worker_console(str(tmp_path), os.getpid()) is None
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # starts a 2-process LocalCluster and trains: ~15-40 s on a busy 2-core machine
def test_a_dask_training_run_prints_nothing_of_lightgbm_or_dask(capfd, caplog):
    from ltr.data.synthetic import generate
    from ltr.distributed.lgbm import build_dask_ranker

    train = generate(40, seed=1, max_docs=30)
    backend = {"name": "dask", "n_workers": 2, "threads_per_worker": 1}
    ranker = build_dask_ranker(
        {"name": "lambdamart", "params": {"n_trees": 5}}, backend, seed=1, num_threads=1
    )
    with caplog.at_level(logging.INFO):
        ranker.fit(train)
    assert not multiprocessing.active_children()
    out, err = capfd.readouterr()
    assert "[LightGBM]" not in out + err, out + err
    assert "Finding random open ports" not in out + err
    assert "distributed" not in out + err, out + err
    dask_records = [r for r in caplog.records if r.name.startswith(("distributed", "tornado"))]
    assert not dask_records, [r.getMessage() for r in dask_records]
    # what ltr itself says while the cluster starts (seconds with nothing else on the console)
    said = [r.getMessage() for r in caplog.records if r.name == "ltr.distributed.backend"]
    assert said[0] == "Dask: starting a local cluster of 2 workers × 1 threads …", said
    assert said[1].startswith("Dask: cluster ready (") and said[1].endswith(" s)"), said

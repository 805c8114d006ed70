"""How runs end (issue 25): SIGTERM like Ctrl-C, and no parent run (grid sweep, Optuna sweep) left RUNNING.

The signal tests start real processes and signal them while they are paused in a known boosting round
(tests/paused_run.py: a file handshake, no timing guess).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    PAUSED_RUN,
    PROJECT_ROOT,
    TINY_DATA,
    cli_env,
    quick_model,
    store_client,
    train_main_in_process,
)

from ltr.cli.running import EXIT_INTERRUPTED, EXIT_TERMINATED, interrupted_run, run_cli
from ltr.core import interrupts
from ltr.core.errors import Terminated
from ltr.data import RankingData
from ltr.models.registry import get_ranker_class
from ltr.tracking.writer import make_tracker


def _runs(root: Path) -> list:
    client = store_client(root)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def _finish(proc: subprocess.Popen, act: Callable[[], None], timeout: float = 120) -> tuple[str, float]:
    """Do ``act`` to the running ``proc`` and wait for its end: (its stderr, seconds it took after ``act``).
    ``proc`` is killed if it outlives ``timeout`` or the test fails."""
    try:
        act()
        acted = time.monotonic()
        err = proc.communicate(timeout=timeout)[1]
        return err, time.monotonic() - acted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _signal_when_paused(args: list[str], root: Path, signum: int, pause_at: int = 5) -> tuple[int, str]:
    """``python -m ltr.train ARGS`` paused in boosting round ``pause_at``, sent ``signum``: (exit code, stderr)."""
    handshake = root / "handshake"
    handshake.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, PAUSED_RUN, str(handshake), str(pause_at), "ltr.train", *args],
        cwd=PROJECT_ROOT, env=cli_env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not (handshake / "paused").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("training never reached its pause: " + proc.communicate()[1][-3000:])
        time.sleep(0.1)
    err, _ = _finish(proc, lambda: proc.send_signal(signum))
    return proc.returncode, err


def _own_lines(err: str) -> list[str]:
    """stderr without MLflow's and Hydra's own log records."""
    return [line for line in err.splitlines() if line.strip() and not line.startswith(("20", "INFO", "["))]


LONG_FIT = [*TINY_DATA, "model.params.n_trees=40", "model.early_stopping.patience=null", "num_threads=1"]


def test_sigterm_raises_terminated_and_the_command_exits_143(capsys):
    """In-process: the handler turns SIGTERM into Terminated (a KeyboardInterrupt), the previous
    handler comes back after, and the command ends in one ``terminated`` line with exit 143."""
    before = signal.getsignal(signal.SIGTERM)
    aborted: list[str] = []

    def main() -> int:
        signal.raise_signal(signal.SIGTERM)
        return 0

    with pytest.raises(SystemExit) as info:
        run_cli(main, on_abort=aborted.append)
    assert info.value.code == EXIT_TERMINATED == 143
    assert capsys.readouterr().err == "terminated\n"
    assert aborted == ["KILLED"]
    assert signal.getsignal(signal.SIGTERM) == before
    assert issubclass(Terminated, KeyboardInterrupt)


class _SignalsWhenCollected:
    """An object whose ``__del__`` sends SIGINT: Python raises the KeyboardInterrupt inside ``__del__``,
    where it can only print "Exception ignored in …" and drop it, as in a garbage-collector callback."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.mark.parametrize("model", ["lambdamart", "lambdamart_xgb", "catboost"])
def test_a_ctrl_c_dropped_in_a_garbage_collector_callback_still_stops_training(model, capsys):
    """Seen on a loaded machine: the interrupt landed in a GC callback, was dropped, and training ran to its
    last round. Now the next boosting round raises it, and the dropped one's traceback is not printed."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    y = np.clip((X[:, 0] + rng.normal(size=300)).round(), 0, 3).astype(int)
    train = RankingData(X=X[:200], y=y[:200], qid=np.repeat(np.arange(20), 10))
    valid = RankingData(X=X[200:], y=y[200:], qid=np.repeat(np.arange(10), 10))
    rounds: list[int] = []

    def drop_an_interrupt_at_round_2(step: int, values: dict[str, float]) -> bool:
        rounds.append(step)
        if step == 2:
            _SignalsWhenCollected()  # collected at once: its KeyboardInterrupt is dropped
        return False

    ranker = get_ranker_class(model)({"n_trees": 200}, early_stopping={"patience": None}, num_threads=1)
    with interrupts.recorded(), pytest.raises(KeyboardInterrupt):
        ranker.fit(train, valid, on_iteration=drop_an_interrupt_at_round_2)
    assert rounds == [0, 1, 2]  # stopped at the next round, not after 200
    assert "Exception ignored" not in capsys.readouterr().err
    assert interrupts.received() is None  # the record ends with the command


def test_a_ctrl_c_a_library_turns_into_another_error_ends_the_run_killed(tmp_path, capsys):
    """Seen on a loaded machine: SIGINT inside a numba kernel came out as ``SystemError: ... returned a
    result with an exception set``, and the run ended FAILED with a traceback. Any error raised while a
    signal is pending is the interruption: the run ends KILLED, one line, exit 130."""
    aborted: list[str] = []
    tracker = make_tracker({"uri": f"sqlite:///{tmp_path}/mlflow.db", "experiment": "x"}, tmp_path)

    def like_numba() -> None:
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise SystemError(
                "CPUDispatcher(<function rank_order>) returned a result with an exception set"
            ) from None

    def main() -> int:
        with interrupted_run(tracker), tracker.start(run_name="r"):
            like_numba()
        return 0

    with pytest.raises(SystemExit) as info:
        run_cli(main, on_abort=aborted.append)
    (run,) = _runs(tmp_path)
    assert info.value.code == EXIT_INTERRUPTED == 130
    assert _own_lines(capsys.readouterr().err) == [f"interrupted: run {run.info.run_id} marked KILLED"]
    assert run.info.status == "KILLED" and aborted == ["KILLED"]
    assert run.data.tags["error"] == "interrupted (KeyboardInterrupt / SIGINT)"
    # the same error with no signal behind it is a failure, as before
    assert interrupts.carried_by(SystemError("a bug")) is None


def test_a_failing_command_tells_its_abort_hook_failed(capsys):
    aborted: list[str] = []

    def main() -> int:
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        run_cli(main, on_abort=aborted.append)
    assert aborted == ["FAILED"]


@pytest.mark.slow  # ~25 s: a real training process, a real SIGTERM
def test_sigterm_during_training_marks_the_run_killed_in_one_line_exit_143(tmp_path):
    code, err = _signal_when_paused(["+model=lambdamart", *LONG_FIT], tmp_path, signal.SIGTERM)
    (run,) = _runs(tmp_path)
    assert run.info.status == "KILLED"
    assert run.data.tags["error"] == "interrupted (SIGTERM)"
    assert _own_lines(err) == [f"terminated: run {run.info.run_id} marked KILLED"], err
    assert code == 143


@pytest.mark.slow  # ~30 s: a real Optuna sweep, a real SIGTERM in its first trial
def test_sigterm_in_an_optuna_sweep_ends_its_parent_run_killed(tmp_path):
    args = [
        "-m",
        "+model=lambdamart",
        "hparams_search=lambdamart_optuna",
        "hydra.sweeper.n_trials=3",
        *LONG_FIT,
    ]
    code, err = _signal_when_paused(args, tmp_path, signal.SIGTERM)
    runs = _runs(tmp_path)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.sweep.role") == "parent"]
    (trial,) = [r for r in runs if r is not parent]
    assert parent.info.status == "KILLED", err[-2000:]
    assert trial.info.status == "KILLED"
    assert code == 143, err[-2000:]


@pytest.mark.slow  # ~30 s: a real grid sweep, a real Ctrl-C in its first job
def test_ctrl_c_in_a_grid_sweep_ends_its_parent_run_killed(tmp_path):
    args = ["-m", "+model=lambdamart", "model.params.learning_rate=0.05,0.1", *LONG_FIT]
    code, err = _signal_when_paused(args, tmp_path, signal.SIGINT)
    runs = _runs(tmp_path)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.sweep.role") == "parent"]
    assert parent.info.status == "KILLED", err[-2000:]
    assert [r.info.status for r in runs if r is not parent] == ["KILLED"]
    assert code == 130


@pytest.mark.slow  # ~10 s: a real MLflow store created, Hydra's multirun in-process
def test_a_grid_sweep_whose_job_fails_ends_its_parent_run_failed(tmp_path, monkeypatch, capsys):
    """The jobs' values are refused (a user error in a job): the sweep ends with exit 2 and its parent
    run FAILED, not RUNNING."""
    args = ["-m", "+model=lambdamart", *TINY_DATA, *quick_model(5), "num_threads=1", "seed=-1,-2"]
    assert train_main_in_process(args, tmp_path, monkeypatch) == 2
    assert "seed" in capsys.readouterr().err
    runs = _runs(tmp_path)
    (parent,) = [r for r in runs if r.data.tags.get("ltr.sweep.role") == "parent"]
    assert parent.info.status == "FAILED"
    assert parent.data.tags["error"] == "the sweep ended FAILED"


@pytest.mark.slow  # ~20 s: a real two-job sweep
def test_credentials_in_urls_are_masked_in_every_file_and_line_of_a_sweep(tmp_path):
    """A sweep whose config carries ``user:password@`` URLs (a job environment variable, as ltr's Optuna
    sweeper passes its storage; a config value): Hydra's ``hydra.yaml``, ``config.yaml``,
    ``overrides.yaml``, ``multirun.yaml``, the launch lines (``hydra.verbose=ltr``), the jobs' logs,
    the sweep summary and the rerun commands show ``ann:***@``, never the password."""
    quiet = ["num_threads=1", "tracking=none", "hydra.verbose=ltr", "seed=1,2"]
    args = [
        *["-m", "+model=lambdamart", *TINY_DATA, *quick_model(3), *quiet],
        "+hydra.job.env_set.LTR_TEST_DSN='postgresql://ann:s3cr3t@db.example:5432/optuna'",
        "tracking.run_name='https://ann:s3cr3t@example.org/notes'",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.train", *args],
        cwd=PROJECT_ROOT, env=cli_env(tmp_path), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "#0 : " in proc.stdout + proc.stderr  # the launch lines were printed
    assert "s3cr3t" not in proc.stdout + proc.stderr
    files = [p for p in (tmp_path / "multirun").rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"hydra.yaml", "config.yaml", "overrides.yaml", "multirun.yaml", "train.log"} <= names
    leaking = [str(p) for p in files if b"s3cr3t" in p.read_bytes()]
    assert leaking == []
    hydra_yaml = next(p for p in files if p.name == "hydra.yaml").read_text()
    assert "postgresql://ann:***@db.example:5432/optuna" in hydra_yaml


class _Cluster:
    """A stand-in client: ``nthreads()`` answers with ``workers`` (or raises ``failure``)."""

    def __init__(self, *workers: str) -> None:
        self.workers = set(workers)
        self.failure: BaseException | None = None

    def nthreads(self, **_: object) -> dict[str, int]:
        if self.failure is not None:
            raise self.failure
        return dict.fromkeys(self.workers, 1)


def test_a_worker_lost_during_a_cluster_call_ends_it_at_once_in_one_error():
    import threading

    from ltr.core.errors import ClusterError, DataError
    from ltr.distributed.watch import watched

    cluster, never = _Cluster("tcp://a:1", "tcp://b:2"), threading.Event()

    def fit() -> None:
        cluster.workers.discard("tcp://b:2")  # the worker dies while the call waits for it (a hang before)
        never.wait(600)

    start = time.monotonic()
    with pytest.raises(
        ClusterError, match=r"^Dask worker tcp://b:2 was lost during lightgbm training .*run the"
    ):
        watched(cluster, fit, "lightgbm training")
    assert time.monotonic() - start < 10
    # the call fails because its peer died (LightGBM's socket error): the lost worker is named
    cluster = _Cluster("tcp://a:1", "tcp://b:2")

    def socket_error() -> None:
        cluster.workers.discard("tcp://b:2")
        raise RuntimeError("Socket recv error, Connection reset by peer (code: 104)")

    with pytest.raises(ClusterError, match="worker tcp://b:2 was lost during training"):
        watched(cluster, socket_error, "training")
    # Dask's own error of a lost worker, the scheduler silent, a call that runs too long
    killed = type("KilledWorker", (Exception,), {})

    def raise_killed() -> None:
        raise killed("attempted to run task 3 times")

    with pytest.raises(
        ClusterError, match=r"lost a worker or its connection during evaluating test \(KilledWorker\)"
    ):
        watched(_Cluster("tcp://a:1"), raise_killed, "evaluating test")
    silent = _Cluster("tcp://a:1")
    silent.failure = TimeoutError()
    with pytest.raises(ClusterError, match=r"did not answer within 30 s \(TimeoutError\)"):
        watched(silent, lambda: None, "reading train")
    with pytest.raises(ClusterError, match=r"reading train on the Dask cluster did not end within 1 s"):
        watched(_Cluster("tcp://a:1"), lambda: never.wait(600), "reading train", timeout=1)

    # a user's error on a worker is not a cluster failure: it comes back as it is
    def bad_line() -> None:
        raise DataError("train.txt:3: bad label")

    with pytest.raises(DataError, match="train.txt:3"):
        watched(_Cluster("tcp://a:1"), bad_line, "reading train")
    assert watched(_Cluster("tcp://a:1"), lambda: 7, "x") == 7


@pytest.mark.slow  # ~45 s: a real LocalCluster whose worker process is killed while LightGBM trains
def test_a_dask_worker_killed_during_training_fails_the_run_in_one_line(tmp_path):
    """Issue 25: a killed worker hung the run (> 240 s) or ended in a LightGBMError traceback. Now: one
    ``error:`` line naming the lost worker and what to do, exit 2, within seconds; the MLflow run FAILED."""
    import psutil

    args = [
        "+model=lambdamart", "backend=dask", "data.n_queries.train=400", "data.n_queries.valid=50",
        "data.n_queries.test=50", "model.params.n_trees=100000", "model.early_stopping.patience=null",
        "model.params.learning_rate=0.0001",
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr.train", *args],
        cwd=PROJECT_ROOT, env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen = ""
    while "Training" not in seen:
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"the run ended before training: {proc.stderr.read()[-3000:]}")
        seen += line
    client = store_client(tmp_path)
    time.sleep(5.0)  # "Training" is printed as the fit starts: LightGBM's workers connect and boost
    workers = [
        p for p in psutil.Process(proc.pid).children(recursive=True) if "spawn_main" in " ".join(p.cmdline())
    ]
    assert len(workers) == 2, [p.cmdline() for p in workers]
    err, took = _finish(proc, workers[-1].kill)
    assert proc.returncode == 2, err[-3000:]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err and "LightGBMError" not in err, err[-3000:]
    assert (
        errors[0].startswith("error: Dask worker tcp://127.0.0.1:")
        and "was lost during lightgbm training" in errors[0]
    )
    assert took < 60
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert run.info.status == "FAILED" and "was lost during lightgbm training" in run.data.tags["error"]


def test_an_optuna_sweep_whose_trial_fails_ends_its_parent_run_failed(tmp_path, monkeypatch, capsys):
    """A trial that fails (its job's config error) stops the search (max_failure_rate 0): the sweep's
    parent run ends FAILED with the reason, not RUNNING."""
    args = [
        *["-m", "+model=lambdamart", "hparams_search=lambdamart_optuna", "hydra.sweeper.n_trials=2"],
        *[*TINY_DATA, *quick_model(3), "num_threads=1", "hydra.sweeper.storage=null"],
        "hydra.sweeper.params={model.params.learning_rate: 'choice(-1.0)'}",
    ]
    assert train_main_in_process(args, tmp_path, monkeypatch) == 2
    assert "learning_rate" in capsys.readouterr().err
    (parent,) = [r for r in _runs(tmp_path) if r.data.tags.get("ltr.sweep.role") == "parent"]
    assert parent.info.status == "FAILED"
    assert parent.data.tags["error"].startswith("TrialFailuresError: 1 of 1 trials failed")


@pytest.mark.slow  # ~30 s: a real sweep on joblib worker processes, a real SIGTERM to the sweep
def test_sigterm_to_a_joblib_sweep_ends_its_parent_and_its_jobs_runs_killed(tmp_path):
    """joblib kills its worker processes with SIGKILL when the sweep stops, so the jobs cannot end their
    own runs: the sweep ends them (its children still RUNNING) with its parent."""
    args = ["-m", "+model=lambdamart", "launcher=joblib", "seed=1,2", *LONG_FIT]
    args = [a if not a.startswith("model.params.n_trees") else "model.params.n_trees=200000" for a in args]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltr.train", *args, "model.params.learning_rate=0.00001"],
        cwd=PROJECT_ROOT, env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 240
    while len(_training_jobs(tmp_path)) < 2:  # both jobs' runs are open and they train
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the jobs never started: " + proc.communicate()[1][-3000:])
        time.sleep(0.5)
    time.sleep(1.0)
    err, _ = _finish(proc, lambda: proc.send_signal(signal.SIGTERM))
    assert proc.returncode == 143, err[-3000:]
    runs = _runs(tmp_path)
    assert sorted(r.info.status for r in runs) == ["KILLED"] * 3
    jobs = [r for r in runs if r.data.tags.get("ltr.sweep.role") != "parent"]
    assert {r.data.tags["error"] for r in jobs} == {"the sweep ended KILLED while this job ran"}


def _training_jobs(root: Path) -> list[Path]:
    """The job folders of a sweep under ``root`` whose log says training started (the job's run is open)."""
    return [
        log for log in root.glob("multirun/*/*/*/train.log") if "Training" in log.read_text(errors="replace")
    ]

"""How runs end (issue 25): SIGTERM like Ctrl-C, and no parent run (grid sweep, Optuna sweep) left RUNNING.

The signal tests start real processes and signal them while they are paused in a known boosting round
(tests/paused_run.py: a file handshake, no timing guess).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

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

from ltr.cli.running import EXIT_TERMINATED, run_cli, terminate_as_interrupt
from ltr.core.errors import Terminated


def _runs(root: Path) -> list:
    client = store_client(root)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def _signal_when_paused(args: list[str], root: Path, signum: int, pause_at: int = 5) -> tuple[int, str]:
    """``python -m ltr.train ARGS`` paused in boosting round ``pause_at``, sent ``signum``: (exit code, stderr)."""
    handshake = root / "handshake"
    handshake.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, PAUSED_RUN, str(handshake), str(pause_at), "ltr.train", *args],
        cwd=PROJECT_ROOT, env=cli_env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not (handshake / "paused").exists():
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "training never reached its pause"
            time.sleep(0.1)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
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
        with terminate_as_interrupt():
            signal.raise_signal(signal.SIGTERM)
        return 0

    with pytest.raises(SystemExit) as info:
        run_cli(main, on_abort=aborted.append)
    assert info.value.code == EXIT_TERMINATED == 143
    assert capsys.readouterr().err == "terminated\n"
    assert aborted == ["KILLED"]
    assert signal.getsignal(signal.SIGTERM) == before
    assert issubclass(Terminated, KeyboardInterrupt)


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


def test_a_grid_sweep_whose_job_fails_ends_its_parent_run_failed(tmp_path, monkeypatch, capsys):
    """The second job's value is refused (a user error in a job): the sweep ends with exit 2 and its
    parent run FAILED, not RUNNING."""
    args = ["-m", "+model=lambdamart", *TINY_DATA, *quick_model(5), "num_threads=1", "seed=1,-1"]
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

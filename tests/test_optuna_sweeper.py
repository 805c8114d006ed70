"""ltr's Optuna sweeper (ltr/sweep/sweeper.py, ltr/sweep/search_space.py, hydra_plugins/ltr_optuna_sweeper).

The truth is Optuna itself: a plain ``optuna.create_study(sampler=TPESampler(seed=…))`` asked with the
same distributions in the same order and told the same values must propose exactly the trials the
sweeper launched. The sweeps run a toy Hydra app (a formula, no training): real Hydra, real plugin
discovery, real launchers. Where a test checks the sweeper's logic the app runs in this process
(``sweep_in_process``, a fraction of a second per sweep); what needs a real process (its exit status,
SIGKILL, Ctrl-C, a job ending the process, two processes on one study, joblib's workers) runs one.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna
import pytest
import yaml
from helpers import PROJECT_ROOT, default_sigint
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from ltr.core.errors import ConfigError
from ltr.sweep.search_space import parse_search_space

optuna.logging.set_verbosity(optuna.logging.WARNING)

BONUS = {"a": 0.0, "b": 0.5, "c": 0.2}


def objective(lr: float, leaves: int, m: int, c: str) -> float:
    """The toy app's value (the same source runs in the app, see APP)."""
    return -((math.log(lr) + 3) ** 2) - ((leaves - 60) / 50) ** 2 - ((m - 30) / 40) ** 2 + BONUS.get(c, 0.1)


APP = textwrap.dedent(
    """
    import json, math, multiprocessing, os, sys, time
    from pathlib import Path

    import hydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    BONUS = {"a": 0.0, "b": 0.5, "c": 0.2}

    @hydra.main(version_base="1.3", config_path=".", config_name="toy")
    def main(cfg):
        params = OmegaConf.to_container(cfg)
        out = Path(HydraConfig.get().runtime.output_dir)
        (out / "params.json").write_text(json.dumps({**params, "in_worker": multiprocessing.parent_process() is not None}))
        if os.environ.get("TOY_HANG_AT_JOB") == str(HydraConfig.get().job.num):
            (out / "hanging").write_text("")
            time.sleep(600)  # the test SIGKILLs the sweep here
        time.sleep(float(os.environ.get("TOY_SLEEP", "0")))
        if cfg.raise_when == cfg.c:
            raise ValueError(f"toy failure for c={cfg.c}")
        if cfg.exit_when == cfg.c:
            sys.exit(3)
        if cfg.nan_when == cfg.c:
            return float("nan")
        lr, leaves, m, c = cfg.lr, cfg.leaves, cfg.m, cfg.c
        return -((math.log(lr) + 3) ** 2) - ((leaves - 60) / 50) ** 2 - ((m - 30) / 40) ** 2 + BONUS.get(c, 0.1)

    main()
    """
)

PARAMS = {
    "lr": "tag(log, interval(0.01, 0.3))",
    "leaves": "int(tag(log, interval(8, 255)))",
    "m": "int(interval(5, 100))",
    "c": "choice(a, b, c)",
}


def _truth_space() -> dict[str, optuna.distributions.BaseDistribution]:
    """PARAMS as Optuna distributions, written by hand (not by the code under test)."""
    return {
        "lr": FloatDistribution(0.01, 0.3, log=True),
        "leaves": IntDistribution(8, 255, log=True),
        "m": IntDistribution(5, 100),
        "c": CategoricalDistribution(["a", "b", "c"]),
    }


def _write_app(folder: Path, *, params: dict[str, str] | None = None, **sweeper: object) -> Path:
    settings = {
        "direction": "maximize",
        "n_trials": 8,
        "sampler": {
            "_target_": "optuna.samplers.TPESampler",
            "seed": 7,
            "n_startup_trials": 3,
            "multivariate": False,
        },
        "params": PARAMS if params is None else params,
        **sweeper,
    }
    config = {
        "defaults": [{"override hydra/sweeper": "ltr_optuna"}, "_self_"],
        "lr": 0.1,
        "leaves": 31,
        "m": 10,
        "c": "a",
        "raise_when": None,
        "nan_when": None,
        "exit_when": None,
        "hydra": {
            "sweep": {"dir": str(folder / "sweep"), "subdir": "${hydra.job.num}"},
            "sweeper": settings,
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "toy.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "app.py").write_text(APP)
    return folder


def _app_env(**extra: str) -> dict[str, str]:
    """The toy app's environment: this checkout's ``ltr`` and ``hydra_plugins`` first, plus ``extra``."""
    path = os.pathsep.join([str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, **extra}


def _run_app(folder: Path, *overrides: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """``python app.py -m OVERRIDES`` in ``folder``, with this checkout's ``ltr`` and ``hydra_plugins`` first."""
    return subprocess.run(
        [sys.executable, "app.py", "-m", *overrides],
        cwd=folder,
        env=_app_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def sweep_in_process(monkeypatch, capsys):
    """``python app.py -m OVERRIDES`` in ``folder``, run in this process (``runpy``: the same app, the same
    Hydra and plugin discovery, the basic launcher's jobs in the sweeping process, as in a real one), as
    a :class:`subprocess.CompletedProcess` (its exit code, stdout and stderr). For the sweeper's logic; what
    only a real process shows (its exit status and stderr as the shell sees them, a signal, a job ending
    the process, two processes on one study, joblib's workers) runs :func:`_run_app`."""
    import runpy

    from helpers import restored_logging

    def run(folder: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
        argv = [str(folder / "app.py"), "-m", *overrides]
        with monkeypatch.context() as patch:
            patch.chdir(folder)
            patch.setattr(sys, "argv", argv)
            capsys.readouterr()
            code = 0
            with restored_logging():
                try:
                    runpy.run_path(argv[0], run_name="__main__")
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            out, err = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)

    return run


def _jobs(folder: Path, sweep: str = "sweep") -> list[dict]:
    """Each job's config as the app saw it, in job order."""
    paths = sorted((folder / sweep).glob("*/params.json"), key=lambda p: int(p.parent.name))
    return [json.loads(p.read_text()) for p in paths]


def _results(folder: Path) -> dict:
    return yaml.safe_load((folder / "sweep" / "optimization_results.yaml").read_text())


def _tpe(seed: int) -> optuna.samplers.TPESampler:
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=3, multivariate=False)


def _ask_seeded(study: optuna.Study, space: dict, position: int) -> optuna.Trial:
    """Ask as ltr's sweeper does with a seeded sampler: a fresh sampler seeded 7 + the trial's position."""
    study.sampler = _tpe(7 + position)
    return study.ask(space)


def _plain_optuna(space: dict, n_trials: int, *, n_jobs: int = 1, value=objective) -> optuna.Study:
    """The same search with Optuna's own ask/tell, ``n_jobs`` asked before the batch is told."""
    study = optuna.create_study(direction="maximize", sampler=_tpe(7))
    for start in range(0, n_trials, n_jobs):
        batch = [_ask_seeded(study, space, start + i) for i in range(min(n_jobs, n_trials - start))]
        for trial in batch:
            study.tell(trial, value(**trial.params))
    return study


def _proposed(jobs: list[dict], keys=("lr", "leaves", "m", "c")) -> list[tuple]:
    return [tuple(job[k] for k in keys) for job in jobs]


def test_the_sweeper_proposes_exactly_what_optuna_proposes_and_records_the_best(tmp_path, sweep_in_process):
    app = _write_app(tmp_path)
    proc = sweep_in_process(app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    truth = _plain_optuna(_truth_space(), 8)
    jobs = _jobs(app)
    assert _proposed(jobs) == [tuple(t.params[k] for k in ("lr", "leaves", "m", "c")) for t in truth.trials]
    results = _results(app)
    assert results["best_value"] == truth.best_value
    assert results["best_params"] == truth.best_params
    assert results["best_trial"] == truth.best_trial.number
    assert results["n_trials"]["COMPLETE"] == 8 and results["n_trials"]["FAIL"] == 0
    best_job = jobs[truth.best_trial.number]
    assert f"lr={best_job['lr']}" in results["best_overrides"]
    assert (app / "sweep" / "multirun.yaml").exists()
    assert not any(j["in_worker"] for j in jobs)  # the basic launcher runs jobs in the sweeping process
    # no pruner, nothing pruned: no "0 trials pruned; ≈ 0 s saved" line; the summary file says it plainly
    assert "Pruning" not in proc.stdout + proc.stderr and "trials pruned" not in proc.stdout + proc.stderr
    assert results["pruning"]["summary"] == "no trial pruned"
    assert "Best trial" in proc.stdout + proc.stderr
    # the launch lines leave out the overrides that tell a job its trial
    assert "#0 : " in proc.stdout and "hydra.job.env_set" not in proc.stdout + proc.stderr


def test_command_line_sweeps_become_choices_and_fixed_values_replace_searched_ones(
    tmp_path, sweep_in_process
):
    """``c=x,y`` replaces the ``choice(a, b, c)`` of params in place; ``m=42`` takes m out of the search."""
    app = _write_app(tmp_path)
    proc = sweep_in_process(app, "c=x,y", "m=42")
    assert proc.returncode == 0, proc.stderr[-3000:]
    space = _truth_space()
    del space["m"]
    space["c"] = CategoricalDistribution(["x", "y"])
    truth = _plain_optuna(space, 8, value=lambda lr, leaves, c: objective(lr, leaves, 42, c))
    jobs = _jobs(app)
    assert _proposed(jobs, ("lr", "leaves", "c")) == [
        (t.params["lr"], t.params["leaves"], t.params["c"]) for t in truth.trials
    ]
    assert {job["m"] for job in jobs} == {42}


@pytest.mark.slow  # ~5 s: a real sweep through failures; the fast suite keeps the first-failure stop
def test_failed_trials_are_told_fail_and_the_sweep_goes_on_within_max_failure_rate(
    tmp_path, sweep_in_process
):
    app = _write_app(tmp_path, max_failure_rate=1.0)
    proc = sweep_in_process(app, "raise_when=b", "nan_when=c")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(app)
    assert len(jobs) == 8
    failed = [j for j in jobs if j["c"] in ("b", "c")]
    assert failed and len(failed) < 8  # the seed gives both kinds of trial
    results = _results(app)
    assert results["n_trials"]["FAIL"] == len(failed)
    assert results["n_trials"]["COMPLETE"] == 8 - len(failed)
    completed = [objective(j["lr"], j["leaves"], j["m"], j["c"]) for j in jobs if j["c"] == "a"]
    assert results["best_value"] == max(completed)
    assert "raised ValueError: toy failure for c=b" in proc.stdout and "returned nan" in proc.stdout


def test_the_first_failure_stops_the_sweep_by_default(tmp_path):
    app = _write_app(tmp_path)
    proc = _run_app(app, "raise_when=b")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    jobs = _jobs(app)
    first_b = next(i for i, j in enumerate(jobs) if j["c"] == "b")
    assert len(jobs) == first_b + 1  # batches of n_jobs=1: nothing runs after the failed trial
    assert "max_failure_rate=0.0" in proc.stderr and "toy failure for c=b" in proc.stderr
    results = _results(app)  # written before the sweep stops
    assert results["n_trials"]["FAIL"] == 1 and results["n_trials"]["COMPLETE"] == first_b


def test_a_bad_search_space_fails_before_any_trial_naming_the_parameter(tmp_path, sweep_in_process):
    app = _write_app(tmp_path, params={**PARAMS, "lr": "tag(log, interval(0, 0.3))"})
    proc = sweep_in_process(app)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "hydra.sweeper.params.lr" in proc.stderr
    assert not list((app / "sweep").glob("*/params.json"))


def test_a_searched_key_the_config_lacks_fails_when_the_first_batch_is_composed(tmp_path, sweep_in_process):
    app = _write_app(tmp_path, params={**PARAMS, "no_such_key": "interval(0, 1)"})
    proc = sweep_in_process(app)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "a trial's overrides do not compose" in proc.stderr and "no_such_key" in proc.stderr
    assert not list((app / "sweep").glob("*/params.json"))


def test_a_sampler_that_cannot_be_built_is_named(tmp_path, sweep_in_process):
    app = _write_app(tmp_path)
    proc = sweep_in_process(app, "hydra.sweeper.sampler._target_=optuna.samplers.RandomSampler")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "hydra.sweeper.sampler: cannot build optuna.samplers.RandomSampler" in proc.stderr
    assert [line for line in proc.stderr.splitlines() if "n_startup_trials" in line][0].startswith("error: ")
    assert "n_startup_trials" in proc.stderr
    assert not (app / "sweep").exists() or not list((app / "sweep").glob("*/params.json"))


@pytest.mark.slow  # two sweeps on one stored study: CI only
def test_a_study_in_storage_is_continued_by_the_next_run_up_to_n_trials(tmp_path, sweep_in_process):
    """n_trials is the size of the study: a rerun of a finished search adds nothing, a larger n_trials
    adds the difference — and the four trials are those of one uninterrupted 4-trial search."""
    db = tmp_path / "optuna.db"
    app = _write_app(tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", n_trials=2)
    for run, n_trials in enumerate((2, 2, 4)):
        proc = sweep_in_process(
            app, f"hydra.sweep.dir={tmp_path}/sweep{run}", f"hydra.sweeper.n_trials={n_trials}"
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    study = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 4
    assert not list((tmp_path / "sweep1").glob("*/params.json"))  # the rerun of the finished search ran none
    last = yaml.safe_load((tmp_path / "sweep2" / "optimization_results.yaml").read_text())
    assert last["n_trials"]["COMPLETE"] == 4
    assert last["best_value"] == study.best_value
    truth = _plain_optuna(_truth_space(), 4)
    assert [t.params for t in study.trials] == [t.params for t in truth.trials]


def test_another_search_on_a_stored_study_is_refused_naming_what_differs(tmp_path, sweep_in_process):
    db = tmp_path / "optuna.db"
    app = _write_app(tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", n_trials=1)
    assert sweep_in_process(app).returncode == 0
    proc = sweep_in_process(app, "c=a,b", "hydra.sweeper.n_trials=2")
    assert proc.returncode == 2
    assert "hydra.sweeper.study_name='toy'" in proc.stderr and "differs in: c" in proc.stderr


def test_a_job_that_ends_the_process_leaves_its_stored_trial_failed_not_running(tmp_path):
    db = tmp_path / "optuna.db"
    app = _write_app(tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", max_failure_rate=1.0)
    proc = _run_app(app, "exit_when=b")
    assert proc.returncode == 3
    study = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    states = [t.state.name for t in study.trials]
    assert states[-1] == "FAIL" and set(states[:-1]) <= {"COMPLETE"}
    assert _jobs(app)[-1]["c"] == "b"


@pytest.mark.slow  # ~4 s: a real sweep whose jobs run in joblib's worker processes; process plumbing, CI
def test_batches_of_n_jobs_go_through_the_joblib_launcher_together(tmp_path):
    """n_jobs=2: trials are asked two at a time before either is told — Optuna's batch proposals."""
    app = _write_app(tmp_path, n_trials=6, n_jobs=2)
    proc = _run_app(app, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = _jobs(app)
    keys = ("lr", "leaves", "m", "c")
    batched = _plain_optuna(_truth_space(), 6, n_jobs=2)
    assert _proposed(jobs) == [tuple(t.params[k] for k in keys) for t in batched.trials]
    sequential = _plain_optuna(_truth_space(), 6)
    assert _proposed(jobs) != [tuple(t.params[k] for k in keys) for t in sequential.trials]
    assert all(j["in_worker"] for j in jobs)  # run by joblib's worker processes, not the sweeping one


def _finished(db: Path, name: str = "toy") -> list[tuple]:
    """(params, value, state) of the study's trials that count, in trial order (failed ones left out)."""
    study = optuna.load_study(study_name=name, storage=f"sqlite:///{db}")
    done = [t for t in study.trials if t.state.name in ("COMPLETE", "PRUNED")]
    return [(tuple(sorted(t.params.items())), t.value, t.state.name) for t in done]


def _interrupt_at_job(app: Path, tmp_path: Path, job: int, signum: int) -> None:
    """Run the sweep into ``tmp_path/first``, send ``signum`` while job ``job`` runs, wait for the end."""
    proc = subprocess.Popen(
        [sys.executable, "app.py", "-m", f"hydra.sweep.dir={tmp_path}/first"],
        cwd=app,
        env=_app_env(TOY_HANG_AT_JOB=str(job), PYTHONFAULTHANDLER="1"),  # SIGABRT dumps every thread's stack
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        _wait_for(f"first/{job}/hanging", tmp_path, proc)
        proc.send_signal(signum)
        try:
            proc.communicate(timeout=180)  # reads the pipes while waiting: a full pipe cannot stall the sweep
        except subprocess.TimeoutExpired:  # say where it hangs
            proc.send_signal(signal.SIGABRT)
            stacks = proc.communicate()[1][-6000:]
            raise AssertionError(f"the sweep did not end after signal {signum}:\n{stacks}") from None
    finally:
        proc.kill()


def _wait_for(path_glob, root: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not list(root.glob(path_glob)):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, f"{path_glob} never appeared under {root}"
        time.sleep(0.1)


@pytest.mark.slow  # ~9 s: a real sweep SIGKILLed mid-trial, then 3 more sweeps; its value is in CI
def test_a_sweep_killed_mid_trial_resumes_to_the_trials_of_an_uninterrupted_run(tmp_path, sweep_in_process):
    """SIGKILL while trial 3 runs; the same command again: trial 3 is FAIL (interrupted) and retried once
    with its parameters, and the finished trials are exactly those of a sweep that was never killed."""
    db = tmp_path / "killed.db"
    app = _write_app(tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", n_trials=6)
    _interrupt_at_job(app, tmp_path, 3, signal.SIGKILL)
    stored = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    assert [t.state.name for t in stored.trials] == ["COMPLETE"] * 3 + ["RUNNING"]  # what SIGKILL leaves
    again = sweep_in_process(app, f"hydra.sweep.dir={tmp_path}/second")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "interrupted trials [3] enqueued again" in again.stdout + again.stderr
    study = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    states = [t.state.name for t in study.trials]
    assert states == ["COMPLETE"] * 3 + ["FAIL"] + ["COMPLETE"] * 3
    killed, retry = study.trials[3], study.trials[4]
    assert killed.user_attrs["ltr.failure"] == "interrupted"
    assert retry.user_attrs["ltr.retry_of"] == 3 and retry.params == killed.params
    # a third run of the same command has nothing left to do and retries nothing twice
    third = sweep_in_process(app, f"hydra.sweep.dir={tmp_path}/third")
    assert (
        third.returncode == 0
        and len(optuna.load_study(study_name="toy", storage=f"sqlite:///{db}").trials) == 7
    )
    # the truth: the same search run through in one go
    clean = tmp_path / "clean.db"
    whole = sweep_in_process(
        _write_app(tmp_path / "clean", storage=f"sqlite:///{clean}", study_name="toy", n_trials=6),
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    assert _finished(db) == _finished(clean)
    assert len(_finished(clean)) == 6


@pytest.mark.slow  # ~6 s: a real sweep interrupted by SIGINT, then a rerun; its value is in CI
def test_ctrl_c_fails_the_running_trial_as_interrupted_and_the_rerun_retries_it(tmp_path, sweep_in_process):
    db = tmp_path / "optuna.db"
    app = _write_app(tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", n_trials=4)
    _interrupt_at_job(app, tmp_path, 1, signal.SIGINT)
    study = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "FAIL"]
    assert study.trials[1].user_attrs["ltr.failure"] == "interrupted"
    assert sweep_in_process(app, f"hydra.sweep.dir={tmp_path}/second").returncode == 0
    study = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "FAIL"] + ["COMPLETE"] * 3
    assert study.trials[2].params == study.trials[1].params


def _two_workers(app: Path, tmp_path: Path, prefix: str, *, sleep: str) -> None:
    """The same sweep command in two processes at once (sweep folders ``prefix0``, ``prefix1``); both succeed."""
    workers = [
        subprocess.Popen(
            [sys.executable, "app.py", "-m", f"hydra.sweep.dir={tmp_path}/{prefix}{i}"],
            cwd=app,
            env=_app_env(TOY_SLEEP=sleep),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err[-3000:]


@pytest.mark.slow  # ~7 s: two real sweep processes racing on one study (they must overlap); CI
def test_two_processes_on_one_sqlite_study_finish_n_distinct_trials(tmp_path):
    """The same command twice at once: exactly n_trials trials complete, each once, run by both workers."""
    db = tmp_path / "optuna.db"
    app = _write_app(tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", n_trials=10)
    _two_workers(app, tmp_path, "worker", sleep="0.5")
    study = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}")
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == 10
    assert len({tuple(sorted(t.params.items())) for t in complete}) == 10  # no trial run twice
    assert len({t.user_attrs["ltr.owner"] for t in complete}) == 2  # both workers took trials
    assert all(t.user_attrs.get("ltr.failure") == "surplus" for t in study.trials if t.state.name == "FAIL")
    jobs = _jobs(tmp_path, "worker0") + _jobs(tmp_path, "worker1")
    assert len(jobs) == 10


@pytest.mark.slow  # ~9 s: two real sweep processes on one study against a serial sweep; CI
def test_enqueued_trials_give_the_same_results_with_two_workers_as_serially(tmp_path, sweep_in_process):
    fixed = [{"lr": 0.01 * (i + 1), "leaves": 10 + i, "m": 20 + i, "c": "abc"[i % 3]} for i in range(6)]
    serial_db, shared_db = tmp_path / "serial.db", tmp_path / "shared.db"
    serial = _write_app(
        tmp_path / "serial",
        storage=f"sqlite:///{serial_db}",
        study_name="toy",
        n_trials=6,
        enqueue_trials=fixed,
    )
    assert sweep_in_process(serial).returncode == 0
    shared = _write_app(
        tmp_path / "shared",
        storage=f"sqlite:///{shared_db}",
        study_name="toy",
        n_trials=6,
        enqueue_trials=fixed,
    )
    _two_workers(shared, tmp_path, "w", sleep="0.3")
    truth = {tuple(sorted(p.items())): objective(**p) for p in fixed}
    assert dict((params, value) for params, value, _ in _finished(serial_db)) == truth
    assert dict((params, value) for params, value, _ in _finished(shared_db)) == truth
    assert len(_finished(shared_db)) == len(fixed)  # each enqueued parameter set completed once


@pytest.mark.parametrize(
    ("copy_of_retry", "copy_last"),
    [
        pytest.param(False, False, id="enqueued", marks=pytest.mark.slow),  # racing processes: CI only
        pytest.param(True, False, id="retry", marks=pytest.mark.slow),
        pytest.param(False, True, id="last", marks=pytest.mark.slow),
    ],
)
def test_a_parameter_set_enqueued_twice_by_racing_workers_runs_once(
    tmp_path, copy_of_retry, copy_last, sweep_in_process
):
    """Optuna's enqueue_trial(skip_if_exists=True) checks, then adds: two workers starting at once (or
    recovering the same interrupted trial) can enqueue one parameter set twice. The storage is built
    in that state; the copy is dropped (when asked, or at the end when the study filled before it),
    every parameter set completes once, n_trials are filled."""
    fixed = [{"lr": 0.01 * (i + 1), "leaves": 10 + i, "m": 20 + i, "c": "abc"[i % 3]} for i in range(5)]
    db = tmp_path / "optuna.db"
    study = optuna.create_study(study_name="toy", storage=f"sqlite:///{db}", direction="maximize")
    retry = {}
    if copy_of_retry:  # an interrupted trial, whose retry both workers enqueued (ltr.sweep.study.recover)
        interrupted = optuna.trial.create_trial(
            state=optuna.trial.TrialState.FAIL,
            params=fixed[0],
            distributions=parse_search_space(PARAMS, []).distributions,
            user_attrs={"ltr.failure": "interrupted"},
        )
        study.add_trial(interrupted)
        retry = {"ltr.retry_of": 0}
    n_trials = len(fixed) if copy_last else len(fixed) + 1
    for params in [*fixed, fixed[0]] if copy_last else [fixed[0], fixed[1], fixed[0], *fixed[2:]]:
        study.enqueue_trial(params, user_attrs=retry if params == fixed[0] else {})
    app = _write_app(
        tmp_path / "app", storage=f"sqlite:///{db}", study_name="toy", n_trials=n_trials, enqueue_trials=fixed
    )
    proc = sweep_in_process(app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = _finished(db)
    assert len(done) == n_trials  # no more
    assert [(params, value) for params, value, _ in done[:5]] == [
        (tuple(sorted(p.items())), objective(**p)) for p in fixed
    ]
    trials = optuna.load_study(study_name="toy", storage=f"sqlite:///{db}").trials
    dropped = [t for t in trials if t.user_attrs.get("ltr.failure") == "duplicate"]
    assert [(t.state.name, t.system_attrs["fixed_params"]) for t in dropped] == [("FAIL", fixed[0])]
    assert not [t for t in trials if t.state.name == "WAITING"]


def test_glob_searches_the_options_of_a_config_group(tmp_path, sweep_in_process):
    app = _write_app(tmp_path, params={}, n_trials=4)
    for option, c in (("one", "b"), ("two", "c")):
        (app / "opt").mkdir(exist_ok=True)
        (app / "opt" / f"{option}.yaml").write_text(f"# @package _global_\nc: {c}\n")
    proc = sweep_in_process(app, "+opt=glob(*)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    space = {"+opt": CategoricalDistribution(["one", "two"])}
    c_of = {"one": "b", "two": "c"}
    truth = _plain_optuna(space, 4, value=lambda **p: objective(0.1, 31, 10, c_of[p["+opt"]]))
    assert [job["c"] for job in _jobs(app)] == [c_of[t.params["+opt"]] for t in truth.trials]
    assert _results(app)["best_params"] == {"+opt": "one"}  # c=b has the larger bonus


# ---- the search-space grammar, in process ----


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("interval(0.5, 1.0)", FloatDistribution(0.5, 1.0)),
        ("interval(5, 100)", FloatDistribution(5.0, 100.0)),  # Hydra's interval is float unless cast
        ("int(interval(5, 100))", IntDistribution(5, 100)),
        ("tag(log, interval(0.001, 10.0))", FloatDistribution(0.001, 10.0, log=True)),
        ("int(tag(log, interval(8, 255)))", IntDistribution(8, 255, log=True)),
        ("range(1, 5)", IntDistribution(1, 4)),  # Hydra's range excludes stop
        ("range(10, 0, -3)", IntDistribution(1, 10, step=3)),
        ("range(0.5, 2.0, 0.5)", FloatDistribution(0.5, 1.5, step=0.5)),
        ("choice(gbdt, dart)", CategoricalDistribution(["gbdt", "dart"])),
        ("7,15,31", CategoricalDistribution([7, 15, 31])),
        ("shuffle(range(3))", CategoricalDistribution([0, 1, 2])),  # unshuffled: seeded runs repeat
        ("shuffle(b, a, c)", CategoricalDistribution(["b", "a", "c"])),
    ],
)
def test_each_override_form_becomes_the_optuna_distribution(value, expected):
    assert parse_search_space({"x": value}, []).distributions == {"x": expected}


def test_fixed_overrides_are_kept_as_written_after_the_suggested_values():
    space = parse_search_space({"x": "interval(0, 1)", "y": "3"}, ["+model=lambdamart", "~z", "x=0.5"])
    assert space.distributions == {}
    assert space.trial_overrides({}) == ["y=3", "+model=lambdamart", "~z", "x=0.5"]


def test_a_command_line_sweep_replaces_the_params_entry_in_its_place():
    space = parse_search_space(PARAMS, ["lr=tag(log, interval(0.02, 0.1))"])
    assert list(space.distributions) == ["lr", "leaves", "m", "c"]  # suggestion order kept
    assert space.distributions["lr"] == FloatDistribution(0.02, 0.1, log=True)


@pytest.mark.parametrize(
    ("params", "arguments", "message"),
    [
        ({"lr": "intervl(0.1, 1)"}, [], r"hydra.sweeper.params.lr: cannot parse"),
        ({"lr": "tag(log, interval(0, 1))"}, [], r"hydra.sweeper.params.lr: .* not a valid search space"),
        ({"lr": "tag(lg, interval(0.1, 1))"}, [], r"hydra.sweeper.params.lr: unsupported tag\(s\) \['lg'\]"),
        ({"n": "tag(log, choice(1, 2))"}, [], r"hydra.sweeper.params.n: unsupported tag"),
        ({"n": "int(interval(9, 2))"}, [], r"hydra.sweeper.params.n: .* not a valid search space"),
        ({}, ["n=range(5, 5)"], r"command-line override 'n=range\(5, 5\)': range\(5, 5, 1\) is empty"),
    ],
)
def test_a_bad_search_space_is_a_config_error_naming_where_it_is(params, arguments, message):
    with pytest.raises(ConfigError, match=message):
        parse_search_space(params, arguments)


def test_hydra_finds_the_plugin_without_importing_optuna_and_beside_other_plugins():
    """hydra_plugins is a namespace package (an __init__.py would hide the joblib launcher), and
    Hydra's start-up scan of every app stays light."""
    assert not (PROJECT_ROOT / "hydra_plugins" / "__init__.py").exists()
    code = (
        "import sys\n"
        "from hydra.core.plugins import Plugins\n"
        "from hydra.plugins.launcher import Launcher\n"
        "from hydra.plugins.sweeper import Sweeper\n"
        "plugins = Plugins.instance()\n"
        "print([c.__module__ + '.' + c.__name__ for c in plugins.discover(Sweeper)])\n"
        "print([c.__name__ for c in plugins.discover(Launcher)])\n"
        "print('optuna' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd="/", env=env, capture_output=True, text=True, timeout=120
    )
    sweepers, launchers, optuna_imported = proc.stdout.splitlines()
    assert "hydra_plugins.ltr_optuna_sweeper.LtrOptunaSweeper" in sweepers
    assert "JoblibLauncher" in launchers
    assert optuna_imported == "False"

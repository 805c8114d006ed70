"""The team set-up for real: PostgreSQL as the shared Optuna storage and as the backend store of a real
``mlflow server``, two ``python -m ltr.train -m`` workers on one study (docs/experiments.md).

The same server takes several processes that create one experiment and log one new dataset at the
same moment (MLflow's get-or-create inserts race there; SQLite serialises writers and never shows it).

The PostgreSQL server (Debian's binaries, ``$LTR_PG_BIN`` or /usr/lib/postgresql/15/bin) is started by
the test on 127.0.0.1 in a temporary data directory and stopped afterwards; without the binaries the
test is skipped. The truth for the two workers is a serial run of the same fixed list of trials.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from helpers import PROJECT_ROOT, TINY_DATA, cli_env, free_port, kill_server, start_mlflow_server
from mlflow import MlflowClient

from ltr.tracking.writer import SplitDataset, Tracker

PG_BIN = Path(os.environ.get("LTR_PG_BIN", "/usr/lib/postgresql/15/bin"))
STUDY = "team"
FIXED = [
    {
        "model.params.learning_rate": 0.05 + 0.03 * i,
        "model.params.num_leaves": 8 + 4 * i,
        "model.params.min_data_in_leaf": 5 + i,
        "model.params.feature_fraction": 0.6 + 0.05 * i,
        "model.params.lambda_l2": 0.01 * (i + 1),
    }
    for i in range(6)
]


@pytest.fixture
def postgres() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 with databases ``optuna`` and ``mlflow``; yields its base URL."""
    if not (PG_BIN / "initdb").is_file():
        pytest.skip(f"PostgreSQL server binaries not found in {PG_BIN} (set LTR_PG_BIN)")
    base = Path(tempfile.mkdtemp(prefix="ltr-pg-"))
    as_user: list[str] = []
    user = pwd.getpwuid(os.geteuid()).pw_name
    if os.geteuid() == 0:  # initdb refuses root: run the server as the 'postgres' account
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base)
            pytest.skip("running as root and there is no 'postgres' user to run initdb as")
        os.chown(base, account.pw_uid, account.pw_gid)
        as_user, user = ["runuser", "-u", "postgres", "--"], "postgres"
    data, port = base / "data", free_port()

    def run(*args: str | Path) -> None:
        subprocess.run([*as_user, *map(str, args)], check=True, capture_output=True, timeout=120)

    run(PG_BIN / "initdb", "-D", data, "-U", user, "--auth=trust", "-E", "UTF8")
    run(
        PG_BIN / "pg_ctl", "-D", data, "-l", base / "server.log", "-w", "start",
        "-o", f"-p {port} -k {base} -c listen_addresses=127.0.0.1",
    )  # fmt: skip
    try:
        for database in ("optuna", "mlflow"):
            run(PG_BIN / "createdb", "-h", "127.0.0.1", "-p", str(port), "-U", user, database)
        yield f"postgresql+psycopg2://{user}@127.0.0.1:{port}"  # psycopg2-binary (SQLAlchemy 2.1 defaults to psycopg 3)
    finally:
        subprocess.run(
            [*as_user, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], check=False
        )
        shutil.rmtree(base, ignore_errors=True)


def _enqueue(storage: str) -> None:
    """The fixed list of trials, enqueued as a user would with Optuna before starting the workers."""
    study = optuna.create_study(study_name=STUDY, storage=storage, direction="maximize")
    for params in FIXED:
        study.enqueue_trial(params)


def _sweep_command(storage: str, tracking: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "ltr.train", "-m", "+model=lambdamart", "hparams_search=lambdamart_optuna",
        *TINY_DATA, "model.params.n_trees=20", "num_threads=1", f"hydra.sweeper.storage={storage}",
        f"hydra.sweeper.study_name={STUDY}", f"hydra.sweeper.n_trials={len(FIXED)}", "hydra.sweeper.pruner=null",
        *tracking,
    ]  # fmt: skip


def _values(storage: str) -> dict[tuple, float]:
    study = optuna.load_study(study_name=STUDY, storage=storage)
    return {tuple(sorted(t.params.items())): t.value for t in study.trials if t.state.name == "COMPLETE"}


@pytest.mark.slow
def test_two_workers_share_a_postgresql_study_and_mlflow_server_with_serial_results(postgres, tmp_path):
    server, url = start_mlflow_server(tmp_path, timeout=300, backend_store=f"{postgres}/mlflow")
    try:
        storage = f"{postgres}/optuna"
        _enqueue(storage)
        command = _sweep_command(storage, [f"tracking.uri={url}", "tracking.experiment=team"])
        workers = [
            subprocess.Popen(
                [*command, f"hydra.sweep.dir={tmp_path}/worker{i}"],
                cwd=PROJECT_ROOT,
                env=cli_env(tmp_path / f"root{i}"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        for worker in workers:
            out, err = worker.communicate(timeout=1200)
            assert worker.returncode == 0, out[-2000:] + err[-3000:]
        # the truth: the same fixed trials, one process, SQLite, no tracking
        serial = f"sqlite:///{tmp_path}/serial.db"
        _enqueue(serial)
        alone = subprocess.run(
            [*_sweep_command(serial, ["tracking=none"]), f"hydra.sweep.dir={tmp_path}/serial"],
            cwd=PROJECT_ROOT,
            env=cli_env(tmp_path / "serial"),
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert alone.returncode == 0, alone.stderr[-3000:]
        shared = _values(storage)
        assert len(shared) == len(FIXED) and shared == _values(serial)
        study = optuna.load_study(study_name=STUDY, storage=storage)
        owners = {t.user_attrs["ltr.owner"] for t in study.trials if t.state.name == "COMPLETE"}
        assert len(owners) == 2  # both workers ran trials
        # every trial is a run on the server (PostgreSQL behind it), with the value Optuna was told
        client = MlflowClient(tracking_uri=url)
        experiment = client.get_experiment_by_name("team")
        runs = client.search_runs([experiment.experiment_id], "tags.`ltr.trial.state` = 'COMPLETE'")
        assert len(runs) == len(FIXED)
        (parent,) = {r.data.tags["mlflow.parentRunId"] for r in runs}  # both workers: one parent run
        assert client.get_run(parent).data.tags["ltr.sweep.role"] == "parent"
        logged = sorted(r.data.metrics["valid/ndcg_at_10"] for r in runs)
        assert logged == pytest.approx(sorted(shared.values()), abs=0)
    finally:
        kill_server(server)


RACERS, ROUNDS = 6, 4
SPLITS = ("train", "valid", "test")


def _race(args: tuple[str, str, int, object]) -> list[str]:
    """One racer: each round, after the barrier, open the round's (new) experiment, start a run and, after
    the barrier again, log the round's (new) datasets; its run ids, or the traceback of what failed."""
    url, fallback, rounds, barrier = args
    run_ids = []
    try:
        for round_ in range(rounds):
            barrier.wait(timeout=120)  # type: ignore[attr-defined]
            tracker = Tracker(url, f"race-{round_}", fallback_root=fallback)  # get-or-create the experiment
            with tracker.start(run_name=f"racer-{os.getpid()}"):
                datasets = [
                    SplitDataset(
                        f"data-{round_}-{split}", f"digest-{round_}-{split}", f"/data/{split}.txt", split
                    )
                    for split in SPLITS
                ]
                barrier.wait(timeout=120)  # type: ignore[attr-defined]
                tracker.log_datasets(datasets)  # get-or-create the datasets rows
            assert tracker.fallback_from is None  # noqa: S101 (a lost race is no reason to leave the server)
            run_ids.append(str(tracker.run_id))
    except BaseException:
        barrier.abort()  # type: ignore[attr-defined]  # the others stop waiting for this one
        return [traceback.format_exc()]
    return run_ids


@pytest.mark.slow
def test_processes_logging_one_new_dataset_at_once_on_a_postgresql_server_all_succeed(postgres, tmp_path):
    """RACERS processes, released together by a barrier, open the same new experiment and log the same new
    datasets (name and digest) to their own runs, ROUNDS times. Before ltr retried a lost get-or-create
    insert, most rounds failed: ``RestException: BAD_REQUEST: (psycopg2.errors.UniqueViolation) duplicate
    key value violates unique constraint "dataset_pk"``. Every run must hold the datasets, on the server."""
    server, url = start_mlflow_server(tmp_path, timeout=300, backend_store=f"{postgres}/mlflow")
    try:
        ctx = mp.get_context("spawn")
        with ctx.Manager() as manager, ctx.Pool(RACERS) as pool:
            barrier = manager.Barrier(RACERS)
            jobs = [(url, str(tmp_path / f"fallback{i}"), ROUNDS, barrier) for i in range(RACERS)]
            results = pool.map(_race, jobs)
        for result in results:
            assert len(result) == ROUNDS, result[0][-3000:]
        client = MlflowClient(tracking_uri=url)
        for round_ in range(ROUNDS):
            (experiment,) = client.search_experiments(filter_string=f"name = 'race-{round_}'")
            runs = client.search_runs([experiment.experiment_id])
            assert sorted(r.info.run_id for r in runs) == sorted(result[round_] for result in results)
            for run in runs:
                logged = {
                    (d.dataset.name, d.dataset.digest, d.dataset.source, d.tags[0].value)
                    for d in run.inputs.dataset_inputs
                }
                assert logged == {
                    (
                        f"data-{round_}-{split}",
                        f"digest-{round_}-{split}",
                        f'{{"uri": "/data/{split}.txt"}}',
                        split,
                    )
                    for split in SPLITS
                }
        assert not list(tmp_path.glob("fallback*/*"))  # nothing went to a fallback store
    finally:
        kill_server(server)

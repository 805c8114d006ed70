"""Sweeps: grid and Optuna multiruns, parallel jobs on one SQLite store, the best-job summary."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import TINY_DATA, compose_config, quick_model, run_train_cli, store_client, train_main_in_process
from rich.console import Console

from ltr.core.errors import ConfigError
from ltr.experiment.schemas import threads_per_job
from ltr.sweep.summary import best_job, read_job_results, summarize_sweep, swept_overrides
from ltr.sweep.sweeper import OptunaSweeper

TINY = [*TINY_DATA, *quick_model(20)]


def _write_jobs(folder: Path, values: list[float]) -> None:
    for i, v in enumerate(values):
        job = folder / str(i)
        job.mkdir(parents=True)
        record = {
            "value": v,
            "target": "ndcg@10",
            "run_id": None,
            "command": f"python -m ltr.train +model=lambdamart model.params.learning_rate={i}",
            "overrides": ["+model=lambdamart", f"model.params.learning_rate={i}"],
            "valid": {"ndcg@10": v},
            "test": {"ndcg@10": v - 0.1},
        }
        (job / "ltr_result.json").write_text(json.dumps(record))


def test_summary_picks_the_best_job_and_writes_it(tmp_path):
    _write_jobs(tmp_path, [0.61, 0.72, float("nan"), 0.70, 0.55, 0.69, 0.1, 0.2, 0.3, 0.4, 0.72])
    rows = read_job_results(tmp_path)
    assert [r["job"] for r in rows] == [str(i) for i in range(11)]  # numeric order, not "10" < "2"
    assert best_job(rows)["job"] == "1"  # ties → the first job; NaN never wins
    console = Console(record=True, width=120)
    summary = summarize_sweep(tmp_path, None, console=console)
    text = console.export_text()
    assert "Best job 1: valid ndcg@10 = 0.7200" in text and "learning_rate=1" in text
    on_disk = json.loads((tmp_path / "sweep_summary.json").read_text())
    assert on_disk["best"]["job"] == summary["best"]["job"] == "1"
    assert swept_overrides(rows) == {f"model.params.learning_rate={i}" for i in range(11)}


def test_optuna_search_config_is_ltrs_own_sweeper_seeded_tpe_with_direction_from_the_metric():
    cfg = compose_config(
        ["+model=lambdamart", "hparams_search=lambdamart_optuna", "seed=7"], return_hydra_config=True
    )
    sweeper = cfg.hydra.sweeper
    assert sweeper._target_ == "hydra_plugins.ltr_optuna_sweeper.LtrOptunaSweeper"
    assert sweeper.sampler._target_ == "optuna.samplers.TPESampler"
    assert sweeper.sampler.seed == 7
    # hydra-optuna-sweeper passed multivariate=False; Optuna 5 defaults to True (other trials)
    assert sweeper.sampler.multivariate is False
    assert sweeper.direction == "maximize"
    assert sweeper.n_trials == 20 and sweeper.n_jobs == 1 and sweeper.max_failure_rate == 0.0
    assert "model.params.learning_rate" in sweeper.params
    # a lower-is-better early-stopping metric flips the study direction
    rmse = compose_config(
        ["+model=lambdamart", "hparams_search=lambdamart_optuna", "model.early_stopping.metric=rmse"],
        return_hydra_config=True,
    )
    assert rmse.hydra.sweeper.direction == "minimize"


def test_an_unknown_sweeper_key_fails_while_the_config_is_composed():
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="n_trail"):
        compose_config(
            ["+model=lambdamart", "hparams_search=lambdamart_optuna", "hydra.sweeper.n_trail=3"],
            return_hydra_config=True,
        )
    # forced in with '+', it reaches the sweeper, which names it
    with pytest.raises(ConfigError, match=r"hydra.sweeper: unknown key\(s\) \['n_trail'\]"):
        OptunaSweeper(direction="maximize", n_trail=3)


def test_joblib_launcher_sets_threads_so_jobs_times_threads_fit_the_cores():
    cfg = compose_config(["+model=lambdamart", "launcher=joblib"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith("JoblibLauncher")
    n_jobs = cfg.hydra.launcher.n_jobs
    assert n_jobs * threads_per_job(n_jobs) <= (os.cpu_count() or 1)
    assert threads_per_job(n_jobs) >= 1


def test_outputs_and_multirun_folders_are_under_the_project_root(tmp_path):
    cfg = compose_config(["+model=lambdamart", f"paths.root={tmp_path}"], return_hydra_config=True)
    assert cfg.hydra.run.dir.startswith(f"{tmp_path}/outputs/")
    assert cfg.hydra.sweep.dir.startswith(f"{tmp_path}/multirun/")
    assert cfg.hydra.callbacks.sweep_summary._target_ == "ltr.sweep.summary.SweepSummary"


@pytest.mark.slow
def test_eight_parallel_jobs_on_one_sqlite_store_lose_nothing(tmp_path):
    """8 grid jobs, 2 at a time (joblib processes), one SQLite store → 8 complete runs + a summary."""
    proc = run_train_cli(
        [
            "-m",
            "+model=lambdamart",
            "launcher=joblib",
            *TINY,
            "model.params.learning_rate=0.05,0.1,0.2,0.3",
            "model.params.num_leaves=7,15",
        ],
        tmp_path,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    client = store_client(tmp_path)
    exp = client.get_experiment_by_name("ltr")
    runs = client.search_runs([exp.experiment_id], max_results=100)
    jobs = [r for r in runs if r.data.tags.get("ltr.sweep.role") != "parent"]
    summaries = [r for r in runs if r.data.tags.get("ltr.sweep.role") == "parent"]
    assert len(jobs) == 8 and len(summaries) == 1
    assert {r.data.tags["mlflow.parentRunId"] for r in jobs} == {summaries[0].info.run_id}
    grid = {
        (r.data.params["model.params.learning_rate"], r.data.params["model.params.num_leaves"]) for r in jobs
    }
    assert len(grid) == 8
    assert len({r.data.tags["ltr.sweep.id"] for r in jobs}) == 1
    assert sorted(int(r.data.tags["ltr.sweep.job"]) for r in jobs) == list(range(8))
    metric_sets = {frozenset(r.data.metrics) for r in jobs}
    assert len(metric_sets) == 1  # every job logged the same, complete set of metrics
    (keys,) = metric_sets
    assert {"test/ndcg_at_10", "valid/err_at_10", "best_iteration"} <= keys
    for r in jobs:
        assert r.info.status == "FINISHED"
        assert r.data.params["num_threads"] == "1"  # 2 jobs x 1 thread on 2 cores
        assert client.get_metric_history(r.info.run_id, "curve/valid/ndcg_at_10")
        top = {a.path for a in client.list_artifacts(r.info.run_id)}
        assert {"config", "per_query", "plots"} <= top
        assert len(client.list_artifacts(r.info.run_id, "per_query")) == 3
    logged = client.search_logged_models(experiment_ids=[exp.experiment_id])
    assert sorted(m.source_run_id for m in logged) == sorted(r.info.run_id for r in jobs)
    # the summary names the best job by validation metric, and that job is tagged
    best = max(jobs, key=lambda r: r.data.metrics["valid/ndcg_at_10"])
    (summary,) = summaries
    assert summary.data.tags["ltr.sweep.best_run_id"] == best.info.run_id
    assert summary.data.metrics["best/test/ndcg_at_10"] == pytest.approx(best.data.metrics["test/ndcg_at_10"])
    assert client.get_run(best.info.run_id).data.tags["ltr.sweep.best"] == "true"
    assert "Best job" in proc.stdout


def test_a_grid_sweep_is_one_parent_run_with_a_child_per_job(tmp_path, monkeypatch, capsys):
    """``python -m ltr.train -m … learning_rate=0.05,0.2`` (main in-process, real SQLite store): the
    sweep is one parent run, named after what it sweeps, holding the summary and ending FINISHED; each
    job's run is its child (as an Optuna search's trials are); no separate summary run."""
    args = ["-m", "+model=lambdamart", *TINY, "model.params.learning_rate=0.05,0.2", "num_threads=1"]
    assert train_main_in_process(args, tmp_path, monkeypatch) == 0, capsys.readouterr().err[-3000:]
    client = store_client(tmp_path)
    runs = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("ltr.sweep.role") == "parent"]
    jobs = [r for r in runs if r is not parent]
    assert len(jobs) == 2 and not [r for r in runs if r.data.tags.get("ltr.sweep.role") == "summary"]
    assert {r.data.tags.get("mlflow.parentRunId") for r in jobs} == {parent.info.run_id}
    assert parent.info.status == "FINISHED"
    assert parent.info.run_name == "sweep lambdamart-synthetic learning_rate=0.05,0.2"
    assert parent.data.tags["ltr.sweep.id"] == jobs[0].data.tags["ltr.sweep.id"]
    best = max(jobs, key=lambda r: r.data.metrics["valid/ndcg_at_10"])
    assert parent.data.tags["ltr.sweep.best_run_id"] == best.info.run_id
    assert parent.data.metrics["best/test/ndcg_at_10"] == best.data.metrics["test/ndcg_at_10"]
    assert (
        parent.data.params["best.model.params.learning_rate"]
        == best.data.params["model.params.learning_rate"]
    )
    assert parent.data.tags["mlflow.note.content"].startswith("Best of 2 jobs: job ")
    assert client.get_run(best.info.run_id).data.tags["ltr.sweep.best"] == "true"
    # each job's own name says first what differs from its siblings
    assert sorted(r.info.run_name.split(" ")[1] for r in jobs) == ["learning_rate=0.05", "learning_rate=0.2"]
    assert {r.info.run_name.split(" ")[0] for r in jobs} == {"lambdamart-synthetic"}


def _optuna_sweep(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess[str], Path, dict]:
    """A real tiny ``python -m ltr.train -m +model=lambdamart hparams_search=lambdamart_optuna`` sweep:
    the finished process, its sweep folder and its ``optimization_results.yaml``."""
    args = ["-m", "+model=lambdamart", "hparams_search=lambdamart_optuna", *overrides, *TINY]
    proc = run_train_cli([*args, "num_threads=1", "tracking=none"], tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (results,) = (tmp_path / "multirun").glob("*/*/optimization_results.yaml")
    return proc, results.parent, yaml.safe_load(results.read_text())


def _trial_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("trial ")]


def _assert_one_line_per_job(stdout: str, sweep_dir: Path, n_jobs: int) -> None:
    """What a quiet multirun prints: a ``trial N [k/n]`` line per job with its value and nothing of the
    jobs' own output (data summary, results table, MLflow lines), which is in each job's log file."""
    lines = _trial_lines(stdout)
    assert len(lines) == n_jobs, stdout
    values = {int(line.split()[1]): line.split("valid ndcg@10 = ")[1].split()[0] for line in lines}
    for job, value in values.items():
        result = json.loads((sweep_dir / str(job) / "ltr_result.json").read_text())
        assert value == f"{result['value']:.4f}"
    assert sorted(values) == list(range(n_jobs))
    assert "hydra.job.env_set" not in stdout and "LTR_OPTUNA" not in stdout
    assert "random scores" not in stdout and "Data synthetic" not in stdout and "#0 :" not in stdout
    assert "dashboard:" not in stdout and "in experiment 'ltr'" not in stdout  # a job's MLflow lines
    log = (sweep_dir / "0" / "train.log").read_text()  # the job's own output, in its log file
    assert "random scores" in log and "Data synthetic" in log


def test_optuna_sweep_runs_trials_and_reports_the_best(tmp_path, monkeypatch, capsys):
    """The same sweep as :func:`_optuna_sweep` with ``python -m ltr.train``'s main in-process (the sweeper,
    the basic launcher and the summary callback as in a real process; real processes: the slow tests)."""
    args = ["-m", "+model=lambdamart", "hparams_search=lambdamart_optuna", "hydra.sweeper.n_trials=3", *TINY]
    code = train_main_in_process([*args, "num_threads=1", "tracking=none"], tmp_path, monkeypatch)
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    (results_file,) = (tmp_path / "multirun").glob("*/*/optimization_results.yaml")
    _assert_one_line_per_job(out, results_file.parent, 3)
    assert "hydra.job.env_set" not in err and "Error executing job" not in err
    assert "Best job" in out and "rerun: " in out  # the summary, once: not the sweeper's own best line
    assert "Best trial" not in out and "Rerun the best trial" not in out
    sweep_dir, results = results_file.parent, yaml.safe_load(results_file.read_text())
    summary = json.loads((sweep_dir / "sweep_summary.json").read_text())
    assert summary["n_jobs"] == 3
    values = [j["value"] for j in summary["jobs"]]
    assert summary["best"]["value"] == max(values)
    assert len({j["overrides"][0] for j in summary["jobs"]}) == 3  # TPE proposed 3 different configs
    # the sweeper's record of the study agrees with the jobs' own results
    assert results["best_value"] == summary["best"]["value"]
    assert results["best_overrides"] == summary["best"]["overrides"]
    assert results["n_trials"]["COMPLETE"] == 3
    best_lr = next(o for o in summary["best"]["overrides"] if o.startswith("model.params.learning_rate="))
    assert results["best_params"]["model.params.learning_rate"] == float(best_lr.split("=")[1])


@pytest.mark.slow
def test_a_trial_that_ltr_rejects_fails_alone_and_the_sweep_goes_on(tmp_path):
    """num_leaves=1 is a ConfigError in ltr: that trial is FAIL, the others complete (max_failure_rate=1)."""
    proc, sweep_dir, results = _optuna_sweep(
        tmp_path,
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.max_failure_rate=1.0",
        "model.params.num_leaves=1,7",
    )
    overrides = [yaml.safe_load((sweep_dir / f"{job}/.hydra/overrides.yaml").read_text()) for job in range(4)]
    rejected = sum("model.params.num_leaves=1" in o for o in overrides)
    assert 0 < rejected < 4
    assert results["n_trials"]["FAIL"] == rejected and results["n_trials"]["COMPLETE"] == 4 - rejected
    assert results["best_params"]["model.params.num_leaves"] == 7
    assert "error:" in proc.stderr and "num_leaves" in proc.stderr  # ltr's message, then the next trial
    # a line per trial; a rejected one says why
    lines = _trial_lines(proc.stdout)
    assert len(lines) == 4
    failed = [line for line in lines if "failed: ConfigError: model.params.num_leaves" in line]
    assert len(failed) == rejected and all("num_leaves=1 " in line for line in failed)
    assert "Error executing job" not in proc.stderr and "hydra.job.env_set" not in proc.stdout + proc.stderr


def test_sweep_size_and_trial_lines():
    from omegaconf import OmegaConf

    from ltr.sweep.summary import short_override, sweep_size, swept_keys, trial_line

    grid = OmegaConf.create(
        {
            "hydra": {
                "sweeper": {},
                "overrides": {"task": ["+model=lambdamart", "a=0.05,0.1,0.2,0.3", "b=range(1,3)"]},
            }
        }
    )
    assert sweep_size(grid) == 8
    assert swept_keys(grid) == ["a", "b"]
    optuna = compose_config(
        ["+model=lambdamart", "hparams_search=lambdamart_optuna"], return_hydra_config=True
    )
    assert sweep_size(optuna) == 20
    OmegaConf.update(optuna, "hydra.overrides.task", ["+model=lambdamart", "model.params.num_leaves=7,15"])
    keys = swept_keys(optuna)  # the search space, then a command-line sweep (one key each)
    assert keys[0] == "model.params.learning_rate" and keys.count("model.params.num_leaves") == 1
    shown = [
        short_override(o) for o in ["model.params.learning_rate=0.012345678", "model.params.num_leaves=63"]
    ]
    line = trial_line("5", 6, 20, shown, "pruned at round 12", best={"job": "2", "value": 0.5}, seconds=3725)
    assert (
        line
        == "trial 5 [6/20]  learning_rate=0.01235 num_leaves=63  pruned at round 12  (best so far 0.5000, trial 2)  1:02:05"
    )


def test_launch_lines_are_dropped_in_a_quiet_sweep_and_never_show_internal_overrides():
    import logging

    from ltr.sweep.console import LAUNCHER_LOGGERS, launch_lines

    line = '\t#3 : +model=lambdamart a=1 +hydra.job.env_set.LTR_OPTUNA_PRUNER=\'{"_target_": "x y"}\' +hydra.job.env_set.LTR_SHARE_DATA=1'
    for name in LAUNCHER_LOGGERS:
        launcher = logging.getLogger(name)
        record = launcher.makeRecord(name, logging.INFO, __file__, 0, line, None, None)
        with launch_lines(drop=False):
            assert launcher.filter(record) and record.getMessage() == "\t#3 : +model=lambdamart a=1"
        with launch_lines(drop=True):
            assert not launcher.filter(record)
            warning = launcher.makeRecord(name, logging.WARNING, __file__, 0, "careful", None, None)
            assert launcher.filter(warning)
        assert launcher.filters == []


@pytest.mark.slow  # ~11 s: a real process (its stdout as a shell sees it)
def test_a_grid_sweep_prints_one_line_per_job_and_keeps_the_jobs_output_in_their_logs(tmp_path):
    args = ["-m", "+model=lambdamart", *TINY, "model.params.learning_rate=0.05,0.1", "num_threads=1"]
    proc = run_train_cli(args, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (sweep_dir,) = (tmp_path / "multirun").glob("*/*")
    _assert_one_line_per_job(proc.stdout, sweep_dir, 2)
    assert proc.stdout.startswith(f"sweep in {sweep_dir}")
    assert "Best job" in proc.stdout and "logged on the sweep's parent run" in proc.stdout  # the summary
    assert "in experiment 'ltr'" in (sweep_dir / "1" / "train.log").read_text()


def test_hydra_verbose_prints_each_jobs_whole_output(tmp_path, monkeypatch, capsys):
    args = ["-m", "+model=lambdamart", *TINY, "model.params.learning_rate=0.05,0.1", "num_threads=1"]
    code = train_main_in_process([*args, "tracking=none", "hydra.verbose=ltr"], tmp_path, monkeypatch)
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    assert len(_trial_lines(out)) == 2
    assert out.count("random scores") == 2 and out.count("Data synthetic") == 2  # as a single run prints
    assert "#1 : +model=lambdamart" in out  # Hydra's launch lines too
    (sweep_dir,) = (tmp_path / "multirun").glob("*/*")
    assert "random scores" not in (sweep_dir / "0" / "train.log").read_text()


@pytest.mark.slow  # ~16 s: five real (tiny) Optuna sweeps on one stored study
def test_a_stored_study_refuses_to_continue_on_changed_data_and_restarts_when_asked(
    tmp_path, monkeypatch, capsys
):
    """Issue 25: the same search command, continued after the data changed, must not mix old trials
    (trained on the old data) with new ones. A file rewritten in place, the user's data config edited:
    refused before any trial, naming the change and both ways on; ``hydra.sweeper.restart=true`` starts
    again; unchanged data continues the study."""
    import optuna
    from helpers import write_letor

    folder = tmp_path / "data"
    folder.mkdir()
    for name, first in (("train", 1), ("vali", 100), ("test", 200)):
        write_letor(folder / f"{name}.txt", 12, first)
    config = tmp_path / "myconf" / "data" / "mydata.yaml"
    config.parent.mkdir(parents=True)
    yaml_text = (
        "defaults:\n  - svmlight\n  - _self_\nname: mydata\n"
        f"train: {folder}/train.txt\nvalid: {folder}/vali.txt\ntest: {folder}/test.txt\n"
        "n_features: 10\nlabel_range: [0, 4]\n"
    )
    config.write_text(yaml_text)
    db = tmp_path / "optuna.db"
    base = [
        "-m", "--config-dir", str(tmp_path / "myconf"), "+model=lambdamart", "data=mydata",
        "hparams_search=lambdamart_optuna", *quick_model(3), "num_threads=1", "tracking=none",
        f"hydra.sweeper.storage=sqlite:///{db}", "hydra.sweeper.study_name=mine",
    ]  # fmt: skip

    def sweep(*extra: str) -> tuple[int, str]:
        code = train_main_in_process([*base, *extra], tmp_path, monkeypatch)
        return code, capsys.readouterr().err

    def trials() -> int:
        return len(optuna.load_study(study_name="mine", storage=f"sqlite:///{db}").trials)

    code, err = sweep("hydra.sweeper.n_trials=1")
    assert code == 0, err[-3000:]
    assert trials() == 1
    write_letor(folder / "train.txt", 20, 1)  # regenerated in place: more queries, same name
    code, err = sweep("hydra.sweeper.n_trials=2")
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert f"file {folder / 'train.txt'} changed (size or content)" in line
    assert "hydra.sweeper.study_name=NEW_NAME" in line and "hydra.sweeper.restart=true" in line
    assert trials() == 1  # nothing ran
    write_letor(folder / "train.txt", 12, 1)  # the data as it was, but its config edited
    config.write_text(yaml_text.replace("label_range: [0, 4]", "label_range: [0, 5]"))
    code, err = sweep("hydra.sweeper.n_trials=2")
    assert code == 2 and "data.label_range: [0.0, 4.0] -> [0.0, 5.0]" in err, err[-2000:]
    code, err = sweep("hydra.sweeper.n_trials=2", "hydra.sweeper.restart=true")
    assert code == 0, err[-3000:]
    assert trials() == 2  # the old trial is gone: two new ones on the new data
    code, err = sweep("hydra.sweeper.n_trials=3")  # the same data again: the study continues
    assert code == 0 and trials() == 3, err[-3000:]

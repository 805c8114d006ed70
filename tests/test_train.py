"""End to end: the Hydra app trains on tiny synthetic data and logs a complete run to MLflow."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import (
    PROJECT_ROOT,
    TINY_DATA,
    cli_env,
    compose_config,
    quick_model,
    run_train_cli,
    store_client,
    train_main_in_process,
)

from ltr.core.errors import ConfigError
from ltr.tracking.store import process_uris
from ltr.train import available_models, run

TINY = [*TINY_DATA, *quick_model(30), "num_threads=1"]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """One real `python -m ltr.train +model=lambdamart` run into a temporary SQLite store."""
    root = tmp_path_factory.mktemp("root")
    proc = run_train_cli(["+model=lambdamart", *TINY], root, ci=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, proc


def test_cli_prints_synthetic_notice_table_and_dashboard_command(cli_run):
    root, proc = cli_run
    out = proc.stdout
    assert "SYNTHETIC" in out
    assert "random scores" in out and "ndcg@10" in out and "err@10" in out
    assert f"sqlite:///{root.resolve()}/mlflow.db" in out
    assert "ui --backend-store-uri" in out
    assert (root / "data" / "synthetic" / "train.txt").is_file()
    # the pages to open: the runs table in ltr's view and the run, both on MLflow's training pages
    client = store_client(root)
    exp = client.get_experiment_by_name("ltr")
    (run,) = client.search_runs([exp.experiment_id])
    base = f"http://127.0.0.1:5000/#/experiments/{exp.experiment_id}/runs"
    assert f"runs table: {base}?viewStateShareKey=ltr&workflowType=machine_learning" in out
    assert f"this run: {base}/{run.info.run_id}?workflowType=machine_learning" in out
    view = json.loads(exp.tags["mlflow.sharedViewState.ltr"])
    assert view["orderByKey"] == "metrics.`test/ndcg_at_10`" and view["orderByAsc"] is False
    assert "metrics.`test/err_at_10`" in view["selectedColumns"]


def test_cli_run_is_logged_completely(cli_run):
    root, _ = cli_run
    client = store_client(root)
    exp = client.get_experiment_by_name("ltr")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1
    r = runs[0]
    assert r.info.status == "FINISHED"
    # params: the flattened resolved config and the metric conventions
    assert r.data.params["model.name"] == "lambdamart"
    assert r.data.params["model.params.learning_rate"] == "0.1"
    assert r.data.params["data.n_queries.train"] == "60"
    assert r.data.params["eval.preset"] == "ltr"
    assert any(k.startswith("metric_conventions.") for k in r.data.params)
    # final metrics per split, MLflow-safe names
    for split in ("train", "valid", "test"):
        for metric in ("ndcg_at_10", "err_at_10"):
            assert 0.0 <= r.data.metrics[f"{split}/{metric}"] <= 1.0
    assert r.data.metrics["test/ndcg_at_10"] > r.data.metrics["test/baseline_random/ndcg_at_10"] + 0.1
    # per-iteration validation curve with steps
    history = client.get_metric_history(r.info.run_id, "curve/valid/ndcg_at_10")
    steps = [m.step for m in history]
    assert len(steps) > 5 and steps == sorted(steps) and steps[0] == 0
    # tags: provenance
    assert r.data.tags["ltr.data.synthetic"] == "true"
    assert "ltr.command" in r.data.tags and "+model=lambdamart" in r.data.tags["ltr.command"]
    # CI bounds from ltr.stats' bootstrap (run seed), bracketing the mean: one table, not charts
    assert not [k for k in r.data.metrics if k.endswith(("_ci_low", "_ci_high", "_n_skipped", "n_queries"))]
    local = client.download_artifacts(r.info.run_id, "summary/metrics.json", str(root / "dl"))
    table = pd.read_json(local, orient="split").set_index(["split", "metric"])
    for split in ("valid", "test"):
        for metric in ("ndcg@10", "err@10"):
            low, high = table.loc[(split, metric), ["ci_low", "ci_high"]]
            assert low < r.data.metrics[f"{split}/{metric.replace('@', '_at_')}"] < high
    # the run says what it is: name with the overrides, description with the headline and its CI
    assert r.info.run_name.startswith("lambdamart-synthetic n_queries.train=60 ")
    assert "n_trees=30" in r.info.run_name
    low, high = table.loc[("test", "ndcg@10"), ["ci_low", "ci_high"]]
    skipped = table.loc[("test", "ndcg@10"), "n_skipped"]
    assert skipped > 0  # the tiny synthetic test split has queries without a relevant document
    assert r.data.tags["mlflow.note.content"].startswith(
        f"lambdamart on synthetic: test ndcg@10 = {r.data.metrics['test/ndcg_at_10']:.4f}, "
        f"95% CI [{low:.4f}, {high:.4f}] over {20 - skipped} queries ({skipped} skipped: ndcg@10 undefined"
    )
    # provenance and environment tags
    for tag in ("git.commit", "git.dirty", "ltr.data.fingerprint.test", "version.lightgbm", "version.mlflow"):
        assert r.data.tags[tag]
    assert r.data.tags["ltr.metric_preset"] == "ltr"
    assert json.loads(r.data.tags["ltr.overrides"])[0] == "+model=lambdamart"
    assert "data.n_queries.train=60" in r.data.tags["ltr.command"]
    # per-query values as Parquet: one row per test query, agreeing with the logged mean
    local_pq = client.download_artifacts(r.info.run_id, "per_query/test.parquet", str(root / "dl"))
    frame = pd.read_parquet(local_pq)
    assert len(frame) == table.loc[("test", "ndcg@10"), "n_queries"] == 20
    assert frame["ndcg@10"].mean() == pytest.approx(r.data.metrics["test/ndcg_at_10"], abs=1e-12)
    assert {"qid", "n_docs", "ndcg@1", "ndcg@20"} <= set(frame.columns)
    # plots
    plots = {Path(a.path).name for a in client.list_artifacts(r.info.run_id, "plots")}
    assert plots == {"learning_curves_lambdamart.png", "feature_importance_lambdamart.png"}
    # artifacts: resolved config and the LightGBM model
    local = client.download_artifacts(r.info.run_id, "config/resolved.yaml", str(root / "dl"))
    config = yaml.safe_load(Path(local).read_text())
    assert config["model"]["name"] == "lambdamart" and config["seed"] == 42
    import mlflow
    from mlflow.models import get_model_info

    from ltr.models.pyfunc import as_frame

    logged = client.search_logged_models(experiment_ids=[exp.experiment_id])
    assert logged and logged[0].source_run_id == r.info.run_id
    with process_uris(client.tracking_uri):
        assert "python_function" in get_model_info(logged[0].model_uri).flavors
        model = mlflow.pyfunc.load_model(logged[0].model_uri)  # the README's input: f1 … f46 + qid
        scores = model.predict(as_frame(np.zeros((3, 46)), qid=[1, 1, 2]))
    assert scores.shape == (3,) and np.isfinite(scores).all()


def test_no_model_lists_available_models(tmp_path, monkeypatch, capsys):
    """``python -m ltr.train`` with no model (its main in-process): exit 2 and every model listed."""
    assert train_main_in_process([], tmp_path, monkeypatch, ci=False) == 2
    err = capsys.readouterr().err
    assert "+model=lambdamart" in err
    for name in available_models():
        assert name in err


def test_run_is_deterministic_and_returns_validation_metric(tmp_path):
    overrides = ["+model=lambdamart", *TINY, "tracking=none", f"paths.root={tmp_path}"]
    first = run(compose_config(overrides))
    second = run(compose_config(overrides))
    assert 0.0 < first <= 1.0
    assert first == second


def test_override_changes_the_model(tmp_path):
    base = ["+model=lambdamart", *TINY, "tracking=none", f"paths.root={tmp_path}"]
    a = run(compose_config(base))
    b = run(compose_config([*base, "model.params.learning_rate=0.3"]))
    assert np.isfinite(a) and np.isfinite(b) and a != b


@pytest.mark.slow
def test_multirun_logs_one_run_per_job(tmp_path):
    proc = run_train_cli(
        ["-m", "+model=lambdamart", *TINY, "model.params.learning_rate=0.05,0.2"], tmp_path, ci=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    client = store_client(tmp_path)
    runs = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    summaries = [r for r in runs if r.data.tags.get("ltr.sweep.role") == "parent"]
    runs = [r for r in runs if r not in summaries]
    assert len(summaries) == 1  # the sweep's parent run with its summary (ltr.sweep.summary.SweepSummary)
    assert sorted(r.data.params["model.params.learning_rate"] for r in runs) == ["0.05", "0.2"]
    assert all(r.info.status == "FINISHED" for r in runs)


def test_progress_bar_reports_iterations_and_is_quiet_in_ci(monkeypatch):
    from ltr.report.progress import iteration_progress, progress_enabled, task_progress

    monkeypatch.setenv("CI", "true")
    assert not progress_enabled(isatty=True)
    monkeypatch.delenv("CI")
    monkeypatch.delenv("LTR_NO_PROGRESS", raising=False)
    assert progress_enabled(isatty=True)
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=150)
    with iteration_progress(5, "fit", enabled=True, console=console) as tick:
        for i in range(5):
            tick(i, {"train/ndcg@10": 0.9, "valid/ndcg@10": 0.1 * i})
    with task_progress(2, "systems", enabled=True, console=console) as advance:
        advance("a")
        advance("b")
    text = out.getvalue()
    assert "fit" in text and "5/5" in text and "valid/ndcg@10 0.4000" in text and "ETA" in text
    assert "systems" in text and "2/2" in text


def run_train_cli_on_a_terminal(args: list[str], root: Path, *, ci: bool) -> str:
    """``python -m ltr.train ARGS`` with standard error on a pseudo-terminal; returns what it drew there.

    The progress bar is drawn only on a terminal, so a bar test on a captured (non-terminal) stderr
    would pass whatever ``CI`` says; here only ``CI`` decides.
    """
    env = cli_env(root, ci=ci) | {"TERM": "xterm-256color", "COLUMNS": "150"}
    if not ci:
        env.pop("CI", None)
    env.pop("LTR_NO_PROGRESS", None)
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # keep reading, or a full terminal buffer would block the child
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.train", *args],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=slave,
        text=True,
        timeout=600,
    )
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    assert proc.returncode == 0, proc.stdout + b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow  # two real training processes on a pseudo-terminal: CI only
def test_progress_bar_on_a_terminal_unless_ci(tmp_path):
    args = [
        "+model=lambdamart",
        *TINY_DATA,
        *quick_model(200, patience=200),
        "num_threads=1",
        "tracking=none",
    ]
    watched = run_train_cli_on_a_terminal(args, tmp_path / "tty", ci=False)
    assert "training lambdamart" in watched and "ETA" in watched  # the control: a bar is visible here
    in_ci = run_train_cli_on_a_terminal(args, tmp_path / "ci", ci=True)
    assert "ETA" not in in_ci and "━" not in in_ci and "training lambdamart" not in in_ci


def _no_data_no_tracker(monkeypatch) -> None:
    """Make connecting to the tracker or reading the data fail loudly: a bad config must stop before both."""
    import ltr.experiment.record

    def refuse(*args, **kwargs):
        raise AssertionError("the tracker or the data was touched before the config error")

    monkeypatch.setattr(ltr.experiment.record, "make_tracker", refuse)
    monkeypatch.setattr(ltr.experiment.record, "load_dataset", refuse)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("eval.metrics=[ndcg@10,ndcp@10]", r"^eval.metrics: unknown metric 'ndcp@10'"),
        ("eval.curve.metric=ndcp", r"^eval.curve.metric: unknown metric 'ndcp@1'"),
        ("eval.preset=nope", r"^eval: unknown metric preset 'nope'"),
        ("+eval.conventions.gain=cubic", r"^eval: .*gain"),
        ("model.early_stopping.metric=ndcp@10", r"^model.early_stopping.metric: unknown metric 'ndcp@10'"),
        ("model.params.num_leaves=1", r"^model.params.num_leaves: must be in \[2, inf\], got 1"),
    ],
)
def test_bad_config_fails_before_the_tracker_and_the_data(tmp_path, monkeypatch, override, message):
    from ltr.train import execute

    _no_data_no_tracker(monkeypatch)
    with pytest.raises(ConfigError, match=message):
        execute(compose_config(["+model=lambdamart", *TINY, override, f"paths.root={tmp_path}"]))


def test_bad_ensemble_member_fails_before_the_tracker_and_the_data(tmp_path, monkeypatch):
    from ltr.train import execute

    _no_data_no_tracker(monkeypatch)
    member = "model.members.1={model:regression,params:{n_tree:5}}"
    with pytest.raises(ConfigError, match=r"^model.members.1.params: unknown key\(s\) n_tree; regression"):
        execute(compose_config(["+model=ensemble_mean", *TINY_DATA, member, f"paths.root={tmp_path}"]))


def test_a_negative_seed_fails_before_the_tracker_and_the_data(tmp_path, monkeypatch):
    # numpy's default_rng (random baseline, bootstrap) refuses it: it used to fail after the fit
    from ltr.train import execute

    _no_data_no_tracker(monkeypatch)
    with pytest.raises(ConfigError, match=r"^seed: must be in \[0, inf\], got -1"):
        execute(compose_config(["+model=linear", *TINY_DATA, "seed=-1", f"paths.root={tmp_path}"]))

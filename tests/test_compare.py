"""Challenge-style comparisons: experiment files, the leaderboard, MLflow parent/child runs, rebuild from MLflow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import PROJECT_ROOT, store_client
from omegaconf import OmegaConf

from ltr.compare import main
from ltr.core.errors import ConfigError
from ltr.experiment.experiments import (
    available_experiments,
    check_experiment,
    compose_system,
    load_experiment,
)
from ltr.experiment.leaderboard import build_report, rank_systems
from ltr.experiment.schemas import DEFAULT_METRICS
from ltr.experiment.systems import run_comparison

TINY_DATA = [
    "data.n_queries.train=60",
    "data.n_queries.valid=30",
    "data.n_queries.test=40",
    "data.max_docs=30",
    "num_threads=1",
    "eval.bootstrap.B=500",
]
SMALL_TREES = ["model.params.n_trees=25", "model.early_stopping.patience=10"]


def _experiment(tmp_path: Path) -> Path:
    spec = {
        "name": "tiny",
        "title": "Tiny comparison",
        "overrides": ["data=synthetic"],
        "baseline": "feature",
        "primary": "err@10",
        "metrics": ["err@10", "ndcg@1", "ndcg@5", "ndcg@10"],
        "stats": {"B": 2000},
        "systems": {
            "feature": {"model": "feature"},
            "regression": {"model": "regression", "overrides": SMALL_TREES},
            "lambdamart": {"model": "lambdamart", "overrides": SMALL_TREES},
        },
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    exp = load_experiment(str(_experiment(root)))
    result = run_comparison(exp, [*TINY_DATA, f"paths.root={root}"])
    return root, exp, result


@pytest.mark.slow  # every system of every experiment composed: ~7 s
def test_every_shipped_experiment_composes_for_every_system():
    names = available_experiments()
    assert {"synthetic_challenge", "yahoo_challenge", "mslr_challenge"} <= set(names)
    for name in names:
        exp = load_experiment(name)
        assert exp.primary in exp.metrics and exp.baseline in exp.systems
        assert exp.primary == "err@10" or not name.endswith("_challenge")  # recipes follow their paper
        for system in exp.systems:
            cfg = compose_system(exp, system, [])
            assert cfg.model.name == exp.systems[system].model
            assert list(cfg.eval.metrics) == list(exp.metrics)
        header = (PROJECT_ROOT / "experiments" / f"{name}.yaml").read_text().splitlines()[:10]
        assert any(f"python -m ltr.compare experiment={name}" in line for line in header)


def test_bad_experiments_fail_with_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="available: .*synthetic_challenge"):
        load_experiment("nope")
    base = {"systems": {"a": {"model": "lambdamart"}, "b": {"model": "regression"}}}
    with pytest.raises(ConfigError, match="x.yaml: baseline: 'c' is not one of the systems: a, b"):
        check_experiment(OmegaConf.create({**base, "baseline": "c"}), "x.yaml")
    with pytest.raises(ConfigError, match="x.yaml: systems.b.model: required, not set"):
        check_experiment(OmegaConf.create({"systems": {"a": {"model": "m"}, "b": {}}}), "x.yaml")
    with pytest.raises(ConfigError, match="x.yaml: primary: 'map' must be one of metrics"):
        check_experiment(OmegaConf.create({**base, "primary": "map"}), "x.yaml")
    with pytest.raises(ConfigError, match=r"experiments/x.yaml: stats.B: must be in \[0, inf\], got -1"):
        check_experiment(OmegaConf.create({**base, "stats": {"B": -1}}), "experiments/x.yaml")
    with pytest.raises(ConfigError, match=r"x.yaml: stats: unknown key\(s\) b; accepted: ci, B, "):
        check_experiment(OmegaConf.create({**base, "stats": {"b": 10}}), "x.yaml")
    with pytest.raises(ConfigError, match=r"x.yaml: stats.test: expected one of \['randomization', 't'\]"):
        check_experiment(OmegaConf.create({**base, "stats": {"test": "wilcoxon"}}), "x.yaml")
    with pytest.raises(
        ConfigError, match=r"x.yaml: systems.a: unknown key\(s\) overide; accepted: model, overrides"
    ):
        check_experiment(
            OmegaConf.create({"systems": {"a": {"model": "m", "overide": []}, "b": {"model": "m"}}}), "x.yaml"
        )
    with pytest.raises(ConfigError, match="x.yaml: systems: must map at least 2 system names"):
        check_experiment(OmegaConf.create({"systems": {"a": {"model": "m"}}}), "x.yaml")
    exp = check_experiment(OmegaConf.create(base), "x.yaml")
    with pytest.raises(ConfigError, match="system 'a'.*model.params.nope"):
        compose_system(exp, "a", ["model.params.nope=1"])


def test_cli_without_experiment_lists_them(capsys):
    assert main([]) == 2
    assert "synthetic_challenge" in capsys.readouterr().err


def test_rank_systems_and_report_match_numpy():
    rng = np.random.default_rng(3)
    qid = np.arange(50)
    base = rng.random(50)
    frames = {
        "base": pd.DataFrame({"qid": qid, "err@10": base}),
        "good": pd.DataFrame({"qid": qid, "err@10": np.clip(base + 0.1 + rng.normal(0, 0.02, 50), 0, 1)}),
        "bad": pd.DataFrame({"qid": qid, "err@10": base - 0.05}),
    }
    exp = check_experiment(
        OmegaConf.create(
            {
                "baseline": "base",
                "metrics": ["err@10"],
                "stats": {"B": 1000},
                "systems": {s: {"model": "m"} for s in frames},
            }
        ),
        "t.yaml",
    )
    assert rank_systems(frames, "err@10", "base") == ["good", "base", "bad"]
    report = build_report(frames, exp, seed=1)
    assert report.systems == ("good", "base", "bad")
    row = report.row("good", "err@10")
    diff = frames["good"]["err@10"] - frames["base"]["err@10"]
    assert row.mean == pytest.approx(frames["good"]["err@10"].mean(), abs=1e-12)
    assert row.diff == pytest.approx(diff.mean(), abs=1e-12)
    assert (row.wins, row.ties, row.losses) == (
        int((diff > 0).sum()),
        int((diff == 0).sum()),
        int((diff < 0).sum()),
    )
    assert row.significant and report.row("bad", "err@10").losses == 50


def test_rank_systems_compares_means_over_the_queries_every_system_scored():
    """System a skipped q3 (NaN): both are ranked on q1, q2 only — a 0.5, b 0.6, so b first. Each system's
    mean over its own queries would rank a (0.5) above b ((0.6 + 0.6 + 0.0)/3 = 0.4).

    Kills mutant #5 (``rank_systems`` with each system's nanmean over its own queries).
    """
    frames = {
        "a": pd.DataFrame({"qid": [1, 2, 3], "ndcg@10": [0.5, 0.5, np.nan]}),
        "b": pd.DataFrame({"qid": [1, 2, 3], "ndcg@10": [0.6, 0.6, 0.0]}),
    }
    assert rank_systems(frames, "ndcg@10", "a") == ["b", "a"]


def test_leaderboard_metrics_chart_means_and_the_table_leaves_out_undefined_values():
    """The parent run's ``leaderboard/…`` metrics are the means (one chart each); CI, diff, adjusted p
    and effect size are rows of its table, with ``None`` for what is undefined. Here every query gains
    exactly 0.25 (exact in binary): the differences have sd 0, so Cohen's d is 0.25/0 = inf, which is
    no JSON number. The baseline has no diff (NaN in the report).
    """
    from ltr.analysis.comparison import compare
    from ltr.experiment.leaderboard import leaderboard_metrics, leaderboard_rows

    base = pd.DataFrame({"ndcg@10": np.arange(20) / 32}, index=range(20))
    new = pd.DataFrame({"ndcg@10": np.arange(20) / 32 + 0.25}, index=range(20))
    report = compare({"base": base, "new": new}, baseline="base", B=200, seed=0)
    assert report.row("new", "ndcg@10").effect_size == np.inf
    # the metrics (charts) are the means only; everything else is a row of the run's table
    assert leaderboard_metrics(report) == {
        "leaderboard/base/ndcg_at_10": report.row("base", "ndcg@10").mean,
        "leaderboard/new/ndcg_at_10": report.row("new", "ndcg@10").mean,
    }
    rows = {r["system"]: r for r in leaderboard_rows(report)}
    assert rows["new"]["effect_size"] is None  # inf: no JSON number
    assert (
        rows["new"]["diff"] == 0.25
        and rows["new"]["p_adjusted"] == report.row("new", "ndcg@10").pvalue_adjusted
    )
    assert (rows["base"]["ci_low"], rows["base"]["ci_high"]) == (
        report.row("base", "ndcg@10").ci_low,
        report.row("base", "ndcg@10").ci_high,
    )
    assert rows["base"]["diff"] is None and rows["base"]["p_adjusted"] is None


def test_runs_without_a_fingerprint_on_every_side_are_compared_by_query_ids():
    """One run has the fingerprint tag, the other (an older run) has none: the fingerprints cannot be
    compared, so the query ids decide — equal ids pass, different ids are refused.

    Kills mutant #7 (``check_same_data`` comparing fingerprints as soon as *any* run has one: fp1 vs None).
    """
    from ltr.experiment.leaderboard import check_same_data

    f = {"a": pd.DataFrame({"qid": [1, 2]}), "b": pd.DataFrame({"qid": [1, 2]})}
    runs = {"a": "r1", "b": "r2"}
    check_same_data(f, runs, {"a": "fp1", "b": None}, "test")
    f["b"] = pd.DataFrame({"qid": [1, 3]})
    with pytest.raises(ConfigError, match="scored different test queries"):
        check_same_data(f, runs, {"a": "fp1", "b": None}, "test")


@pytest.mark.slow
def test_comparison_writes_leaderboard_plots_and_mlflow_parent_with_children(comparison):
    root, exp, result = comparison
    out = result.out_dir
    assert out == root / "reports" / "tiny"
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.tex"):
        assert (out / name).is_file()
    for name in (
        "ndcg_at_k.png",
        "difference_histogram.png",
        "ci_forest.png",
        "learning_curves_lambdamart.png",
    ):
        assert (out / "plots" / name).stat().st_size > 5000
    assert (out / "plots" / "feature_importance_lambdamart.png").is_file()
    board = pd.read_csv(out / "leaderboard.csv")
    assert set(board["system"]) == {"feature", "regression", "lambdamart"}
    assert set(board["metric"]) == {"err@10", "ndcg@1", "ndcg@5", "ndcg@10"}
    # sorted by the primary metric
    err = board[board.metric == "err@10"].set_index("system")["mean"]
    assert list(result.report.systems) == list(err.sort_values(ascending=False, kind="stable").index)
    md = (out / "leaderboard.md").read_text()
    assert "Holm" in md and "W/T/L" in md and "(baseline)" in md and "conventions" in md.lower()
    assert "\\begin{tabular}" in (out / "leaderboard.tex").read_text()

    client = store_client(root)
    parent = client.get_run(result.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.info.run_name == "compare-tiny"
    children = client.search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{result.parent_run_id}'"
    )
    assert sorted(c.info.run_name for c in children) == ["feature", "lambdamart", "regression"]
    for child in children:
        system = child.info.run_name
        # the leaderboard mean is the child's logged test mean (same queries, same conventions)
        assert err[system] == pytest.approx(child.data.metrics["test/err_at_10"], abs=1e-12)
        assert parent.data.metrics[f"leaderboard/{system}/err_at_10"] == pytest.approx(err[system], abs=1e-12)
        assert (
            "python -m ltr.train" in child.data.tags["ltr.command"]
            and f"+model={system}" in child.data.tags["ltr.command"]
        )
    leaderboard_files = {
        Path(a.path).name for a in client.list_artifacts(result.parent_run_id, "leaderboard")
    }
    assert leaderboard_files == {
        "leaderboard.md",
        "leaderboard.csv",
        "leaderboard.tex",
        "agreement.md",
        "agreement.csv",
        "segments.md",
        "segments.csv",
        "per_query.csv",
        "risk.csv",
    }
    risk = pd.read_csv(out / "risk.csv")  # every system × metric, the baseline's URisk/TRisk undefined
    assert (
        len(risk) == len(board) and risk.loc[risk["system"] == result.report.baseline, "trisk"].isna().all()
    )
    plot_files = {Path(a.path).name for a in client.list_artifacts(result.parent_run_id, "plots")}
    assert {"ndcg_at_k.png", "ci_forest.png", "difference_histogram.png", "asl_curves.png"} <= plot_files
    assert "## Metric agreement" in md and "Discriminative power" in md
    assert {"segments.png", "asl_curves.png"} <= plot_files
    segments = pd.read_csv(out / "segments.csv")
    assert set(segments["family"]) == {"documents per query", "relevant documents", "highest label"}
    # worst queries carry the labels in each system's order (from its test predictions)
    assert "## Worst queries" in md and "| lambdamart |" in md.split("## Worst queries")[1]


@pytest.mark.slow
def test_the_comparison_names_what_to_deploy(comparison):
    """The tree models can be exported, the ``feature`` baseline cannot; the console names the best
    system on the primary metric with the command that exports its run."""
    import io

    from rich.console import Console

    from ltr.compare import print_result

    _, _, result = comparison
    assert result.export_refusals["lambdamart"] is None and result.export_refusals["regression"] is None
    assert "feature model is not exported" in result.export_refusals["feature"]
    console = Console(file=io.StringIO(), width=100, highlight=False)
    print_result(console, result)
    text = " ".join(console.file.getvalue().split())
    best = result.report.best("err@10")
    assert best != "feature"  # trees beat one feature on this data
    assert (
        f"Best on err@10: {best}; export it: python -m ltr.export runs:/{result.child_run_ids[best]}/model "
        f"--format onnx --out {best}.onnx"
    ) in text


def test_a_best_system_that_cannot_be_exported_is_named_with_the_best_that_can():
    from ltr.analysis.comparison import compare
    from ltr.compare import deployment_lines
    from ltr.experiment.systems import ComparisonResult

    frames = {
        s: {"map": np.array(v)} for s, v in {"a": [0.2, 0.4], "stack": [0.8, 0.9], "b": [0.5, 0.6]}.items()
    }
    report = compare(frames, baseline="a", query_ids=[1, 2], B=50)
    refusal = "model: a ensemble_stack model is not exported; exportable: lambdamart, …"
    result = ComparisonResult(
        report,
        Path("."),
        [],
        "p",
        {"a": "ra", "stack": "rs", "b": "rb"},
        exp=OmegaConf.create({"primary": "map"}),
        tracker_uri="sqlite:///x.db",
        export_refusals={"a": None, "stack": refusal, "b": None},
    )
    assert deployment_lines(result) == [
        f"Best on map: stack, which cannot be exported ({refusal}).",
        "Best exportable: b (map = 0.5500); export it: python -m ltr.export runs:/rb/model --format onnx --out b.onnx",
    ]
    result.export_refusals.update(a=refusal, b=refusal)
    assert deployment_lines(result)[1] == "No system of this comparison can be exported."


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--register", "team/ranker"],
            "--register team/ranker: a registered model's name cannot contain '/'",
        ),
        (
            ["--register", "r", "--register-system", "nope"],
            "--register-system nope: no such system in experiment",
        ),
        (["--register", "r", "tracking=none"], "--register r: needs the runs logged; drop tracking=none"),
    ],
)
def test_register_mistakes_fail_before_any_training(tmp_path, monkeypatch, capsys, args, message):
    import ltr.experiment.systems

    def no_training(*_a, **_k):
        raise AssertionError("trained before checking --register")

    monkeypatch.setattr(ltr.experiment.systems, "run_comparison", no_training)
    monkeypatch.setattr("ltr.compare.run_comparison", no_training)
    assert main([f"experiment={_experiment(tmp_path)}", *args]) == 2
    assert message in capsys.readouterr().err


def test_register_system_needs_register(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["experiment=synthetic_challenge", "--register-system", "lambdamart"])
    assert exc.value.code == 2 and "--register-system needs --register NAME" in capsys.readouterr().err


@pytest.mark.slow  # the real CLI in a subprocess over a logged comparison: ~27 s of the fast suite's time
def test_report_rebuilt_from_mlflow_equals_the_original(comparison, tmp_path):
    root, exp, result = comparison
    env = {**os.environ, "LTR_ROOT": str(root), "MLFLOW_DISABLE_TELEMETRY": "true", "CI": "true"}
    by_parent = tmp_path / "by_parent"
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.compare", "--from-mlflow", "--parent", result.parent_run_id,
         f"experiment={_experiment(tmp_path)}", "--out", str(by_parent), "--register", "tiny-ranker"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Leaderboard" in proc.stdout
    summary = proc.stdout.split("Best on")[0]  # one screen; the rest is in the files
    assert (
        "Detail in" in summary
        and "Discriminative power" not in proc.stdout
        and len(summary.splitlines()) <= 40
    )
    # --register: the best system on the primary metric is version 1 of the registered model, and
    # models:/tiny-ranker/1 loads the very model that system's run logged
    best = result.report.best("err@10")
    line = f"Registered {best} (run {result.child_run_ids[best]}) as models:/tiny-ranker/1"
    assert line in " ".join(proc.stdout.split()), proc.stdout[-2000:]
    from ltr.tracking.loading import load_model

    uri = f"sqlite:///{root}/mlflow.db"
    registered = load_model("models:/tiny-ranker/1", tracking_uri=uri).ranker
    logged = load_model(f"runs:/{result.child_run_ids[best]}/model", tracking_uri=uri).ranker
    X = np.random.default_rng(0).random((7, 46))
    np.testing.assert_array_equal(registered.predict(X), logged.predict(X))
    original = pd.read_csv(result.out_dir / "leaderboard.csv")
    rebuilt = pd.read_csv(by_parent / "leaderboard.csv")
    pd.testing.assert_frame_equal(original, rebuilt)
    # chosen by run id (baseline given explicitly), then by name within the experiment
    ids = [result.child_run_ids[s] for s in ("feature", "lambdamart")]
    args = ["--from-mlflow", "--run-ids", *ids, "--baseline", "feature", "--out", str(tmp_path / "by_id")]
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.compare", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    two = pd.read_csv(tmp_path / "by_id" / "leaderboard.csv")
    assert set(two["system"]) == {"feature", "lambdamart"}
    row = two[(two.system == "lambdamart") & (two.metric == "ndcg@10")].iloc[0]
    orig = original[(original.system == "lambdamart") & (original.metric == "ndcg@10")].iloc[0]
    assert row["mean"] == pytest.approx(orig["mean"], abs=1e-12)
    args = [
        "--from-mlflow",
        "--experiment",
        "ltr",
        "--run-names",
        "regression",
        "nope",
        "--out",
        str(tmp_path / "x"),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.compare", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "no finished run named 'nope'" in proc.stderr


# --- --from-mlflow refuses what it cannot compare (runs logged directly: no training needed) ----------


def _logged_run(
    uri: str,
    name: str,
    qids,
    fingerprint: str | None,
    seed: int,
    split: str = "test",
    edit=None,
    **extra_tags: str,
) -> str:
    """A finished MLflow run shaped like ltr.train's: per-query parquet and the data fingerprint tag.
    ``edit(frame)`` changes the random per-query values in place before they are logged."""
    import tempfile

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ltr") or client.get_experiment(client.create_experiment("ltr"))
    tags = {} if fingerprint is None else {f"ltr.data.fingerprint.{split}": fingerprint}
    tags |= extra_tags
    run = client.create_run(exp.experiment_id, run_name=name, tags=tags)
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"qid": np.asarray(qids, dtype=np.int64)})
    frame["n_docs"] = 5 + frame["qid"] % 7
    for metric in ("ndcg@10", "ndcg@5", "ndcg@1", "err@10", "map", "mrr@10", "p@10"):
        frame[metric] = rng.random(len(frame))
    if edit is not None:
        edit(frame)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{split}.parquet"
        frame.to_parquet(path)
        client.log_artifact(run.info.run_id, str(path), "per_query")
    client.set_terminated(run.info.run_id)
    return run.info.run_id


def _from_mlflow(uri: str, tmp_path: Path, *args: str, capsys) -> tuple[int, str]:
    code = main(["--from-mlflow", "--tracking-uri", uri, "--out", str(tmp_path / "out"), *args])
    captured = capsys.readouterr()
    return code, captured.err + captured.out


def test_from_mlflow_refuses_runs_of_different_test_data(tmp_path, capsys):
    """Different fingerprints, different query sets, or a same-named run of other data: one clear
    error naming every run and its fingerprint, never a numpy traceback or a silently partial report."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    a = _logged_run(uri, "lambdamart-synthetic", range(40), "fp-aaaa", 1)
    b = _logged_run(uri, "regression-synthetic", range(40), "fp-aaaa", 2)
    c = _logged_run(uri, "regression-mslr", range(100, 130), "fp-cccc", 3)  # other data, other queries
    d = _logged_run(uri, "regression-synthetic", range(40), "fp-dddd", 4)  # same qids, other data
    code, err = _from_mlflow(uri, tmp_path, "--run-ids", a, b, capsys=capsys)
    assert code == 0, err  # same data: compared
    code, err = _from_mlflow(uri, tmp_path, "--run-ids", a, c, capsys=capsys)
    assert code == 2 and "Traceback" not in err
    assert "different test data" in err and a in err and c in err and "fp-aaaa" in err and "fp-cccc" in err
    code, err = _from_mlflow(uri, tmp_path, "--run-ids", a, b, d, capsys=capsys)
    assert code == 2 and "different test data" in err and d in err and "fp-dddd" in err
    # the same name twice (all runs of the experiment): the collision is still refused by data
    code, err = _from_mlflow(uri, tmp_path, "--experiment", "ltr", capsys=capsys)
    assert code == 2 and "different test data" in err and "regression-synthetic" in err


def test_from_mlflow_report_has_the_metric_agreement_section(tmp_path, capsys):
    """Three logged runs: leaderboard.md, agreement.md/csv, the ASL plot and the console all carry the
    agreement, and its numbers are metric_agreement's on the runs' per-query values."""
    from ltr.analysis.agreement import metric_agreement

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    ids = [_logged_run(uri, name, range(30), "fp", seed) for seed, name in enumerate(("a", "b", "c"), 1)]
    code, out = _from_mlflow(uri, tmp_path, "--run-ids", *ids, capsys=capsys)
    assert code == 0, out
    folder = tmp_path / "out"
    assert "Metric agreement: Kendall's τ" in out and "Discriminative power" not in out  # the summary
    code, full = _from_mlflow(uri, tmp_path, "--run-ids", *ids, "--full", capsys=capsys)
    assert code == 0 and "Metric agreement" in full and "Discriminative power" in full
    # the console renders the Markdown: tables, no escapes or emphasis markers
    assert "\\_" not in full and "**" not in full and "|---" not in full
    assert "## Metric agreement" in (folder / "leaderboard.md").read_text()
    assert (folder / "plots" / "asl_curves.png").stat().st_size > 5000
    table = pd.read_csv(folder / "agreement.csv")
    metrics = list(DEFAULT_METRICS)  # the --from-mlflow default without experiment=
    assert len(table) == len(metrics) * (len(metrics) - 1) // 2
    from mlflow.tracking import MlflowClient

    frames = {}
    for rid in ids:
        path = MlflowClient(uri).download_artifacts(rid, "per_query/test.parquet", str(tmp_path / rid))
        frames[MlflowClient(uri).get_run(rid).info.run_name] = pd.read_parquet(path).set_index("qid")
    # the CLI ranks the systems by the primary metric first; τ does not depend on the order of systems
    expected = metric_agreement(frames, metrics=metrics, B=1000, test_B=10_000, seed=42)
    i, j = metrics.index("err@10"), metrics.index("ndcg@10")
    row = table[(table.metric_a == "err@10") & (table.metric_b == "ndcg@10")].iloc[0]
    assert row["kendall_tau"] == pytest.approx(expected.kendall_tau[i, j])
    agreement_line = " ".join(out.split("Metric agreement: ")[1].split("Where each")[0].split())
    assert "err@10 vs " in agreement_line and f"ndcg@10 {expected.kendall_tau[i, j]:.2f}" in agreement_line
    assert row["pearson"] == pytest.approx(expected.pearson[i, j])
    assert row["spearman_ci_low"] == pytest.approx(expected.spearman_ci[0][i, j])


def test_from_mlflow_report_has_the_failure_analysis_by_documents_per_query(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    ids = [_logged_run(uri, name, range(30), "fp", seed) for seed, name in enumerate(("a", "b", "c"), 1)]
    code, out = _from_mlflow(uri, tmp_path, "--run-ids", *ids, "--baseline", "a", capsys=capsys)
    assert code == 0, out
    folder = tmp_path / "out"
    assert "Where each system differs from a on err@10" in out and "**" not in out
    code, full = _from_mlflow(uri, tmp_path, "--run-ids", *ids, "--baseline", "a", "--full", capsys=capsys)
    assert code == 0 and "Failure analysis by segment" in full and "Worst queries" in full
    table = pd.read_csv(folder / "segments.csv")
    # n_docs = 5 + qid % 7 over qid 0..29: tertile cuts at 7 and 9 → 5–7, 8–9, 10–11
    assert set(table["family"]) == {"documents per query"}
    counts = table[table.system == "b"].set_index("segment")["n_queries"].to_dict()
    assert counts == {"n_docs 5–7": 14, "n_docs 8–9": 8, "n_docs 10–11": 8}
    assert set(table["system"]) == {"b", "c"}
    assert (folder / "plots" / "segments.png").stat().st_size > 5000
    assert "## Failure analysis by segment" in (folder / "leaderboard.md").read_text()


def test_the_console_is_one_screen_and_the_files_hold_the_rest(tmp_path, capsys, monkeypatch):
    """On an 80-column terminal the comparison fits one screen: one line per system with the primary
    metric's mean and CI, the metrics that do not fit named, the segment where a system loses (its Δ
    as pandas computes it), each system's worst query, and the files that hold everything; no line
    wider than the terminal except the copy-paste commands."""
    monkeypatch.setenv("COLUMNS", "80")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    names = ("regression_baseline", "lambdamart_xgb_unbiased_clicks", "ensemble_stack_of_four")

    def loses_on_long_lists(frame):  # n_docs 10–11 (qid % 7 in {5, 6}): err@10 of 0
        frame.loc[frame["n_docs"] >= 10, "err@10"] = 0.0

    ids = [
        _logged_run(uri, name, range(60), "fp", seed, edit=loses_on_long_lists if seed == 3 else None)
        for seed, name in enumerate(names, 1)
    ]
    capsys.readouterr()
    code = main(["--from-mlflow", "--tracking-uri", uri, "--out", str(tmp_path / "out"), "--run-ids", *ids,
                 "--baseline", names[0]])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    summary = out.split("runs table:")[0]
    assert len(summary.splitlines()) <= 40 and max(map(len, summary.splitlines())) <= 80
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    frames = {
        name: pd.read_parquet(client.download_artifacts(rid, "per_query/test.parquet", str(tmp_path / rid)))
        for name, rid in zip(names, ids, strict=True)
    }
    rows: dict[str, str] = {}
    for line in summary.splitlines():  # the leaderboard's line of each system comes first
        if line.split()[:1] and line.split()[0] in names:
            rows.setdefault(line.split()[0], line)
    assert set(rows) == set(names)  # full names, one line each
    for name in names:  # err@10 (primary) mean and the CI brackets on the system's own line
        assert f"{frames[name]['err@10'].mean():.4f}" in rows[name] and "[" in rows[name]
    header = next(line for line in summary.splitlines() if line.startswith("system"))
    shown = header.split()[1:]
    left_out = [m for m in DEFAULT_METRICS if m not in shown]
    assert shown[0] == "err@10" and left_out  # 80 columns cannot hold all 7 metrics
    assert f"Not shown at this width: {', '.join(left_out)}" in " ".join(summary.split())
    loser, base = frames[names[2]].set_index("qid"), frames[names[0]].set_index("qid")
    long_lists = loser.index[loser["n_docs"] >= 10]
    delta = (loser.loc[long_lists, "err@10"] - base.loc[long_lists, "err@10"]).mean()
    worst = (loser["err@10"] - base["err@10"]).idxmin()
    flat = " ".join(summary.split())
    assert f"{names[2]} n_docs 10–11 {delta:+.4f}" in flat
    assert f"{worst}: {loser.loc[worst, 'err@10']:.4f} vs {base.loc[worst, 'err@10']:.4f}" in flat
    assert f"Detail in {tmp_path / 'out'}/: leaderboard.md" in flat and "--full" in flat
    # risk against the baseline on the primary metric: URisk by numpy, TRisk by scipy's one-sample t-test
    from scipy.stats import ttest_1samp

    delta = (loser["err@10"] - base.loc[loser.index, "err@10"]).to_numpy()
    z = np.where(delta >= 0, delta, 2.0 * delta)
    t = ttest_1samp(z, 0.0)
    assert f"{names[2]} URisk {z.mean():.4f}, TRisk {t.statistic:.2f}" in flat
    risk = pd.read_csv(tmp_path / "out" / "risk.csv").set_index(["system", "metric"])
    assert risk.loc[(names[2], "err@10"), "trisk_pvalue"] == pytest.approx(t.pvalue)
    assert "Discriminative power" not in out and "Worst queries" not in out  # in the files
    md = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "Discriminative power" in md and "## Worst queries" in md
    assert all(f"| {m} |" in md.split("\n\n")[2].splitlines()[0] for m in left_out)  # the file's leaderboard


def test_experiment_segment_file_is_a_user_segment(tmp_path, capsys):
    """``segments: {traffic: file.csv}`` in an experiment: the CSV's column (qid, segment) becomes a
    segment family; a file missing a query or a column is an error naming ``segments.traffic``."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    ids = [_logged_run(uri, name, range(30), "fp", seed) for seed, name in enumerate(("a", "b"), 1)]
    csv_path = tmp_path / "traffic.csv"
    pd.DataFrame({"qid": range(30), "segment": ["head"] * 10 + ["tail"] * 20}).to_csv(csv_path, index=False)
    spec = {"name": "seg", "baseline": "a", "metrics": ["err@10", "ndcg@10"], "stats": {"B": 500},
            "systems": {"a": {"model": "m"}, "b": {"model": "m"}}, "segments": {"traffic": str(csv_path)}}  # fmt: skip
    exp_path = tmp_path / "seg.yaml"
    exp_path.write_text(yaml.safe_dump(spec))
    code, out = _from_mlflow(uri, tmp_path, f"experiment={exp_path}", "--run-ids", *ids, capsys=capsys)
    assert code == 0, out
    table = pd.read_csv(tmp_path / "out" / "segments.csv")
    traffic = table[table.family == "traffic"].set_index("segment")
    assert traffic["n_queries"].to_dict() == {"head": 10, "tail": 20}
    pd.DataFrame({"qid": range(29), "segment": "x"}).to_csv(csv_path, index=False)
    code, err = _from_mlflow(uri, tmp_path, f"experiment={exp_path}", "--run-ids", *ids, capsys=capsys)
    assert (
        code == 2 and "segments.traffic" in err and "no value for 1 queries" in err and "Traceback" not in err
    )
    pd.DataFrame({"query": range(30)}).to_csv(csv_path, index=False)
    code, err = _from_mlflow(uri, tmp_path, f"experiment={exp_path}", "--run-ids", *ids, capsys=capsys)
    assert code == 2 and "segments.traffic" in err and "needs columns qid and segment" in err


def test_failure_analysis_with_labels_lists_every_segment_and_the_worst_queries(tmp_path):
    from ltr.analysis.segments import query_attributes, ranked_labels
    from ltr.experiment.leaderboard import build_failure_analysis, write_outputs

    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 12, 40)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    labels = rng.integers(0, 3, offsets[-1]).astype(float)
    qid = np.arange(100, 140)
    frames = {
        s: pd.DataFrame({"qid": qid, "n_docs": sizes, "err@10": rng.random(40)}) for s in ("base", "x", "y")
    }
    exp = check_experiment(
        OmegaConf.create(
            {"name": "t", "baseline": "base", "primary": "err@10", "metrics": ["err@10"],
             "stats": {"B": 500}, "systems": {s: {"model": "m"} for s in frames}}
        ),
        "t.yaml",
    )  # fmt: skip
    ranked = {s: ranked_labels(labels, rng.random(offsets[-1]), offsets, qid) for s in ("x", "y")}
    failures = build_failure_analysis(
        frames, exp, seed=1, attributes=query_attributes(labels, offsets, qid), ranked=ranked
    )
    table = failures.table
    assert set(table["family"]) == {"documents per query", "relevant documents", "highest label"}
    for (_system, _family), part in table.groupby(["system", "family"]):
        assert part["n_queries"].sum() == 40
    diff = frames["x"]["err@10"] - frames["base"]["err@10"]
    expected = qid[np.argsort(diff.to_numpy(), kind="stable")[:5]].tolist()
    assert [w.qid for w in failures.worst if w.system == "x"] == expected
    w = failures.worst[0]
    i = int(np.flatnonzero(qid == w.qid)[0])
    own = labels[offsets[i] : offsets[i + 1]]
    assert w.ranked_labels == ranked["x"][w.qid][0]
    assert w.ideal_labels == tuple(sorted(own.tolist(), reverse=True)[:10])
    report = build_report(frames, exp, seed=1)
    files = write_outputs(report, frames, exp, tmp_path, seed=1, failures=failures)
    names = {f.name for f in files}
    assert {"segments.md", "segments.csv", "segments.png"} <= names
    text = (tmp_path / "segments.md").read_text()
    assert "**relevant documents**" in text and "## Worst queries" in text


def test_from_mlflow_without_fingerprints_compares_query_ids(tmp_path, capsys):
    """Runs without the fingerprint tag (older or foreign runs) are checked by their query ids."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    a = _logged_run(uri, "one", range(40), None, 1)
    b = _logged_run(uri, "two", range(5, 45), None, 2)
    same = _logged_run(uri, "three", range(40), None, 3)
    code, err = _from_mlflow(uri, tmp_path, "--run-ids", a, b, capsys=capsys)
    assert code == 2 and "Traceback" not in err
    assert "different test queries" in err and a in err and b in err and "5 of" in err
    code, err = _from_mlflow(uri, tmp_path, "--run-ids", a, same, capsys=capsys)
    assert code == 0, err


def test_from_mlflow_repeats_a_runs_leakage_warning(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    leak = "the test split is identical to train (same data fingerprint)"
    a = _logged_run(uri, "leaky", range(30), "fp", 1, **{"ltr.leakage.test": leak})
    b = _logged_run(uri, "clean", range(30), "fp", 2)
    code, out = _from_mlflow(uri, tmp_path, "--run-ids", a, b, capsys=capsys)
    assert code == 0, out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: run 'leaky' ({a}): {leak}"]


def test_a_bad_system_fails_before_any_system_is_trained(tmp_path, monkeypatch):
    # the third system's member is wrong: neither the tracker nor the data may be touched (so no system trains)
    import ltr.experiment.record

    def refuse(*args, **kwargs):
        raise AssertionError("the tracker or the data was touched before the config error")

    monkeypatch.setattr(ltr.experiment.record, "make_tracker", refuse)
    monkeypatch.setattr(ltr.experiment.record, "load_dataset", refuse)
    systems = {
        "a": {"model": "regression"},
        "b": {"model": "linear"},
        "c": {"model": "ensemble_mean", "overrides": ["model.members=[linear,{model:linear,params:{l2:1}}]"]},
    }
    exp = check_experiment(OmegaConf.create({"systems": systems, "baseline": "a"}), "x.yaml")
    with pytest.raises(ConfigError, match=r"^system 'c': model.members.1.params: unknown key\(s\) l2"):
        run_comparison(exp, [*TINY_DATA, f"paths.root={tmp_path}"])
    # a bad metric of the experiment file fails when the file is read, naming the file's key
    with pytest.raises(ConfigError, match=r"^x.yaml: metrics\[1\]: unknown metric 'ndcp@5'"):
        check_experiment(
            OmegaConf.create({"systems": systems, "baseline": "a", "metrics": ["ndcg@10", "ndcp@5"]}),
            "x.yaml",
        )


def test_from_mlflow_with_a_dead_server_is_one_error_line(capsys):
    from helpers import free_port

    uri = f"http://127.0.0.1:{free_port()}"
    assert main(["--from-mlflow", "--tracking-uri", uri, "--parent", "x"]) == 2  # was MLflow's traceback
    err = capsys.readouterr().err
    assert err.startswith(f"error: --tracking-uri {uri}: the MLflow server is unreachable")
    assert err.count("\n") == 1


def test_an_experiment_with_a_yaml_syntax_error_is_a_config_error(tmp_path):
    # yaml's ParserError is no ValueError: it used to escape as a traceback (exit 1)
    path = tmp_path / "broken.yaml"
    path.write_text("systems: {a: {model: regression}, b: {model: linear}\n")
    with pytest.raises(
        ConfigError, match=r"broken.yaml: not a valid experiment YAML \(while parsing .* expected ','"
    ):
        load_experiment(str(path))


# --- a report people want to look at ---------------------------------------------------------------------


def test_console_leaderboard_is_a_terminal_table_without_markdown_escapes(tmp_path):
    """Names with underscores print as they are: no ``\\_``, no ``**``, no Markdown rule rows; the files
    keep their Markdown."""
    import io

    from rich.console import Console

    from ltr.compare import print_leaderboard
    from ltr.experiment.leaderboard import build_agreement, build_failure_analysis

    rng = np.random.default_rng(1)
    qid = np.arange(30)
    frames = {
        s: pd.DataFrame(
            {"qid": qid, "n_docs": 5 + qid % 4, "err@10": rng.random(30), "ndcg@10": rng.random(30)}
        )
        for s in ("reg_base", "lambda_mart", "lambdamart_xgb")
    }
    exp = check_experiment(
        OmegaConf.create(
            {"name": "t", "title": "Title_with_underscores", "baseline": "reg_base", "primary": "err@10",
             "metrics": ["err@10", "ndcg@10"], "stats": {"B": 500}, "systems": {s: {"model": "m"} for s in frames}}
        ),
        "t.yaml",
    )  # fmt: skip
    report = build_report(frames, exp, seed=1)
    console = Console(width=160, record=True, file=io.StringIO(), force_terminal=True)
    failures = build_failure_analysis(frames, exp, seed=1)
    print_leaderboard(console, report, exp, tmp_path, build_agreement(frames, exp, seed=1), failures)
    text = console.export_text(clear=False)
    assert "lambda_mart" in text and "lambdamart_xgb" in text and "reg_base (baseline)" in text
    assert "Title_with_underscores" in text and "Metric agreement" in text and "Failure analysis" in text
    assert "\\_" not in text and "**" not in text and "| ---" not in text and "|---" not in text
    # the best mean is bold on the terminal (a style, not asterisks)
    best = report.best("err@10")
    styled = console.export_text(styles=True)
    assert f"\x1b[1m{report.row(best, 'err@10').mean:.4f}" in styled
    assert "lambda\\_mart" in report.to_markdown()  # the Markdown file keeps its escapes


def test_title_and_parent_run_name_follow_the_data_actually_used():
    from ltr.experiment.experiments import data_label, titled_for_data

    exp = load_experiment("synthetic_challenge")
    own = data_label(compose_system(exp, "regression", []).data)
    used = data_label(
        compose_system(
            exp, "regression", ["data=svmlight", "data.train=/x/rank.train", "data.test=/x/rank.test"]
        ).data
    )
    assert (own, used) == ("synthetic", "svmlight rank.train")
    titled, run_name = titled_for_data(exp, used, own)
    assert "synthetic" not in titled.title.replace("synthetic_challenge", "")
    assert "rank.train" in titled.title and run_name == "compare-synthetic_challenge-svmlight_rank.train"
    assert titled_for_data(exp, own, own) == (exp, "compare-synthetic_challenge")


def test_the_console_sections_never_cut_a_system_name_at_80_columns():
    """The detail, agreement and failure sections are Markdown in the files; on an 80-column console
    their tables keep every system's full name (rich's Markdown tables cut them to ``lambdamart_xgb_…``)."""
    import io

    from rich.console import Console

    from ltr.analysis.comparison import compare
    from ltr.report.tables import print_comparison

    names = ["regression_baseline", "lambdamart_xgb_unbiased_clicks", "ensemble_stack_of_four"]
    rng = np.random.default_rng(0)
    frames = {n: pd.DataFrame({"ndcg@10": rng.random(30)}, index=range(30)) for n in names}
    report = compare(frames, baseline=names[0], B=200, seed=0)
    console = Console(width=80, file=io.StringIO(), highlight=False)
    print_comparison(console, report, title="t", sections=[report.detail_markdown()])
    text = console.file.getvalue()
    for name in names:
        assert name in text
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_summary_sets_the_published_primary_metric_beside_our_best():
    """A ``published:`` block: its systems' primary metric, as written in the experiment file, next to
    our best system's mean; an empty block says that no number is bundled; a fold protocol points at folds.md."""
    from ltr.analysis.comparison import compare
    from ltr.compare import extra_lines

    q = range(30)
    rng = np.random.default_rng(3)
    frames = {s: pd.DataFrame({"map": rng.random(30) + d}, index=q) for s, d in (("reg", 0.0), ("lm", 0.2))}
    report = compare(frames, baseline="reg", B=200, seed=0)
    exp = OmegaConf.create(
        {"primary": "map", "published": {"source": "Table 11.9", "systems": {"RankSVM": {"map": 0.4644}}}}
    )
    lines = extra_lines(exp, report, {"published.md": "…", "folds.md": "…"})
    ours = frames["lm"]["map"].mean()
    assert f"Published map: RankSVM 0.4644; ours: lm {ours:.4f}" in lines[1]
    assert lines[0].startswith("Per fold: folds.md")
    exp.published.systems = {}
    assert "no published map" in extra_lines(exp, report, {"published.md": "…"})[0]

"""Reproduction recipes (experiments/letor4_mq2008.yaml, letor4_mq2007.yaml, mslr_web30k_lightgbm.yaml).

The real collections are not on the test machines: each recipe runs end to end on a generated stand-in
with the same folder layout (``Fold1..Fold5/{train,vali,test}.txt``, :func:`helpers.write_fold_standin`),
as ``python -m ltr.compare experiment=NAME data.dir=STANDIN`` — the command docs/experiments.md gives
for the real data. The protocol settings the recipes claim are checked on the composed configs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import PROJECT_ROOT, cli_env, store_client, write_fold_standin

from ltr.core.errors import ConfigError
from ltr.experiment.experiments import compose_system, load_experiment
from ltr.experiment.schemas import check_experiment_block
from ltr.experiment.systems import run_comparison

LETOR = ["letor4_mq2008", "letor4_mq2007"]
RECIPES = [*LETOR, "mslr_web30k_lightgbm"]
#: LightGBM docs/Experiments.rst (commit bae0b7b), Accuracy, "MS LTR", LightGBM column
LIGHTGBM_PAGE = {"ndcg@1": 0.517767, "ndcg@3": 0.501063, "ndcg@5": 0.504648, "ndcg@10": 0.524252}


@pytest.mark.parametrize("name", LETOR)
def test_letor_recipes_follow_the_letor_protocol(name):
    exp = load_experiment(name)
    for system in exp.systems:
        cfg = compose_system(exp, system, [])
        assert cfg.data.name == name.split("_")[1] and cfg.data.fold == "all"  # 5 folds
        assert cfg.eval.preset == "letor"  # Eval-Score-4.0.pl conventions
        stopping = cfg.model.early_stopping
        assert (stopping.metric, stopping.preset) == ("map", "letor")  # model selection on validation MAP
    assert exp.primary == "map" and {"ndcg@10", "p@10", "meanndcg"} <= set(exp.metrics)
    if name == "letor4_mq2008":  # no number bundled that could not be cited (the note says so)
        assert exp.published.systems == {}
        assert "arXiv:1306.2597" in exp.published.source and "No baseline number" in exp.published.note
        assert "Table 11.10" in exp.published.source  # where the four baselines are printed for MQ2008
    else:  # the four LETOR 4.0 baselines as Liu (2011) prints them, each on metrics of the experiment
        assert "Table 11.9" in exp.published.source
        assert set(exp.published.systems) == {"RankSVM", "RankBoost", "ListNet", "AdaRank"}
        assert exp.published.systems["RankBoost"]["map"] == 0.466
        assert all(set(m) <= set(exp.metrics) for m in exp.published.systems.values())


def test_the_lightgbm_recipe_is_the_experiments_page_setting(tmp_path):
    from ltr.data.registry import load_dataset
    from ltr.experiment.pipeline import make_ranker

    exp = load_experiment("mslr_web30k_lightgbm")
    standin = write_fold_standin(tmp_path / "MSLR-WEB30K", n_queries=20, max_label=4)
    for system in exp.systems:
        cfg = compose_system(exp, system, [f"data.dir={standin}", f"paths.root={tmp_path}"])
        assert (cfg.data.name, cfg.data.fold, cfg.eval.preset) == ("mslr_web30k", 1, "lightgbm")
        assert (
            cfg.model.params.n_trees == 500 and cfg.model.early_stopping.patience is None
        )  # the page: 500 trees
        cfg.model.params.n_trees = 3  # the parameters LightGBM receives, quickly
        splits = load_dataset(cfg.data)
        ranker = make_ranker(cfg)
        ranker.fit(splits["train"], splits["valid"])
        got = ranker.engine_params_
        assert (got["learning_rate"], got["num_leaves"]) == (0.1, 255)
        assert (got["min_data_in_leaf"], got["min_sum_hessian_in_leaf"]) == (0, 100)
        # every other parameter at LightGBM's default
        assert (got["max_bin"], got["feature_fraction"], got["bagging_fraction"]) == (255, 1.0, 1.0)
        assert (got["lambda_l1"], got["lambda_l2"], got.get("max_depth", -1)) == (0, 0, -1)
        assert "label_gain" not in got  # LightGBM's default 2^l - 1
    assert got["objective"] == "lambdarank" and got["lambdarank_truncation_level"] == 30  # system lightgbm
    assert dict(exp.published.systems.LightGBM) == LIGHTGBM_PAGE
    assert "Experiments.rst" in exp.published.source


def test_a_published_number_must_be_a_metric_of_the_experiment():
    given = {
        "systems": {"a": {"model": "linear"}, "b": {"model": "regression"}},
        "metrics": ["ndcg@10"],
        "published": {"source": "paper", "systems": {"x": {"ndcg@5": 0.5}}},
    }
    with pytest.raises(
        ConfigError, match=r"^x.yaml: published.systems.x.ndcg@5: not one of the experiment's metrics"
    ):
        check_experiment_block(given, "x.yaml")
    given["published"]["systems"] = {"x": {"ndcg@10": 52.4}}
    with pytest.raises(
        ConfigError, match=r"published.systems.x.ndcg@10: expected a number in \[0, 1\], got 52.4"
    ):
        check_experiment_block(given, "x.yaml")


def test_the_registry_mq2008_files_are_the_querylevelnorm_version(shared_data):
    # LETOR's protocol uses QueryLevelNorm features: per query, every feature is min-max scaled to [0, 1]
    from ltr.data.svmlight import load_svmlight

    data = load_svmlight(shared_data / "mq2008" / "vali.txt", n_features=46, cache_dir=None)
    X = data.dense()
    for start, end in zip(data.offsets[:-1], data.offsets[1:], strict=True):
        low, high = X[start:end].min(axis=0), X[start:end].max(axis=0)
        assert np.all(low == 0) and np.all((high == 1) | (high == 0))


@pytest.mark.slow  # ~25 s: 15 fits and their MLflow runs
def test_a_letor_recipe_runs_on_a_standin_in_process(tmp_path):
    """The fold protocol inside ltr.compare, fast: fewer resamples than the recipe, otherwise the recipe."""
    standin = write_fold_standin(tmp_path / "MQ2008", n_queries=40, max_label=2)
    exp = load_experiment("letor4_mq2008")
    exp.stats.B = 200
    overrides = [f"data.dir={standin}", f"paths.root={tmp_path}", "eval.bootstrap.B=0", "tracking.log_model=false",
                 "tracking.log_plots=false", "eval.curve.max_k=0", "model.early_stopping.patience=5"]  # fmt: skip
    result = run_comparison(exp, overrides, out_dir=tmp_path / "report")
    folds_md = (tmp_path / "report" / "folds.md").read_text()
    published = (tmp_path / "report" / "published.md").read_text()
    assert "ours: lambdamart (mean over folds)" in published and "No baseline number" in published
    client = store_client(tmp_path)
    for system, run_id in result.child_run_ids.items():
        run = client.get_run(run_id)
        assert run.data.tags["mlflow.parentRunId"] == result.parent_run_id
        assert run.data.tags["ltr.folds.role"] == "parent" and run.info.run_name == system
        folds = client.search_runs(
            [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'"
        )
        assert sorted(f.data.tags["ltr.folds.fold"] for f in folds) == [f"Fold{k}" for k in range(1, 6)]
        fold_map = [
            f.data.metrics["test/map"] for f in sorted(folds, key=lambda f: f.data.tags["ltr.folds.fold"])
        ]
        row = re.search(rf"^\| {system} \| mean ± sd \| (\S+) ± (\S+) \|", folds_md, re.MULTILINE)
        assert float(row.group(1)) == pytest.approx(np.mean(fold_map), abs=5e-5)
        assert float(row.group(2)) == pytest.approx(np.std(fold_map, ddof=1), abs=5e-5)
        # the leaderboard pairs the systems over the pooled test queries of the 5 folds
        pooled = [r for r in result.report.rows if r.system == system and r.metric == "map"][0]
        assert pooled.mean == pytest.approx(run.data.metrics["pooled/test/map"])
        assert pooled.n_queries == 40


def _run_recipe(name: str, standin: Path, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ltr.compare",
            f"experiment={name}",
            f"data.dir={standin}",
            f"paths.root={root}",
        ],
        cwd=PROJECT_ROOT,
        env=cli_env(root),
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_a_recipe_runs_end_to_end_on_a_standin_as_documented(tmp_path, name):
    mslr = name.startswith("mslr")
    folder = "MSLR-WEB30K" if mslr else name.split("_")[1].upper()
    standin = write_fold_standin(tmp_path / folder, n_queries=60, max_label=4 if mslr else 2)
    proc = _run_recipe(name, standin, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = tmp_path / "reports" / name
    assert {"leaderboard.md", "published.md"} <= {p.name for p in report.iterdir()}
    published = (report / "published.md").read_text()
    assert "published.md" in proc.stdout and "## Published numbers beside ours" in published
    if mslr:
        assert "| LightGBM (published) | 0.5178 | 0.5011 | 0.5046 | 0.5243 |" in published
        assert "ours: lightgbm (mean over the test queries)" in published
        assert not (report / "folds.md").exists()  # Fold1 only, as the page
    else:
        assert "Per fold: folds.md" in proc.stdout and (report / "folds.md").is_file()
        assert "ours: lambdamart (mean over folds)" in published


@pytest.mark.slow  # a real recipe run: CI only
def test_the_lightgbm_recipe_prints_the_page_beside_ours_and_logs_it(tmp_path):
    """Fast: the recipe with 5 trees and few resamples on a 20-query stand-in (the slow test runs it as is)."""
    standin = write_fold_standin(tmp_path / "MSLR-WEB30K", n_queries=20, max_label=4)
    exp = load_experiment("mslr_web30k_lightgbm")
    exp.stats.B = 100
    overrides = [f"data.dir={standin}", f"paths.root={tmp_path}", "model.params.n_trees=5", "eval.bootstrap.B=0",
                 "tracking.log_model=false", "tracking.log_plots=false"]  # fmt: skip
    result = run_comparison(exp, overrides, out_dir=tmp_path / "report")
    published = (tmp_path / "report" / "published.md").read_text()
    assert "| LightGBM (published) | 0.5178 | 0.5011 | 0.5046 | 0.5243 |" in published
    ours = {r.metric: r.mean for r in result.report.rows if r.system == "lightgbm"}
    assert (
        f"| ours: lightgbm (mean over the test queries) | {' | '.join(f'{ours[m]:.4f}' for m in exp.metrics)} |"
        in published
    )
    client = store_client(tmp_path)
    parent = client.get_run(result.parent_run_id)
    assert not any(k.startswith("published") for k in parent.data.params)  # '@' is no MLflow param key
    listed = {a.path for a in client.list_artifacts(result.parent_run_id, "leaderboard")}
    assert {"leaderboard/published.json", "leaderboard/published.md"} <= listed

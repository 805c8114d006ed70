"""Pruning search trials on their validation curve (ltr/sweep/pruning.py, the models' on_iteration stop).

The truth is the engines and Optuna: an engine stopped by the callback has exactly the rounds run before
the stop; a real Optuna study with a real pruner decides what a trial reporting a curve should do; a real
``python -m ltr.train -m`` sweep leaves, for each trial Optuna calls PRUNED, an MLflow run tagged PRUNED,
ended KILLED, with the curve Optuna received and no model.
"""

from __future__ import annotations

import json
import shlex
import subprocess

import numpy as np
import optuna
import pytest
import yaml
from helpers import PROJECT_ROOT, TINY_DATA, cli_env, run_train_cli, store_client
from omegaconf import OmegaConf

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models.registry import get_ranker_class
from ltr.sweep.pruning import (
    ENV_PRUNER,
    ENV_STORAGE,
    ENV_STUDY,
    ENV_TRIAL,
    PruningHook,
    TrainingStopped,
    hook_from_environment,
    planned_rounds,
    time_saved,
)
from ltr.sweep.runs import PLOTS
from ltr.sweep.sweeper import build_pruner, trial_link_overrides

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _splits() -> tuple[RankingData, RankingData]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5)).astype(np.float32)
    y = np.clip((X[:, 0] * 1.5 + rng.normal(size=400)).round(), 0, 3).astype(int)
    train = RankingData(X=X[:300], y=y[:300], qid=np.repeat(np.arange(30), 10))
    valid = RankingData(X=X[300:], y=y[300:], qid=np.repeat(np.arange(10), 10))
    return train, valid


@pytest.mark.parametrize("model", ["lambdamart", "xendcg", "lambdamart_xgb", "catboost"])
@pytest.mark.parametrize("patience", [10, None])
def test_every_iterative_engine_stops_after_the_round_on_iteration_returns_true(model, patience):
    train, valid = _splits()
    seen: list[tuple[int, float]] = []

    def stop_at_4(step: int, values: dict[str, float]) -> bool:
        seen.append((step, values["valid/ndcg@10"]))
        return step == 4

    params = {"n_trees": 30}
    ranker = get_ranker_class(model)(params, early_stopping={"patience": patience}, num_threads=1)
    ranker.fit(train, valid, on_iteration=stop_at_4)
    assert ranker.stopped_at_ == 4
    assert [step for step, _ in seen] == [0, 1, 2, 3, 4]  # no round after the stop
    assert ranker.evals_result_["valid"]["ndcg@10"] == [value for _, value in seen]
    # without a stop the same fit runs on: the callback, not the data, ended it
    full = get_ranker_class(model)(params, early_stopping={"patience": patience}, num_threads=1)
    full.fit(train, valid, on_iteration=lambda step, values: None)
    assert full.stopped_at_ is None
    assert len(full.evals_result_["valid"]["ndcg@10"]) > 5
    assert full.evals_result_["valid"]["ndcg@10"][:5] == ranker.evals_result_["valid"]["ndcg@10"]


def test_an_ensemble_reports_each_members_best_value_and_skips_the_rest_when_stopped():
    train, valid = _splits()
    members = [{"model": "lambdamart", "params": {"n_trees": 8 + i}} for i in range(3)]
    reports: list[tuple[int, dict[str, float]]] = []

    def stop_after_first_member(step: int, values: dict[str, float]) -> bool:
        if "valid/ndcg@10" in values:
            reports.append((step, values))
            return True
        return False

    cls = get_ranker_class("ensemble_mean")
    ranker = cls(members, n_jobs=1, num_threads=1)
    ranker.fit(train, valid, on_iteration=stop_after_first_member)
    assert ranker.stopped_at_ == 0 and len(ranker.rankers_) == 1
    (member,) = ranker.rankers_
    curve = member.evals_result_["valid"]["ndcg@10"]
    assert reports == [(0, {"valid/ndcg@10": curve[member.best_iteration_]})]
    # not stopped: one report per member, steps 0, 1, 2, and every member trained
    reports.clear()
    whole = cls(members, n_jobs=1, num_threads=1)
    whole.fit(
        train, valid, on_iteration=lambda step, values: "valid/ndcg@10" in values and reports.append(step)
    )
    assert reports == [0, 1, 2] and len(whole.rankers_) == 3 and whole.stopped_at_ is None


def test_the_hook_reports_the_curve_to_optuna_and_prunes_when_the_median_pruner_says_so():
    pruner = optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=2)
    study = optuna.create_study(direction="maximize", pruner=pruner)
    first = study.ask()
    for step in range(10):
        first.report(0.8, step)
    study.tell(first, 0.8)
    good, bad = study.ask(), study.ask()
    good_hook, bad_hook = PruningHook(good, "valid/ndcg@10", 10), PruningHook(bad, "valid/ndcg@10", 10)
    assert [good_hook(s, {"valid/ndcg@10": 0.9, "train/ndcg@10": 0.1}) for s in range(10)] == [False] * 10
    decisions = [bad_hook(s, {"valid/ndcg@10": 0.5}) for s in range(3)]
    assert decisions == [False, False, True]  # warm-up steps 0, 1, then below the median at step 2
    assert study._storage.get_trial(bad._trial_id).intermediate_values == {0: 0.5, 1: 0.5, 2: 0.5}
    attrs = study._storage.get_trial(bad._trial_id).user_attrs
    assert attrs["ltr.rounds"] == 3 and attrs["ltr.planned_rounds"] == 10 and attrs["ltr.timed_rounds"] == 2
    assert bad_hook(0, {"train/ndcg@10": 0.5}) is False  # no validation value: nothing reported


def test_pruners_are_selected_by_target_and_a_bad_one_is_named():
    assert isinstance(build_pruner(None), optuna.pruners.NopPruner)
    hyperband = build_pruner({"_target_": "optuna.pruners.HyperbandPruner", "min_resource": 5})
    assert isinstance(hyperband, optuna.pruners.HyperbandPruner)
    halving = build_pruner({"_target_": "optuna.pruners.SuccessiveHalvingPruner"})
    assert isinstance(halving, optuna.pruners.SuccessiveHalvingPruner)
    with pytest.raises(ConfigError, match=r"hydra.sweeper.pruner: cannot build optuna.pruners.MedianPruner"):
        build_pruner({"_target_": "optuna.pruners.MedianPruner", "n_startup": 3})
    with pytest.raises(ConfigError, match=r"hydra.sweeper.pruner._target_=optuna.samplers.TPESampler"):
        build_pruner({"_target_": "optuna.samplers.TPESampler"})


def test_time_saved_is_the_skipped_rounds_times_the_mean_seconds_per_round():
    timed = {"ltr.rounds": 100, "ltr.timed_rounds": 99, "ltr.seconds": 9.9, "ltr.planned_rounds": 100}
    pruned = {"ltr.rounds": 20, "ltr.timed_rounds": 19, "ltr.seconds": 2.1, "ltr.planned_rounds": 100}
    saved = time_saved([(False, timed), (True, pruned), (True, pruned)])
    assert saved.pruned == 2 and saved.rounds_skipped == 160
    assert saved.seconds_per_round == pytest.approx((9.9 + 2 * 2.1) / (99 + 2 * 19))
    assert saved.seconds == pytest.approx(160 * (9.9 + 2 * 2.1) / (99 + 2 * 19))


def test_a_pruned_trial_that_outran_its_planned_rounds_saved_nothing():
    """A pruned trial that ran more rounds than planned (12 of 10) skipped no rounds: it counts 0, not −2,
    so it cannot cancel another trial's saving (here 100 − 20 = 80 rounds at 0.1 s).

    Kills mutant #30 (``time_saved`` without ``max(planned − rounds, 0)``).
    """
    over = {"ltr.rounds": 12, "ltr.timed_rounds": 11, "ltr.seconds": 1.1, "ltr.planned_rounds": 10}
    pruned = {"ltr.rounds": 20, "ltr.timed_rounds": 19, "ltr.seconds": 1.9, "ltr.planned_rounds": 100}
    saved = time_saved([(True, over), (True, pruned)])
    assert saved.pruned == 2 and saved.rounds_skipped == 80
    assert saved.seconds == pytest.approx(80 * 0.1)


def test_planned_rounds_are_n_trees_or_the_members():
    assert planned_rounds(OmegaConf.create({"model": {"params": {"n_trees": 300}}})) == 300
    assert planned_rounds(OmegaConf.create({"model": {"members": ["a", "b", "c"]}})) == 3
    assert str(TrainingStopped(3)) == "training stopped by its on_iteration callback after round 3"


@pytest.mark.slow
def test_a_real_sweep_prunes_logs_the_study_under_a_parent_run_and_reruns_its_best_exactly(tmp_path):
    n_trees = 40
    args = [
        "-m",
        "+model=lambdamart",
        "hparams_search=lambdamart_optuna",
        *TINY_DATA,
        f"model.params.n_trees={n_trees}",
        "model.early_stopping.patience=100",
        "num_threads=1",
        "hydra.sweeper.n_trials=8",
        "hparams_search/pruner@hydra.sweeper.pruner=median",
        "hydra.sweeper.pruner.n_startup_trials=2",
        "hydra.sweeper.pruner.n_warmup_steps=5",
    ]
    proc = run_train_cli(args, tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (results_path,) = (tmp_path / "multirun").glob("*/*/optimization_results.yaml")
    results = yaml.safe_load(results_path.read_text())
    study = optuna.load_study(study_name="lambdamart-synthetic", storage=f"sqlite:///{tmp_path}/optuna.db")
    pruned = [t for t in study.trials if t.state.name == "PRUNED"]
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    assert pruned and complete and len(pruned) + len(complete) == 8
    assert results["n_trials"]["PRUNED"] == len(pruned)
    # the summary's estimate, recomputed from what Optuna holds: rounds not run × mean seconds per round
    skipped = sum(n_trees - len(t.intermediate_values) for t in pruned)
    timed = [t for t in study.trials if t.user_attrs.get("ltr.timed_rounds")]
    per_round = sum(t.user_attrs["ltr.seconds"] for t in timed) / sum(
        t.user_attrs["ltr.timed_rounds"] for t in timed
    )
    assert results["pruning"]["rounds_skipped"] == skipped
    assert results["pruning"]["seconds_saved_estimate"] == pytest.approx(skipped * per_round, abs=1e-3)
    assert f"{len(pruned)} trials pruned" in proc.stdout
    # one line per trial; a pruned one says so
    trial_lines = [line for line in proc.stdout.splitlines() if line.startswith("trial ")]
    assert len(trial_lines) == 8
    assert sum(" pruned at round " in line for line in trial_lines) == len(pruned)
    client = store_client(tmp_path)
    runs = {
        r.data.tags["ltr.sweep.job"]: r
        for r in client.search_runs(
            [e.experiment_id for e in client.search_experiments()], "tags.`ltr.sweep.job` != ''"
        )
    }
    experiments = [e.experiment_id for e in client.search_experiments()]
    with_model = {m.source_run_id for m in client.search_logged_models(experiment_ids=experiments)}
    for trial in study.trials:
        run = runs[str(trial.number)]
        curve = [m.value for m in client.get_metric_history(run.info.run_id, "curve/valid/ndcg_at_10")]
        if trial.state.name == "PRUNED":
            assert run.info.status == "KILLED" and run.data.tags["ltr.trial.state"] == "PRUNED"
            assert len(curve) == len(trial.intermediate_values) < n_trees
            assert curve == [trial.intermediate_values[s] for s in sorted(trial.intermediate_values)]
            assert run.info.run_id not in with_model and "valid/ndcg_at_10" not in run.data.metrics
        else:
            assert run.info.status == "FINISHED" and run.data.tags["ltr.trial.state"] == "COMPLETE"
            assert len(curve) == n_trees and run.info.run_id in with_model
    # the study in MLflow: every trial a child of one parent run, which holds the best trial and the plots
    parent_id = study.user_attrs["ltr.mlflow_parent_run"]
    assert {r.data.tags["mlflow.parentRunId"] for r in runs.values()} == {parent_id}
    parent = client.get_run(parent_id)
    best = study.best_trial
    best_run = runs[str(best.number)]
    assert parent.info.status == "FINISHED" and parent.data.tags["ltr.sweep.role"] == "parent"
    assert parent.data.tags["ltr.sweep.best_run_id"] == best_run.info.run_id
    assert (
        parent.data.metrics["best/valid/ndcg_at_10"]
        == best.value
        == best_run.data.metrics["valid/ndcg_at_10"]
    )
    assert parent.data.params["best.model.params.num_leaves"] == str(best.params["model.params.num_leaves"])
    assert parent.data.metrics["sweep/n_pruned"] == len(pruned)
    (model,) = [
        m
        for m in client.search_logged_models(experiment_ids=experiments)
        if m.source_run_id == best_run.info.run_id
    ]
    assert [o.model_id for o in parent.outputs.model_outputs] == [model.model_id]
    plots = {a.path for a in client.list_artifacts(parent_id, "optuna")}
    assert plots == {f"optuna/{name}.png" for name in PLOTS}
    for name in PLOTS:
        assert (results_path.parent / "optuna_plots" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the printed command reruns the best trial exactly
    command = parent.data.tags["ltr.sweep.best_command"]
    assert f"rerun: {command}" in proc.stdout  # the sweep summary's (ltr.sweep.summary)
    rerun = subprocess.run(
        shlex.split(command),
        cwd=PROJECT_ROOT,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    (result,) = (tmp_path / "outputs").glob("**/ltr_result.json")
    assert json.loads(result.read_text())["value"] == best.value


@pytest.mark.parametrize(
    ("pruner", "pruned"),
    [(None, False), ({"_target_": "optuna.pruners.MedianPruner", "n_startup_trials": 1}, True)],
)
def test_a_job_prunes_with_the_sweeps_pruner_not_optunas_default(tmp_path, monkeypatch, pruner, pruned):
    """A stored study keeps no pruner: the job gets hydra.sweeper.pruner from the sweeper (null: never)."""
    storage = f"sqlite:///{tmp_path}/optuna.db"
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    for _ in range(5):  # enough finished trials for Optuna's default MedianPruner(n_startup_trials=5) to act
        done = study.ask()
        for step in range(5):
            done.report(0.9, step)
        study.tell(done, 0.9)
    trial = study.ask()
    (override_env,) = [o for o in trial_link_overrides(study, trial, storage, pruner) if ENV_PRUNER in o]
    monkeypatch.setenv(ENV_STORAGE, storage)
    monkeypatch.setenv(ENV_STUDY, "s")
    monkeypatch.setenv(ENV_TRIAL, str(trial._trial_id))
    monkeypatch.setenv(ENV_PRUNER, json.dumps(pruner))
    assert json.dumps(pruner) in override_env.replace("\\'", "'")
    cfg = OmegaConf.create({"model": {"params": {"n_trees": 5}, "early_stopping": {"metric": "ndcg@10"}}})
    hook = hook_from_environment(cfg)
    assert any(hook(step, {"valid/ndcg@10": 0.1}) for step in range(5)) is pruned


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (None, optuna.pruners.NopPruner),
        ("median", optuna.pruners.MedianPruner),
        ("successive_halving", optuna.pruners.SuccessiveHalvingPruner),
        ("hyperband", optuna.pruners.HyperbandPruner),
        ("none", optuna.pruners.NopPruner),
    ],
)
def test_the_shipped_search_does_not_prune_by_default_and_each_option_builds_its_pruner(option, expected):
    from helpers import compose_config

    chosen = [f"hparams_search/pruner@hydra.sweeper.pruner={option}"] if option else []
    cfg = compose_config(
        ["+model=lambdamart", "hparams_search=lambdamart_optuna", *chosen], return_hydra_config=True
    )
    pruner = build_pruner(OmegaConf.to_container(cfg.hydra.sweeper.pruner, resolve=True))
    assert type(pruner) is expected


def test_trials_with_equal_binning_reuse_lightgbms_dataset_and_get_the_same_model():
    from ltr.models.engines.lgbm import BINNED

    train, valid = _splits()

    def fit(params: dict) -> np.ndarray:
        ranker = get_ranker_class("lambdamart")({"n_trees": 15, **params}, num_threads=1)
        return ranker.fit(train, valid).predict(valid)

    fresh = [fit({"learning_rate": lr, "min_data_in_leaf": 5}) for lr in (0.05, 0.2)]
    BINNED.enable()
    try:
        shared = [fit({"learning_rate": lr, "min_data_in_leaf": 5}) for lr in (0.05, 0.2)]
        assert BINNED.built == 2  # train and valid, once: the second trial built nothing
        other_bins = fit({"learning_rate": 0.05, "min_data_in_leaf": 5, "max_bin": 63})
        assert BINNED.built == 4  # other binning: new Datasets
    finally:
        BINNED.enable(False)
    for a, b in zip(fresh, shared, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(other_bins, shared[0])


def test_without_feature_pre_filter_trials_differing_in_leaf_size_share_one_dataset():
    """min_data_in_leaf is a Dataset parameter only through feature_pre_filter: with it off (as the
    shipped LightGBM searches set), three leaf sizes share one train + valid Dataset and predict
    exactly like unshared fits; with it on (LightGBM's default) each leaf size bins again."""
    from ltr.models.engines.lgbm import BINNED

    train, valid = _splits()
    no_filter = {"feature_pre_filter": False}

    def fit(min_data_in_leaf: int, engine_params: dict) -> np.ndarray:
        params = {"n_trees": 15, "min_data_in_leaf": min_data_in_leaf, "feature_fraction": 0.8}
        ranker = get_ranker_class("lambdamart")(params, engine_params=engine_params, num_threads=1)
        return ranker.fit(train, valid).predict(valid)

    sizes = (3, 20, 60)
    fresh = [fit(size, no_filter) for size in sizes]
    BINNED.enable()
    try:
        shared = [fit(size, no_filter) for size in sizes]
        assert BINNED.built == 2  # train and valid once for the three leaf sizes
        BINNED.enable(False)
        BINNED.enable()
        for size in sizes:
            fit(size, {})
        assert BINNED.built == 6  # with the filter on, each leaf size is its own binning
    finally:
        BINNED.enable(False)
    for a, b in zip(fresh, shared, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(fresh[0], fresh[2])  # the leaf sizes did change the models


@pytest.mark.slow
def test_a_sweeps_trials_share_data_and_binned_datasets_with_the_same_results(tmp_path):
    """4 trials of the shipped search (min_data_in_leaf searched; the search sets feature_pre_filter
    off): the process builds LightGBM's train and valid Datasets once; share_data=false builds them
    every trial; same values."""
    values = {}
    for share in ("true", "false"):
        root = tmp_path / share
        args = [
            "-m", "+model=lambdamart", "hparams_search=lambdamart_optuna", *TINY_DATA, "model.params.n_trees=20",
            "num_threads=1", "tracking=none", "hydra.sweeper.n_trials=4",
            "hparams_search/pruner@hydra.sweeper.pruner=none", f"hydra.sweeper.share_data={share}",
        ]  # fmt: skip
        proc = run_train_cli(args, root, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        study = optuna.load_study(study_name="lambdamart-synthetic", storage=f"sqlite:///{root}/optuna.db")
        values[share] = [(t.params, t.value) for t in study.trials]
        built = [t.user_attrs.get("ltr.datasets_built") for t in study.trials]
        assert built == ([2, 2, 2, 2] if share == "true" else [None] * 4)
    assert len({p["model.params.min_data_in_leaf"] for p, _ in values["true"]}) > 1
    assert values["true"] == values["false"]


def test_the_sweep_benchmark_prunes_with_the_pruner_a_search_composes():
    """benchmarks/bench_sweep.py reads its pruners from conf/hparams_search/pruner/ (the options a
    search selects), so the benchmarked pruner and the one a user opts into cannot drift."""
    from helpers import benchmark_module, compose_config

    bench = benchmark_module("bench_sweep")
    opted = ["hparams_search/pruner@hydra.sweeper.pruner=" + bench.DEFAULT_PRUNER]
    cfg = compose_config(
        ["+model=lambdamart", "hparams_search=lambdamart_optuna", *opted], return_hydra_config=True
    )
    composed = OmegaConf.to_container(cfg.hydra.sweeper.pruner, resolve=True)
    assert bench.pruner_config(bench.DEFAULT_PRUNER, cfg.model.params.n_trees) == composed
    assert composed["_target_"] == "optuna.pruners.MedianPruner"
    assert bench.pruner_config("median:n_warmup_steps=25,n_startup_trials=3", 100) == {
        **OmegaConf.to_container(OmegaConf.load(PROJECT_ROOT / "conf/hparams_search/pruner/median.yaml")),
        "n_warmup_steps": 25,
        "n_startup_trials": 3,
    }
    rows = [(1.0, 0.5, 0.30, "COMPLETE"), (2.0, 0.9, float("nan"), "PRUNED"), (3.0, 1.2, 0.35, "COMPLETE")]
    assert bench.time_to_reach(rows, 0.34, 1) == 1.2 and bench.time_to_reach(rows, 0.36, 0) is None


def test_the_pruner_replay_stops_a_recorded_curve_where_the_pruner_says_and_keeps_the_others_whole():
    """benchmarks/replay_pruners.py: recorded curves replayed in order; Optuna's MedianPruner decides."""
    from helpers import benchmark_module

    bench = benchmark_module("replay_pruners")
    trials = [{"curve": [0.5] * 8}, {"curve": [0.6] * 8}, {"curve": [0.1] * 8}, {"curve": [0.9] * 8}]
    pruner = optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=3)
    # the third trial is below the median of the two finished ones from the first step after warm-up
    assert bench.replay(trials, pruner) == [None, None, 4, None]


def test_the_oracle_bound_stops_each_trial_the_first_round_after_warm_up_that_it_is_behind_the_kept_one():
    """benchmarks/replay_pruners.py's oracle: the most a pruner with one threshold per round could stop
    while keeping a trial that reaches the target, and the CPU ratio that costs (worked by hand)."""
    import doctest

    from helpers import benchmark_module

    bench = benchmark_module("replay_pruners")
    winner = {"curve": [0.2, 0.4, 0.6, 0.8]}
    crossed = {"curve": [0.3, 0.5, 0.55, 0.6]}  # ahead for two rounds, behind from round 3
    ahead = {"curve": [0.9, 0.9, 0.9, 0.9]}
    short = {"curve": [0.1, 0.45]}  # ended at round 2: behind at round 1 only
    trials = [crossed, ahead, short, winner]
    # warm-up as Optuna's n_warmup_steps: 0 may stop from round 1, 1 from round 2
    assert bench.oracle_stops(trials, keep=3, warmup=0) == [3, None, 1, None]
    assert bench.oracle_stops(trials, keep=3, warmup=1) == [3, None, None, None]
    # a trial that outlives the kept one is stopped the round after the kept one ended; the winner
    # earlier, at round 2 (0.4 < 0.45)
    assert bench.oracle_stops(trials, keep=2, warmup=0) == [3, 3, None, 2]
    # "ahead" is the first trial to reach 0.85; with it kept: 3/4·1 + 2 of the 3 CPU seconds to it
    cpu = [1.0, 2.0, 4.0, 8.0]
    assert bench.cpu_to_reach(cpu, trials, [3, None, 1, None], 0.85) == (0.75 + 2.0) / 3.0
    # with "ahead" pruned too, the target 0.7 is reached at the winner, trial 4: 3/4 + 2·2/4 + 4·1/2 + 8
    # CPU seconds over the 3 the unpruned search spent up to "ahead"; with the winner pruned, never
    assert bench.cpu_to_reach(cpu, trials, [3, 2, 1, None], 0.7) == (0.75 + 1.0 + 2.0 + 8.0) / 3.0
    assert bench.cpu_to_reach(cpu, trials, [3, 2, 1, 2], 0.7) is None
    # the oracle keeps whichever trial reaching the target is cheapest: "ahead" (round 1 stops the
    # others behind it) rather than the winner
    ratio, keep, stops = bench.oracle(cpu, trials, 0.7, warmup=0)
    assert (keep, stops) == (1, [1, None, 1, 1]) and ratio == (0.25 + 2.0) / 3.0
    # not always the first trial to reach the target: keeping a slow starter means running the others
    # longer, keeping a later fast one stops them at round 1 (4·1/4 + 1·1/4 + 1 of the 5 CPU seconds
    # to the slow starter, against 4 + 1 of 5 when keeping it)
    mediocre, slow, fast = (
        {"curve": [0.5, 0.55, 0.6, 0.6]},
        {"curve": [0.1, 0.2, 0.3, 0.8]},
        {"curve": [0.6, 0.7, 0.75, 0.78]},
    )
    assert (
        bench.cpu_to_reach(
            [4.0, 1.0, 1.0], [mediocre, slow, fast], bench.oracle_stops([mediocre, slow, fast], 1, 0), 0.77
        )
        == 1.0
    )
    ratio, keep, _ = bench.oracle([4.0, 1.0, 1.0], [mediocre, slow, fast], 0.77, warmup=0)
    assert (keep, ratio) == (2, 0.45)
    assert doctest.testmod(bench).failed == 0


def test_the_landscape_ranks_the_first_trial_to_reach_the_target_and_correlates_early_values_with_best():
    """Spearman's ρ (a rank correlation, not Pearson) of each trial's value at round k with its best
    value (not its last), and the given trial's rank at round k."""
    from helpers import benchmark_module

    bench = benchmark_module("replay_pruners")
    trials = [
        {"curve": [0.5] * 5 + [0.6]},
        {"curve": [0.4] * 5 + [0.7]},
        {"curve": [0.3] * 5 + [0.8, 0.1]},  # its last value is its worst: ρ uses its best, 0.8
        {"curve": [0.01] * 5 + [0.9]},  # far below the others at round 5: Pearson would not give −1
    ]
    rows = {k: (rho, rank) for k, rho, rank in bench.landscape(trials, winner=2)}
    assert rows[5] == (-1.0, 3)  # at round 5 the order is the reverse of the best values'
    assert rows[10][1] == 4  # from round 7 the third trial holds its last value, 0.1: last of four


def test_the_sweep_benchmark_runs_on_letor_files_of_ones_own(tmp_path, monkeypatch, capsys):
    """bench_sweep.py --train with --valid or --holdout: the searches run on the given files, not on the
    synthetic data; a missing file or a wrong combination is a usage error, not a traceback."""
    from helpers import benchmark_module

    from ltr.data.textgen import write_letor_splits

    bench = benchmark_module("bench_sweep")
    files = write_letor_splits(
        tmp_path, n_queries={"train": 30, "valid": 12}, docs_per_query=20, n_features=8
    )
    sizes = {}  # per split, documents per query in file order (read from the text, not by ltr)
    for split, path in files.items():
        qids = [line.split()[1] for line in path.read_text().splitlines()]
        sizes[split] = [qids.count(q) for q in dict.fromkeys(qids)]
    common = shlex.split("--trials 2 --trees 5 --no-equal-budget --engines lightgbm --setup-trials 2")
    given = ["--train", str(files["train"]), "--valid", str(files["valid"])]
    monkeypatch.setattr("sys.argv", ["bench_sweep.py", *given, *common, "--json", str(tmp_path / "r.json")])
    bench.main()
    train, valid = sizes["train"], sizes["valid"]
    assert f"data: train {len(train)} queries / {sum(train)} rows, valid {len(valid)} / {sum(valid)}" in (
        capsys.readouterr().out
    )
    recorded = json.loads((tmp_path / "r.json").read_text())
    assert [len(recorded["trials"][name]) for name in ("none", "median")] == [2, 2]
    # --holdout: the last 30 % of the training file's 30 queries (9) validate, the first 21 train
    monkeypatch.setattr("sys.argv", ["bench_sweep.py", *given[:2], "--holdout", "0.3", *common])
    bench.main()
    assert f"data: train 21 queries / {sum(train[:21])} rows, valid 9 / {sum(train[21:])}" in (
        capsys.readouterr().out
    )
    for wrong, message in (
        ([*given[:2], *common], "--train goes with one of --valid or --holdout"),
        ([*given[2:], *common], "--train goes with one of --valid or --holdout"),
        ([*given, "--holdout", "0.3", *common], "--valid or --holdout, not both"),
        ([*given[:2], "--holdout", "1", *common], "--holdout: a share between 0 and 1, got 1.0"),
        (["--train", str(tmp_path / "nope.txt"), *given[2:], *common], "nope.txt: no such file"),
        ([*given, *common[:-1], "1"], "--setup-trials: at least 2"),
    ):
        monkeypatch.setattr("sys.argv", ["bench_sweep.py", *wrong])
        with pytest.raises(SystemExit) as exit_:
            bench.main()
        assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_sweep_benchmark_validates_on_data_with_the_training_split_relevance_function():
    """benchmarks/bench_sweep.py's valid split has rows of its own but the training split's relevance
    function: a ranker fitted on train ranks valid (when each split drew its own, the validation
    curves were noise and peaked in the first rounds)."""
    from helpers import benchmark_module, held_out_spearman

    bench = benchmark_module("bench_training_overhead")
    train = bench.synthetic_split(100, 6_000, seed=1, name="train")
    valid = bench.synthetic_split(40, 2_400, seed=2, name="valid")
    assert not np.array_equal(train.X[:100], valid.X[:100])
    shares = np.bincount(valid.y.astype(int), minlength=5) / valid.n_docs
    np.testing.assert_allclose(shares, bench.LABEL_SHARES, atol=0.02)
    # 0.63 here; 0.26 when each split drew its own weights
    assert held_out_spearman(train, valid) > 0.5

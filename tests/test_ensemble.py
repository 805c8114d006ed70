"""Ensembles: member configs, parallel training, fusion, learned blend, stacking, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ltr.core.errors import ConfigError, NotFittedError
from ltr.data.synthetic import generate
from ltr.experiment.schemas import register_configs
from ltr.metrics import evaluate
from ltr.models import BaseRanker, build_ranker, get_ranker_class, load_ranker
from ltr.models.ensembles.ensemble import ENSEMBLE_MODELS
from ltr.models.ensembles.fusion import fuse, normalize_scores
from ltr.models.ensembles.members import derive_seed, expand_members, query_sample, split_threads
from ltr.train import CONF_DIR

FAST = {"n_trees": 25, "num_leaves": 7, "min_data_in_leaf": 5}
NO_ES = {"patience": None}


@pytest.fixture(scope="module")
def splits():
    return {
        "train": generate(150, seed=11, max_docs=60),
        "valid": generate(80, seed=12, max_docs=60, qid_start=10_000),
        "test": generate(80, seed=13, max_docs=60, qid_start=20_000),
    }


def members(*models: str, **extra):
    return [{"model": m, "params": FAST, "early_stopping": NO_ES, **extra} for m in models]


def ndcg10(data, scores) -> float:
    return float(np.nanmean(evaluate(["ndcg@10"], data.y, scores, data.offsets)["ndcg@10"]))


@pytest.fixture(scope="module")
def blend(splits):
    cfg = {
        "name": "ensemble_blend",
        "members": members("lambdamart", "regression", "xendcg"),
        "params": {"n_restarts": 3, "max_steps": 15},
        "n_jobs": 1,
    }
    return build_ranker(cfg, seed=5, num_threads=1).fit(splits["train"], splits["valid"])


# --- configuration ----------------------------------------------------------------------------------


def compose_model(*overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides)).model


@pytest.mark.slow  # ~4 s: every ensemble config composed and built; single configs are fast tests
def test_registry_maps_every_ensemble_config_to_its_class():
    for name, cls in ENSEMBLE_MODELS.items():
        assert get_ranker_class(name) is cls and issubclass(cls, BaseRanker)
        ens = build_ranker(compose_model(f"+model={name}"), seed=3, num_threads=1)
        assert type(ens) is cls and len(ens.member_specs) >= 1


def test_members_are_composed_by_hydra_like_the_app_composes_a_model():
    """A member's config is what ``+model=NAME`` composes, inside an app (its search path) or not."""
    expected = OmegaConf.to_container(compose_model("+model=regression"), resolve=True)
    (spec,) = expand_members(["regression"], seed=0, where="model.members")
    assert spec.config == expected
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):  # as inside ltr.train
        (inside,) = expand_members(["regression"], seed=0, where="model.members")
    assert inside.config == expected


def test_members_come_from_the_running_apps_config_search_path(tmp_path):
    """Inside an app (here a user's own config dir) a member may be the user's model config."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "my_lm.yaml").write_text(
        "defaults:\n  - /model_base/lambdamart@_here_\n  - _self_\nparams: {n_trees: 7}\n"
    )
    register_configs()
    with initialize_config_dir(config_dir=str(tmp_path), version_base="1.3"):
        (spec,) = expand_members(["my_lm"], seed=0, where="model.members")
    assert spec.config["name"] == "lambdamart" and spec.config["params"]["n_trees"] == 7
    assert spec.config["params"]["num_leaves"] == 31  # the rest from the model's block
    with pytest.raises(ConfigError, match="model.members.0: no model config 'my_lm'"):
        expand_members(["my_lm"], seed=0, where="model.members")  # outside: the package's conf/


def test_a_member_is_overridden_from_the_command_line():
    cfg = compose_model(
        "+model=ensemble_mean",
        "model.members.1={model:regression,params:{n_trees:7},early_stopping:{patience:null}}",
    )
    ens = build_ranker(cfg, seed=3, num_threads=1)
    assert [s.label for s in ens.member_specs] == ["lambdamart", "regression_0", "regression_1"]
    regression, plain_regression = ens.member_specs[1], ens.member_specs[2]
    assert plain_regression.config["params"]["n_trees"] == 500
    assert (
        regression.config["params"]["n_trees"] == 7
        and regression.config["early_stopping"]["patience"] is None
    )
    assert regression.config["params"]["learning_rate"] == 0.1  # the rest composed from the model's defaults
    cfg = compose_model(
        "+model=ensemble_blend", "model.members=[lambdamart,linear]", "model.params.metric=err@10"
    )
    ens = build_ranker(cfg, seed=3, num_threads=1)
    assert [s.label for s in ens.member_specs] == ["lambdamart", "linear"] and ens.params_[
        "metric"
    ] == "err@10"


def test_members_expand_with_overrides_bags_and_unique_labels():
    specs = expand_members(
        [
            "lambdamart",
            {"model": "lambdamart", "params": {"n_trees": 7}, "bags": 3, "query_fraction": 0.5},
            "regression",
        ],
        seed=42,
        where="test",
    )
    assert [s.label for s in specs] == [
        "lambdamart_0",
        "lambdamart_1_bag0",
        "lambdamart_1_bag1",
        "lambdamart_1_bag2",
        "regression",
    ]
    assert specs[0].config["params"]["n_trees"] == compose_model("+model=lambdamart").params.n_trees
    assert specs[1].config["params"]["n_trees"] == 7 and specs[1].config["params"]["learning_rate"] == 0.1
    assert [s.seed for s in specs] == [derive_seed(42, i) for i in range(5)]
    assert len({s.seed for s in specs}) == 5
    assert {s.query_fraction for s in specs[1:4]} == {0.5}


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (
            {"members": ["lambdamrt"]},
            r"model.members.0: no model config 'lambdamrt'; known model configs: .*lambdamart",
        ),
        ({"members": []}, "members must be a non-empty list"),
        ({"members": [{"params": {}}]}, r"model.members.0.model: required, not set"),
        (
            {"members": [{"model": "lambdamart", "bag": 2}]},
            r"model.members.0: unknown key\(s\) bag; accepted: model, label, params",
        ),
        (
            {"members": [{"model": "lambdamart", "bags": 0}]},
            r"model.members.0.bags: must be in \[1, inf\], got 0",
        ),
        ({"members": [{"model": "lambdamart", "bags": True}]}, r"model.members.0.bags: expected an integer"),
        (
            {"members": [{"model": "lambdamart", "query_fraction": 1.5}]},
            r"model.members.0.query_fraction: must be in \(0.0, 1.0\], got 1.5",
        ),
        (
            {"members": ["linear", {"model": "lambdamart", "params": {"n_tree": 3}}]},
            r"model.members.1.params: unknown key\(s\) n_tree; lambdamart accepts",
        ),
        (
            {"members": [{"model": "lambdamart", "clicks": {"eta": 1}}]},
            r"model.members.0.clicks: model lambdamart has no clicks block",
        ),
        (
            {"members": ["lambdamart"], "params": {"normalization": "l2"}},
            r"model.params.normalization: expected one of",
        ),
        ({"members": ["lambdamart", "regression"], "params": {"weights": [1.0]}}, "one per member"),
        (
            {"members": ["lambdamart"], "params": {"weights": ["a"]}},
            r"model.params.weights\[0\]: expected a number",
        ),
        ({"members": ["lambdamart"], "n_jobs": -1}, r"model.n_jobs: must be in \[0, inf\], got -1"),
        (
            {"members": ["lambdamart"], "param": {}},
            r"model: unknown key\(s\) param; ensemble_mean accepts: name, members",
        ),
    ],
)
def test_bad_ensemble_configs_name_the_problem(cfg, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker({"name": "ensemble_mean", **cfg}, seed=0, num_threads=1)


def test_bad_blend_and_stack_params():
    with pytest.raises(ConfigError, match="model.params.metric: unknown metric 'ndgc@10'"):
        build_ranker({"name": "ensemble_blend", "members": ["lambdamart"], "params": {"metric": "ndgc@10"}})
    with pytest.raises(ConfigError, match=r"model.params.max_steps: must be in \[1, inf\], got 0"):
        build_ranker({"name": "ensemble_blend", "members": ["lambdamart"], "params": {"max_steps": 0}})
    with pytest.raises(ConfigError, match=r"model.params.n_folds: must be in \[2, inf\], got 1"):
        build_ranker({"name": "ensemble_stack", "members": ["lambdamart"], "params": {"n_folds": 1}})
    with pytest.raises(ConfigError, match=r"model.params.normalizations\[1\]: expected one of"):
        build_ranker(
            {
                "name": "ensemble_stack",
                "members": ["lambdamart"],
                "params": {"normalizations": ["rank", "none"]},
            }
        )
    with pytest.raises(ConfigError, match=r"model.params.k: expected a number >= 0, got -1"):
        build_ranker({"name": "ensemble_rrf", "members": ["lambdamart"], "params": {"k": -1}})
    assert (
        build_ranker({"name": "ensemble_rrf", "members": ["linear"], "params": {"k": np.int64(5)}}).params_[
            "k"
        ]
        == 5
    )
    with pytest.raises(ConfigError, match=r"model.stacker.params: unknown key\(s\) n_tree"):
        build_ranker(
            {
                "name": "ensemble_stack",
                "members": ["lambdamart"],
                "stacker": {"model": "lambdamart", "params": {"n_tree": 5}},
            }
        )
    stack = build_ranker(
        {"name": "ensemble_stack", "members": ["linear"], "stacker": {"params": {"n_trees": 9}}}
    )
    assert stack.stacker_config_["name"] == "lambdamart" and stack.stacker_config_["params"]["n_trees"] == 9
    with pytest.raises(ConfigError, match="model.stacker: no model config 'nope'"):
        build_ranker({"name": "ensemble_stack", "members": ["lambdamart"], "stacker": "nope"})


def test_split_threads_never_oversubscribes():
    for n_members in range(1, 7):
        for n_jobs in range(0, 4):
            for cores in range(1, 9):
                jobs, threads = split_threads(n_members, n_jobs, cores)
                assert 1 <= jobs <= n_members and jobs * threads <= max(cores, 1)
                assert n_jobs == 0 or jobs <= n_jobs


def test_query_sample_keeps_whole_queries(splits):
    train = splits["train"]
    sub = query_sample(train, 0.5, seed=4)
    assert sub.n_queries == 75
    kept = set(sub.query_ids.tolist())
    assert kept <= set(train.query_ids.tolist())
    for q in kept:  # every kept query has all its documents, in order
        assert (sub.y[sub.qid == q] == train.y[train.qid == q]).all()
    assert query_sample(train, 0.5, seed=4).query_ids.tolist() == sub.query_ids.tolist()
    assert query_sample(train, 1.0, seed=4) is train


# --- combinations ------------------------------------------------------------------------------------


def test_fusion_ensembles_combine_standalone_members_and_parallelism_changes_nothing(splits):
    train, valid, test = splits["train"], splits["valid"], splits["test"]
    cfg = {
        "name": "ensemble_rrf",
        "members": members("lambdamart", "regression"),
        "params": {"k": 60, "weights": None},
    }
    serial = build_ranker({**cfg, "n_jobs": 1}, seed=9, num_threads=1).fit(train, valid)
    parallel = build_ranker({**cfg, "n_jobs": 0}, seed=9, num_threads=2).fit(
        train, valid
    )  # 2 jobs x 1 thread
    assert (serial.jobs_, serial.threads_per_job_, parallel.jobs_, parallel.threads_per_job_) == (1, 1, 2, 1)
    np.testing.assert_array_equal(serial.predict(test), parallel.predict(test))
    # each member equals the same model trained on its own with the member's seed
    S = np.column_stack(
        [
            build_ranker(spec.config, seed=spec.seed, num_threads=1).fit(train, valid).predict(test)
            for spec in serial.member_specs
        ]
    )
    np.testing.assert_array_equal(serial.member_scores(test), S)
    np.testing.assert_allclose(serial.predict(test), fuse(S, test.offsets, "rrf", k=60), rtol=1e-15)
    for name, method in (("ensemble_borda", "borda"), ("ensemble_mean", "mean")):
        ens = get_ranker_class(name)(cfg["members"], seed=9, num_threads=1).fit(train, valid)
        np.testing.assert_allclose(ens.predict(test), fuse(S, test.offsets, method), rtol=1e-12)
    assert set(serial.evals_result_) == {"lambdamart/valid", "regression/valid"}


def test_bagging_trains_copies_on_query_samples(splits):
    train, valid, test = splits["train"], splits["valid"], splits["test"]
    cfg = {"name": "ensemble_bagging", "members": members("lambdamart", bags=3, query_fraction=0.6)}
    ens = build_ranker(cfg, seed=2, num_threads=1).fit(train, valid)
    S = ens.member_scores(test)
    assert S.shape == (test.n_docs, 3)
    assert not np.allclose(S[:, 0], S[:, 1])  # different seeds and query samples
    np.testing.assert_allclose(ens.predict(test), S.mean(axis=1), rtol=1e-12)
    spec = ens.member_specs[1]
    alone = build_ranker(spec.config, seed=spec.seed, num_threads=1).fit(
        query_sample(train, 0.6, spec.seed), valid
    )
    np.testing.assert_array_equal(alone.predict(test), S[:, 1])


def test_blend_is_at_least_as_good_as_its_best_member_on_validation(blend, splits):
    valid = splits["valid"]
    S = blend.member_scores(valid)
    members_ndcg = [ndcg10(valid, S[:, j]) for j in range(S.shape[1])]
    blended = ndcg10(valid, blend.predict(valid))
    assert blended >= max(members_ndcg) - 1e-12
    assert blended == pytest.approx(blend.blend_fit_.score, abs=1e-12)
    np.testing.assert_allclose(blend.blend_fit_.member_scores, members_ndcg, atol=1e-12)
    assert np.abs(blend.weights_).sum() == pytest.approx(1.0)
    np.testing.assert_allclose(
        blend.predict(valid), normalize_scores(S, valid.offsets, "zscore") @ blend.weights_, rtol=1e-12
    )


def test_blend_is_deterministic_for_a_seed(blend, splits):
    again = build_ranker(
        {
            "name": "ensemble_blend",
            "members": members("lambdamart", "regression", "xendcg"),
            "params": {"n_restarts": 3, "max_steps": 15},
            "n_jobs": 1,
        },
        seed=5,
        num_threads=1,
    ).fit(splits["train"], splits["valid"])
    np.testing.assert_array_equal(again.weights_, blend.weights_)
    np.testing.assert_array_equal(again.predict(splits["test"]), blend.predict(splits["test"]))


def test_learned_combinations_need_validation_data(splits):
    ens = build_ranker({"name": "ensemble_blend", "members": members("lambdamart")}, seed=0, num_threads=1)
    with pytest.raises(ConfigError, match="needs a validation split"):
        ens.fit(splits["train"])


def test_stacking_cross_fits_on_validation_queries(splits):
    train, valid, test = splits["train"], splits["valid"], splits["test"]
    stacker = {
        "model": "lambdamart",
        "params": {"n_trees": 20, "num_leaves": 5, "min_data_in_leaf": 5},
        "early_stopping": NO_ES,
    }
    cfg = {
        "name": "ensemble_stack",
        "members": members("lambdamart", "regression"),
        "params": {"n_folds": 3},
        "stacker": stacker,
    }
    ens = build_ranker(cfg, seed=4, num_threads=1).fit(train, valid)
    assert len(ens.stackers_) == 3
    from ltr.data import RankingData
    from ltr.models.ensembles.blend import query_folds, stack_features

    F = stack_features(ens.member_scores(valid), valid.offsets, ("zscore", "rank"))
    level2 = RankingData(X=F, y=valid.y, qid=valid.qid)
    folds = query_folds(valid.n_queries, 3, 4)
    oof = ens.predict(valid)  # the validation split gets its out-of-fold scores
    for f, model in enumerate(ens.stackers_):
        held = np.flatnonzero(folds == f)
        rows = level2.row_indices(held)
        np.testing.assert_array_equal(oof[rows], model.predict(F[rows]))
        # fold f's model is exactly a model fit on the other folds only
        refit = build_ranker(ens.stacker_config_, seed=derive_seed(4, 10_000 + f), num_threads=1)
        refit.fit(level2.subset(np.flatnonzero(folds != f)))
        np.testing.assert_array_equal(refit.predict(F), model.predict(F))
    F_test = stack_features(ens.member_scores(test), test.offsets, ("zscore", "rank"))
    np.testing.assert_allclose(ens.predict(test), np.mean([m.predict(F_test) for m in ens.stackers_], axis=0))
    assert ndcg10(test, ens.predict(test)) > 0.5


# --- persistence -------------------------------------------------------------------------------------


def test_save_load_round_trip_gives_identical_scores(blend, splits, tmp_path):
    blend.save(tmp_path / "ens")
    manifest = json.loads((tmp_path / "ens" / "manifest.json").read_text())
    assert manifest["model"] == "ensemble_blend" and manifest["format"] == "ltr-ranker"
    assert [m["dir"] for m in manifest["members"]] == [
        "members/00_lambdamart",
        "members/01_regression",
        "members/02_xendcg",
    ]
    for m in manifest["members"]:  # members in their native format (LightGBM text model), no pickle
        member_manifest = json.loads((tmp_path / "ens" / m["dir"] / "manifest.json").read_text())
        assert member_manifest["model"] == m["model"]
    assert not list((tmp_path / "ens").rglob("*.pkl"))
    loaded = load_ranker(tmp_path / "ens")
    assert type(loaded) is type(blend)
    np.testing.assert_array_equal(loaded.weights_, blend.weights_)
    for split in ("valid", "test"):
        np.testing.assert_array_equal(loaded.predict(splits[split]), blend.predict(splits[split]))


def test_an_ensemble_with_a_users_member_config_loads_without_that_config_folder(splits, tmp_path):
    """The manifest records each member's composed config, so loading needs no config folder."""
    user_conf = tmp_path / "conf"
    (user_conf / "model").mkdir(parents=True)
    (user_conf / "model" / "my_lm.yaml").write_text(
        "defaults:\n  - /model_base/lambdamart@_here_\n  - _self_\nparams: {n_trees: 4, min_data_in_leaf: 5}\n"
    )
    register_configs()
    with initialize_config_dir(config_dir=str(user_conf), version_base="1.3"):  # as ltr.train --config-dir
        ens = build_ranker(
            {
                "name": "ensemble_mean",
                "members": ["my_lm", {"model": "my_lm", "label": "short", "params": {"n_trees": 2}}],
            },
            seed=5,
            num_threads=1,
        )
        ens.fit(splits["train"], splits["valid"])
    ens.save(tmp_path / "ens")
    loaded = load_ranker(tmp_path / "ens")  # outside the user's config folder: my_lm is not composable
    assert [s.label for s in loaded.member_specs] == ["my_lm", "short"]
    assert [s.config for s in loaded.member_specs] == [s.config for s in ens.member_specs]
    assert [s.config["params"]["n_trees"] for s in loaded.member_specs] == [4, 2]
    np.testing.assert_array_equal(loaded.predict(splits["test"]), ens.predict(splits["test"]))


def test_stack_round_trip_keeps_out_of_fold_validation_scores(splits, tmp_path):
    cfg = {
        "name": "ensemble_stack",
        "members": members("lambdamart"),
        "params": {"n_folds": 2, "normalizations": ["minmax"]},
        "stacker": {"model": "regression", "params": {"n_trees": 10}, "early_stopping": NO_ES},
    }
    ens = build_ranker(cfg, seed=1, num_threads=1).fit(splits["train"], splits["valid"])
    ens.save(tmp_path / "stack")
    loaded = load_ranker(tmp_path / "stack")
    for split in ("valid", "test"):
        np.testing.assert_array_equal(loaded.predict(splits[split]), ens.predict(splits[split]))


def test_unfitted_ensemble_refuses_to_predict(splits, tmp_path):
    ens = build_ranker({"name": "ensemble_mean", "members": ["lambdamart"]}, seed=0, num_threads=1)
    with pytest.raises(NotFittedError, match="MeanEnsemble is not fitted yet"):
        ens.predict(splits["test"])
    with pytest.raises(NotFittedError, match="not fitted"):
        ens.member_scores(splits["test"])
    with pytest.raises(NotFittedError, match="not fitted"):
        ens.save(tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_members_across_engines_save_in_their_native_formats(splits, tmp_path):
    train, valid, test = splits["train"], splits["valid"], splits["test"]
    cfg = {
        "name": "ensemble_borda",
        "members": [
            {"model": "lambdamart", "params": FAST, "early_stopping": NO_ES},
            {"model": "lambdamart_xgb", "params": {"n_trees": 20, "max_depth": 3}, "early_stopping": NO_ES},
            "linear",
        ],
    }
    ens = build_ranker(cfg, seed=6, num_threads=1).fit(train, valid)
    engines = [
        json.loads((tmp_path / "e" / m / "manifest.json").read_text())["engine"]
        for m in _saved(ens, tmp_path / "e")
    ]
    assert engines == ["lightgbm", "xgboost", "sklearn"]
    loaded = load_ranker(tmp_path / "e")
    np.testing.assert_array_equal(loaded.predict(test), ens.predict(test))
    np.testing.assert_allclose(ens.predict(test), fuse(ens.member_scores(test), test.offsets, "borda"))


def _saved(ens, folder: Path) -> list[str]:
    ens.save(folder)
    return [m["dir"] for m in json.loads((folder / "manifest.json").read_text())["members"]]


@pytest.mark.shared_data
def test_blend_beats_or_ties_its_best_member_on_real_yahoo_sample(shared_data):
    from ltr.data.svmlight import load_svmlight

    data = load_svmlight(shared_data / "lightgbm_lambdarank" / "rank.train", output="dense")
    order = np.random.default_rng(0).permutation(data.n_queries)
    train, valid = data.subset(np.sort(order[:140])), data.subset(np.sort(order[140:]))
    cfg = {
        "name": "ensemble_blend",
        "members": [
            {
                "model": "lambdamart",
                "params": {"n_trees": 40, "min_data_in_leaf": 10},
                "early_stopping": NO_ES,
            },
            {
                "model": "regression",
                "params": {"n_trees": 40, "min_data_in_leaf": 10},
                "early_stopping": NO_ES,
            },
            "linear",
        ],
        "params": {"metric": "err@10", "n_restarts": 3},
    }
    ens = build_ranker(cfg, seed=0, num_threads=1).fit(train, valid)
    S = ens.member_scores(valid)

    def err10(scores):
        return float(np.nanmean(evaluate(["err@10"], valid.y, scores, valid.offsets)["err@10"]))

    assert err10(ens.predict(valid)) >= max(err10(S[:, j]) for j in range(S.shape[1])) - 1e-12


def test_on_iteration_reports_every_member_under_its_label(splits):
    seen: dict[str, int] = {}

    def record(i, values):
        for key in values:
            seen[key] = seen.get(key, 0) + 1

    cfg = {"name": "ensemble_mean", "members": members("lambdamart", "regression"), "n_jobs": 2}
    build_ranker(cfg, seed=1, num_threads=2).fit(splits["train"], splits["valid"], on_iteration=record)
    assert seen["lambdamart/valid/ndcg@10"] == seen["regression/valid/ndcg@10"] == 25  # one call per round
    # and, after each member, that member's best validation value unprefixed (what a search prunes on)
    assert seen["valid/ndcg@10"] == 2
    assert {key.split("/")[0] for key in seen} == {"lambdamart", "regression", "valid"}


def test_sklearn_clone_rebuilds_an_unfitted_copy():
    from sklearn.base import clone

    ens = build_ranker(
        {"name": "ensemble_stack", "members": ["lambdamart"], "stacker": "linear"}, seed=3, num_threads=1
    )
    copy = clone(ens)
    assert type(copy) is type(ens) and copy.get_params() == ens.get_params()
    assert not hasattr(copy, "rankers_")


def test_member_overrides_accept_numpy_scalars():
    # the Python API takes numpy scalars everywhere (ltr.core.config_check); a member's overrides are merged
    # into its composed config with OmegaConf, which refused np.float64 (UnsupportedValueType)
    ranker = build_ranker(
        {
            "name": "ensemble_mean",
            "members": ["lambdamart", {"model": "linear", "params": {"alpha": np.float64(2)}}],
        }
    )
    assert ranker.get_params()["members"][1]["params"]["alpha"] == 2.0

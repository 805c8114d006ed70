"""Model registry, configs and parameter validation: build_ranker, available_models, conf/model/*.yaml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from ltr.core.config_check import defaults
from ltr.core.errors import ConfigError, NotFittedError
from ltr.experiment.schemas import register_configs
from ltr.models import available_models, build_ranker, get_ranker_class
from ltr.models.params import MODEL_BASE_GROUP, MODEL_CONFIGS, MODEL_PARAMS, resolve_params
from ltr.train import CONF_DIR

CONF = Path(__file__).resolve().parents[1] / "conf" / "model"


def model_configs() -> list[Path]:
    return sorted(CONF.glob("*.yaml"))


def compose_model(name: str, *overrides: str) -> dict:
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[f"+model={name}", *overrides])
    return OmegaConf.to_container(cfg.model, resolve=True)


def leaves(tree: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def yaml_body(path: Path) -> dict:
    body = OmegaConf.to_container(OmegaConf.load(path))
    body.pop("defaults")
    return body


@pytest.mark.parametrize("path", model_configs(), ids=lambda p: p.stem)
def test_every_config_composes_to_the_class_defaults_plus_its_deltas(path):
    cls = get_ranker_class(path.stem)
    composed = compose_model(path.stem)
    expected = OmegaConf.to_container(OmegaConf.merge(defaults(cls.config_schema), yaml_body(path)))
    assert composed == expected
    assert composed["name"] == path.stem and composed["params"].keys() == cls.default_params.keys()
    ranker = build_ranker(composed, seed=1, num_threads=1)
    assert isinstance(ranker, cls)


@pytest.mark.parametrize("path", model_configs(), ids=lambda p: p.stem)
def test_model_yamls_hold_only_what_differs_from_the_class(path):
    raw = OmegaConf.to_container(OmegaConf.load(path))
    assert raw["defaults"] == [f"/{MODEL_BASE_GROUP}/{path.stem}@_here_", "_self_"]
    base = leaves(defaults(MODEL_CONFIGS[path.stem]))
    restated = {k: v for k, v in leaves(yaml_body(path)).items() if k in base and base[k] == v}
    assert restated == {}, f"{path.name} restates defaults of {path.stem}: {restated}"


def test_every_model_has_one_config_block_and_its_class_uses_it():
    assert set(available_models()) == set(MODEL_CONFIGS)
    for name in available_models():
        cls = get_ranker_class(name)
        assert cls.config_schema is MODEL_CONFIGS[name]
        assert cls.default_params == defaults(MODEL_CONFIGS[name])["params"]


def test_exactly_the_click_trained_models_have_a_clicks_block():
    from ltr.models.clicks.unbiased import ClickTrained

    for name in available_models():
        cls = get_ranker_class(name)
        assert issubclass(cls, ClickTrained) == ("clicks" in cls.config_keys()), name


def test_click_and_one_shot_models_default_to_no_early_stopping():
    assert get_ranker_class("lambdamart")(seed=1)._resolve().early_stopping["patience"] == 50
    for name in ("lambdamart_unbiased", "lambdamart_xgb_clicks", "linear", "feature"):
        assert get_ranker_class(name)()._resolve().early_stopping["patience"] is None, name


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("model.params.num_leaves=abc", "num_leaves"),
        ("model.params.bagging_by_query=maybe", "bagging_by_query"),
        ("model.params.n_tree=3", "n_tree"),
        ("model.early_stopping.patience=soon", "patience"),
    ],
)
def test_wrong_type_or_unknown_key_fails_while_hydra_composes(override, key):
    with pytest.raises((ConfigCompositionException, ValidationError)) as info:
        compose_model("lambdamart", override)
    assert key in str(info.value)


def test_command_line_overrides_reach_the_composed_model():
    cfg = compose_model("lambdamart_unbiased", "model.params.num_leaves=7", "model.clicks.eta=0.5")
    assert cfg["params"]["num_leaves"] == 7 and cfg["clicks"]["eta"] == 0.5
    assert cfg["params"]["n_trees"] == 200  # the click models' own default


def test_registry_and_config_files_name_the_same_models():
    on_disk = {p.stem for p in model_configs()}
    assert set(available_models()) >= on_disk
    missing = sorted(set(available_models()) - on_disk)
    assert missing == [], f"registered models without conf/model/NAME.yaml: {missing}"


def test_unknown_model_lists_known_models():
    with pytest.raises(ConfigError, match=r"unknown model 'lambdamrt'; known models: .*lambdamart"):
        build_ranker({"name": "lambdamrt"})
    with pytest.raises(ConfigError, match="needs a 'name'"):
        build_ranker({"params": {}})


def test_unknown_parameter_lists_accepted_ones():
    with pytest.raises(
        ConfigError,
        match=r"model.params: unknown key\(s\) n_tree; lambdamart accepts: n_trees, learning_rate, ",
    ):
        build_ranker({"name": "lambdamart", "params": {"n_tree": 3}})
    with pytest.raises(ConfigError, match=r"model: unknown key\(s\) param; lambdamart accepts: name, params"):
        build_ranker({"name": "lambdamart", "param": {}})
    with pytest.raises(
        ConfigError,
        match=r"model lambdamart_xgb: model.params.min_data_in_leaf is not supported: XGBoost has no",
    ):
        build_ranker({"name": "lambdamart_xgb", "params": {"min_data_in_leaf": 3}})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"learning_rate": 0}, r"model.params.learning_rate: must be in \(0.0, inf\], got 0"),
        ({"n_trees": 2.5}, r"model.params.n_trees: expected an integer, got 2.5"),
        ({"n_trees": True}, r"model.params.n_trees: expected an integer, got True"),
        ({"n_trees": 0}, r"model.params.n_trees: must be in \[1, inf\], got 0"),
        ({"feature_fraction": 1.5}, r"model.params.feature_fraction: must be in \(0.0, 1.0\]"),
        ({"bagging_by_query": "yes"}, r"model.params.bagging_by_query: expected true or false"),
        ({"bagging_by_query": 1}, r"model.params.bagging_by_query: expected true or false, got 1"),
        ({"label_gain": "exp"}, r"model.params.label_gain: expected 'exp2', 'linear' or a list"),
        ({"label_gain": [0, -1]}, r"model.params.label_gain: gains must be .* >= 0"),
        ({"num_leaves": "31"}, r"model.params.num_leaves: expected an integer, got '31'"),
        ({"max_bin": None}, r"model.params.max_bin: must be set \(got null\)"),
    ],
)
def test_bad_values_name_the_parameter(params, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker({"name": "lambdamart", "params": params})


def test_numpy_scalars_are_accepted_as_plain_numbers():
    r = build_ranker(
        {
            "name": "lambdamart",
            "params": {"n_trees": np.int64(7), "learning_rate": np.float64(0.2), "num_leaves": np.int32(5)},
        },
        seed=np.int64(3),
        num_threads=np.int64(1),
    )
    resolved = r._resolve().params
    assert (resolved["n_trees"], resolved["learning_rate"], resolved["num_leaves"]) == (7, 0.2, 5)
    assert type(resolved["n_trees"]) is int and type(resolved["learning_rate"]) is float
    feature = build_ranker({"name": "feature", "params": {"feature": np.int64(2), "direction": "asc"}})
    assert feature._resolve().params["feature"] == 2


def test_bad_early_stopping_block():
    with pytest.raises(ConfigError, match=r"model.early_stopping.metric: unknown metric 'ndgc@10'"):
        build_ranker({"name": "lambdamart", "early_stopping": {"metric": "ndgc@10"}})
    with pytest.raises(ConfigError, match=r"model.early_stopping.preset: unknown metric preset 'lgbm'"):
        build_ranker({"name": "lambdamart", "early_stopping": {"preset": "lgbm"}})
    with pytest.raises(ConfigError, match=r"model.early_stopping.patience: must be in \[0, inf\], got -1"):
        build_ranker({"name": "lambdamart", "early_stopping": {"patience": -1}})
    with pytest.raises(ConfigError, match=r"model.early_stopping: unknown key\(s\) rounds; accepted: "):
        build_ranker({"name": "lambdamart", "early_stopping": {"rounds": 3}})
    with pytest.raises(ConfigError, match=r"model.early_stopping.eval_train: expected true or false"):
        build_ranker({"name": "lambdamart", "early_stopping": {"eval_train": "no"}})
    assert (
        build_ranker({"name": "lambdamart", "early_stopping": {"patience": 0}})
        ._resolve()
        .early_stopping["patience"]
        is None
    )


def test_bad_engine_params_and_clicks_name_the_block():
    with pytest.raises(ConfigError, match=r"model.engine_params: expected a mapping"):
        build_ranker({"name": "lambdamart", "engine_params": [1]})
    with pytest.raises(ConfigError, match=r"model.clicks.epsilon: must be in \[0.0, 1.0\], got 2"):
        build_ranker({"name": "lambdamart_unbiased", "clicks": {"epsilon": 2}})
    with pytest.raises(ConfigError, match=r"model.clicks.logging.kind: expected one of \['feature'\]"):
        build_ranker({"name": "lambdamart_clicks", "clicks": {"logging": {"kind": "model"}}})


def test_seed_and_threads_checked():
    with pytest.raises(ConfigError, match=r"num_threads: must be in \[0, inf\], got -1"):
        build_ranker({"name": "lambdamart"}, num_threads=-1)
    with pytest.raises(ConfigError, match="seed: expected an integer, got 1.5"):
        build_ranker({"name": "lambdamart"}, seed=1.5)
    with pytest.raises(ConfigError, match="seed: expected an integer, got True"):
        build_ranker({"name": "lambdamart"}, seed=True)


def test_scikit_learn_clone_and_params():
    from sklearn.base import clone

    r = build_ranker({"name": "lambdamart", "params": {"n_trees": 7}}, seed=5, num_threads=1)
    c = clone(r)
    assert type(c) is type(r) and c.get_params() == r.get_params() and c is not r
    r.set_params(params={"n_trees": 9})
    assert r.get_params()["params"] == {"n_trees": 9}
    with pytest.raises(ConfigError, match="unknown argument 'trees'"):
        r.set_params(trees=3)
    with pytest.raises(ConfigError, match="model.params.n_trees: must be in"):
        r.set_params(params={"n_trees": -1})


def test_an_unfitted_ranker_raises_not_fitted_error():
    r = build_ranker({"name": "linear"})
    for use in (lambda: r.predict(np.zeros((2, 3))), lambda: r.save("unused"), lambda: r.n_iterations_):
        with pytest.raises(NotFittedError, match="Linear is not fitted yet: call fit"):
            use()
    assert not hasattr(r, "n_iterations_")  # also an AttributeError, as in scikit-learn


def test_resolve_params_fills_defaults():
    assert resolve_params(MODEL_PARAMS["linear"], {}, model="linear") == {"alpha": 1.0}
    assert (
        resolve_params(MODEL_PARAMS["random_forest"], {"n_trees": 4}, model="random_forest")["n_trees"] == 4
    )

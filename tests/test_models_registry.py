"""Model registry, configs and parameter validation: build_ranker, available_models, conf/model/*.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from ltr.errors import ConfigError
from ltr.models import available_models, build_ranker, get_ranker_class
from ltr.models.params import resolve_params

CONF = Path(__file__).resolve().parents[1] / "conf" / "model"


def model_configs() -> list[Path]:
    return sorted(CONF.glob("*.yaml"))


@pytest.mark.parametrize("path", model_configs(), ids=lambda p: p.stem)
def test_every_config_builds_and_lists_the_class_defaults(path):
    cfg = OmegaConf.load(path)
    assert cfg.name == path.stem
    ranker = build_ranker(cfg, seed=1, num_threads=1)  # DictConfig accepted as is
    cls = get_ranker_class(path.stem)
    assert isinstance(ranker, cls)
    # the YAML spells out every default of the class, so the config file is the whole truth
    assert OmegaConf.to_container(cfg.params) == cls.default_params


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
        match=r"model lambdamart: unknown parameter\(s\) params.n_tree; lambdamart accepts: .*n_trees",
    ):
        build_ranker({"name": "lambdamart", "params": {"n_tree": 3}})
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) param"):
        build_ranker({"name": "lambdamart", "param": {}})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"learning_rate": 0}, r"params.learning_rate: must be in \(0.0, inf\], got 0"),
        ({"n_trees": 2.5}, r"params.n_trees: expected an integer, got 2.5"),
        ({"feature_fraction": 1.5}, r"params.feature_fraction: must be in \(0.0, 1.0\]"),
        ({"bagging_by_query": "yes"}, r"params.bagging_by_query: expected true or false"),
        ({"label_gain": "exp"}, r"params.label_gain: expected 'exp2', 'linear' or a list"),
        ({"label_gain": [0, -1]}, r"params.label_gain: gains must be .* >= 0"),
        ({"num_leaves": "31"}, r"params.num_leaves: expected a number, got '31'"),
    ],
)
def test_bad_values_name_the_parameter(params, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker({"name": "lambdamart", "params": params})


def test_bad_early_stopping_block():
    with pytest.raises(ConfigError, match=r"early_stopping: unknown metric 'ndgc@10'"):
        build_ranker({"name": "lambdamart", "early_stopping": {"metric": "ndgc@10"}})
    with pytest.raises(ConfigError, match=r"early_stopping: unknown metric preset 'lgbm'"):
        build_ranker({"name": "lambdamart", "early_stopping": {"preset": "lgbm"}})
    with pytest.raises(ConfigError, match=r"early_stopping.patience must be an integer >= 0"):
        build_ranker({"name": "lambdamart", "early_stopping": {"patience": -1}})
    with pytest.raises(ConfigError, match=r"unknown early_stopping key\(s\) \['rounds'\]"):
        build_ranker({"name": "lambdamart", "early_stopping": {"rounds": 3}})


def test_seed_and_threads_checked():
    with pytest.raises(ConfigError, match="num_threads must be an integer >= 0"):
        build_ranker({"name": "lambdamart"}, num_threads=-1)
    with pytest.raises(ConfigError, match="seed must be an integer"):
        build_ranker({"name": "lambdamart"}, seed=1.5)


def test_scikit_learn_clone_and_params():
    from sklearn.base import clone

    r = build_ranker({"name": "lambdamart", "params": {"n_trees": 7}}, seed=5, num_threads=1)
    c = clone(r)
    assert type(c) is type(r) and c.get_params() == r.get_params() and c is not r
    r.set_params(params={"n_trees": 9})
    assert r.get_params()["params"] == {"n_trees": 9}
    with pytest.raises(ConfigError, match="unknown argument 'trees'"):
        r.set_params(trees=3)


def test_resolve_params_fills_defaults():
    assert resolve_params({"a_rate": 1, "n_trees": 3}, {"n_trees": 4}, model="m") == {
        "a_rate": 1,
        "n_trees": 4,
    }

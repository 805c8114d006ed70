"""Typed config schemas: a wrong type fails when the config is composed (or before any work), not mid-run."""

from __future__ import annotations

import os

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ValidationError

from ltr.errors import ConfigError
from ltr.schemas import metric_direction, register_configs, threads_per_job, validate_config
from ltr.train import CONF_DIR


def _compose(overrides: list[str]):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=["+model=lambdamart", *overrides])


@pytest.mark.parametrize(
    "override",
    [
        "eval.bootstrap.B=many",
        "eval.bootstrap.confidence=high",
        "tracking.log_model=maybe",
        "eval.curve.max_k=[1]",
        "data.n_queries.train=many",
        "data.p_empty=lots",
        "data.seed=abc",
    ],
)
def test_wrong_types_in_typed_groups_fail_at_composition(override):
    with pytest.raises((ConfigCompositionException, ValidationError)) as info:
        _compose([override])
    assert override.split("=")[0].split(".")[-1] in str(info.value)


def test_defaults_compose_and_validate():
    cfg = _compose([])
    validate_config(cfg)
    assert cfg.eval.bootstrap.B == 10_000 and cfg.tracking.log_plots is True
    assert cfg.backend.name == "local"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("+data.typo=1", "unknown key(s) typo"),
    ],
)
def test_synthetic_data_is_checked_before_any_work(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_config(_compose([override]))


def test_every_data_config_composes_and_validates():
    names = sorted(p.stem for p in (CONF_DIR / "data").glob("*.yaml"))
    assert "synthetic" in names
    for name in names:
        cfg = _compose([f"data={name}"])
        validate_config(cfg)
        assert cfg.data.name


def test_backend_is_checked():
    validate_config(_compose(["backend=dask"]))
    with pytest.raises(ConfigError, match="backend.n_workers='two'"):
        validate_config(_compose(["backend=dask", "backend.n_workers=two"]))


def test_resolvers():
    assert metric_direction("ndcg@10") == metric_direction("err@10") == "maximize"
    assert metric_direction("rmse") == "minimize"
    cores = os.cpu_count() or 1
    assert threads_per_job(1) == cores and threads_per_job(cores) == 1 and threads_per_job(10 * cores) == 1
    assert threads_per_job(0) == 1  # 0 jobs = one per core

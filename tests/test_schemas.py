"""Typed config schemas: a wrong type fails when the config is composed (or before any work), not mid-run."""

from __future__ import annotations

import os

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from ltr.config_check import defaults
from ltr.errors import ConfigError
from ltr.schemas import (
    BackendSchema,
    EvalSchema,
    TrackingSchema,
    metric_direction,
    register_configs,
    threads_per_job,
    validate_config,
)
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
    cfg = _compose(["backend=dask"])
    validate_config(cfg)
    assert cfg.backend.n_workers == 2 and cfg.backend.scheduler_address is None  # defaults from the schema
    with pytest.raises(ConfigCompositionException, match="n_workers"):
        _compose(["backend=dask", "backend.n_workers=two"])
    with pytest.raises(ConfigError, match=r"backend.n_workers: must be in \[1, inf\], got 0"):
        validate_config(_compose(["backend=dask", "backend.n_workers=0"]))
    with pytest.raises(ConfigError, match=r"backend.name: expected one of \['local', 'dask'\], got 'cloud'"):
        validate_config(_compose(["backend.name=cloud"]))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("eval.bootstrap.B=-1", r"eval.bootstrap.B: must be in \[0, inf\], got -1"),
        ("eval.bootstrap.confidence=1.0", r"eval.bootstrap.confidence: must be in \(0.0, 1.0\), got 1.0"),
        ("eval.bootstrap.method=student", r"eval.bootstrap.method: expected one of \['bca', 'percentile'\]"),
        ("data.p_empty=2.0", r"data.p_empty: must be in \[0.0, 1.0\], got 2.0"),
        ("data.n_queries.train=-5", r"data.n_queries.train: must be in \[0, inf\], got -5"),
    ],
)
def test_ranges_are_checked_before_any_work(override, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(_compose([override]))


def test_resolvers():
    assert metric_direction("ndcg@10") == metric_direction("err@10") == "maximize"
    assert metric_direction("rmse") == "minimize"
    cores = os.cpu_count() or 1
    assert threads_per_job(1) == cores and threads_per_job(cores) == 1 and threads_per_job(10 * cores) == 1
    assert threads_per_job(0) == 1  # 0 jobs = one per core


@pytest.mark.parametrize(
    ("group", "schema"), [("eval", EvalSchema), ("tracking", TrackingSchema), ("backend", BackendSchema)]
)
def test_group_yamls_on_a_schema_restate_none_of_its_defaults(group, schema):
    base = defaults(schema)
    for path in sorted((CONF_DIR / group).glob("*.yaml")):
        body = OmegaConf.to_container(OmegaConf.load(path))
        if body.pop("defaults", None) != ["schema", "_self_"]:
            continue  # e.g. backend/local.yaml: just `name: local`, no schema composed
        restated = {k: v for k, v in body.items() if k in base and base[k] == v}
        assert restated == {}, f"{path.name} restates {schema.__name__} defaults: {restated}"
        composed = _compose([f"{group}={path.stem}"])[group]
        assert OmegaConf.to_container(composed) == {**base, **body}

"""Typed config schemas: a wrong type fails when the config is composed (or before any work), not mid-run."""

from __future__ import annotations

import os

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from ltr.core.config_check import defaults
from ltr.core.errors import ConfigError
from ltr.experiment.schemas import (
    DATA_SCHEMAS,
    BackendSchema,
    EvalSchema,
    TrackingSchema,
    register_configs,
    threads_per_job,
    validate_config,
)
from ltr.sweep.summary import metric_direction
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
        ("data.p_empty=2.0", r"data.p_empty: must be in \[0.0, 1.0\), got 2.0"),
        ("data.n_queries.train=-5", r"data.n_queries.train: must be in \[1, inf\], got -5"),
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


def _schema_nodes(path, body):
    """(where the node's keys sit in the YAML body, the node's defaults) for each ConfigStore node composed.

    ``schema`` / ``<kind>_schema`` in the file's own group, ``/model_base/NAME@_here_``, and plugin
    overrides such as ``override /hydra/launcher: joblib`` (a ``@package _global_`` file: the block sits
    at ``hydra.launcher``).
    """
    from hydra.core.config_store import ConfigStore

    group = path.parent.relative_to(CONF_DIR).as_posix()
    for entry in body.get("defaults", []):
        if isinstance(entry, dict):
            ((key, name),) = entry.items()
            if not key.startswith("override /"):
                continue
            node_group = key.removeprefix("override /")
            where = node_group.split("/")
        else:
            entry, _, package = entry.partition("@")
            if entry == "_self_":
                continue
            node_group, _, name = (
                entry.lstrip("/").rpartition("/") if entry.startswith("/") else (group, "", entry)
            )
            where = [] if package in ("", "_here_") else package.split(".")
        try:
            node = ConfigStore.instance().load(f"{node_group}/{name}.yaml").node
        except Exception:  # a YAML file of the tree, not a stored schema
            continue
        yield where, OmegaConf.to_container(node)


def _restated(body, base, prefix=""):
    """Keys of ``body`` whose value equals the schema default ``base`` (nested blocks compared key by key)."""
    out = {}
    for key, value in body.items():
        if key not in base:
            continue
        if isinstance(value, dict) and isinstance(base[key], dict) and value:
            out |= _restated(value, base[key], f"{prefix}{key}.")
        elif value == base[key]:
            out[f"{prefix}{key}"] = value
    return out


CONF_YAMLS = sorted(p for p in CONF_DIR.rglob("*.yaml") if p.name != "config.yaml")


@pytest.fixture(scope="module")
def composed_once():
    """One composition: it registers ltr's schemas and discovers Hydra's plugins (launcher/sweeper nodes),
    both process-wide, for the tests that read the ConfigStore afterwards."""
    return _compose([])


@pytest.mark.parametrize("path", CONF_YAMLS, ids=[p.relative_to(CONF_DIR).as_posix() for p in CONF_YAMLS])
def test_no_conf_yaml_restates_a_default_of_the_schema_it_composes(path, composed_once):
    body = OmegaConf.to_container(OmegaConf.load(path))
    for where, base in _schema_nodes(path, body):
        block = body
        for key in where:
            block = block.get(key, {})
        restated = _restated({k: v for k, v in block.items() if k != "defaults"}, base)
        assert restated == {}, (
            f"{path.relative_to(CONF_DIR)} restates defaults of the schema it composes: {restated}"
        )


def test_the_restated_defaults_check_sees_each_kind_of_node(tmp_path, composed_once):
    """The check above finds the nodes of each defaults-list form (else it would pass vacuously)."""
    kinds = {}
    for path in CONF_YAMLS:
        body = OmegaConf.to_container(OmegaConf.load(path))
        for where, base in _schema_nodes(path, body):
            kinds.setdefault(path.parent.name, []).append((tuple(where), sorted(base)[:1]))
    assert {"data", "eval", "tracking", "backend", "model", "launcher", "hparams_search"} <= set(kinds)
    assert kinds["launcher"][0][0] == ("hydra", "launcher")
    # and it flags a restated default, nested or at top level
    assert _restated({"fold": 1, "dir": "x", "parse": {}}, {"fold": 1, "dir": None, "parse": {}}) == {
        "fold": 1,
        "parse": {},
    }
    assert _restated(
        {"n_queries": {"train": 600, "valid": 5}}, {"n_queries": {"train": 600, "valid": 200}}
    ) == {"n_queries.train": 600}


SCHEMA_OF = {
    "eval/schema": EvalSchema,
    "tracking/schema": TrackingSchema,
    "backend/schema": BackendSchema,
    **{f"data/{name}": schema for name, schema in DATA_SCHEMAS.items()},
}
GROUP_YAMLS = sorted(
    p for g in ("data", "eval", "tracking", "backend") for p in (CONF_DIR / g).glob("*.yaml")
)


def _merged(base, body):
    return {
        **base,
        **{k: _merged(base[k], v) if isinstance(base.get(k), dict) and v else v for k, v in body.items()},
    }


@pytest.mark.parametrize("path", GROUP_YAMLS, ids=[f"{p.parent.name}/{p.name}" for p in GROUP_YAMLS])
def test_a_group_yaml_composes_to_its_schema_defaults_plus_what_it_states(path):
    """One source per default: the composed group is the schema's defaults, overridden by the YAML's keys."""
    body = OmegaConf.to_container(OmegaConf.load(path))
    schemas = [d for d in body.pop("defaults", []) if d != "_self_"]
    if not schemas:  # e.g. backend/local.yaml: just `name: local`, no schema composed
        return
    (schema_name,) = schemas
    composed = OmegaConf.to_container(_compose([f"{path.parent.name}={path.stem}"])[path.parent.name])
    assert composed == _merged(defaults(SCHEMA_OF[f"{path.parent.name}/{schema_name}"]), body)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        # data.fold also takes `all` or a list (the fold protocol), so data.fold=abc composes and is
        # refused by validate_config before any work (test_data_ranges_and_choices_..., tests/test_folds.py)
        (["data=mq2007", "data.flod=2"], "flod"),
        (["data=svmlight", "data.zero_based=maybe"], "zero_based"),
        (["data=yahoo_set1", "data.fold=2"], "fold"),  # yahoo has no folds
        (["data=istella", "data.splits=test"], "splits"),
    ],
)
def test_every_data_kind_is_typed_at_composition(overrides, key):
    with pytest.raises((ConfigCompositionException, ValidationError)) as info:
        _compose(overrides)
    assert key in str(info.value) or key in str(info.value.__cause__)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["data=mslr_web10k", "data.fold=6"], r"^data\.fold: expected a fold 1..5, all, .*; got 6$"),
        (["data=mslr_web10k", "data.fold=abc"], r"^data\.fold: expected a fold 1..5, all, .*; got 'abc'$"),
        (
            ["data=istella", "data.variant=y"],
            r"^data\.variant: expected one of \['full', 's', 'x'\], got 'y'$",
        ),
        (["data=svmlight", "data.train=a.txt", "data.nonfinite=drop"], r"^data\.nonfinite: expected one of"),
        (
            ["data=svmlight", "data.train=a.txt", "data.n_features=-1"],
            r"^data\.n_features: must be in \[0, inf\]",
        ),
    ],
)
def test_data_ranges_and_choices_are_checked_before_any_work(overrides, message):
    with pytest.raises(ConfigError, match=message):
        validate_config(_compose(overrides))

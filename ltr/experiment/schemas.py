"""Typed schemas behind the config groups, so a wrong value fails at the command line, before any work.

Every block is a dataclass checked by the one checker, :func:`ltr.core.config_check.check_block`
(types, ranges, choices, unknown keys; numpy scalars accepted, ``bool`` never taken for a number):

* ``model``: every ``conf/model/NAME.yaml`` starts from its model's block registered as
  ``model_base/NAME`` (:data:`ltr.models.params.MODEL_CONFIGS`, the one place its defaults are written)
  and holds only what differs; ``model.params.num_leaves=abc`` or a misspelt key fails while Hydra
  composes, and the ranker checks ranges when it is built;
* ``eval``, ``tracking`` and ``backend=dask`` YAML files start from a schema registered in Hydra's
  ConfigStore (``defaults: [schema, _self_]``): ``eval.bootstrap.B=many`` or
  ``tracking.log_model=maybe`` fail while Hydra composes the config;
* ``data`` configs differ by dataset kind: each kind ``ltr`` knows has its schema in
  :mod:`ltr.data.config`, registered as ``data/<kind>_schema`` (``synthetic_schema``, ``letor_schema``,
  ``istella_schema``, ``folder_schema``, ``svmlight_schema``) and composed first by its YAML, so
  a wrong type or a misspelt key fails while Hydra composes (``data.fold``, which also takes ``all`` or a
  list, is checked by :func:`validate_config`). :func:`validate_config` checks the data
  block against its kind's schema (ranges included; a kind of a user's own config only against the fields
  all datasets share, :class:`DataSchema`), and ``backend``, ``eval`` and ``tracking`` against theirs.
  It runs first in every entry point, before data is read;
* experiment files of ``python -m ltr.compare``: :class:`ExperimentSchema` (:func:`check_experiment_block`).

Resolvers (registered by :func:`register_configs`) used by the sweep configs:
``${ltr_direction:ndcg@10}`` → ``maximize``; ``${ltr_threads_per_job:2}`` → cores // 2 (at least 1).

>>> from omegaconf import OmegaConf
>>> register_configs()
>>> validate_config(OmegaConf.create({"data": {"name": "x", "kind": "letor", "synthetic": "maybe"}}))
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: data.synthetic: expected true or false, got 'maybe'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any

from ltr.clicks.interleaving import InterleavingConfig
from ltr.core.config_check import check_block, join, setting
from ltr.core.errors import ConfigError, MetricError
from ltr.data.config import (
    DataSchema,
    FolderDataSchema,
    IstellaDataSchema,
    LetorDataSchema,
    SvmlightDataSchema,
    SyntheticDataSchema,
    check_data_block,
)
from ltr.data.features import is_selection
from ltr.distributed.backend import BackendSchema
from ltr.metrics.conventions import Conventions
from ltr.metrics.exposure import ExposureConfig, parse_group
from ltr.metrics.registry import parse_metric
from ltr.models.params import register_model_configs
from ltr.stats.bootstrap import CI_METHODS
from ltr.stats.corrections import CORRECTIONS
from ltr.stats.paired import PAIRED_TESTS
from ltr.sweep.summary import metric_direction

__all__ = [
    "DATA_SCHEMAS",
    "BackendSchema",
    "DataSchema",
    "EvalSchema",
    "ExperimentSchema",
    "PublishedSchema",
    "FolderDataSchema",
    "IstellaDataSchema",
    "LetorDataSchema",
    "SvmlightDataSchema",
    "SyntheticDataSchema",
    "TrackingSchema",
    "check_experiment_block",
    "register_configs",
    "threads_per_job",
    "validate_config",
]


@dataclass
class BootstrapSchema:
    method: str = setting("bca", choices=CI_METHODS)
    B: int = setting(10_000, low=0)  # resamples; 0 turns CI bounds off
    confidence: float = setting(0.95, low=0.0, high=1.0, open_low=True, open_high=True)


@dataclass
class CurveSchema:
    metric: str = "ndcg"
    max_k: int = setting(20, low=0)  # per-query metric@1..max_k stored for the @k plot (0 = off)


def _conventions_schema() -> type:
    """``eval.conventions``: one key per field of :class:`ltr.metrics.Conventions` (derived, never listed
    here), each ``null`` = the preset's value; so ``eval.conventions.err_gmax=2`` needs no ``+`` and a
    misspelt convention fails while Hydra composes. Values are checked by
    :func:`ltr.metrics.resolve_conventions` (a gain may be a name or a table, so the type is open here)."""
    return make_dataclass(
        "ConventionsSchema", [(f.name, Any | None, field(default=None)) for f in fields(Conventions)]
    )


ConventionsSchema = _conventions_schema()


@dataclass
class EvalSchema:
    preset: str = "ltr"
    conventions: ConventionsSchema = field(default_factory=ConventionsSchema)  # type: ignore[valid-type]
    metrics: list[str] = setting(["ndcg@1", "ndcg@5", "ndcg@10", "err@10", "map"])
    splits: list[str] = setting(["train", "valid", "test"])
    baseline: str = "random"
    bootstrap: BootstrapSchema = field(default_factory=BootstrapSchema)
    curve: CurveSchema = field(default_factory=CurveSchema)


@dataclass
class TrackingSchema:
    enabled: bool = True
    uri: str | None = None
    experiment: str = "ltr"
    run_name: str | None = None
    log_model: bool = True
    log_plots: bool = True


# --- experiment files of ``python -m ltr.compare`` (experiments/NAME.yaml) -------------------------------


@dataclass
class StatsSchema:
    """How systems are compared: CIs, the paired test, the multiple-comparison correction."""

    ci: str = setting("bca", choices=CI_METHODS)  # bootstrap CI over queries
    B: int = setting(10_000, low=0)  # bootstrap resamples
    confidence: float = setting(0.95, low=0.0, high=1.0, open_low=True, open_high=True)
    test: str = setting("randomization", choices=PAIRED_TESTS)  # paired test
    correction: str = setting("holm", choices=CORRECTIONS)
    alpha: float = setting(0.05, low=0.0, high=1.0, open_low=True, open_high=True)
    risk_alpha: float = setting(1.0, low=0.0)  # URisk/TRisk/GeoRisk: a loss weighs 1 + risk_alpha


@dataclass
class SystemSchema:
    """One system of an experiment: a model config name and ``ltr.train`` overrides."""

    model: str  # a conf/model/NAME.yaml name
    overrides: list[str] = setting([])


DEFAULT_METRICS = ["err@10", "ndcg@1", "ndcg@5", "ndcg@10"]


@dataclass
class PublishedSchema:
    """Published numbers an experiment prints beside its own (``published:``): ``source`` cites where they
    were read; ``systems`` maps a published system's name to ``{metric: value}`` (metrics of the experiment)."""

    source: str
    note: str = ""
    systems: dict[str, Any] = setting({})


@dataclass
class ExperimentSchema:
    """An experiment file; ``systems`` maps at least two names to :class:`SystemSchema` blocks."""

    systems: dict[str, Any]  # name -> {model: NAME, overrides: [...]}
    name: str | None = None  # default: the file's stem
    title: str = ""
    overrides: list[str] = setting([])  # ltr.train overrides applied to every system
    baseline: str | None = None  # default: the first system
    primary: str | None = None  # default: the first metric
    metrics: list[str] = setting(DEFAULT_METRICS)
    stats: StatsSchema = field(default_factory=StatsSchema)
    published: PublishedSchema | None = None  # published numbers printed beside ours
    segments: dict[str, str] = setting({})  # failure-analysis segment name -> CSV (qid, segment)
    interleaving: InterleavingConfig | None = None  # simulate interleaving of each system vs the baseline
    exposure: ExposureConfig | None = None  # expected exposure of each system's test rankings, compared


def check_experiment_block(given: Any, where: str) -> dict[str, Any]:
    """An experiment file's content checked (:class:`ExperimentSchema`), defaults and cross-references filled.

    ``where`` is the file (``experiments/x.yaml``); errors name the key after it (``experiments/x.yaml: stats.B``).

    >>> exp = check_experiment_block({"systems": {"a": {"model": "lambdamart"}, "b": {"model": "linear"}}}, "x.yaml")
    >>> exp["name"], exp["baseline"], exp["primary"], exp["stats"]["B"]
    ('x', 'a', 'err@10', 10000)
    """
    prefix = f"{where}:"
    exp = check_block(ExperimentSchema, given, prefix)
    systems = exp["systems"]
    if len(systems) < 2:
        raise ConfigError(
            f"{join(prefix, 'systems')}: must map at least 2 system names to {{model: NAME, overrides: [...]}}"
        )
    exp["systems"] = {
        name: check_block(SystemSchema, spec, join(prefix, f"systems.{name}"))
        for name, spec in systems.items()
    }
    exp["name"] = exp["name"] or Path(where).stem
    exp["baseline"] = exp["baseline"] or next(iter(systems))
    if exp["baseline"] not in systems:
        raise ConfigError(
            f"{join(prefix, 'baseline')}: {exp['baseline']!r} is not one of the systems: {', '.join(systems)}"
        )
    for i, metric in enumerate(exp["metrics"]):  # before the first system trains
        try:
            parse_metric(metric)
        except MetricError as exc:
            raise ConfigError(f"{join(prefix, f'metrics[{i}]')}: {exc}") from exc
    exp["primary"] = exp["primary"] or exp["metrics"][0]
    if exp["primary"] not in exp["metrics"]:
        raise ConfigError(
            f"{join(prefix, 'primary')}: {exp['primary']!r} must be one of metrics {exp['metrics']}"
        )
    if exp.get("interleaving") is not None:
        try:
            parse_metric(exp["interleaving"]["metric"])
        except MetricError as exc:
            raise ConfigError(f"{join(prefix, 'interleaving.metric')}: {exc}") from exc
    if exp.get("exposure") is not None and exp["exposure"].get("group"):
        try:
            parse_group(str(exp["exposure"]["group"]))
        except ConfigError as exc:
            raise ConfigError(f"{join(prefix, 'exposure.group')}: {exc}") from exc
    for system, values in ((exp.get("published") or {}).get("systems") or {}).items():
        where = join(prefix, f"published.systems.{system}")
        if not isinstance(values, dict) or not values:
            raise ConfigError(f"{where}: expected a mapping {{metric: value}}, got {values!r}")
        for metric, value in values.items():
            if metric not in exp["metrics"]:
                raise ConfigError(f"{where}.{metric}: not one of the experiment's metrics {exp['metrics']}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ConfigError(f"{where}.{metric}: expected a number in [0, 1], got {value!r}")
    return exp


def threads_per_job(n_jobs: Any) -> int:
    """Engine threads per parallel job so that jobs × threads ≤ cores (at least 1)."""
    cores = os.cpu_count() or 1
    jobs = int(n_jobs) if int(n_jobs) > 0 else cores
    return max(1, cores // jobs)


#: the data schemas by their ConfigStore name (group ``data``), composed by conf/data/*.yaml
DATA_SCHEMAS: dict[str, type] = {
    "synthetic_schema": SyntheticDataSchema,
    "letor_schema": LetorDataSchema,
    "istella_schema": IstellaDataSchema,
    "folder_schema": FolderDataSchema,
    "svmlight_schema": SvmlightDataSchema,
}


def register_configs() -> None:
    """Register the group schemas in Hydra's ConfigStore and the ``ltr_*`` resolvers (idempotent)."""
    from hydra.core.config_store import ConfigStore  # deferred: hydra only when configs are registered
    from omegaconf import OmegaConf

    register_model_configs()
    cs = ConfigStore.instance()
    entries = [("eval", "schema", EvalSchema), ("tracking", "schema", TrackingSchema)]
    entries += [("data", name, node) for name, node in DATA_SCHEMAS.items()]
    entries.append(("backend", "schema", BackendSchema))
    for group, name, node in entries:  # each once a process: storing converts the dataclass again
        if f"{name}.yaml" not in cs.repo.get(group, {}):
            cs.store(group=group, name=name, node=node)
    for name, fn in (("ltr_direction", metric_direction), ("ltr_threads_per_job", threads_per_job)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def validate_config(cfg: Any) -> None:
    """Check the ``data``, ``backend``, ``eval`` and ``tracking`` sections (see module docstring)."""
    if cfg.get("data") is not None:
        check_data_block(cfg.get("data"))
    for key, schema in (("backend", BackendSchema), ("eval", EvalSchema), ("tracking", TrackingSchema)):
        if cfg.get(key) is not None:
            check_block(schema, cfg.get(key), key)
    refuse_dask_selection(cfg)


def refuse_dask_selection(cfg: Any) -> None:
    """``data.features`` with ``backend=dask`` is a ConfigError: the workers parse and keep every column
    (:mod:`ltr.distributed.shards`), and a selection there is not built yet."""
    backend, data = cfg.get("backend"), cfg.get("data")
    dask = backend is not None and str(backend.get("name", "local")) == "dask"
    if dask and data is not None and is_selection(data.get("features")):
        raise ConfigError(
            "data.features: a feature selection (include/exclude) is not supported with backend=dask "
            "(the workers keep every column); use backend=local, or write the selected columns to files"
        )

"""Typed schemas behind the config groups, so a wrong type fails at the command line, before any work.

* ``eval`` and ``tracking`` YAML files start from a schema registered in Hydra's ConfigStore
  (``defaults: [schema, _self_]``): ``eval.bootstrap.B=many`` or ``tracking.log_model=maybe`` fail
  while Hydra composes the config.
* ``data`` configs differ by dataset kind: :func:`validate_config` checks the synthetic kind against
  :class:`SyntheticDataSchema` (every key known and typed) and any other kind against the fields all
  datasets share (:class:`DataSchema`); ``backend`` against :class:`BackendSchema`. It runs first in
  every entry point, before data is read.

Resolvers (registered by :func:`register_configs`) used by the sweep configs:
``${ltr_direction:ndcg@10}`` → ``maximize``; ``${ltr_threads_per_job:2}`` → cores // 2 (at least 1).

>>> from omegaconf import OmegaConf
>>> register_configs()
>>> validate_config(OmegaConf.create({"data": {"name": "x", "kind": "letor", "synthetic": "maybe"}}))
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ltr.errors.ConfigError: data.synthetic='maybe': ...
>>> metric_direction("ndcg@10"), metric_direction("rmse")
('maximize', 'minimize')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from ltr.errors import ConfigError

#: metric-name prefixes where lower is better (every ranking metric in ltr is higher-is-better)
LOWER_IS_BETTER = ("rmse", "mse", "mae", "loss", "logloss", "error")


@dataclass
class BootstrapSchema:
    method: str = "bca"  # bca | percentile
    B: int = 10_000  # resamples; 0 turns CI bounds off
    confidence: float = 0.95


@dataclass
class CurveSchema:
    metric: str = "ndcg"
    max_k: int = 20  # per-query metric@1..max_k stored for the @k plot (0 = off)


@dataclass
class EvalSchema:
    preset: str = "ltr"
    conventions: dict[str, Any] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=lambda: ["ndcg@1", "ndcg@5", "ndcg@10", "err@10", "map"])
    splits: list[str] = field(default_factory=lambda: ["train", "valid", "test"])
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


@dataclass
class DataSchema:
    """Fields every dataset config has; other keys depend on the kind (checked by its loader)."""

    name: str = "???"
    kind: str = "???"
    synthetic: bool = False


@dataclass
class SplitCounts:
    train: int = 600
    valid: int = 200
    test: int = 200


@dataclass
class SyntheticDataSchema:
    name: str = "synthetic"
    kind: str = "synthetic"
    synthetic: bool = True
    dir: str = "???"
    seed: int = 42
    n_queries: SplitCounts = field(default_factory=SplitCounts)
    min_docs: int = 5
    max_docs: int = 200
    p_empty: float = 0.05


@dataclass
class BackendSchema:
    """Fields of ``conf/backend/*.yaml`` checked when present (``local`` or ``dask``)."""

    name: str = "local"
    scheduler_address: str | None = None
    n_workers: int = 2
    threads_per_worker: int = 1
    partitions_per_worker: int = 1


def metric_direction(metric: str) -> str:
    """``maximize`` for ranking metrics, ``minimize`` for losses/errors (the Optuna study direction)."""
    return "minimize" if str(metric).lower().startswith(LOWER_IS_BETTER) else "maximize"


def threads_per_job(n_jobs: Any) -> int:
    """Engine threads per parallel job so that jobs × threads ≤ cores (at least 1)."""
    cores = os.cpu_count() or 1
    jobs = int(n_jobs) if int(n_jobs) > 0 else cores
    return max(1, cores // jobs)


def register_configs() -> None:
    """Register the group schemas in Hydra's ConfigStore and the ``ltr_*`` resolvers (idempotent)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    cs = ConfigStore.instance()
    cs.store(group="eval", name="schema", node=EvalSchema)
    cs.store(group="tracking", name="schema", node=TrackingSchema)
    cs.store(group="data", name="synthetic_schema", node=SyntheticDataSchema)
    cs.store(group="backend", name="schema", node=BackendSchema)
    for name, fn in (("ltr_direction", metric_direction), ("ltr_threads_per_job", threads_per_job)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


def _check(section: Any, schema: type, where: str, *, strict: bool) -> None:
    """Merge ``section`` into ``schema``; a type error or (strict) an unknown key → ConfigError."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if section is None:
        return
    data = OmegaConf.to_container(section, resolve=True) if OmegaConf.is_config(section) else dict(section)
    known = {f.name for f in fields(schema)}
    if strict:
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(unknown)}; expected keys: {', '.join(sorted(known))}"
            )
    else:
        data = {k: v for k, v in data.items() if k in known}
    base = OmegaConf.structured(schema)
    for key, value in data.items():
        try:
            OmegaConf.merge(base, {key: value})
        except OmegaConfBaseException as exc:
            message = str(exc).splitlines()[0]
            raise ConfigError(f"{where}.{key}={value!r}: {message}") from exc


def validate_config(cfg: Any) -> None:
    """Check the ``data`` and ``backend`` sections against their schemas (see module docstring)."""
    data = cfg.get("data")
    if data is not None:
        if data.get("kind") == "synthetic":
            _check(data, SyntheticDataSchema, "data", strict=True)
        else:
            _check(data, DataSchema, "data", strict=False)
    backend = cfg.get("backend")
    if backend is not None:
        _check(backend, BackendSchema, "backend", strict=False)
        if str(backend.get("name", "local")) not in ("local", "dask"):
            raise ConfigError(f"backend.name={backend.get('name')!r}: expected 'local' or 'dask'")

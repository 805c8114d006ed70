"""The members of an ensemble: their configs composed as ``ltr.train`` composes a model, seeds, threads, samples.

An ensemble config names its members by model config name, each optionally with overrides of that
config (docs/ensembles.md). A member's config is composed by Hydra exactly as ``+model=NAME`` composes
it for ``ltr.train`` (the running app's config search path, so ``--config-dir`` model configs work as
members; outside an app the package's ``conf/``), then the entry's overrides are merged over it with
the member block's types (:func:`expand_members`). Member ``i`` (after expanding ``bags``) gets the seed
``derive_seed(seed, i)``; a member with ``query_fraction < 1`` trains on that share of the training
**queries** (:func:`query_sample`). Members train in parallel threads with ``jobs × engine threads ≤
cores`` (:func:`split_threads`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ltr.core.config_check import check_block, join, plain, setting
from ltr.core.errors import ConfigError
from ltr.core.resources import config_dir
from ltr.data import RankingData
from ltr.models.params import register_model_configs

#: the config tree ``ltr.train`` composes (members are composed from it outside a running Hydra app)
CONF_DIR = config_dir()


def derive_seed(seed: int, index: int) -> int:
    """A member's seed: independent streams from one ensemble seed (``numpy.random.SeedSequence``).

    >>> derive_seed(42, 0) == derive_seed(42, 0) != derive_seed(42, 1)
    True
    """
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0] & 0x7FFFFFFF)


def split_threads(n_members: int, n_jobs: int, num_threads: int) -> tuple[int, int]:
    """(parallel jobs, engine threads per job) with ``jobs × threads ≤ cores``.

    ``num_threads`` is the total budget (0 = every core); ``n_jobs`` caps the jobs (0 = no cap).

    >>> split_threads(5, 0, 2), split_threads(2, 0, 8), split_threads(3, 1, 4)
    ((2, 1), (2, 4), (1, 4))
    """
    cores = int(num_threads) if num_threads > 0 else (os.cpu_count() or 1)
    jobs = max(1, min(n_members, cores, n_jobs if n_jobs > 0 else cores))
    return jobs, max(1, cores // jobs)


#: ``hydra.searchpath`` of the running command (its entries are searched for member configs too)
_MEMBER_SEARCH_PATH: ContextVar[tuple[str, ...]] = ContextVar("ltr_member_search_path", default=())


#: model configs a saved ensemble recorded (config name → composed config), used instead of composing
_SAVED_MODEL_CONFIGS: ContextVar[Mapping[str, dict[str, Any]]] = ContextVar(
    "ltr_saved_model_configs", default=MappingProxyType({})
)


@contextmanager
def member_search_path(entries: Sequence[str]) -> Iterator[None]:
    """Compose member configs with these ``hydra.searchpath`` entries (e.g. ``file://myconf``) too.

    The entry points set the run's ``hydra.searchpath`` here, so a user's own model config is found
    as a member whichever way the user added its folder (``--config-dir`` is already Hydra's search
    path inside a running app; ``hydra.searchpath=[...]``, also from an experiment file, is not).
    """
    token = _MEMBER_SEARCH_PATH.set(tuple(str(e) for e in entries))
    try:
        yield
    finally:
        _MEMBER_SEARCH_PATH.reset(token)


@contextmanager
def saved_model_configs(configs: Mapping[str, dict[str, Any]]) -> Iterator[None]:
    """Members of a saved ensemble take their model configs from its manifest, not from ``conf/``."""
    token = _SAVED_MODEL_CONFIGS.set(configs)
    try:
        yield
    finally:
        _SAVED_MODEL_CONFIGS.reset(token)


def compose_model_config(name: str, where: str) -> dict[str, Any]:
    """The model config ``+model=NAME`` composes (every default filled in), as a plain dict.

    While a saved ensemble is being loaded, the configs its manifest recorded are used instead, so a
    saved folder loads without the config folders it was trained with (e.g. a user's own model config).
    """
    saved = _SAVED_MODEL_CONFIGS.get()
    if name in saved:
        return copy.deepcopy(saved[name])
    from hydra import compose, initialize_config_dir  # deferred: hydra only to compose member configs
    from hydra.core.global_hydra import GlobalHydra  # deferred: as above
    from hydra.errors import HydraException  # deferred: as above
    from omegaconf import OmegaConf

    register_model_configs()

    def composed() -> dict[str, Any]:
        try:
            searchpath = _MEMBER_SEARCH_PATH.get()
            quoted = ",".join("'" + e.replace("\\", "\\\\").replace("'", "\\'") + "'" for e in searchpath)
            extra = [f"hydra.searchpath=[{quoted}]"] if searchpath else []
            cfg = compose(config_name=None, overrides=[f"+model={name}", *extra])
        except HydraException:
            loader = GlobalHydra.instance().config_loader()
            known = ", ".join(sorted(loader.get_group_options("model")))
            raise ConfigError(f"{where}: no model config {name!r}; known model configs: {known}") from None
        return OmegaConf.to_container(cfg.model, resolve=True)  # type: ignore[return-value]

    if GlobalHydra.instance().is_initialized():  # inside a Hydra app: its search path
        return composed()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return composed()


@dataclass
class Member:
    """One entry of ``members:`` (a bare name ``NAME`` means ``{model: NAME}``)."""

    model: str  # a model config name (conf/model/NAME.yaml)
    label: str | None = None  # display label; default: the model name
    params: dict[str, Any] | None = None  # overrides of the composed model config ...
    early_stopping: dict[str, Any] | None = None
    engine_params: dict[str, Any] | None = None
    clicks: dict[str, Any] | None = None
    bags: int = setting(1, low=1)  # copies trained with derived seeds
    query_fraction: float = setting(1.0, low=0.0, high=1.0, open_low=True)  # share of training queries


OVERRIDABLE = ("params", "early_stopping", "engine_params", "clicks")


@dataclass(frozen=True)
class MemberSpec:
    """One member after expansion: a display label, the full model config, its seed and query share."""

    label: str
    config: dict[str, Any]
    seed: int
    query_fraction: float = 1.0
    where: str = "model"  # the config path of its entry, for error messages
    model: str = ""  # the model config name of its entry (``members[i].model``)
    model_config: dict[str, Any] = field(default_factory=dict)  # what that name composed to


def resolve_member(entry: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(full model config, member options) for a member entry: a model name or a mapping with ``model``."""
    from omegaconf import OmegaConf

    entry = check_block(Member, {"model": entry} if isinstance(entry, str) else entry, where)
    base = compose_model_config(entry["model"], where)
    overrides = {k: entry[k] for k in OVERRIDABLE if entry[k] is not None}
    unknown = sorted(set(overrides) - set(base))
    if unknown:
        raise ConfigError(f"{join(where, unknown[0])}: model {entry['model']} has no {unknown[0]} block")
    config = OmegaConf.to_container(OmegaConf.merge(base, overrides), resolve=True)
    return config, {k: entry[k] for k in ("bags", "query_fraction")} | {
        "label": entry["label"] or entry["model"],
        "model": entry["model"],
        "model_config": base,
    }  # type: ignore[return-value]


def expand_members(members: Any, seed: int, where: str) -> list[MemberSpec]:
    """Member entries → one :class:`MemberSpec` per trained model (``bags`` copies each), unique labels."""
    members = plain(members)
    if not isinstance(members, Sequence) or isinstance(members, str) or not members:
        raise ConfigError(f"{where}: members must be a non-empty list of model config names, got {members!r}")
    resolved = [resolve_member(entry, join(where, i)) for i, entry in enumerate(members)]
    labels = [opts["label"] for _, opts in resolved]
    seen: dict[str, int] = {}
    specs: list[MemberSpec] = []
    for i, ((config, opts), label) in enumerate(zip(resolved, labels, strict=True)):
        if labels.count(label) > 1:  # the same model twice: lambdamart_0, lambdamart_1, ...
            seen[label] = seen.get(label, -1) + 1
            label = f"{label}_{seen[label]}"
        for b in range(opts["bags"]):
            specs.append(
                MemberSpec(
                    label=f"{label}_bag{b}" if opts["bags"] > 1 else label,
                    config=config,
                    seed=derive_seed(seed, len(specs)),
                    query_fraction=opts["query_fraction"],
                    where=join(where, i),
                    model=opts["model"],
                    model_config=opts["model_config"],
                )
            )
    return specs


def query_sample(data: RankingData, fraction: float, seed: int) -> RankingData:
    """``data`` restricted to ``round(fraction·n_queries)`` whole queries (seeded, in row order)."""
    if fraction >= 1.0:
        return data
    n = max(1, int(round(fraction * data.n_queries)))
    keep = np.sort(np.random.default_rng(seed).choice(data.n_queries, n, replace=False))
    return data.subset(keep, name=f"{data.name}[{n}/{data.n_queries} queries]")

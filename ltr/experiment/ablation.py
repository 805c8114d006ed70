"""Feature-group ablation: an experiment's ``ablation:`` block expanded into ordinary comparison systems.

An experiment file may hold, instead of ``systems:``::

    ablation:
      model: lambdamart                  # every system's model (a conf/model/NAME.yaml name)
      overrides: [model.params.n_trees=200]   # ltr.train overrides of every system (optional)
      groups:                            # group -> ids, ranges or names (data.features.groups of every
        informative: ["1-12"]            #   system); or a list of group names the data config defines;
        noise: ["23-42"]                 #   or left out: every group of the data config
      baseline: all_features             # the name of the system with every feature (default)

It expands into the baseline (the data config's own selection, "all features") plus one system
``without_GROUP`` per group, whose ``data.features.exclude`` is the baseline's with ``GROUP`` added.
Every system trains on the same splits (the comparison loads every column once and each system
keeps its own; :func:`ltr.data.features.select_features`), so the leaderboard's paired tests against
the baseline, corrected for multiple comparisons (``stats.correction``, Holm by default), say which
group's removal costs a significant amount.

>>> exp = {"ablation": {"model": "lambdamart", "groups": {"a": ["1-3"], "b": [4]}}, "overrides": ["data=synthetic"]}
>>> out = expand_ablation(exp, "x.yaml", lambda overrides: {"features": {"exclude": [9], "groups": {}}})
>>> list(out["systems"]), out["baseline"], out["systems"]["without_a"]["overrides"][-1]
(['all_features', 'without_a', 'without_b'], 'all_features', "data.features.exclude=['9','a']")
>>> out["overrides"][-1]
"++data.features.groups.b=['4']"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ltr.core.config_check import check_block, join, plain, setting
from ltr.core.errors import ConfigError

#: the prefix of an ablation system's name: ``without_GROUP``
WITHOUT = "without_"


@dataclass
class AblationSchema:
    """An experiment's ``ablation:`` block (module docstring)."""

    model: str  # a conf/model/NAME.yaml name, every system's
    overrides: list[str] = setting([])  # ltr.train overrides of every system
    groups: Any = (
        None  # {group: [ids, ranges, names]}, a list of the data's group names, or null: all of them
    )
    baseline: str = "all_features"  # the system with every (selected) feature


def _quoted(values: list[Any]) -> str:
    """A Hydra list of quoted strings (ids too: the resolver reads ``'7'`` as id 7)."""
    return "[" + ",".join("'" + str(v).replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values) + "]"


def expand_ablation(
    exp: Mapping[str, Any], where: str, data_of: Callable[[list[str]], Mapping[str, Any]]
) -> dict[str, Any]:
    """``exp`` with its ``ablation`` block replaced by ``systems`` and ``baseline`` (module docstring).

    ``data_of(overrides)`` is the composed ``data`` block of ``ltr.train`` with those overrides (the
    baseline's; its ``features.exclude`` is what every ablated system extends, its ``features.groups``
    what a group list or ``null`` names).
    """
    out = dict(plain(exp))
    prefix = f"{where}:"
    block = check_block(AblationSchema, out.pop("ablation"), join(prefix, "ablation"))
    if out.get("systems"):
        raise ConfigError(
            f"{join(prefix, 'ablation')}: an experiment has either systems: or ablation: (which makes the systems), not both"
        )
    if out.get("baseline") not in (None, block["baseline"]):
        raise ConfigError(
            f"{join(prefix, 'baseline')}: an ablation's baseline is ablation.baseline ({block['baseline']!r}); "
            f"leave baseline: out"
        )
    groups = block["groups"]
    where_groups = join(prefix, "ablation.groups")
    overrides = [*map(str, out.get("overrides") or [])]
    if isinstance(groups, Mapping):
        for name, items in groups.items():
            if not isinstance(items, list) or not items:
                raise ConfigError(f"{where_groups}.{name}: expected a non-empty list of ids, ranges or names")
            overrides.append(f"++data.features.groups.{name}={_quoted(items)}")
    elif groups is not None and (not isinstance(groups, list) or not all(isinstance(g, str) for g in groups)):
        raise ConfigError(
            f"{where_groups}: expected a mapping {{group: [ids, ranges, names]}} or a list of group names, got {groups!r}"
        )
    data = plain(data_of([*overrides, f"+model={block['model']}", *block["overrides"]]))
    features = plain(data.get("features")) or {}
    defined = list((features.get("groups") or {}).keys())
    names = list(groups) if groups is not None else defined  # a mapping: defined by the overrides above
    unknown = [] if isinstance(groups, Mapping) else [g for g in names if g not in defined]
    if unknown or not names:
        what = f"not in data.features.groups: {', '.join(map(repr, unknown))}" if unknown else "no groups"
        raise ConfigError(
            f"{where_groups}: {what}; defined: {', '.join(defined) or 'none'} "
            "(give ablation.groups as a mapping to define them)"
        )
    exclude = list(features.get("exclude") or [])
    clash = [g for g in names if f"{WITHOUT}{g}" == block["baseline"]]
    if clash:
        raise ConfigError(
            f"{join(prefix, 'ablation.baseline')}: {block['baseline']!r} is also an ablated system's name"
        )
    system = {"model": block["model"], "overrides": list(block["overrides"])}
    out["systems"] = {block["baseline"]: system} | {
        f"{WITHOUT}{g}": {
            **system,
            "overrides": [*block["overrides"], f"data.features.exclude={_quoted([*exclude, g])}"],
        }
        for g in names
    }
    out["overrides"] = overrides
    out["baseline"] = block["baseline"]
    return out


def rows_config(data_cfg: Any) -> dict[str, Any]:
    """A ``data`` block without its column selection (``features.include`` / ``features.exclude``): two
    systems with equal rows configs train and test on the same queries, whichever columns each keeps.

    >>> rows_config({"name": "synthetic", "features": {"exclude": ["noise"], "groups": {"noise": [1]}}})
    {'name': 'synthetic', 'features': {'exclude': [], 'groups': {'noise': [1]}}}
    """
    given = dict(plain(data_cfg))
    features = dict(plain(given.get("features")) or {})
    for key in ("include", "exclude"):
        if key in features:
            features[key] = []
    if features:
        given["features"] = features
    return given


def all_columns(cfg: Any) -> Any:
    """A copy of a run config whose data keeps every column (:func:`rows_config`): what a comparison
    loads once before each system keeps its own columns."""
    from omegaconf import OmegaConf  # deferred: keep the module's examples free of OmegaConf

    out = cfg.copy()
    with_rows = OmegaConf.create(rows_config(cfg.data))
    OmegaConf.set_struct(out, False)
    out.data = with_rows
    return out

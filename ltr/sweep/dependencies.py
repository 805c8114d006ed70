"""What a study's trials depend on besides their parameters, so a continued study never mixes two of them.

A stored Optuna study is continued by running the same command again (:mod:`ltr.sweep.study`), and its
best trial is picked among *all* its trials. Their values are comparable only if every trial trained
on the same data and was scored by the same objective; the search itself (space and fixed overrides) is
checked by :func:`ltr.sweep.study.check_same_search`, but the data can change with the same command
line: an edited ``data/mydata.yaml`` (other files, ``label_range``, parse options), a file regenerated
in place, another fold. So the first run of a study stores, as the study's user attribute
``ltr.depends`` (:func:`trial_dependencies`):

* ``data``: the resolved ``data`` config (``cache_dir`` / ``verify_cache`` left out: they change how the
  data is read, not what is read);
* ``files``: each data file's size and content digest (:func:`ltr.data.cache.file_identity`: sampled
  blocks, every byte with ``data.verify_cache=true``; the modification time is left out, so a ``touch``
  or a copy changes nothing), for every file the data config reads (every fold of ``data.fold=all``);
* ``objective``: the optimised metric (the early-stopping metric, else the first of ``eval.metrics``)
  and the direction.

A later run whose dependencies differ is refused before any trial runs (:func:`check_same_dependencies`),
naming what changed and the two ways on: a new study (``hydra.sweeper.study_name=NEW``), or
``hydra.sweeper.restart=true``, which deletes the stored study and starts it again under its name.

>>> changes({"data": {"fold": 1}, "files": {"a": {"size": 3}}, "objective": {"metric": "ndcg@10"}},
...         {"data": {"fold": 2}, "files": {"a": {"size": 4}}, "objective": {"metric": "ndcg@10"}})
['data.fold: 1 -> 2', 'file a changed (size or content)']
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from ltr.core.errors import ConfigError, LtrError

if TYPE_CHECKING:
    import optuna

DEPENDS_ATTR = "ltr.depends"
#: data keys that change how the data is read, not what is read
READING_ONLY = ("cache_dir", "verify_cache")
#: data keys that say where the files are: workers of one study may hold the same data at other paths,
#: so the files are compared by content (:func:`trial_dependencies`' ``files``), not by these
WHERE_ONLY = ("dir", "train", "valid", "test", "data_dir")


def resolved_data(config: Any) -> dict[str, Any]:
    """The config's ``data`` block resolved, without :data:`READING_ONLY` keys (``{}`` when there is none)."""
    data = config.get("data") if config is not None else None
    if data is None:
        return {}
    try:
        plain = OmegaConf.to_container(data, resolve=True) if isinstance(data, DictConfig) else dict(data)
    except Exception:  # an interpolation only a job can resolve: compare as written
        plain = OmegaConf.to_container(data, resolve=False)
    return {str(k): v for k, v in dict(plain).items() if k not in READING_ONLY}


def data_files(data: Mapping[str, Any]) -> list[Path]:
    """Every file a data config reads (every fold of a fold protocol); files that do not exist are left
    out (the run itself reports them)."""
    from ltr.data.config import letor_fold_choice  # deferred: the data layer, only when a sweep starts
    from ltr.data.registry import split_files  # deferred: as above
    from ltr.data.shards import expand_sources  # deferred: as above

    folds = letor_fold_choice(data)
    configs = [{**data, "fold": k} for k in folds] if folds else [dict(data)]
    found: list[Path] = []
    for one in configs:
        for path in split_files(one).values():
            try:
                found.extend(expand_sources(str(path)))  # a file, a glob or a directory of files
            except LtrError:
                continue
    return sorted(set(found))


def trial_dependencies(config: Any, direction: str) -> dict[str, Any]:
    """What a trial's value depends on besides its parameters (module docstring)."""
    from ltr.data.cache import file_identity  # deferred: the cache's digest (numba), only when a sweep starts

    located = resolved_data(config)
    data = {k: v for k, v in located.items() if k not in WHERE_ONLY}  # the files: by content, below
    full = bool((config.get("data") or {}).get("verify_cache", False)) if config is not None else False
    paths = data_files(located) if located else []
    root = Path(os.path.commonpath([str(p.parent) for p in paths])) if paths else Path()
    files = {}
    for path in paths:  # keyed by the path below the data's common folder: the same data elsewhere matches
        identity = file_identity(path, full_hash=full)
        files[str(path.relative_to(root))] = {"size": identity["size"], "digest": identity["digest"]}
    model = (config.get("model") or {}) if config is not None else {}
    early = (model.get("early_stopping") or {}) if model else {}
    metrics = list((config.get("eval") or {}).get("metrics") or []) if config is not None else []
    metric = early.get("metric") or (metrics[0] if metrics else None)
    return {
        "data": data,
        "files": files,
        "files_root": str(root),  # where this process found them: named in messages, never compared
        "objective": {"metric": metric, "direction": direction},
    }


def changes(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between two :func:`trial_dependencies`, one phrase each."""
    out = []
    old_data, new_data = before.get("data") or {}, now.get("data") or {}
    for key in sorted(set(old_data) | set(new_data)):
        if old_data.get(key) != new_data.get(key):
            out.append(f"data.{key}: {_shown(old_data.get(key))} -> {_shown(new_data.get(key))}")
    old_files, new_files = before.get("files") or {}, now.get("files") or {}
    root = Path(now.get("files_root") or before.get("files_root") or "")
    for key in sorted(set(old_files) | set(new_files)):
        path = root / key
        if key not in new_files:
            out.append(f"file {path} no longer read")
        elif key not in old_files:
            out.append(f"file {path} newly read")
        elif old_files[key] != new_files[key]:
            out.append(f"file {path} changed (size or content)")
    old_objective, new_objective = before.get("objective") or {}, now.get("objective") or {}
    for key in sorted(set(old_objective) | set(new_objective)):
        if old_objective.get(key) != new_objective.get(key):
            out.append(f"objective {key}: {old_objective.get(key)} -> {new_objective.get(key)}")
    return out


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def check_same_dependencies(study: optuna.Study, depends: Mapping[str, Any], where: str) -> None:
    """Store ``depends`` on a new study; a stored study whose trials depended on anything else →
    ConfigError naming the changes and the two ways on (module docstring).

    A study stored before ltr recorded this (no attribute) gets it now.
    """
    stored = study.user_attrs.get(DEPENDS_ATTR)
    if stored is None:
        study.set_user_attr(DEPENDS_ATTR, json.dumps(depends, sort_keys=True, default=str))
        return
    before = json.loads(stored)
    now = json.loads(json.dumps(depends, sort_keys=True, default=str))
    differs = changes(before, now)
    if differs:
        n = len(study.get_trials(deepcopy=False))
        raise ConfigError(
            f"hydra.sweeper.study_name={study.study_name!r} in {where} holds {n} trial(s) trained on other "
            f"data or scored by another objective ({'; '.join(differs[:6])}"
            f"{f'; and {len(differs) - 6} more' if len(differs) > 6 else ''}); continuing would mix them with "
            "new ones. Start a new study with hydra.sweeper.study_name=NEW_NAME, or discard the stored "
            "trials with hydra.sweeper.restart=true"
        )

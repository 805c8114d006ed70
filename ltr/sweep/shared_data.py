"""Data loaded once per sweep: the trials of a sweep that run in one process share one set of splits.

A hyper-parameter search runs many trials on the same data. The jobs of the basic launcher run in the
sweeper's process, and a joblib worker process runs one trial after another; :func:`load_shared` keeps
the splits of the last data config it loaded, so each process reads (or generates) the data once, and
later trials get the very same :class:`~ltr.data.RankingData` objects — which is also what lets the
engines' binned data (LightGBM's Datasets, XGBoost's QuantileDMatrix) be reused:
:data:`ltr.models.engines.binned.BINNED` matches data by identity.

>>> calls = []
>>> load = lambda cfg: calls.append(cfg) or {"train": object()}
>>> first, again = load_shared({"name": "x"}, load), load_shared({"name": "x"}, load)
>>> first is again, len(calls), load_shared({"name": "y"}, load) is first
(True, 1, False)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from omegaconf import OmegaConf

from ltr.models.engines.binned import BINNED, BinnedCache

_last: tuple[str, Mapping[str, Any]] | None = None  # (data config as JSON, its splits)


def load_shared(data_cfg: Any, load: Callable[[Any], Mapping[str, Any]]) -> Mapping[str, Any]:
    """``load(data_cfg)``, or the splits this process loaded last for an equal data config."""
    global _last
    plain = OmegaConf.to_container(data_cfg, resolve=True) if OmegaConf.is_config(data_cfg) else data_cfg
    key = json.dumps(plain, sort_keys=True, default=str)
    if _last is not None and _last[0] == key:
        return _last[1]
    splits = load(data_cfg)
    _last = (key, splits)
    return splits


def share_binned_datasets() -> BinnedCache:
    """Turn on the reuse of binned training data (LightGBM's Datasets, XGBoost's QuantileDMatrix) in this
    process; returns the cache (:data:`ltr.models.engines.binned.BINNED`, whose ``built`` counts the matrices built)."""
    BINNED.enable()
    return BINNED

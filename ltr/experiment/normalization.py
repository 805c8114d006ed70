"""The ``data.normalize`` step of a run: fit on the training split, normalise every split.

:func:`normalize_run_splits` is what :func:`ltr.experiment.pipeline.fit_and_evaluate` calls before
the fit (and so every fold of a fold protocol, each with its own training split): it fits a
:class:`~ltr.data.normalize.Normalizer` on ``splits["train"]`` only and returns every split
transformed, with the fitted normaliser, which the pipeline attaches to the ranker (``normalize_``;
saved in its manifest and applied to raw rows by :mod:`ltr.models.normalized`). Splits the Dask
workers hold are fitted from per-shard statistics and transformed on the workers
(:mod:`ltr.distributed.normalize`).

>>> import numpy as np
>>> from ltr.data import RankingData
>>> tr = RankingData(X=np.array([[1.0], [3.0]], np.float32), y=[0, 1], qid=[1, 1])
>>> splits, norm = normalize_run_splits({"train": tr}, "zscore")
>>> splits["train"].X[:, 0].tolist(), norm.mean_.tolist()
([-1.0, 1.0], [2.0])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ltr.data.normalize import Normalizer
from ltr.distributed.normalize import fit_sharded, transform_sharded
from ltr.distributed.shards import ShardedSplit


def normalization_method(cfg: Any) -> str:
    """``data.normalize`` of a run config (``none`` when the data block has no such key)."""
    data = cfg.get("data") if hasattr(cfg, "get") else None
    method = data.get("normalize") if data is not None and hasattr(data, "get") else None
    return str(method) if method is not None else "none"


def normalize_run_splits(splits: Mapping[str, Any], method: str) -> tuple[dict[str, Any], Normalizer | None]:
    """``(splits normalised, the fitted normaliser)``; ``(splits, None)`` for ``none``."""
    if method == "none":
        return dict(splits), None
    train = splits["train"]
    if isinstance(train, ShardedSplit):
        norm = fit_sharded(train, method)
        return {name: transform_sharded(split, norm) for name, split in splits.items()}, norm
    norm = Normalizer(method).fit(train)
    return {name: norm.transform(split) for name, split in splits.items()}, norm

"""Every dataset read from files, parsed on the Dask workers: the driver resolves files and options only.

``backend=dask`` loads a run's splits with :func:`load_worker_dataset`. On the driver each data kind
becomes the same thing a local load starts from, file paths and ``load_svmlight`` options, and the
workers parse those files (:func:`~ltr.distributed.shards.load_sharded`: one shard per file of a
glob or directory, byte ranges of a single file ending on query boundaries) and keep the rows:

* ``svmlight`` (your own files): ``data.train`` / ``valid`` / ``test`` as written and the parse
  options (:func:`~ltr.data.registry.svmlight_sources`); with ``data.cv`` the workers parse
  ``data.train`` and the fold is cut from it on the workers (:func:`cv_fold_on_workers`);
* a registry dataset (``mslr_web30k``, ``mq2008``, ``istella``, ``yahoo_set1`` …): the fold's or
  variant's files under ``data.dir`` with the entry's strict options (``n_features``, the declared
  ``label_range``, ``data.parse``), as :func:`~ltr.data.registry.registry_sources` resolves them for
  a local load, a missing file being the same ``DataError``;
* ``synthetic``: the files are generated (first use) by a worker (:func:`~ltr.data.synthetic.ensure_synthetic`,
  under its exclusive lock) and parsed by the workers while the driver holds the shared lock, as a
  local load reads them (:func:`~ltr.data.synthetic.current_synthetic_files`).

What a local load does to the rows besides parsing, and how it is done here:

* parse options (``label_range``, ``nonfinite``, ``zero_based``, ``n_features``, ``allow_unsorted``…)
  are applied by the parser itself, on each shard with the same options;
* feature widths: shards that infer their width are widened on their workers to the largest width,
  and splits of different widths are the local ``DataError``;
* ``data.cv``: the stratified k-fold split needs only the query sizes, which the driver has
  (:func:`ltr.data.splits.cv_fold_queries`); each shard keeps its queries of each split, in order;
* ``data.splits``: only the wanted splits are parsed.

No other transformation exists in the loading path (``ltr.data.normalize`` is a library function a
run does not call), so the workers' splits are row for row those of a local load.

>>> data_kind({"name": "mq2008", "fold": 2}), [k for k in WORKER_KINDS if k.startswith("mslr")]
('mq2008', ['mslr_web10k', 'mslr_web30k'])
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.config_check import plain
from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.registry import (
    REGISTRY,
    cache_options,
    registry_sources,
    single_cv_fold,
    svmlight_sources,
)
from ltr.data.splits import cv_fold_queries
from ltr.data.synthetic import PARSE_OPTIONS, current_synthetic_files, ensure_synthetic
from ltr.distributed.shards import ShardedSplit, load_sharded_dataset, load_sharded_splits, summarize
from ltr.distributed.watch import current_workers, gather

#: data kinds the workers read (every kind ``ltr`` loads from files)
WORKER_KINDS = ("svmlight", "synthetic", *sorted(REGISTRY))


def data_kind(data_cfg: Mapping[str, Any]) -> str:
    """``data.kind``, else ``data.name``."""
    return str(data_cfg.get("kind") or data_cfg.get("name") or "")


def load_worker_dataset(client: Any, data_cfg: Mapping[str, Any], n_parts: int) -> dict[str, ShardedSplit]:
    """The splits of a data config (any kind of :data:`WORKER_KINDS`), parsed and kept by the workers.

    ``n_parts``: byte ranges a single file is cut into. The driver reads no rows (module docstring).
    """
    kind = data_kind(data_cfg)
    if kind == "synthetic":
        return _synthetic_on_workers(client, data_cfg, n_parts)
    if kind == "svmlight" and int((plain(data_cfg.get("cv")) or {}).get("folds") or 0):
        cv = single_cv_fold(data_cfg)
        sources, options = svmlight_sources(data_cfg, every_split=True)
        name = str(data_cfg.get("name", "svmlight"))
        train = load_sharded_splits(
            client, name, {"train": sources["train"]}, options | cache_options(data_cfg), n_parts
        )["train"]
        wanted = data_cfg.get("splits")
        return {s: d for s, d in cv_fold_on_workers(client, train, cv).items() if not wanted or s in wanted}
    if kind == "svmlight":
        return load_sharded_dataset(client, data_cfg, n_parts)
    if kind in REGISTRY:
        spec, paths, options = registry_sources(data_cfg)
        sources = {split: str(path.resolve()) for split, path in paths.items()}
        return load_sharded_splits(client, spec.name, sources, options | cache_options(data_cfg), n_parts)
    raise ConfigError(
        f"data.kind: backend=dask reads the data kinds {', '.join(WORKER_KINDS)} on its workers, got {kind!r}"
    )


def _synthetic_on_workers(client: Any, data_cfg: Mapping[str, Any], n_parts: int) -> dict[str, ShardedSplit]:
    """The synthetic splits: generated by the first worker when missing, parsed by all of them."""
    cfg = plain(data_cfg)
    if cfg.get("dir"):  # the workers open it: the driver's working directory is not theirs on a cluster
        cfg["dir"] = str(Path(str(cfg["dir"])).resolve())
    first = sorted(current_workers(client))[:1]

    def generate_on_a_worker(directory: Path, settings: Mapping[str, Any]) -> Mapping[str, Path]:
        made = client.submit(ensure_synthetic, directory, settings, workers=first or None, pure=False)
        return gather(client, made, "generating the synthetic data")

    with current_synthetic_files(cfg, generate_on_a_worker) as paths:
        sources = {split: str(path) for split, path in paths.items()}
        return load_sharded_splits(client, str(cfg.get("name", "synthetic")), sources, PARSE_OPTIONS, n_parts)


def _queries_of(data: RankingData, queries: np.ndarray, name: str) -> RankingData:
    """On a worker: the queries at ``queries`` (positions in the shard) of one shard."""
    return data.subset(queries, name=name)


def cv_fold_on_workers(client: Any, train: ShardedSplit, cv: Mapping[str, Any]) -> dict[str, ShardedSplit]:
    """Fold ``cv["fold"]`` (1-based) of the k-fold split of ``train`` (``data.cv``), cut on the workers.

    The fold's query positions come from the query sizes alone (:func:`ltr.data.splits.cv_fold_queries`,
    the local cut); each shard keeps, on its worker, its own queries of each split in file order, so
    every split is row for row the local fold's ``RankingData``.
    """
    k, fold = int(cv["folds"]), int(cv["fold"])
    queries = cv_fold_queries(train.group_sizes, k, seed=int(cv["seed"]), valid=bool(cv["valid"]))[fold - 1]
    bounds = np.cumsum([0, *(s.query_ids.shape[0] for s in train.summaries)])
    out: dict[str, ShardedSplit] = {}
    for split, positions in queries.items():
        name = f"{train.name}[cv{fold}/{split}]"
        kept = ShardedSplit(name, [], [], [], [])
        for i, (future, worker) in enumerate(zip(train.futures, train.workers, strict=True)):
            mine = positions[(positions >= bounds[i]) & (positions < bounds[i + 1])] - bounds[i]
            if mine.size:
                part = client.submit(
                    _queries_of, future, mine, name, workers=[worker], allow_other_workers=False, pure=False
                )
                kept.sources.append(train.sources[i])
                kept.futures.append(part)
                kept.workers.append(worker)
        kept.summaries = gather(
            client, kept.map(client, summarize), f"cutting the {split} split of the folds"
        )
        out[split] = kept
    return out

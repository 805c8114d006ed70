"""A run's splits: read in this process, or parsed and kept by the Dask workers; queries shared with train.

:func:`load_splits` reads the dataset of ``cfg.data`` (:func:`~ltr.data.registry.load_dataset`), or,
with the client of :func:`data_cluster` (``backend=dask`` on data read from files), has the workers
parse it into :class:`~ltr.distributed.shards.ShardedSplit`\\ s they keep for the whole run.
:func:`train_overlaps` finds the splits that share queries with ``train`` (leakage the record warns
about and tags).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.data.registry import load_dataset
from ltr.distributed.backend import cluster_workers, dask_client, resolve_backend
from ltr.distributed.data import WORKER_KINDS, data_kind, load_worker_dataset


@dataclass(frozen=True)
class Overlap:
    """A split that shares ``shared`` of its ``n_queries`` query ids with ``train``; ``identical``
    when it is the training data itself (same fingerprint)."""

    split: str
    shared: int
    n_queries: int
    identical: bool

    def describe(self) -> str:
        if self.identical:
            return f"the {self.split} split is identical to train (same data fingerprint)"
        return f"the {self.split} split shares {self.shared} of its {self.n_queries} query ids with train"


def train_overlaps(splits: Mapping[str, Any]) -> tuple[Overlap, ...]:
    """Every split other than ``train`` that shares query ids with it (train/test leakage).

    The fingerprint is compared only when the shapes agree (identical data has the same shape), so
    the usual case costs one ``np.intersect1d`` of query ids per split.

    >>> import numpy as np
    >>> from ltr.data import RankingData
    >>> train = RankingData(np.ones((4, 1)), np.zeros(4), np.array([1, 1, 2, 3]))
    >>> test = RankingData(np.ones((2, 1)), np.zeros(2), np.array([3, 4]))
    >>> [o.describe() for o in train_overlaps({"train": train, "test": test, "valid": train})]
    ['the test split shares 1 of its 2 query ids with train', 'the valid split is identical to train (same data fingerprint)']
    """
    train = splits.get("train")
    if train is None:
        return ()
    train_ids = np.asarray(train.query_ids)
    out = []
    for split, data in splits.items():
        if split == "train":
            continue
        shared = int(np.intersect1d(train_ids, np.asarray(data.query_ids)).size)
        same_shape = (data.n_docs, data.n_features, data.n_queries) == (
            train.n_docs,
            train.n_features,
            train.n_queries,
        )
        identical = data is train or (same_shape and data.fingerprint() == train.fingerprint())
        if shared or identical:
            out.append(Overlap(split, shared, data.n_queries, identical))
    return tuple(out)


def workers_read_data(cfg: Any) -> bool:
    """``backend=dask`` with data read from files (every kind ``ltr`` loads: your own ``svmlight`` files,
    the registry datasets, the built-in synthetic data): the Dask workers parse the files."""
    backend = cfg.get("backend")
    dask = backend is not None and str(backend.get("name", "local")) == "dask"
    return dask and data_kind(cfg.data) in WORKER_KINDS


@contextmanager
def data_cluster(cfg: Any) -> Iterator[Any]:
    """A Dask client for the whole run when :func:`workers_read_data` (the splits live on its
    workers from loading to evaluation), else ``None``."""
    if not workers_read_data(cfg):
        yield None
        return
    with dask_client(resolve_backend(cfg.backend)) as client:
        yield client


def load_splits(cfg: Any, client: Any = None) -> dict[str, Any]:
    """The dataset's splits: read here (:func:`~ltr.data.registry.load_dataset`), or with a
    ``client`` from :func:`data_cluster`, parsed on its workers as
    :class:`~ltr.distributed.shards.ShardedSplit`\\ s (:func:`~ltr.distributed.data.load_worker_dataset`;
    a single file is cut into ``workers × partitions_per_worker`` byte ranges)."""
    if client is None:
        return load_dataset(cfg.data)
    backend = resolve_backend(cfg.backend)
    n_parts = len(cluster_workers(client, backend)) * backend["partitions_per_worker"]
    return load_worker_dataset(client, cfg.data, n_parts)

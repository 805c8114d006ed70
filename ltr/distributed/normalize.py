"""``data.normalize`` on data the Dask workers hold: fitted from per-shard statistics, applied per shard.

* ``zscore``: every worker computes its training shards' :func:`~ltr.data.normalize.column_moments`
  (count, mean, M2 per column: three numbers per feature, never the rows); the driver combines them
  with Chan et al.'s pairwise update (:func:`~ltr.data.normalize.combine_moments`), which is
  numerically stable where Σx² − n·mean² is not, and equals the local fit on the same rows to
  rounding (``tests/test_normalize_serving.py`` checks 1e-9 relative);
* ``query_minmax`` / ``query_zscore``: each shard is normalised on its worker, which is exact
  because a query never straddles shards (:func:`ltr.distributed.shards.load_sharded` refuses it, or
  ``regroup`` moves its rows to one shard first);
* ``log1p``: stateless, per shard.

The normalised split is a new :class:`~ltr.distributed.shards.ShardedSplit` on the same workers (same
summaries: normalising changes neither rows nor queries nor labels).
"""

from __future__ import annotations

from dataclasses import replace

from ltr.data import RankingData
from ltr.data.normalize import Moments, Normalizer, column_moments, combine_moments
from ltr.distributed.shards import ShardedSplit
from ltr.distributed.watch import gather


def _shard_moments(data: RankingData) -> Moments:
    return column_moments(data.X)


def _shard_transform(data: RankingData, norm: Normalizer) -> RankingData:
    return norm.transform(data)


def fit_sharded(train: ShardedSplit, method: str) -> Normalizer:
    """A :class:`~ltr.data.normalize.Normalizer` fitted on the training shards (module docstring)."""
    if method != "zscore":
        return Normalizer(method)
    parts = gather(train.client, train.map(train.client, _shard_moments), f"the statistics of {train.name}")
    return Normalizer.from_moments(combine_moments(list(parts)))


def transform_sharded(split: ShardedSplit, norm: Normalizer) -> ShardedSplit:
    """``split`` normalised shard by shard on the workers holding it."""
    if norm.method == "none":
        return split
    return replace(split, futures=split.map(split.client, _shard_transform, norm))

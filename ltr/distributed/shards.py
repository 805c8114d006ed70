"""Ranking data that lives on Dask workers: each worker parses its own shards and keeps them.

:func:`load_sharded` plans the shards of a split (:mod:`ltr.data.shards`: one per file of a glob
or directory, or byte ranges of one file ending on query boundaries), has worker ``i mod W`` parse
shard ``i`` with ``ltr``'s own parser, and returns a :class:`ShardedSplit`: futures of one
:class:`~ltr.data.RankingData` per shard, pinned to their workers, plus the split's small
per-query facts (query ids, group sizes, largest label, width). The rows never reach the driver:
parse errors travel back as the worker's ``DataError`` (``FILE:LINE: …``), and two shards holding
the same qid are an error naming both — unless the options say ``regroup=True``
(``data.regroup=true``): then :func:`regroup_straddling` moves the rows of every such query, worker
to worker, to the first shard holding it, as a local parse of the concatenated files would group them.

Features are aligned on the workers: when ``n_features`` is not given, every shard is widened to
the largest width any shard inferred, which is the width a local parse of all the rows infers.

:func:`per_query_metrics` evaluates a fitted ranker on a sharded split *on the workers* and gathers
only the per-query metric values (in shard order, which is the split's query order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.dataset import combine_fingerprint
from ltr.data.registry import cache_options, check_split_widths, svmlight_sources
from ltr.data.shards import (
    Shard,
    check_disjoint_queries,
    number_sidecar_queries,
    plan_shards,
    read_shard,
    regroup_shard,
    straddling_moves,
    take_queries,
    widen,
)
from ltr.data.splits import concat
from ltr.distributed.watch import current_workers, gather
from ltr.metrics import evaluate


@dataclass(frozen=True)
class ShardSummary:
    """What the driver learns about one parsed shard (per-query sized, never the rows)."""

    n_rows: int
    n_features: int
    query_ids: np.ndarray
    group_sizes: np.ndarray
    max_label: float
    min_label: float = 0.0
    dtype: str = "float32"  # of the parsed features (data.parse.dtype)


def _head(data: RankingData, rows: int) -> tuple[np.ndarray, np.ndarray]:
    return data.subset(np.array([0])).dense()[:rows], data.qid[:rows]


def summarize(data: RankingData) -> ShardSummary:
    """On a worker: the per-query facts of one shard."""
    return ShardSummary(
        n_rows=data.n_docs,
        n_features=data.n_features,
        query_ids=np.asarray(data.query_ids),
        group_sizes=np.asarray(data.group_sizes),
        max_label=float(np.max(data.y)) if data.n_docs else 0.0,
        min_label=float(np.min(data.y)) if data.n_docs else 0.0,
        dtype=str(data.X.dtype),
    )


@dataclass
class ShardedSplit:
    """One split held on the workers: ``futures[i]`` is shard ``i``'s ``RankingData`` on ``workers[i]``."""

    name: str
    sources: list[str]
    futures: list[Any]
    workers: list[str]
    summaries: list[ShardSummary]

    @property
    def n_features(self) -> int:
        return max(s.n_features for s in self.summaries)

    @property
    def n_docs(self) -> int:
        return sum(s.n_rows for s in self.summaries)

    @property
    def dtype(self) -> np.dtype:
        """The features' dtype on the workers (every shard is parsed with the same options)."""
        return np.result_type(*(s.dtype for s in self.summaries)) if self.summaries else np.dtype(np.float32)

    @property
    def n_queries(self) -> int:
        return sum(s.query_ids.shape[0] for s in self.summaries)

    @property
    def query_ids(self) -> np.ndarray:
        return np.concatenate([s.query_ids for s in self.summaries])

    @property
    def group_sizes(self) -> np.ndarray:
        return np.concatenate([s.group_sizes for s in self.summaries])

    @property
    def max_label(self) -> float:
        return max(s.max_label for s in self.summaries)

    @property
    def min_label(self) -> float:
        return min(s.min_label for s in self.summaries)

    @property
    def client(self) -> Any:
        """The Dask client the shards' futures belong to."""
        return self.futures[0].client

    @property
    def first_rows(self) -> list[int]:
        """Index of each shard's first row in the whole split."""
        return np.r_[0, np.cumsum([s.n_rows for s in self.summaries])][:-1].astype(int).tolist()

    def fingerprint(self) -> str:
        """The split's :meth:`RankingData.fingerprint`, the value a local load of the same rows gives
        whatever the shards: each worker computes its shards' parts (:meth:`RankingData.fingerprint_part`
        from the shard's first row in the split) and the driver combines them (four numbers per shard)."""
        parts = [
            self.client.submit(
                RankingData.fingerprint_part, f, start, workers=[w], allow_other_workers=False, pure=False
            )
            for f, w, start in zip(self.futures, self.workers, self.first_rows, strict=True)
        ]
        return combine_fingerprint(gather(self.client, parts, f"the fingerprint of {self.name}"))

    def first_query_rows(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """``(X dense, qid)`` of the first ``rows`` documents of the split's first query (fetched from
        the worker holding shard 0: a few rows)."""
        end = min(rows, int(self.summaries[0].group_sizes[0]))
        head = self.client.submit(_head, self.futures[0], end, workers=[self.workers[0]])
        return gather(self.client, head, f"the first rows of {self.name}")

    def map(self, client: Any, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``fn(shard_data, *args)`` on every shard, on the worker that holds it (futures, shard order)."""
        return [
            client.submit(fn, f, *args, workers=[w], allow_other_workers=False, pure=False)
            for f, w in zip(self.futures, self.workers, strict=True)
        ]


def load_sharded(
    client: Any,
    spec: Any,
    options: Mapping[str, Any] | None = None,
    *,
    name: str = "split",
    n_parts: int | None = None,
    workers: Sequence[str] | None = None,
) -> ShardedSplit:
    """Parse the shards of ``spec`` (glob, directory, file or list) on the workers (module docstring).

    ``n_parts`` (default: one per worker) applies when ``spec`` is a single file, cut into byte
    ranges; ``options`` are ``load_svmlight`` options (``n_features``, ``cache_dir``, ``engine``…).
    The driver only reads the few lines around each byte-range cut.
    """
    workers = list(workers or sorted(current_workers(client)))
    if not workers:
        raise ConfigError("backend.scheduler_address: the cluster has no workers")
    opts = dict(options or {})
    shards: list[Shard] = number_sidecar_queries(
        plan_shards(spec, n_parts or len(workers), where=f"data.{name}"), opts
    )
    placed = [workers[i % len(workers)] for i in range(len(shards))]
    futures = [
        client.submit(read_shard, s, opts, f"{name}[{i}]", workers=[w], allow_other_workers=False, pure=False)
        for i, (s, w) in enumerate(zip(shards, placed, strict=True))
    ]
    split = ShardedSplit(name, [str(s) for s in shards], futures, placed, [])
    # a worker's DataError is raised here
    split.summaries = gather(client, split.map(client, summarize), f"reading {name}")
    if opts.get("regroup"):
        split = regroup_straddling(client, split)
    else:
        check_disjoint_queries(split.sources, [s.query_ids for s in split.summaries])
    width = opts.get("n_features") or split.n_features
    if any(s.n_features != width for s in split.summaries):
        split.futures = split.map(client, widen, int(width))
        split.summaries = [replace(s, n_features=int(width)) for s in split.summaries]
    return split


def regroup_straddling(client: Any, split: ShardedSplit) -> ShardedSplit:
    """``split`` with every query that straddles shards gathered into its first shard.

    The driver finds the straddling qids in the shards' summaries (:func:`~ltr.data.shards.straddling_moves`);
    on each later shard's worker :func:`~ltr.data.shards.take_queries` cuts their rows out, Dask
    sends them worker to worker to the owner shard's worker, where
    :func:`~ltr.data.shards.regroup_shard` appends them to the owner's rows of that query; the
    giving shards drop them. A shard left with no query is removed from the split. The rows never
    pass through the driver; the owner's worker briefly holds its shard twice (old and regrouped).
    """
    moves = straddling_moves([s.query_ids for s in split.summaries])
    if not moves:
        return split
    pieces: dict[int, list[Any]] = {}
    for giver in sorted(moves):
        for owner, qids in sorted(moves[giver].items()):
            piece = client.submit(
                take_queries,
                split.futures[giver],
                qids,
                workers=[split.workers[giver]],
                allow_other_workers=False,
                pure=False,
            )
            pieces.setdefault(owner, []).append(piece)
    kept: list[int] = []
    futures: list[Any] = []
    for k, (future, worker, summary) in enumerate(
        zip(split.futures, split.workers, split.summaries, strict=True)
    ):
        give = [q for qids in moves.get(k, {}).values() for q in qids]
        if len(give) == summary.query_ids.shape[0]:
            continue  # every query of this shard belongs to an earlier one
        if give or k in pieces:
            future = client.submit(
                regroup_shard,
                future,
                give,
                pieces.get(k, []),
                workers=[worker],
                allow_other_workers=False,
                pure=False,
            )
        kept.append(k)
        futures.append(future)
    out = ShardedSplit(
        split.name, [split.sources[k] for k in kept], futures, [split.workers[k] for k in kept], []
    )
    out.summaries = gather(client, out.map(client, summarize), f"regrouping {split.name}")
    return out


def query_chunks(offsets: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """``n_parts`` query ranges ``(q_start, q_stop)`` with near-equal row counts, none empty.

    >>> query_chunks(np.array([0, 5, 10, 12, 20]), 2)
    [(0, 2), (2, 4)]
    """
    n_queries = offsets.shape[0] - 1
    if n_queries < n_parts:
        raise DataError(f"cannot cut {n_queries} queries into {n_parts} partitions (one per worker at least)")
    targets = offsets[-1] * np.arange(1, n_parts) / n_parts
    cuts = np.searchsorted(offsets, targets)  # first query boundary at or after each target
    bounds = [0]
    for i, cut in enumerate(cuts.tolist()):
        cut = min(max(int(cut), bounds[-1] + 1), n_queries - (n_parts - 1 - i))  # keep every part non-empty
        bounds.append(cut)
    bounds.append(n_queries)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def scatter_split(client: Any, data: RankingData, n_parts: int, workers: Sequence[str]) -> ShardedSplit:
    """An in-memory split as a :class:`ShardedSplit`: ``n_parts`` chunks of whole queries and
    near-equal row counts (:func:`query_chunks`), chunk ``i`` placed on worker ``i mod W``."""
    futures, placed, summaries, sources = [], [], [], []
    for i, (q0, q1) in enumerate(query_chunks(data.offsets, n_parts)):
        chunk = data.subset(np.arange(q0, q1), name=f"{data.name}[{i}]")
        where = workers[i % len(workers)]
        futures.append(client.scatter(chunk, workers=[where], hash=False))
        placed.append(where)
        summaries.append(summarize(chunk))
        sources.append(f"{data.name} queries {q0}-{q1 - 1}")
    return ShardedSplit(data.name, sources, futures, placed, summaries)


def load_sharded_dataset(client: Any, data_cfg: Mapping[str, Any], n_parts: int) -> dict[str, ShardedSplit]:
    """The splits of a ``kind: svmlight`` data config, parsed by the workers (:func:`load_sharded`).

    ``data.train`` / ``valid`` / ``test`` may each be a glob, a directory or a file (a single file
    is cut into ``n_parts`` byte ranges); parse options and ``cache_dir`` mean what they mean for
    :func:`~ltr.data.registry.load_dataset`. Splits of different widths are a ``DataError``.
    """
    sources, kwargs = svmlight_sources(data_cfg)
    kwargs |= cache_options(data_cfg)
    return load_sharded_splits(client, str(data_cfg.get("name", "svmlight")), sources, kwargs, n_parts)


def load_sharded_splits(
    client: Any, name: str, sources: Mapping[str, Any], options: Mapping[str, Any], n_parts: int
) -> dict[str, ShardedSplit]:
    """Each split of ``sources`` (split → glob, directory, file or list) parsed by the workers with the
    same ``load_svmlight`` ``options`` (:func:`load_sharded`, named ``NAME/SPLIT``); splits of different
    widths are a ``DataError``, as :func:`~ltr.data.registry.load_dataset` says it."""
    out = {
        split: load_sharded(client, spec, options, name=f"{name}/{split}", n_parts=n_parts)
        for split, spec in sources.items()
    }
    check_split_widths(name, out)
    return out


def gather_split(client: Any, split: ShardedSplit) -> RankingData:
    """All shards of ``split`` concatenated on the caller, weights and docids included (for tests and
    small data only)."""
    return concat(gather(client, split.futures, f"gathering {split.name}"), name=split.name)


def shard_arrays(data: RankingData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """On a worker: dense features in the dtype they were parsed into (``data.parse.dtype``, the model's
    ``input_dtype``: LightGBM bins the float64 values its own loader would read), labels and group sizes
    of one shard (what the engines take)."""
    return data.dense(), np.asarray(data.y), np.asarray(data.group_sizes)


def _shard_metrics(data: RankingData, ranker: Any, metrics: list[str], preset: Any) -> dict[str, np.ndarray]:
    scores = ranker.predict(data)
    return evaluate(metrics, data.y, scores, data.offsets, preset=preset)


def uniform_slice(seed: int, start: int, n: int) -> np.ndarray:
    """Draws ``start .. start + n`` of ``numpy.random.default_rng(seed).random(...)``, without the ones before.

    ``Generator.random`` takes one 64-bit output of PCG64 per double, so advancing the bit
    generator by ``start`` lands on draw ``start``.

    >>> bool(np.array_equal(uniform_slice(7, 3, 4), np.random.default_rng(7).random(10)[3:7]))
    True
    """
    bits = np.random.PCG64(seed)
    bits.advance(start)
    return np.random.Generator(bits).random(n)


def _shard_random_metrics(
    data: RankingData, seed: int, start: int, metrics: list[str], preset: Any
) -> dict[str, np.ndarray]:
    return evaluate(metrics, data.y, uniform_slice(seed, start, data.n_docs), data.offsets, preset=preset)


def random_baseline_metrics(
    client: Any, split: ShardedSplit, metrics: Sequence[str], preset: Any, seed: int
) -> dict[str, np.ndarray]:
    """Per-query values of ``metrics`` for the random baseline scores ``default_rng(seed).random(n_docs)``
    of the whole split, each shard drawing its own slice of that stream on its worker."""
    futures = [
        client.submit(
            _shard_random_metrics,
            f,
            seed,
            start,
            list(metrics),
            preset,
            workers=[w],
            allow_other_workers=False,
        )
        for f, w, start in zip(split.futures, split.workers, split.first_rows, strict=True)
    ]
    parts = gather(client, futures, "the random baseline")
    return {m: np.concatenate([p[m] for p in parts]) for m in metrics}


def per_query_metrics(
    client: Any, split: ShardedSplit, ranker: Any, metrics: Sequence[str], preset: Any
) -> dict[str, np.ndarray]:
    """Per-query values of ``metrics`` for ``ranker``'s scores on ``split``, computed on the workers.

    The fitted ranker is sent once to every worker holding a shard; each shard is scored and
    evaluated where it lives, and only the per-query arrays (one float per query and metric) come
    back, concatenated in the split's query order, exactly as ``ltr.metrics.evaluate`` would give
    on the whole split (``preset``: a preset name or resolved ``Conventions``).
    """
    if not isinstance(split, ShardedSplit):
        raise DataError(f"per_query_metrics needs a ShardedSplit, got {type(split).__name__}")
    remote = client.scatter(ranker, broadcast=True, hash=False)
    parts = gather(
        client, split.map(client, _shard_metrics, remote, list(metrics), preset), f"evaluating {split.name}"
    )
    return {m: np.concatenate([p[m] for p in parts]) for m in metrics}

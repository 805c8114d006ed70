"""The pipeline core every entry point uses: fit one configured ranker and evaluate it, no side effects.

:func:`fit_and_evaluate` is a pure function of the resolved config and the dataset's splits (plus an
optional ``on_iteration`` callback for live curves and progress): it builds the ranker (``model``
group; ``backend=dask`` → LightGBM or XGBoost on Dask), fits it with early stopping on the ``valid``
split, scores every split of ``eval.splits``, and returns an immutable :class:`Outcome` with

* per-query values of every ``eval.metrics`` metric per split (:class:`SplitResult`; NaN = a query
  the conventions skip), plus ``ndcg@1..max_k`` on ``test`` for the @k plot (``eval.curve``),
* bootstrap CI bounds of each mean (``eval.bootstrap``, seeded with the run seed; BCa falls back to
  the percentile CI where BCa is undefined),
* the random baseline: i.i.d. Uniform(0, 1) scores from ``default_rng(seed)`` on the report split
  (``test``, else the last split evaluated), scored with the same conventions,
* the learning curves, best iteration, engine parameters, per-query frames and the optimised value
  (mean over the ``valid`` queries of the early-stopping metric, else of the first eval metric),
* the splits that share queries with ``train`` (:func:`train_overlaps`: leakage the log step warns
  about and tags).

The splits are :class:`~ltr.data.RankingData`, or (``backend=dask``)
:class:`~ltr.distributed.shards.ShardedSplit`\\ s the workers parsed: those are scored and evaluated
on the workers (:func:`split_values`; the random baseline too, each shard drawing its slice of the
same stream), and only per-query arrays come back, so the outcome has the same form either way.

No MLflow and no console: :mod:`ltr.experiment.record` writes an outcome to a tracker, :mod:`ltr.experiment.console` prints
it. The metric conventions (``eval.preset`` + ``eval.conventions``) are read once, into
:class:`EvalConventions`, which computes every number of the outcome.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> conv = EvalConventions.from_config({"preset": "sklearn", "conventions": {"no_relevant": "skip"}})
>>> data = RankingData(np.array([[3.0], [1.0], [2.0], [5.0]]), np.array([1.0, 0, 0, 0]), np.array([1, 1, 2, 2]))
>>> conv.evaluate(["ndcg@2"], data, data.X[:, 0].astype(float))["ndcg@2"]  # query 2 has no relevant document
array([ 1., nan])
>>> conv.describe()["no_relevant"], conv.describe()["preset"]
('skip', 'sklearn+overrides')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from ltr.core.config_check import Constraint, check_value, plain
from ltr.core.errors import ConfigError, DataError, MetricError
from ltr.data import RankingData
from ltr.data.registry import REGISTRY, SPLITS, declared_label_range, load_dataset
from ltr.distributed.backend import build_dask_ranker, cluster_workers, dask_client, resolve_backend
from ltr.distributed.data import WORKER_KINDS, data_kind, load_worker_dataset
from ltr.distributed.shards import (
    ShardedSplit,
    per_query_metrics,
    random_baseline_metrics,
)
from ltr.metrics import Conventions, describe_conventions, evaluate, parse_metric, resolve_conventions
from ltr.metrics.conventions import MAX_EXP2_LABEL
from ltr.metrics.registry import REGISTRY as METRICS
from ltr.models import build_ranker
from ltr.models.ensembles.members import member_search_path as member_search_path
from ltr.stats import bootstrap_ci
from ltr.sweep.pruning import TrainingStopped

OnIteration = Callable[[int, dict[str, float]], None]


#: presets whose ERR top grade follows the data's label scale (every tool's preset keeps its fixed value)
GMAX_FROM_DATA = ("ltr",)


@dataclass(frozen=True)
class LabelScale:
    """The labels' range ``[low, high]`` and where it was read: ``data.label_range`` (declared by the data
    config, the registry or the synthetic generator) or the training labels (your own files without one)."""

    low: float
    high: float
    source: str

    @property
    def declared(self) -> bool:
        return self.source == "data.label_range"


def label_scale(data_cfg: Any, splits: Mapping[str, Any] | None = None) -> LabelScale | None:
    """The label scale of a run's data: declared (:func:`ltr.data.registry.declared_label_range`), else
    the min and max label of the ``train`` split when loaded, else ``None``.

    >>> label_scale({"kind": "mq2008"})
    LabelScale(low=0.0, high=2.0, source='data.label_range')
    >>> from ltr.data import RankingData
    >>> label_scale({"kind": "svmlight"}, {"train": RankingData(np.ones((2, 1)), np.array([0.0, 6]), np.array([1, 1]))})
    LabelScale(low=0.0, high=6.0, source='the training labels')
    """
    declared = declared_label_range(data_cfg or {})
    if declared is not None:
        return LabelScale(declared[0], declared[1], "data.label_range")
    train = (splits or {}).get("train")
    if train is None or train.n_docs == 0:
        return None
    low, high = label_bounds(train)
    return LabelScale(low, high, "the training labels")


def label_bounds(split: RankingData | ShardedSplit) -> tuple[float, float]:
    """The smallest and largest label of a split with rows: from its labels, or for a split the Dask
    workers hold, from what each shard reported (the labels never reach the driver).

    >>> from ltr.data import RankingData
    >>> label_bounds(RankingData(np.ones((3, 1)), np.array([2.0, 0, 1]), np.array([1, 1, 2])))
    (0.0, 2.0)
    """
    if isinstance(split, ShardedSplit):
        return split.min_label, split.max_label
    labels = np.asarray(split.y, dtype=np.float64)
    return float(labels.min()), float(labels.max())


@dataclass(frozen=True)
class EvalConventions:
    """The metric conventions of a run, read once from the ``eval`` group and used for every number.

    ``preset`` and ``overrides`` are the user's spelling (logged as ``metric_conventions.*``; a
    ``null`` convention is the preset's value and not an override); ``resolved`` is the validated
    :class:`~ltr.metrics.Conventions` every metric is computed with. Under the ``ltr`` preset ERR's top
    grade ``err_gmax`` is the top of the data's label scale (``gmax_source`` says where it was read)
    unless ``eval.conventions.err_gmax`` sets it; the presets of tools keep their fixed value.

    >>> scale = LabelScale(0.0, 2.0, "data.label_range")
    >>> c = EvalConventions.from_config({"preset": "ltr"}, scale)
    >>> c.resolved.err_gmax, c.gmax_note, c.describe()["preset"]
    (2, 'ERR: gmax=2 from data.label_range', 'ltr')
    >>> EvalConventions.from_config({"preset": "lightgbm"}, scale).resolved.err_gmax
    4
    """

    preset: str
    overrides: Mapping[str, Any]
    resolved: Conventions
    gmax_source: str | None = None

    @classmethod
    def from_config(cls, eval_cfg: Mapping[str, Any], scale: LabelScale | None = None) -> EvalConventions:
        """From ``eval.preset``, ``eval.conventions`` and the data's label scale (an unknown name or value
        raises ``MetricError``)."""
        preset = str(eval_cfg.get("preset", "ltr"))
        overrides = {k: v for k, v in plain(eval_cfg.get("conventions")).items() if v is not None}
        base = resolve_conventions(preset)
        source = None
        if preset in GMAX_FROM_DATA and "err_gmax" not in overrides and scale is not None:
            base, source = replace(base, err_gmax=max(1, math.ceil(scale.high))), scale.source
        return cls(preset, MappingProxyType(overrides), resolve_conventions(base, **overrides), source)

    @property
    def gmax_note(self) -> str | None:
        """``ERR: gmax=G from <source>`` when the data chose ERR's top grade, else ``None``."""
        if self.gmax_source is None:
            return None
        return f"ERR: gmax={self.resolved.err_gmax} from {self.gmax_source}"

    def describe(self) -> dict[str, str]:
        """:func:`ltr.metrics.describe_conventions` of the conventions in force, named by the preset."""
        described = describe_conventions(self.resolved)
        described["preset"] = self.preset + ("+overrides" if self.overrides else "")
        return described

    def evaluate(self, metrics: Sequence[str], data: Any, scores: np.ndarray) -> dict[str, np.ndarray]:
        """Per-query values of ``metrics`` for ``scores`` on ``data`` (a RankingData split; its
        ``docid`` breaks score ties under ``ties=docno_desc``/``docno_asc``)."""
        docno = getattr(data, "docid", None)
        return evaluate(list(metrics), data.y, scores, data.offsets, preset=self.resolved, docno=docno)


@dataclass(frozen=True)
class SplitResult:
    """Per-query metric values of one split, plus the summary the console and MLflow show.

    >>> r = SplitResult("test", 3, {"ndcg@10": np.array([0.5, np.nan, 1.0])})
    >>> r.mean("ndcg@10"), r.n_skipped("ndcg@10")
    (0.75, 1)
    """

    split: str
    n_queries: int
    per_query: dict[str, np.ndarray]

    def mean(self, metric: str) -> float:
        """Mean over the queries that were not skipped (NaN when every query was skipped)."""
        values = self.per_query[metric]
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")

    def n_skipped(self, metric: str) -> int:
        """Queries the conventions skipped (NaN values) for ``metric``."""
        return int(np.isnan(self.per_query[metric]).sum())


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


@dataclass(frozen=True)
class Outcome:
    """Everything one fitted-and-evaluated system produced (see the module docstring)."""

    ranker: Any
    results: dict[str, SplitResult]  # split → per-query values of eval.metrics
    cis: dict[str, dict[str, tuple[float, float]]]  # split → metric → (low, high); empty when B = 0
    baseline: SplitResult  # the random baseline on report_split
    report_split: str
    frames: dict[str, Any]  # split → per-query DataFrame (qid, n_docs, metrics, @k curve on test)
    query_ids: dict[str, np.ndarray]
    history: dict[str, dict[str, list[float]]]  # evals_result_: split → metric → one value per round
    best_iteration: int | None
    engine_params: dict[str, Any]
    metrics: tuple[str, ...]  # eval.metrics, in order
    conventions: EvalConventions
    target: str  # the optimised metric
    value_split: str  # where ``value`` is measured: valid, else the report split
    value: float  # mean of ``target`` on ``value_split`` (NaN when not evaluated)
    overlaps: tuple[Overlap, ...] = ()  # splits sharing queries with train (see train_overlaps)


def make_ranker(cfg: Any) -> Any:
    """The configured ranker: ``backend=dask`` → LightGBM or XGBoost on a Dask cluster, otherwise a local engine."""
    backend = cfg.get("backend")
    if backend is not None and str(backend.get("name", "local")) == "dask":
        return build_dask_ranker(cfg.model, backend, seed=int(cfg.seed), num_threads=int(cfg.num_threads))
    return build_ranker(cfg.model, seed=int(cfg.seed), num_threads=int(cfg.num_threads))


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


def optimised_metric(cfg: Any) -> str:
    """The validation metric a sweep optimises: the early-stopping metric, else the first eval metric."""
    early = cfg.model.get("early_stopping") or {}
    return str(early.get("metric") or cfg.eval.metrics[0])


def random_scores(n_docs: int, seed: int) -> np.ndarray:
    """The random baseline: i.i.d. Uniform(0, 1) scores from ``numpy.random.default_rng(seed)``.

    >>> random_scores(3, 0).round(4).tolist()
    [0.637, 0.2698, 0.041]
    """
    return np.random.default_rng(seed).random(n_docs)


def curve_metrics(eval_cfg: Mapping[str, Any]) -> list[str]:
    """The ``metric@k`` names (k = 1..max_k) stored per query for the @k plot (``eval.curve``).

    >>> curve_metrics({"curve": {"metric": "ndcg", "max_k": 3}})
    ['ndcg@1', 'ndcg@2', 'ndcg@3']
    """
    curve = eval_cfg.get("curve") or {}
    max_k = int(curve.get("max_k", 0) or 0)
    return [f"{curve.get('metric', 'ndcg')}@{k}" for k in range(1, max_k + 1)]


def robust_bootstrap_ci(values: np.ndarray, *, method: str, B: int, confidence: float, seed: int) -> Any:
    """:func:`ltr.stats.bootstrap_ci`; where BCa is undefined (e.g. nearly constant values) the percentile CI."""
    try:
        return bootstrap_ci(values, method=method, B=B, confidence=confidence, seed=seed)
    except DataError:
        if method != "bca":
            raise
        return bootstrap_ci(values, method="percentile", B=B, confidence=confidence, seed=seed)


def ci_bounds(
    result: SplitResult, metrics: Sequence[str], eval_cfg: Mapping[str, Any], seed: int
) -> dict[str, tuple[float, float]]:
    """``{metric: (low, high)}``: bootstrap CI of the mean over queries (``eval.bootstrap``; run seed).

    Empty when ``eval.bootstrap.B`` is 0; a metric with fewer than two finite values has no bounds.
    """
    boot = eval_cfg.get("bootstrap") or {}
    if not boot or int(boot.get("B", 0) or 0) == 0:
        return {}
    out: dict[str, tuple[float, float]] = {}
    for metric in metrics:
        values = result.per_query[metric]
        if int(np.isfinite(values).sum()) < 2:
            continue
        ci = robust_bootstrap_ci(
            values,
            method=str(boot.get("method", "bca")),
            B=int(boot["B"]),
            confidence=float(boot.get("confidence", 0.95)),
            seed=int(seed),
        )
        out[metric] = (ci.low, ci.high)
    return out


def split_values(
    ranker: Any, data: Any, metrics: Sequence[str], conventions: EvalConventions
) -> dict[str, np.ndarray]:
    """Per-query values of ``metrics`` for ``ranker``'s scores on one split.

    A :class:`~ltr.distributed.shards.ShardedSplit` (``backend=dask`` with data the workers parsed)
    is scored and evaluated on the workers; only the per-query arrays come back, the same arrays a
    local evaluation of the same scores gives.
    """
    if isinstance(data, ShardedSplit):
        return per_query_metrics(data.client, data, ranker, metrics, conventions.resolved)
    return conventions.evaluate(metrics, data, ranker.predict(data))


def per_query_frame(result: SplitResult, data: Any, extra: Mapping[str, np.ndarray] | None = None) -> Any:
    """One row per query: ``qid``, ``n_docs``, then one column per metric (NaN = skipped query)."""
    columns: dict[str, Any] = {"qid": np.asarray(data.query_ids), "n_docs": np.asarray(data.group_sizes)}
    columns.update({m: np.asarray(v, dtype=float) for m, v in result.per_query.items()})
    columns.update({m: np.asarray(v, dtype=float) for m, v in (extra or {}).items() if m not in columns})
    return pd.DataFrame(columns)


def check_splits(data_cfg: Any, splits: Mapping[str, Any]) -> None:
    """A run needs a ``train`` split; raise :class:`ConfigError` naming the data config otherwise."""
    if "train" not in splits:
        raise ConfigError(f"data '{data_cfg.name}' has no train split (got {sorted(splits)})")


def check_run_config(cfg: Any) -> EvalConventions:
    """Check everything of a run that needs no data, so a bad value fails before the data is read.

    ``seed`` and ``num_threads``; the metric conventions (``eval.preset``, ``eval.conventions``) and
    what they require of the data (:func:`check_conventions_fit`: document ids for ``docno`` tie
    breaking; labels within ERR's ``err_gmax``, a gain table or the ``exp2`` range, on the label scale
    the data config declares); every metric name of ``eval.metrics`` and ``eval.curve.metric``; and the
    model: the ranker is built, which validates its config (for an ensemble, every member's), and
    discarded. Errors name the key as the user spells it (``eval.metrics: unknown metric 'ndcp@10';
    ...``, ``model.members.1.params: ...``). Returns the conventions as far as the config fixes them.

    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"seed": 1, "num_threads": 1, "model": {"name": "linear"},
    ...                         "eval": {"metrics": ["ndcg@10", "ndcp@10"]}})
    >>> check_run_config(cfg)
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: eval.metrics: unknown metric 'ndcp@10'; metric names are <family> or <family>@<k> with families:
    ...
    """
    check_value(cfg.get("seed"), int, None, "seed")
    check_value(cfg.get("num_threads"), int, Constraint(low=0), "num_threads")
    names = [("eval.metrics", str(m)) for m in cfg.eval.metrics]
    names += [("eval.curve.metric", m) for m in curve_metrics(cfg.eval)[:1]]
    for where, name in names:
        try:
            parse_metric(name)
        except MetricError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    unknown = [str(s) for s in cfg.eval.splits if str(s) not in SPLITS]
    if unknown:
        raise ConfigError(
            f"eval.splits: unknown split(s) {', '.join(unknown)}; splits are {', '.join(SPLITS)}"
        )
    data_cfg = cfg.get("data") or {}
    scale = label_scale(data_cfg)
    conventions = read_conventions(cfg.eval, scale)
    labels = None if scale is None else (scale.high, f"data.label_range=[{scale.low:g}, {scale.high:g}] goes")
    check_conventions_fit(cfg, conventions, labels, docids=config_has_docids(data_cfg))
    make_ranker(cfg)
    return conventions


def read_conventions(eval_cfg: Any, scale: LabelScale | None) -> EvalConventions:
    """:meth:`EvalConventions.from_config`, its ``MetricError`` as a ``ConfigError`` naming ``eval``."""
    try:
        return EvalConventions.from_config(eval_cfg, scale)
    except MetricError as exc:  # eval.preset or a key/value of eval.conventions (the message names it)
        raise ConfigError(f"eval: {exc}") from exc


def config_has_docids(data_cfg: Any) -> bool | None:
    """Whether the data config loads document ids (``data.parse.docid``; your own files may also set
    ``+data.docid``); ``False`` for the synthetic data, ``None`` (unknown) for a kind ``ltr`` does not know."""
    kind = str(data_cfg.get("kind") or data_cfg.get("name") or "")
    if kind == "synthetic":
        return False
    if kind != "svmlight" and kind not in REGISTRY:
        return None
    parse = data_cfg.get("parse") or {}
    return bool(parse.get("docid") or (kind == "svmlight" and data_cfg.get("docid")))


def _families(eval_cfg: Any) -> set[str]:
    names = [*map(str, eval_cfg.metrics), *curve_metrics(eval_cfg)[:1]]
    return {parse_metric(name).family for name in names}


def check_conventions_fit(
    cfg: Any, conventions: EvalConventions, labels: tuple[float, str] | None, *, docids: bool | None
) -> None:
    """Refuse conventions the data cannot satisfy, with the override that fixes it (see :func:`check_run_config`).

    ``labels`` is the top label and what it is, as the message says it (``"the test labels go"``);
    ``docids`` whether the data has document ids (``None``: unknown).
    """
    c = conventions.resolved
    preset = f"eval.preset={conventions.preset}"
    if c.ties in ("docno_desc", "docno_asc") and docids is False:
        raise ConfigError(
            f"{preset} breaks score ties by document id (ties: {c.ties}), but data '{cfg.data.get('name')}' "
            f"has no document ids: set eval.conventions.ties=average (or stable) to keep the preset's other "
            "conventions, or load the ids of files with '# docid = X' comments with data.parse.docid=true"
        )
    if labels is None:
        return
    top, what = labels
    where = f"{what} up to {top:g}"
    families = _families(cfg.eval)
    if "err" in families and top > c.err_gmax:
        given = (
            "eval.conventions.err_gmax" if "err_gmax" in conventions.overrides else f"the value of {preset}"
        )
        raise ConfigError(
            f"{where}, above ERR's top grade {c.err_gmax} ({given}): set eval.conventions.err_gmax={math.ceil(top)}"
        )
    binary = sorted(f for f in families if METRICS[f].binary)
    if binary and 0 < top < c.rel_threshold:  # every query would be skipped (or scored 0) without a word
        raise ConfigError(
            f"{where}, below the relevance threshold {c.rel_threshold:g} of {', '.join(binary)}: no document "
            f"would count as relevant; set eval.conventions.rel_threshold={min(1.0, top):g}"
        )
    if families & {"ndcg", "dcg"}:
        if isinstance(c.gain, tuple) and top >= len(c.gain):
            raise ConfigError(
                f"{where}, but the gain table eval.conventions.gain has {len(c.gain)} entries (labels 0.."
                f"{len(c.gain) - 1}): give one gain per label 0..{math.ceil(top)}"
            )
        if c.gain == "exp2" and top > MAX_EXP2_LABEL:
            raise ConfigError(
                f"{where}, and gain exp2 (2^l - 1) overflows above label {MAX_EXP2_LABEL}: "
                "set eval.conventions.gain=linear"
            )


def check_data_fits(cfg: Any, splits: Mapping[str, Any]) -> EvalConventions:
    """After loading, before training: the conventions of the run (ERR's gmax from the data's label scale
    under the ``ltr`` preset) checked against the labels and document ids the splits have."""
    check_splits(cfg.data, splits)
    if not any(split in splits for split in cfg.eval.splits):
        raise ConfigError(
            f"eval.splits={list(cfg.eval.splits)}: none of them is a split of the data {sorted(splits)}"
        )
    conventions = read_conventions(cfg.eval, label_scale(cfg.data, splits))
    tops = {split: label_bounds(d)[1] for split, d in splits.items() if d.n_docs}
    top_split = max(tops, key=tops.__getitem__, default=None)
    labels = None if top_split is None else (tops[top_split], f"the {top_split} labels go")
    docids = all(getattr(d, "docid", None) is not None for d in splits.values())
    check_conventions_fit(cfg, conventions, labels, docids=docids)
    return conventions


def fit_and_evaluate(
    cfg: Any, splits: Mapping[str, Any], *, on_iteration: OnIteration | None = None
) -> Outcome:
    """Fit ``cfg.model`` on ``splits["train"]`` (early stopping on ``valid``) and evaluate it.

    ``on_iteration(i, values)`` receives each round's monitored values (``{"valid/ndcg@10": v}``);
    when it returns True the fit stops and :class:`ltr.sweep.pruning.TrainingStopped` is raised, unevaluated.
    Nothing is logged or printed; see the module docstring for what the :class:`Outcome` holds.
    """
    conventions = check_data_fits(cfg, splits)  # before the fit, which may take hours
    metrics = list(cfg.eval.metrics)
    seed = int(cfg.seed)
    ranker = make_ranker(cfg)
    ranker.fit(splits["train"], splits.get("valid"), on_iteration=on_iteration)
    if getattr(ranker, "stopped_at_", None) is not None:  # on_iteration stopped it (a pruned trial)
        raise TrainingStopped(ranker.stopped_at_)

    curve_names = curve_metrics(cfg.eval)
    results: dict[str, SplitResult] = {}
    cis: dict[str, dict[str, tuple[float, float]]] = {}
    frames: dict[str, Any] = {}
    for split in cfg.eval.splits:
        if split not in splits:
            continue
        data = splits[split]
        extra_names = [m for m in curve_names if m not in metrics] if split == "test" else []
        values = split_values(ranker, data, [*metrics, *extra_names], conventions)
        results[split] = SplitResult(split, data.n_queries, {m: values[m] for m in metrics})
        cis[split] = ci_bounds(results[split], metrics, cfg.eval, seed)
        extra = {m: values[m] for m in extra_names}
        frames[split] = per_query_frame(results[split], data, extra)

    report_split = "test" if "test" in results else next(reversed(results))
    data = splits[report_split]
    if isinstance(data, ShardedSplit):  # each worker draws its shard's slice of the same stream
        baseline_values = random_baseline_metrics(data.client, data, metrics, conventions.resolved, seed)
    else:
        baseline_values = conventions.evaluate(metrics, data, random_scores(data.n_docs, seed))
    baseline = SplitResult(report_split, data.n_queries, baseline_values)

    target = optimised_metric(cfg)
    value_split = "valid" if "valid" in results else report_split
    value = results[value_split].mean(target) if target in results[value_split].per_query else float("nan")
    history = getattr(ranker, "evals_result_", {}) or {}
    return Outcome(
        ranker=ranker,
        results=results,
        cis=cis,
        baseline=baseline,
        report_split=report_split,
        frames=frames,
        query_ids={s: np.asarray(splits[s].query_ids) for s in results},
        history={split: {m: list(v) for m, v in curves.items()} for split, curves in history.items()},
        best_iteration=getattr(ranker, "best_iteration_", None),
        engine_params=dict(getattr(ranker, "engine_params_", None) or {}),
        metrics=tuple(metrics),
        conventions=conventions,
        target=target,
        value_split=value_split,
        value=value,
        overlaps=train_overlaps(splits),
    )

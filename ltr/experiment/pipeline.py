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
* the splits that share queries with ``train`` (:func:`~ltr.experiment.splits.train_overlaps`:
  leakage the log step warns about and tags).

The splits are :class:`~ltr.data.RankingData`, or (``backend=dask``)
:class:`~ltr.distributed.shards.ShardedSplit`\\ s the workers parsed: those are scored and evaluated
on the workers (:func:`split_values`; the random baseline too, each shard drawing its slice of the
same stream), and only per-query arrays come back, so the outcome has the same form either way.

No MLflow and no console: :mod:`ltr.experiment.record` writes an outcome to a tracker, :mod:`ltr.experiment.console` prints
it. The metric conventions (``eval.preset`` + ``eval.conventions``) are read once, into
:class:`~ltr.experiment.conventions.EvalConventions`, which computes every number of the outcome;
:func:`check_run_config` checks everything of a run that needs no data.

"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError, DataError, MetricError
from ltr.data.registry import SPLITS
from ltr.distributed.backend import build_dask_ranker
from ltr.distributed.shards import (
    ShardedSplit,
    per_query_metrics,
    random_baseline_metrics,
)
from ltr.experiment.conventions import (
    EvalConventions,
    check_conventions_fit,
    check_data_fits,
    config_has_docids,
    curve_metrics,
    label_scale,
    read_conventions,
)
from ltr.experiment.normalization import normalization_method, normalize_run_splits
from ltr.experiment.splits import Overlap, train_overlaps
from ltr.metrics import parse_metric
from ltr.models import build_ranker
from ltr.stats import bootstrap_ci
from ltr.sweep.pruning import TrainingStopped

OnIteration = Callable[[int, dict[str, float]], None]


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


def follow_engine_dtype(cfgs: Sequence[Any], dtype: str) -> str | None:
    """Parse the files of these runs into ``dtype``, the dtype their engines' own loaders read (the
    model's ``input_dtype``, :class:`~ltr.models.base.BaseRanker`; for systems compared on one dataset
    their :func:`~ltr.models.base.shared_input_dtype`): set ``data.parse.dtype`` of every config that
    reads files and leaves it unset.

    LightGBM bins the values it is given: a file parsed to float32 gives other bin edges than
    LightGBM's own loader (float64), and so another model.
    Returns the dtype set, or ``None`` when every config sets its own or reads no files (synthetic
    data: float32 values by construction).
    """
    unset = [
        c
        for c in cfgs
        if "parse" in (c.get("data") or {})
        and c.data.parse.get("dtype") is None
        and c.data.get("dtype") is None  # data=svmlight takes parse options at top level too
    ]
    if not unset:
        return None
    for c in unset:
        c.data.parse.dtype = dtype
    return dtype


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


def robust_bootstrap_ci(values: np.ndarray, *, method: str, B: int, confidence: float, seed: int) -> Any:
    """:func:`ltr.stats.bootstrap_ci`; where BCa is undefined (e.g. nearly constant values) the percentile CI."""
    try:
        return bootstrap_ci(values, method=method, B=B, confidence=confidence, seed=seed)
    except DataError:
        if method != "bca":
            raise
        return bootstrap_ci(values, method="percentile", B=B, confidence=confidence, seed=seed)


def bootstrap_confidence(eval_cfg: Mapping[str, Any]) -> float:
    """The confidence level of the run's bootstrap CIs (``eval.bootstrap.confidence``, default 0.95).

    >>> bootstrap_confidence({"bootstrap": {"B": 100, "confidence": 0.9}}), bootstrap_confidence({})
    (0.9, 0.95)
    """
    return float((eval_cfg.get("bootstrap") or {}).get("confidence", 0.95))


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
            confidence=bootstrap_confidence(eval_cfg),
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
    import pandas as pd  # deferred: pandas (~0.4 s) loads after the config checks (check_run_config)

    return pd.DataFrame(columns)


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
    # data.normalize: fitted on train, every split normalised; the ranker keeps it (ltr.experiment.normalization)
    splits, normalizer = normalize_run_splits(splits, normalization_method(cfg))
    for split in cfg.eval.splits:  # train and valid are checked by fit itself
        if split in splits and split not in ("train", "valid"):
            ranker.check_scoring_input(splits[split], split)
    ranker.fit(splits["train"], splits.get("valid"), on_iteration=on_iteration)
    ranker.normalize_ = normalizer
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

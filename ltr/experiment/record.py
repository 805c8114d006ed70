"""Write a pipeline :class:`~ltr.experiment.pipeline.Outcome` to a tracker: the second half of every entry point.

:func:`train_and_record` is what ``ltr.train`` and ``ltr.compare`` run per system: start the MLflow run
(params and the resolved config first, so a crashed run keeps them) → :func:`ltr.experiment.pipeline.fit_and_evaluate`
with live curves (``curve/<split>/<metric>``, step = iteration) and a progress bar → :func:`log_outcome`.

:func:`log_outcome` records, with the names ``docs/experiments.md`` lists ("What a run records"):
the metric conventions (``metric_conventions.*`` params), the engine's own parameters (``engine.*``),
``best_iteration``, per split ``<split>/<metric>`` means (charts) while their CI bounds and the
queries scored and skipped go to one table (:data:`SUMMARY_TABLE`, shown as a table in the
dashboard), ``<split>/baseline_random/<metric>``, the description (``mlflow.note.content``: the
headline result with its CI, :func:`run_description`), the choices the model
learned from the data (:meth:`~ltr.models.base.BaseRanker.learned_choices`: ``learned.*`` params and
metrics, e.g. the ``feature`` baseline's column and direction, a blend's weights), the per-query
Parquet files ``per_query/<split>.parquet``, plots under ``plots/`` and the model under ``model/``;
a split sharing queries with ``train`` is warned about and tagged ``ltr.leakage.<split>``.
:func:`train_and_record` also logs the splits as MLflow dataset inputs (:func:`split_datasets`).

>>> import numpy as np
>>> from ltr.experiment.pipeline import SplitResult
>>> split_metrics(SplitResult("test", 2, {"ndcg@10": np.array([0.5, 1.0])}), ["ndcg@10"])
{'test/ndcg_at_10': 0.75}
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from ltr.data._fastparse import kernels_compiled
from ltr.data.registry import load_dataset, split_files
from ltr.distributed.shards import ShardedSplit
from ltr.experiment.console import print_compile_notice, print_data_summary, print_training_start
from ltr.experiment.conventions import check_splits
from ltr.experiment.pipeline import Outcome, SplitResult, bootstrap_confidence, fit_and_evaluate
from ltr.experiment.splits import load_splits
from ltr.models.monitor import OnIteration
from ltr.report.plots import feature_importance, plot_feature_importance, plot_learning_curves
from ltr.report.progress import iteration_progress
from ltr.sweep.pruning import TrainingStopped
from ltr.sweep.shared_data import load_shared
from ltr.tracking.writer import SUMMARY_TABLE, SplitDataset, flatten_params, make_tracker, mlflow_metric_name

log = logging.getLogger(__name__)


def connect_and_load(
    cfg: Any, console: Any, client: Any = None, *, shared: bool = False
) -> tuple[Any, dict[str, Any]]:
    """The start of every entry point: the tracker, then the dataset's splits, summarised on the console.

    The tracker comes first so that an unreachable MLflow server fails before any data is read.
    With a Dask ``client`` (:func:`ltr.experiment.splits.data_cluster`) the workers parse the splits;
    ``shared`` (a sweep's trial) reuses the splits this process loaded last for the same data config
    (:func:`ltr.sweep.shared_data.load_shared`).
    """
    tracker = make_tracker(cfg.tracking, Path(cfg.paths.root).resolve())
    if client is None and not kernels_compiled():
        print_compile_notice(console)
    if client is not None:
        splits = load_splits(cfg, client)
    elif shared:
        splits = dict(load_shared(cfg.data, load_dataset))
    else:
        splits = load_dataset(cfg.data)
    check_splits(cfg.data, splits)
    print_data_summary(console, cfg.data, splits)
    return tracker, splits


class CurveBuffer:
    """Collects ``on_iteration`` values and logs them as ``curve/<split>/<metric>`` (step = iteration).

    Flushes at most once per ``interval`` seconds and on exit, so curves appear live in the
    dashboard and survive a crash or Ctrl-C (the tracker marks the run afterwards).
    """

    def __init__(self, tracker: Any, interval: float = 2.0) -> None:
        self.tracker, self.interval = tracker, interval
        self.rows: list[tuple[int, dict[str, float]]] = []
        self.seen = 0
        self._last = 0.0
        self._lock = threading.Lock()  # ensembles report from member threads

    def __call__(self, iteration: int, values: dict[str, float]) -> None:
        with self._lock:
            self.rows.append((int(iteration), dict(values)))
            self.seen += 1
            if time.monotonic() - self._last >= self.interval:
                self._flush()

    def _flush(self) -> None:
        rows, self.rows = self.rows, []
        if rows:
            self.tracker.log_iteration_values(rows)
        self._last = time.monotonic()

    def __enter__(self) -> CurveBuffer:
        self._last = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._flush()


@dataclass(frozen=True)
class RecordedRun:
    """An outcome and the id of the MLflow run it was logged to (``None`` with ``tracking=none``)."""

    outcome: Outcome
    run_id: str | None
    label: str


def split_metrics(result: SplitResult, metrics: Sequence[str]) -> dict[str, float]:
    """The MLflow metrics of one split: each metric's mean as ``<split>/<metric>`` (one chart each).

    CI bounds and counts are not metrics (they would be charts of their own): :func:`summary_rows`.
    """
    return {mlflow_metric_name(result.split, m): result.mean(m) for m in metrics}


def summary_rows(
    result: SplitResult, metrics: Sequence[str], cis: Mapping[str, tuple[float, float]]
) -> list[dict[str, Any]]:
    """One row per metric of a split for the run's :data:`SUMMARY_TABLE`: mean, CI bounds (``None``
    without a bootstrap), queries scored and skipped.

    >>> import numpy as np
    >>> from ltr.experiment.pipeline import SplitResult
    >>> r = SplitResult("test", 2, {"ndcg@10": np.array([0.5, 1.0])})
    >>> summary_rows(r, ["ndcg@10"], {"ndcg@10": (0.5, 1.0)})
    [{'split': 'test', 'metric': 'ndcg@10', 'mean': 0.75, 'ci_low': 0.5, 'ci_high': 1.0, 'n_queries': 2, 'n_skipped': 0}]
    """
    rows = []
    for m in metrics:
        low, high = cis.get(m, (None, None))
        rows.append(
            {
                "split": result.split,
                "metric": m,
                "mean": result.mean(m),
                "ci_low": low,
                "ci_high": high,
                "n_queries": result.n_queries,
                "n_skipped": result.n_skipped(m),
            }
        )
    return rows


def baseline_metric_name(split: str, metric: str) -> str:
    """The random baseline's MLflow metric: ``<split>/baseline_random/<metric>``.

    MLflow's run page groups charts by the name before the last ``/`` and orders the groups
    alphabetically, so this name puts the baseline right after the model's own ``<split>/…`` charts
    instead of first (``baseline_random/test/…`` sorted before everything the model logged).

    >>> baseline_metric_name("test", "ndcg@10")
    'test/baseline_random/ndcg_at_10'
    """
    return mlflow_metric_name(f"{split}/baseline_random", metric)


def split_datasets(data_cfg: Any, splits: Mapping[str, Any], tags: Mapping[str, str]) -> list[SplitDataset]:
    """The run's splits for MLflow's Datasets panel: name ``<data>/<split>``, digest = the fingerprint.

    The digest is the run's ``ltr.data.fingerprint.<split>`` tag when it has one (the value computed
    once for the tags), else :meth:`~ltr.data.RankingData.fingerprint`; the source is the file the
    split was read from (:func:`ltr.data.registry.split_files`), else the split's own name.
    """
    files = split_files(data_cfg)
    out = []
    for split, data in splits.items():
        digest = tags.get(f"ltr.data.fingerprint.{split}") or data.fingerprint()
        profile = {"n_queries": data.n_queries, "n_docs": data.n_docs, "n_features": data.n_features}
        source = str(files[split]) if split in files else str(data.name)
        out.append(SplitDataset(f"{data_cfg.get('name')}/{split}", digest, source, split, profile))
    return out


def log_run_plots(
    tracker: Any, outcome: Outcome, n_features: int, out_dir: Path | None, name: str
) -> list[Path]:
    """Learning curves and feature importance (gain) as PNG artifacts under ``plots/`` (and in ``out_dir``)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(out_dir) if out_dir is not None else Path(tmp)
        written: list[Path] = []
        if outcome.history:
            written.append(
                plot_learning_curves(
                    outcome.history,
                    folder / f"learning_curves_{name}.png",
                    best_iteration=outcome.best_iteration,
                    title=f"{name}: learning curves",
                )
            )
        importance = feature_importance(outcome.ranker, n_features)
        selection = getattr(outcome.ranker, "feature_selection_", None)
        if importance is not None and selection is not None and importance.size == len(selection.ids):
            importance = selection.widen(importance[None, :], fill=0.0)[0]  # bars named by the file's ids
        if importance is not None and importance.size:
            written.append(
                plot_feature_importance(
                    importance,
                    folder / f"feature_importance_{name}.png",
                    title=f"{name}: feature importance (gain)",
                )
            )
        for path in written:
            tracker.log_artifact(path, "plots")
        return written if out_dir is not None else []


def model_example(data: Any, rows: int = 5) -> Any:
    """The logged model's input example: ``(X, qid)`` of the first query's first ``rows`` documents.

    :func:`ltr.models.pyfunc.log_pyfunc_model` stores it as a DataFrame ``f1 … fn`` + ``qid``, the
    input every logged model takes; ``None`` for a split without documents.
    """
    if not data.n_docs:
        return None
    if isinstance(data, ShardedSplit):  # rows on a worker: fetch only these
        return data.first_query_rows(rows)
    end = min(rows, int(data.offsets[1]))
    if data.features is not None:  # the model takes the file's full rows: unused columns are NaN
        return data.features.widen(data.dense()[:end]), data.qid[:end]
    return data.dense()[:end], data.qid[:end]


def describe_learned(ranker: Any, top: int = 5) -> list[str]:
    """Console lines for the choices a model learned (:meth:`~ltr.models.base.BaseRanker.learned_choices`).

    One line per group of learned params (the keys up to their last dot: ``blend.weight.a`` and
    ``blend.weight.b`` share a line), floats to 4 decimals; then the ``top`` learned metrics by value
    (e.g. the best candidate features), grouped the same way, and how many more the run logged.

    >>> class Fake:
    ...     def learned_choices(self):
    ...         return ({"feature.id": 3, "blend.weight.a": 0.753797, "blend.weight.b": 0.246203},
    ...                 {"feature.selection.f1_desc": 0.25, "feature.selection.f3_desc": 0.5, "x": 0.1})
    >>> for line in describe_learned(Fake(), top=2): print(line)
    learned feature.id = 3
    learned blend.weight: a 0.7538, b 0.2462
    learned feature.selection: f3_desc 0.5000, f1_desc 0.2500
      (1 more: learned.* metrics of the run)
    """
    params, metrics = ranker.learned_choices()
    ranked = sorted(metrics.items(), key=lambda kv: -kv[1] if kv[1] == kv[1] else float("inf"))
    lines = _grouped_lines(params.items()) + _grouped_lines(ranked[:top])
    if len(ranked) > top:
        lines.append(f"  ({len(ranked) - top} more: learned.* metrics of the run)")
    return lines


def _grouped_lines(items: Any) -> list[str]:
    """``learned KEY = VALUE`` for a key alone in its group, ``learned GROUP: a VALUE, b VALUE`` for keys
    that share everything up to their last dot (first-seen order kept)."""
    groups: dict[str, list[tuple[str, Any]]] = {}
    for key, value in items:
        group, _, leaf = str(key).rpartition(".")
        groups.setdefault(group, []).append((leaf, value))

    def shown(value: Any) -> str:
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    lines = []
    for group, members in groups.items():
        if len(members) == 1 or not group:
            lines += [f"learned {'.'.join(filter(None, (group, leaf)))} = {shown(v)}" for leaf, v in members]
        else:
            lines.append(f"learned {group}: " + ", ".join(f"{leaf} {shown(v)}" for leaf, v in members))
    return lines


def headline_metric(outcome: Outcome) -> str:
    """The metric a run is summarised by: the optimised one when evaluated, else the first of ``eval.metrics``."""
    return outcome.target if outcome.target in outcome.metrics else outcome.metrics[0]


def run_description(outcome: Outcome, model: str, data: str, confidence: float = 0.95) -> str:
    """The run's description (MLflow's ``mlflow.note.content``): the headline result with its CI.

    The :func:`headline_metric`'s mean on the report split, the bootstrap CI when there is one, the number of queries, the
    random baseline on the same queries, and the optimised validation value and best iteration.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from ltr.experiment.pipeline import SplitResult
    >>> test = SplitResult("test", 4, {"ndcg@10": np.array([0.5, 0.7, 0.9, 0.7])})
    >>> base = SplitResult("test", 4, {"ndcg@10": np.array([0.3, 0.3, 0.4, 0.2])})
    >>> o = SimpleNamespace(results={"test": test}, cis={"test": {"ndcg@10": (0.6, 0.8)}}, baseline=base,
    ...     report_split="test", metrics=("ndcg@10",), target="ndcg@10", value_split="valid", value=0.68,
    ...     best_iteration=27)
    >>> run_description(o, "lambdamart", "synthetic")
    'lambdamart on synthetic: test ndcg@10 = 0.7000, 95% CI [0.6000, 0.8000] over 4 queries (random scores: 0.3000); valid ndcg@10 = 0.6800 (optimised); best iteration 27.'
    """
    split = outcome.report_split
    metric = headline_metric(outcome)
    result = outcome.results[split]
    text = f"{model} on {data}: {split} {metric} = {result.mean(metric):.4f}"
    ci = outcome.cis.get(split, {}).get(metric)
    if ci is not None:
        text += f", {confidence:.0%} CI [{ci[0]:.4f}, {ci[1]:.4f}]"
    skipped = result.n_skipped(metric)
    text += f" over {result.n_queries - skipped} queries"
    if skipped:
        text += f" ({skipped} skipped: {metric} undefined, e.g. no relevant document)"
    text += f" (random scores: {outcome.baseline.mean(metric):.4f})"
    if outcome.value_split != split and outcome.value == outcome.value:
        text += f"; {outcome.value_split} {outcome.target} = {outcome.value:.4f} (optimised)"
    if outcome.best_iteration is not None:
        text += f"; best iteration {outcome.best_iteration}"
    return text + "."


def log_outcome(
    tracker: Any,
    cfg: Any,
    outcome: Outcome,
    splits: Mapping[str, Any],
    *,
    curves_logged: bool = False,
    plots_dir: Path | None = None,
    label: str | None = None,
) -> None:
    """Write ``outcome`` to the tracker's active run (see the module docstring for the names).

    ``curves_logged`` says the learning curves already went out live; otherwise the whole history is
    logged here. ``plots_dir`` also keeps the PNGs there (a comparison's report folder).
    """
    tracker.log_params({f"metric_conventions.{k}": v for k, v in outcome.conventions.describe().items()})
    for overlap in outcome.overlaps:
        log.warning("possible leakage: %s; its scores overstate the model", overlap.describe())
    if outcome.overlaps:
        tracker.set_tags({f"ltr.leakage.{o.split}": o.describe() for o in outcome.overlaps})
    if not curves_logged:
        tracker.log_history(outcome.history)
    if outcome.best_iteration is not None:
        tracker.log_metrics({"best_iteration": outcome.best_iteration})
    if outcome.engine_params:
        tracker.log_params({f"engine.{k}": v for k, v in flatten_params(outcome.engine_params).items()})
    learned_params, learned_metrics = outcome.ranker.learned_choices()
    tracker.log_params({f"learned.{k}": v for k, v in learned_params.items()})
    tracker.log_metrics({f"learned.{k}": v for k, v in learned_metrics.items()})
    rows = []
    for split, result in outcome.results.items():
        tracker.log_metrics(split_metrics(result, outcome.metrics))
        rows += summary_rows(result, outcome.metrics, outcome.cis[split])
        tracker.log_frame(outcome.frames[split], f"per_query/{split}.parquet")
    tracker.log_table(rows, SUMMARY_TABLE)
    baseline = outcome.baseline
    tracker.log_metrics({baseline_metric_name(baseline.split, m): baseline.mean(m) for m in outcome.metrics})
    confidence = bootstrap_confidence(cfg.eval)
    description = run_description(outcome, label or str(cfg.model.name), str(cfg.data.name), confidence)
    tracker.set_tags({"mlflow.note.content": description})
    columns = [
        mlflow_metric_name(outcome.report_split, m) for m in (headline_metric(outcome), *outcome.metrics)
    ]
    if outcome.value_split in outcome.results and outcome.value_split != outcome.report_split:
        columns.append(mlflow_metric_name(outcome.value_split, outcome.target))
    tracker.set_runs_view(columns)  # the runs table's columns and sort in the dashboard link ltr prints
    data = splits[outcome.report_split]
    if cfg.tracking.get("log_plots", True) or plots_dir is not None:
        log_run_plots(tracker, outcome, data.n_features, plots_dir, label or str(cfg.model.name))
    if cfg.tracking.get("log_model", True):
        tracker.log_ranker(outcome.ranker, example=model_example(data))


def train_and_record(
    cfg: Any,
    splits: Mapping[str, Any],
    tracker: Any,
    *,
    run_name: str,
    tags: Mapping[str, str],
    parent_run_id: str | None = None,
    console: Any = None,
    plots_dir: Path | None = None,
    label: str | None = None,
    stop: OnIteration | None = None,
) -> RecordedRun:
    """One system, start to finish: open the run, fit and evaluate with live curves, log the outcome.

    The run ends FINISHED, FAILED (traceback stored) or KILLED (Ctrl-C); what was logged before stays.
    ``stop(i, values)`` (e.g. a search trial's :class:`ltr.sweep.pruning.PruningHook`) sees every round too;
    when it returns True the fit stops, the run is tagged ``ltr.trial.state=PRUNED`` and ends KILLED
    with its curves so far and no model, and :class:`ltr.sweep.pruning.TrainingStopped` is raised.
    """
    resolved = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    stopped: TrainingStopped | None = None
    with tracker.start(run_name=run_name, tags=tags, parent_run_id=parent_run_id):
        tracker.log_params(flatten_params(resolved))
        tracker.log_datasets(split_datasets(cfg.data, splits, tags))
        tracker.log_dict(resolved, "config/resolved.yaml")
        if console is not None:
            print_training_start(console, cfg)
        total = (cfg.model.get("params") or {}).get("n_trees")
        try:
            with (
                iteration_progress(int(total) if total else None, f"training {cfg.model.name}") as tick,
                CurveBuffer(tracker) as curves,
            ):

                def on_iteration(i: int, values: dict[str, float]) -> bool:
                    curves(i, values)
                    tick(i, values)
                    return bool(stop(i, values)) if stop is not None else False

                outcome = fit_and_evaluate(cfg, splits, on_iteration=on_iteration)
        except TrainingStopped as exc:
            stopped = exc
            tracker.set_tags({"ltr.trial.state": "PRUNED", "ltr.trial.pruned_at": exc.step})
        if stopped is None:
            if stop is not None:
                tracker.set_tags({"ltr.trial.state": "COMPLETE"})
            if console is not None and outcome.best_iteration is not None:
                console.print(f"  best iteration {outcome.best_iteration}")
            if console is not None:
                for line in describe_learned(outcome.ranker):
                    console.print(f"  {line}")
            log_outcome(
                tracker,
                cfg,
                outcome,
                splits,
                curves_logged=bool(curves.seen),
                plots_dir=plots_dir,
                label=label,
            )
    if stopped is not None:
        if tracker.run_id:
            tracker.set_status(tracker.run_id, "KILLED")
        raise stopped
    return RecordedRun(outcome, tracker.run_id, label or str(cfg.model.name))

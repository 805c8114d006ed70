"""Fold protocols: one configured model over every fold of a dataset, one summary, as papers report.

Two protocols, chosen by the ``data`` config (:func:`fold_plan`):

* a registry dataset with the LETOR layout (MSLR-WEB10K/30K, MQ2007/2008) and ``data.fold=all`` or a
  list such as ``data.fold=[1,3]``: fold k reads ``Fold<k>/{train,vali,test}.txt``;
* your own labelled file with ``data=svmlight data.train=FILE data.cv.folds=K``: a query-level K-fold
  split of that file, stratified by query size and seeded by ``data.cv.seed``
  (:func:`ltr.data.splits.cv_folds`; fold i tests on part i, validates on part i+1).

Each fold is an ordinary single run (the config with ``data.fold=<k>`` / ``data.cv.fold=<k>``, so
its numbers equal a separate ``python -m ltr.train`` of that fold), recorded by
:func:`ltr.experiment.record.train_and_record` as a child of one MLflow parent run. The parent holds the
summary (:func:`summarise_folds`) of the ``test`` split:

* per fold: the mean over the fold's test queries (``fold<k>/test/<metric>``);
* over folds: the mean and the sample standard deviation (ddof 1) of the per-fold means
  (``folds/test/<metric>_mean``; the sd in the table below) — the "mean over the 5 folds" papers print;
* pooled: the mean over all test queries of all folds and its bootstrap CI (``eval.bootstrap``,
  run seed; :func:`ltr.experiment.pipeline.ci_bounds`, as a single run's CI) over the concatenated per-query
  values (``pooled/test/<metric>``);
* ``summary/metrics.json``: one table with all of these, the sd, the pooled CI bounds and the numbers
  of queries (kept out of the metrics so the dashboard charts only means);
* ``per_query/test.parquet``: the pooled per-query values with a ``fold`` column, and
  ``folds/summary.json``.

>>> import numpy as np, pandas as pd
>>> frames = {"Fold1": pd.DataFrame({"qid": [1, 2], "map": [0.2, 0.4]}),
...           "Fold2": pd.DataFrame({"qid": [3, 4, 5], "map": [0.6, 0.8, 1.0]})}
>>> s = summarise_folds(frames, ["map"], {"bootstrap": {"B": 0}}, seed=0)
>>> round(s.per_fold["Fold2"]["map"], 4), round(s.mean["map"], 4), round(s.sd["map"], 4), round(s.pooled["map"], 4)
(0.8, 0.55, 0.3536, 0.6)
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import OmegaConf, open_dict

from ltr.cli.running import interrupted_run
from ltr.core.config_check import plain
from ltr.core.errors import ConfigError, DataError
from ltr.data.config import letor_fold_choice
from ltr.data.registry import check_cv_inputs, default_dir, get_spec, placement_hint
from ltr.experiment.console import print_data_summary, print_tracker_location
from ltr.experiment.conventions import check_splits
from ltr.experiment.pipeline import SplitResult, bootstrap_confidence, ci_bounds
from ltr.experiment.provenance import command_line, rerun_command, run_tags
from ltr.experiment.provenance import run_name as default_run_name
from ltr.experiment.record import RecordedRun, train_and_record
from ltr.experiment.splits import load_splits
from ltr.tracking.writer import SUMMARY_TABLE, flatten_params, make_tracker, mlflow_metric_name

SUMMARY_SPLIT = "test"


@dataclass(frozen=True)
class FoldPlan:
    """Which folds a config asks for and how one fold's config is written.

    ``key`` is the dotted ``data`` key that names one fold (``data.fold`` or ``data.cv.fold``),
    ``folds`` its values, ``labels`` the folds' names (``Fold1`` …, ``cv1`` …).
    """

    key: str
    folds: tuple[int, ...]
    labels: tuple[str, ...]
    description: str

    def fold_config(self, cfg: Any, fold: int) -> Any:
        """A copy of ``cfg`` that is the single run of ``fold`` (``data.fold=<k>`` / ``data.cv.fold=<k>``)."""
        one = copy.deepcopy(cfg)
        with open_dict(one):
            OmegaConf.update(one, self.key, fold, merge=False)
        return one

    def fold_override(self, fold: int) -> str:
        """The command-line override that selects ``fold`` (``data.fold=3``)."""
        return f"{self.key}={fold}"


def fold_plan(data_cfg: Any) -> FoldPlan | None:
    """The fold protocol a ``data`` config asks for, or ``None`` for a single run.

    >>> fold_plan({"kind": "mq2008", "name": "mq2008", "fold": [2, 4]}).labels
    ('Fold2', 'Fold4')
    >>> plan = fold_plan({"kind": "svmlight", "train": "a.txt", "cv": {"folds": 3}})
    >>> plan.key, plan.labels
    ('data.cv.fold', ('cv1', 'cv2', 'cv3'))
    >>> fold_plan({"kind": "mq2008", "fold": 2}) is None
    True
    """
    folds = letor_fold_choice(data_cfg)
    if folds is not None:
        name = plain(data_cfg).get("name") or plain(data_cfg).get("kind")
        return FoldPlan(
            key="data.fold",
            folds=tuple(folds),
            labels=tuple(f"Fold{k}" for k in folds),
            description=f"{name} folds {', '.join(map(str, folds))} (Fold<k>/train, vali, test)",
        )
    given = plain(data_cfg)
    if str(given.get("kind") or given.get("name")) != "svmlight":
        return None
    cv = check_cv_inputs(given)
    if not cv or cv.get("fold") is not None:
        return None  # no cv, or one fold of it: a single run
    k = int(cv["folds"])
    held = "tests on part i, validates on part i+1" if cv["valid"] else "tests on part i, no validation"
    return FoldPlan(
        key="data.cv.fold",
        folds=tuple(range(1, k + 1)),
        labels=tuple(f"cv{i}" for i in range(1, k + 1)),
        description=(
            f"{k}-fold query-level cross-validation of {given.get('train')} "
            f"(stratified by query size, data.cv.seed={cv['seed']}; fold i {held})"
        ),
    )


def check_fold_files(data_cfg: Any, plan: FoldPlan) -> None:
    """Every fold's files exist (registry datasets), so a missing ``Fold4`` fails before fold 1 trains."""
    if plan.key != "data.fold":
        return
    given = plain(data_cfg)
    spec = get_spec(str(given.get("kind") or given.get("name")))
    directory = Path(given.get("dir") or default_dir(spec.name))
    wanted = given.get("splits")
    missing = [
        str(directory / rel)
        for k in plan.folds
        for split, rel in spec.files({**given, "fold": k}).items()
        if (not wanted or split in wanted) and not (directory / rel).is_file()
    ]
    if missing:
        raise DataError(
            f"{spec.name}: data.fold={given.get('fold')} needs file(s) not found: {', '.join(missing)}. "
            f"{placement_hint(spec, directory)}"
        )


@dataclass(frozen=True)
class FoldSummary:
    """Per-fold means, their mean ± sd over folds, and the pooled mean ± bootstrap CI (module docstring)."""

    split: str
    metrics: tuple[str, ...]
    folds: tuple[str, ...]
    per_fold: dict[str, dict[str, float]]  # fold → metric → mean over that fold's queries
    n_queries: dict[str, int]  # fold → queries
    mean: dict[str, float]  # metric → mean of the per-fold means
    sd: dict[str, float]  # metric → sample sd (ddof 1) of the per-fold means; NaN with one fold
    pooled: dict[str, float]  # metric → mean over all queries of all folds
    pooled_ci: dict[str, tuple[float, float]]  # metric → (low, high); empty when eval.bootstrap.B = 0
    pooled_n_skipped: dict[str, int]
    frame: Any  # the pooled per-query DataFrame: fold, then the folds' own columns

    @property
    def n_pooled(self) -> int:
        return int(sum(self.n_queries.values()))

    def mlflow_metrics(self) -> dict[str, float]:
        """The parent run's metrics (one chart each): ``fold<k>/…``, ``folds/…_mean``, ``pooled/…``.

        The spread, CI bounds and counts are rows of :meth:`summary_rows` instead.
        """
        split = self.split
        out: dict[str, float] = {}
        for fold in self.folds:
            out |= {
                mlflow_metric_name(f"{fold.lower()}/{split}", m): self.per_fold[fold][m] for m in self.metrics
            }
        for m in self.metrics:
            out[mlflow_metric_name(f"folds/{split}", m, "_mean")] = self.mean[m]
            out[mlflow_metric_name(f"pooled/{split}", m)] = self.pooled[m]
        return {k: float(v) for k, v in out.items() if np.isfinite(v)}

    def summary_rows(self) -> list[dict[str, Any]]:
        """The parent run's table (:data:`ltr.tracking.writer.SUMMARY_TABLE`): per fold, over the
        folds (mean and sd of the fold means) and pooled (mean, CI, queries scored and skipped)."""

        def num(v: float | None) -> float | None:
            return float(v) if v is not None and np.isfinite(v) else None

        rows: list[dict[str, Any]] = []
        for m in self.metrics:
            for fold in self.folds:
                rows.append(
                    {
                        "scope": fold,
                        "metric": m,
                        "mean": num(self.per_fold[fold][m]),
                        "n_queries": self.n_queries[fold],
                    }
                )
            rows.append(
                {
                    "scope": f"mean of {len(self.folds)} folds",
                    "metric": m,
                    "mean": num(self.mean[m]),
                    "sd": num(self.sd[m]),
                }
            )
            low, high = self.pooled_ci.get(m, (None, None))
            rows.append(
                {
                    "scope": "pooled",
                    "metric": m,
                    "mean": num(self.pooled[m]),
                    "ci_low": num(low),
                    "ci_high": num(high),
                    "n_queries": self.n_pooled,
                    "n_skipped": self.pooled_n_skipped[m],
                }
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (``folds/summary.json``); NaN as ``null``."""

        def num(v: float) -> float | None:
            return float(v) if np.isfinite(v) else None

        return {
            "split": self.split,
            "folds": list(self.folds),
            "n_queries": dict(self.n_queries),
            "per_fold": {f: {m: num(v) for m, v in vals.items()} for f, vals in self.per_fold.items()},
            "mean": {m: num(v) for m, v in self.mean.items()},
            "sd": {m: num(v) for m, v in self.sd.items()},
            "pooled": {m: num(v) for m, v in self.pooled.items()},
            "pooled_ci": {m: [num(lo), num(hi)] for m, (lo, hi) in self.pooled_ci.items()},
            "pooled_n_queries": self.n_pooled,
        }


def summarise_folds(
    frames: Mapping[str, Any],
    metrics: Sequence[str],
    eval_cfg: Mapping[str, Any],
    seed: int,
    split: str = SUMMARY_SPLIT,
) -> FoldSummary:
    """The summary of per-query frames (one per fold, ``qid`` + one column per metric; NaN = skipped).

    A fold's value is the mean over its non-skipped queries (as a single run's); ``mean``/``sd`` are
    ``numpy.mean`` / ``numpy.std(ddof=1)`` of those; ``pooled`` and its CI use the concatenated values.
    """
    if not frames:
        raise ConfigError("a fold protocol needs at least one fold")
    metrics = list(metrics)
    results = {
        f: SplitResult(split, len(fr), {m: fr[m].to_numpy(float) for m in metrics})
        for f, fr in frames.items()
    }
    per_fold = {f: {m: r.mean(m) for m in metrics} for f, r in results.items()}
    table = np.array([[per_fold[f][m] for m in metrics] for f in frames], dtype=float)
    sd = np.std(table, axis=0, ddof=1) if len(frames) > 1 else np.full(len(metrics), np.nan)
    pooled_frame = pd.concat(
        [fr.assign(fold=f)[["fold", *[c for c in fr.columns if c != "fold"]]] for f, fr in frames.items()],
        ignore_index=True,
    )
    pooled = SplitResult(split, len(pooled_frame), {m: pooled_frame[m].to_numpy(float) for m in metrics})
    return FoldSummary(
        split=split,
        metrics=tuple(metrics),
        folds=tuple(frames),
        per_fold=per_fold,
        n_queries={f: r.n_queries for f, r in results.items()},
        mean=dict(zip(metrics, np.mean(table, axis=0).tolist(), strict=True)),
        sd=dict(zip(metrics, sd.tolist(), strict=True)),
        pooled={m: pooled.mean(m) for m in metrics},
        pooled_ci=ci_bounds(pooled, metrics, eval_cfg, seed),
        pooled_n_skipped={m: pooled.n_skipped(m) for m in metrics},
        frame=pooled_frame,
    )


def cell(value: float) -> str:
    """A value as printed in the tables: 4 decimals, ``–`` for NaN."""
    return f"{value:.4f}" if np.isfinite(value) else "–"


def folds_markdown(summaries: Mapping[str, FoldSummary], confidence: float) -> str:
    """Per system: each fold's test mean, the mean ± sd over folds and the pooled mean [CI], one row each.

    >>> frames = {"Fold1": pd.DataFrame({"qid": [1], "map": [0.5]}), "Fold2": pd.DataFrame({"qid": [2], "map": [0.7]})}
    >>> print(folds_markdown({"a": summarise_folds(frames, ["map"], {}, seed=0)}, 0.95))
    ## Per fold (test)
    <BLANKLINE>
    | system | fold | map |
    |---|---|---|
    | a | Fold1 | 0.5000 |
    | a | Fold2 | 0.7000 |
    | a | mean ± sd | 0.6000 ± 0.1414 |
    | a | pooled (2 queries) | 0.6000 |
    """
    metrics = list(next(iter(summaries.values())).metrics)
    lines = ["## Per fold (test)", "", "| system | fold | " + " | ".join(metrics) + " |"]
    lines.append("|---|---|" + "---|" * len(metrics))
    for system, s in summaries.items():
        for fold in s.folds:
            lines.append(
                f"| {system} | {fold} | " + " | ".join(cell(s.per_fold[fold][m]) for m in metrics) + " |"
            )
        spread = [f"{cell(s.mean[m])} ± {cell(s.sd[m])}" for m in metrics]
        lines.append(f"| {system} | mean ± sd | " + " | ".join(spread) + " |")
        pooled = [
            cell(s.pooled[m])
            + (f" [{cell(s.pooled_ci[m][0])}, {cell(s.pooled_ci[m][1])}]" if m in s.pooled_ci else "")
            for m in metrics
        ]
        ci = f", {confidence:.0%} CI" if s.pooled_ci else ""
        lines.append(f"| {system} | pooled ({s.n_pooled} queries{ci}) | " + " | ".join(pooled) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class FoldsRun:
    """What a fold protocol produced: each fold's recorded run, the summary, the parent run id."""

    plan: FoldPlan
    runs: dict[str, RecordedRun]  # fold label → its child run
    summary: FoldSummary
    run_id: str | None  # the parent run (None with tracking=none)
    target: str
    value: float  # mean over folds of each fold's optimised validation value (what a sweep optimises)

    def split_means(self, split: str) -> dict[str, float]:
        """Mean over folds of each fold's ``split`` means (the ``ltr_result.json`` of a sweep job)."""
        results = [r.outcome.results[split] for r in self.runs.values() if split in r.outcome.results]
        if not results:
            return {}
        return {m: float(np.mean([r.mean(m) for r in results])) for m in results[0].per_query}


def child_overrides(plan: FoldPlan, fold: int, overrides: Sequence[str]) -> list[str]:
    """The command-line overrides that rerun one fold alone: the protocol's key replaced by that fold.

    >>> plan = fold_plan({"kind": "mq2008", "name": "mq2008", "fold": "all"})
    >>> child_overrides(plan, 3, ["+model=linear", "data=mq2008", "data.fold=all"])
    ['+model=linear', 'data=mq2008', 'data.fold=3']
    """
    key = plan.key
    kept = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] != key]
    return [*kept, plan.fold_override(fold)]


def load_fold(plan: FoldPlan, cfg: Any, fold: int, client: Any = None) -> dict[str, Any]:
    """The splits of one fold (its single-run config's :func:`~ltr.experiment.splits.load_splits`: read here, or
    with a Dask ``client`` parsed by its workers), with the ``test`` split the summary needs."""
    fold_cfg = plan.fold_config(cfg, fold)
    data_cfg = fold_cfg.data
    splits = load_splits(fold_cfg, client)
    check_splits(data_cfg, splits)
    if SUMMARY_SPLIT not in splits:
        raise ConfigError(
            f"{plan.fold_override(fold)}: no {SUMMARY_SPLIT} split to summarise (got {sorted(splits)}); "
            "a fold protocol reports the test queries"
        )
    return splits


def check_other_folds(plan: FoldPlan, cfg: Any, console: Any, client: Any = None) -> None:
    """Read every fold but the first (already loaded) once, as its run will, and drop it: a malformed
    line, a bad label or a split that does not fit in any fold's files fails before any fold trains,
    naming the file and line (the parser's own ``DataError``).

    The folds of ``data.fold`` (a LETOR layout) are separate files; with the binary cache
    (``data.cache_dir``, on by default) this read is what makes each fold's later load a cache hit, so
    it costs little. The folds of ``data.cv`` are cut from the files the first fold read: nothing more
    to check.
    """
    if plan.key != "data.fold" or len(plan.folds) < 2:
        return
    rest = ", ".join(plan.labels[1:])
    console.print(f"Checking the files of {rest} before training", soft_wrap=True)
    for fold in plan.folds[1:]:
        load_fold(plan, cfg, fold, client)


def run_folds(
    cfg: Any,
    plan: FoldPlan,
    console: Any,
    *,
    tracker: Any = None,
    parent_run_id: str | None = None,
    run_name: str | None = None,
    tags: Mapping[str, str] | None = None,
    client: Any = None,
) -> FoldsRun:
    """Train and evaluate every fold of ``plan`` as child runs of one run; log and print the summary.

    The caller has checked the config (``validate_config``, ``check_run_config``); here every fold's
    files are checked, the tracker is opened (an unreachable server fails before any data is read),
    the first fold is loaded and every other fold's files read once (:func:`check_other_folds`) before
    the run starts, so a bad file or split in any fold fails before any fold trains.
    ``tracker``/``parent_run_id``/``run_name``/``tags``: the protocol's own run inside a larger one
    (``ltr.compare``: one per system, under the comparison's parent run). ``client``: a Dask client
    (:func:`ltr.experiment.splits.data_cluster`) whose workers parse every fold's files (``backend=dask``).
    """
    if SUMMARY_SPLIT not in cfg.eval.splits:
        raise ConfigError(
            f"eval.splits={list(cfg.eval.splits)}: a fold protocol summarises the {SUMMARY_SPLIT} split; add it"
        )
    check_fold_files(cfg.data, plan)
    standalone = tracker is None
    tracker = make_tracker(cfg.tracking, Path(cfg.paths.root).resolve()) if standalone else tracker
    resolved = OmegaConf.to_container(cfg, resolve=True)
    _, overrides = command_line()
    parent_tags = {k: v for k, v in run_tags(cfg, {}).items() if not k.startswith("ltr.data.fingerprint")} | {
        "ltr.folds.role": "parent",
        "ltr.folds.protocol": plan.description,
        "ltr.folds.key": plan.key,
    }
    parent_tags |= dict(tags or {})
    run_name = run_name or default_run_name(cfg, suffix="-folds")
    runs: dict[str, RecordedRun] = {}
    confidence = bootstrap_confidence(cfg.eval)
    console.print(f"[bold]Fold protocol[/bold] {plan.description}", soft_wrap=True)
    # the first fold is read before the run opens: a bad file or split fails without a FAILED run
    loaded = {plan.folds[0]: load_fold(plan, cfg, plan.folds[0], client)}
    check_other_folds(plan, cfg, console, client)  # a bad line in Fold3 fails now, not after Fold1-2 trained
    # Ctrl-C / SIGTERM: the parent and the fold's run end KILLED; one line names the parent
    with (
        interrupted_run(tracker if standalone else None),
        tracker.start(run_name=run_name, tags=parent_tags, parent_run_id=parent_run_id),
    ):
        tracker.log_params(flatten_params(resolved))
        tracker.log_dict(resolved, "config/resolved.yaml")
        for fold, label in zip(plan.folds, plan.labels, strict=True):
            fold_cfg = plan.fold_config(cfg, fold)
            console.print(f"\n[bold]{label}[/bold] ({plan.fold_override(fold)})")
            splits = loaded.pop(fold) if fold in loaded else load_fold(plan, cfg, fold, client)
            print_data_summary(console, fold_cfg.data, splits)
            child_tags = run_tags(fold_cfg, splits) | {
                "ltr.folds.fold": label,
                "ltr.command": rerun_command("ltr.train", child_overrides(plan, fold, overrides)),
            }
            runs[label] = train_and_record(
                fold_cfg,
                splits,
                tracker.spawn(),
                run_name=f"{run_name}-{label.lower()}"
                if not standalone
                else default_run_name(cfg, suffix=f"-{label.lower()}"),
                tags=child_tags,
                parent_run_id=tracker.run_id,
                console=console,
                label=label,
            )
        frames = {label: r.outcome.frames[SUMMARY_SPLIT] for label, r in runs.items()}
        summary = summarise_folds(frames, list(cfg.eval.metrics), cfg.eval, int(cfg.seed))
        tracker.log_metrics(summary.mlflow_metrics())
        tracker.log_table(summary.summary_rows(), SUMMARY_TABLE)
        tracker.log_frame(summary.frame, f"per_query/{SUMMARY_SPLIT}.parquet")
        tracker.log_text(json.dumps(summary.to_dict(), indent=2), "folds/summary.json")
        tracker.set_tags({"ltr.folds.children": ",".join(r.run_id or "" for r in runs.values())})
        parent_id = tracker.run_id
    first = next(iter(runs.values())).outcome
    values = [r.outcome.value for r in runs.values()]
    if standalone:  # ltr.compare prints every system's folds together (folds.md)
        console.print(
            f"\n{folds_markdown({str(cfg.model.name): summary}, confidence)}", markup=False, soft_wrap=True
        )
        console.print(
            f"mean ± sd: over the {len(runs)} folds' means (sd with ddof 1); pooled: all "
            f"{summary.n_pooled:,} {SUMMARY_SPLIT} queries of {plan.description}, bootstrap CI "
            f"({cfg.eval.bootstrap.method}, B={cfg.eval.bootstrap.B}, seed {cfg.seed}). Conventions: "
            + ", ".join(f"{k}={v}" for k, v in first.conventions.describe().items()),
            soft_wrap=True,
            markup=False,
        )
    if tracker.enabled and standalone:
        where = f"parent run {parent_id} ('{run_name}', one child per fold) in experiment '{cfg.tracking.experiment}'"
        print_tracker_location(console, where, tracker.uri, tracker.experiment_id, parent_id)
    return FoldsRun(plan, runs, summary, parent_id, first.target, float(np.mean(values)))

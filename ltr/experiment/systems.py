"""A Yahoo!-challenge-style comparison: every system of an experiment trained on the same queries, or
logged runs gathered again, and one leaderboard.

:func:`run_comparison` trains, evaluates and logs each system with the same pipeline core as
``python -m ltr.train`` (:func:`ltr.experiment.record.train_and_record`; same config tree, same
logging) on the same splits, as child runs of one MLflow parent run, and builds the leaderboard
(:mod:`ltr.experiment.leaderboard`). With several folds in the shared overrides (``data.fold=all`` on
MSLR/MQ, ``data.cv.folds=K`` on your own file) every system runs the fold protocol of
:mod:`ltr.experiment.folds` (one child run per fold under the system's run): the leaderboard pairs the
systems over the test queries of all folds pooled, and ``folds.md`` gives each system's per-fold
values, mean ± sd over folds and pooled CI. A ``published:`` block (numbers with their ``source``) is
written (``published.md``) beside ours. :func:`report_from_mlflow` builds the same report from runs
already logged (their ``per_query/<split>.parquet``). Neither prints the leaderboard: the
:class:`ComparisonResult` holds what ``python -m ltr.compare`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from rich.console import Console

from ltr.analysis.interleaving import InterleavingTable, interleave_with_baseline
from ltr.cli.running import interrupted_run
from ltr.cli.spelling import config_spelling, spelled_as
from ltr.core.errors import ConfigError, LtrError
from ltr.data.features import select_features
from ltr.experiment.ablation import all_columns, rows_config
from ltr.experiment.experiments import (
    FROM_MLFLOW,
    compose_system,
    data_label,
    system_overrides,
    system_search_path,
    titled_for_data,
)
from ltr.experiment.leaderboard import (
    FailureAnalysis,
    build_agreement,
    build_failure_analysis,
    build_report,
    check_same_data,
    comparison_description,
    extra_tables,
    leaderboard_metrics,
    leaderboard_rows,
    ranked_labels_of,
    split_attributes,
    write_outputs,
)
from ltr.experiment.provenance import command_line, rerun_command, run_tags
from ltr.experiment.schemas import (
    validate_config,
)
from ltr.export.reading import export_refusal
from ltr.metrics.exposure import document_groups_checked, exposure_of
from ltr.report.progress import task_progress
from ltr.tracking.reader import download_frame, find_runs
from ltr.tracking.writer import SUMMARY_TABLE, flatten_params, mlflow_metric_name


@dataclass
class ComparisonResult:
    """What a comparison produced: the report and its analyses, the files written, the MLflow runs.

    ``exp`` is the experiment as reported (its title says the data used); ``extra`` the additional
    tables (``folds.md``, ``published.md``: file name → Markdown); ``tracker_uri``, ``experiment_id`` and ``run_name``
    locate the parent run; ``export_refusals`` says which systems' models can be exported (``None`` without tracking or for a report rebuilt from MLflow).
    """

    report: Any
    out_dir: Path
    files: list[Path]
    parent_run_id: str | None = None
    child_run_ids: dict[str, str | None] = field(default_factory=dict)
    exp: Any = None
    agreement: Any = None
    failures: FailureAnalysis | None = None
    extra: dict[str, str] = field(default_factory=dict)
    tracker_uri: str | None = None
    run_name: str | None = None
    experiment_id: str | None = None
    #: system → why its model cannot be exported (``None``: it can); empty when not checked (from MLflow)
    export_refusals: dict[str, str | None] = field(default_factory=dict)
    #: systems trained as a fold protocol: one model per fold, none for the system as a whole
    fold_systems: frozenset[str] = frozenset()
    #: each system interleaved with the baseline (the experiment's ``interleaving:`` block)
    interleaving: InterleavingTable | None = None


def best_exportable(report: Any, primary: str, refusals: Mapping[str, str | None]) -> str | None:
    """The system with the best ``primary`` mean among those whose model can be exported, or ``None``.

    >>> import numpy as np
    >>> from ltr.analysis.comparison import compare
    >>> rep = compare({"a": {"map": np.array([0.2, 0.4])}, "b": {"map": np.array([0.6, 0.7])},
    ...                "c": {"map": np.array([0.3, 0.5])}}, baseline="a", query_ids=[1, 2], B=50)
    >>> best_exportable(rep, "map", {"a": None, "b": "a random_forest model is not exported", "c": None})
    'c'
    """
    candidates = [s for s in report.systems if s in refusals and refusals[s] is None]
    if not candidates:
        return None
    sign = -1.0 if primary in report.lower_is_better else 1.0
    return max(candidates, key=lambda s: sign * report.row(s, primary).mean)


def best_exportable_tag(report: Any, primary: str, refusals: Mapping[str, str | None]) -> dict[str, str]:
    """``{"ltr.compare.best_exportable": system}`` when exportability was checked (else ``{}``)."""
    if not refusals:
        return {}
    return {"ltr.compare.best_exportable": best_exportable(report, primary, refusals) or "none"}


def run_comparison(
    exp: Any, cli_overrides: Sequence[str] = (), *, out_dir: Path | None = None, console: Any = None
) -> ComparisonResult:
    """Train every system of ``exp`` on the same data, build the leaderboard, write and log it.

    ``console`` shows the data, each system's training and progress; the leaderboard is in the result.
    """
    console = console or Console(highlight=False)
    systems = list(exp.systems)
    configs = {
        s: compose_system(exp, s, cli_overrides) for s in systems
    }  # every typo fails here, before work
    # library messages name options as Python does (zero_based=True): here as the train config does
    with spelled_as(config_spelling(configs[systems[0]].get("data"))):
        return _run_comparison(exp, configs, cli_overrides, out_dir, console)


def _run_comparison(
    exp: Any, configs: Mapping[str, Any], cli_overrides: Sequence[str], out_dir: Path | None, console: Any
) -> ComparisonResult:
    # deferred (each): the engines load after configure_process_environment() (see __main__)
    from ltr.experiment.conventions import (
        check_data_fits,  # deferred: the pipeline's package loads the engines
    )
    from ltr.experiment.folds import fold_plan, run_folds  # deferred: imports the pipeline (the engines)
    from ltr.experiment.pipeline import (  # deferred: the engines
        check_run_config,
        follow_engine_dtype,
        make_ranker,
    )
    from ltr.experiment.record import (  # deferred: the pipeline
        connect_and_load,
        split_datasets,
        train_and_record,
    )
    from ltr.models.base import shared_input_dtype  # deferred: with the models above
    from ltr.models.ensembles.members import member_search_path  # deferred: with the models above
    from ltr.tracking.writer import make_tracker  # deferred: MLflow, only for a fold protocol's tracker

    systems = list(configs)
    search_paths = {s: system_search_path(exp, s, cli_overrides) for s in systems}
    first = configs[systems[0]]
    dtypes = []  # each system's engine dtype: the shared data is parsed into the widest
    for s, cfg in configs.items():
        validate_config(cfg)
        try:
            with member_search_path(search_paths[s]):  # every system's metrics and model before any training
                check_run_config(cfg)
                dtypes.append(make_ranker(cfg).input_dtype)
        except LtrError as exc:
            raise ConfigError(f"system {s!r}: {exc}") from exc
        if rows_config(cfg.data) != rows_config(
            first.data
        ):  # columns may differ (data.features: an ablation)
            raise ConfigError(
                f"system {s!r} uses different data than {systems[0]!r}; a comparison needs the same queries"
            )
    follow_engine_dtype(list(configs.values()), str(shared_input_dtype(dtypes)))  # one parse for all
    exp, run_name = titled_for_data(
        exp, data_label(first.data), data_label(compose_system(exp, systems[0], ()).data)
    )
    root = Path(first.paths.root).resolve()
    out_dir = Path(out_dir) if out_dir is not None else root / "reports" / str(exp.name)
    plan = fold_plan(first.data)
    if plan is None:
        # an unreachable server fails here; every column once, each system keeps its own (data.features)
        tracker, splits = connect_and_load(all_columns(first), console)
        if "test" not in splits:
            raise ConfigError(
                f"data '{first.data.name}' has no test split; a comparison scores the test queries"
            )
        for s, cfg in configs.items():  # every system's conventions against the labels, before any training
            try:
                check_data_fits(cfg, splits)
            except LtrError as exc:
                raise ConfigError(f"system {s!r}: {exc}") from exc
    else:  # every fold is loaded by the protocol itself, one at a time
        if exp.get("interleaving") is not None:
            raise ConfigError("interleaving: needs one test split, not a fold protocol; drop one of them")
        if exp.get("exposure") is not None:
            raise ConfigError("exposure: needs one test split, not a fold protocol; drop one of them")
        tracker, splits = make_tracker(first.tracking, root), {}
    command, _ = command_line("ltr.compare")
    parent_tags = {
        "ltr.compare.role": "parent",
        "ltr.compare.experiment": str(exp.name),
        "ltr.command": command,
        "ltr.data": str(first.data.name),
        **{
            k: v
            for k, v in run_tags(first, splits, entry="ltr.compare").items()
            if k.startswith(("git.", "version.", "ltr.data.fingerprint", "mlflow.source."))
        },
    }
    frames: dict[str, Any] = {}
    children: dict[str, str | None] = {}
    conventions: dict[str, str] = {}
    summaries: dict[str, Any] = {}  # system → FoldSummary (fold protocols)
    ranked: dict[str, Any] = {}  # system → qid → (ranked labels, ideal labels) on the test split
    refusals: dict[str, str | None] = {}  # system → why its model cannot be exported (None: it can)
    test_scores: dict[str, Any] = {}  # system → scores on the test split (for interleaving)
    if exp.get("exposure") is not None and exp.exposure.get("group") and "test" in splits:
        try:  # a group that names no column, or holds no or every test document, fails before any training
            document_groups_checked(splits["test"], str(exp.exposure.group))
        except LtrError as exc:
            raise ConfigError(f"exposure.group: {exc}") from exc
    with tracker.start(run_name=run_name, tags=parent_tags):
        settings = OmegaConf.to_container(exp, resolve=True)
        published = settings.pop("published", None)  # metric names with '@' are no MLflow param keys
        if settings.get("interleaving") is None:  # no block: no `interleaving=None` parameter
            settings.pop("interleaving", None)
        tracker.log_params(flatten_params(settings))
        if published is not None:
            tracker.log_dict(published, "leaderboard/published.json")
        tracker.log_params(
            {"seed": first.seed, "num_threads": first.num_threads, "cli_overrides": " ".join(cli_overrides)}
        )
        tracker.log_datasets(split_datasets(first.data, splits, parent_tags))
        with task_progress(len(systems), f"comparison {exp.name}") as advance:
            for system in systems:
                cfg = configs[system]
                tags = run_tags(cfg, splits, entry="ltr.compare") | {
                    "ltr.compare.system": system,
                    "ltr.compare.experiment": str(exp.name),
                    "ltr.command": rerun_command("ltr.train", system_overrides(exp, system, cli_overrides)),
                }
                with member_search_path(search_paths[system]), interrupted_run(tracker):
                    if plan is not None:
                        folds_run = run_folds(
                            cfg,
                            plan,
                            console,
                            tracker=tracker.spawn(),
                            parent_run_id=tracker.run_id,
                            run_name=system,
                            tags=tags,
                        )
                        summaries[system] = folds_run.summary
                        frames[system], children[system] = folds_run.summary.frame, folds_run.run_id
                        outcome = next(iter(folds_run.runs.values())).outcome
                    else:
                        own = select_features(splits, cfg.data.get("features"))
                        recorded = train_and_record(
                            cfg,
                            own,
                            tracker.spawn(),
                            run_name=system,
                            tags=tags,
                            parent_run_id=tracker.run_id,
                            console=console,
                            plots_dir=out_dir / "plots",
                            label=system,
                        )
                        frames[system], children[system] = recorded.outcome.frames["test"], recorded.run_id
                        outcome = recorded.outcome
                        ranked[system] = ranked_labels_of(outcome.ranker, own["test"])
                        refusals[system] = export_refusal(outcome.ranker)
                        if exp.get("interleaving") is not None or exp.get("exposure") is not None:
                            test_scores[system] = outcome.ranker.predict(splits["test"])
                        if exp.get("exposure") is not None:  # compared like any metric: columns of the frame
                            exposure = exposure_of(splits["test"], test_scores[system], exp.exposure)
                            frames[system] = frames[system].assign(**exposure)
                conventions = conventions or outcome.conventions.describe()
                advance(system)
        note = "Metric conventions: " + ", ".join(f"{k}={v}" for k, v in conventions.items()) + "."
        if plan is not None:
            note += f" Test queries of {plan.description}, pooled (per fold: folds.md)."
        report = build_report(frames, exp, seed=int(first.seed))
        agreement = build_agreement(frames, exp, seed=int(first.seed))
        attributes = split_attributes(splits["test"]) if "test" in splits else None
        failures = build_failure_analysis(
            frames, exp, seed=int(first.seed), attributes=attributes, ranked=ranked
        )
        files = write_outputs(
            report,
            frames,
            exp,
            out_dir,
            seed=int(first.seed),
            note=note,
            agreement=agreement,
            failures=failures,
        )
        extra = extra_tables(report, exp, summaries, float(first.eval.bootstrap.confidence))
        for name, text in extra.items():
            (out_dir / name).write_text(text)
            files.append(out_dir / name)
        files += sorted((out_dir / "plots").glob("learning_curves_*.png")) + sorted(
            (out_dir / "plots").glob("feature_importance_*.png")
        )
        interleaving = None
        if exp.get("interleaving") is not None:
            interleaving = interleave_with_baseline(splits["test"], test_scores, exp)
            files += interleaving.write(out_dir)
            tracker.log_metrics(interleaving.metrics())
        tracker.log_metrics(leaderboard_metrics(report))
        tracker.log_table(leaderboard_rows(report), SUMMARY_TABLE)
        primary = str(exp.primary)  # the runs table: the systems' test metrics, best on the primary first
        tracker.set_runs_view([mlflow_metric_name("test", m) for m in (primary, *report.metrics)])
        tracker.set_tags(
            {
                "mlflow.note.content": comparison_description(report, str(exp.primary)),
                "ltr.compare.best": report.best(str(exp.primary)),
                **best_exportable_tag(report, str(exp.primary), refusals),
                "ltr.compare.systems": ",".join(report.systems),
            }
        )
        for path in files:
            tracker.log_artifact(path, "plots" if path.parent.name == "plots" else "leaderboard")
        parent_id = tracker.run_id
    return ComparisonResult(
        report,
        out_dir,
        files,
        parent_id,
        children,
        exp=exp,
        agreement=agreement,
        failures=failures,
        extra=extra,
        tracker_uri=tracker.uri if tracker.enabled else None,
        run_name=run_name,
        experiment_id=tracker.experiment_id if tracker.enabled else None,
        export_refusals=refusals,
        fold_systems=frozenset(summaries),
        interleaving=interleaving,
    )


def report_from_mlflow(
    uri: str,
    exp: Any,
    *,
    run_ids: Sequence[str] = (),
    run_names: Sequence[str] = (),
    experiment: str | None = None,
    parent_run_id: str | None = None,
    baseline: str | None = None,
    split: str = "test",
    out_dir: Path,
    seed: int = 42,
    console: Any = None,
) -> ComparisonResult:
    """Rebuild the leaderboard from runs already logged (their ``per_query/<split>.parquet``)."""
    console = console or Console(highlight=False)
    runs = find_runs(
        uri, run_ids=run_ids, run_names=run_names, experiment=experiment, parent_run_id=parent_run_id
    )
    if len(runs) < 2:
        raise ConfigError(f"--from-mlflow: need at least 2 runs to compare, found {len(runs)} in {uri}")
    frames: dict[str, Any] = {}
    ids: dict[str, str] = {}
    fingerprints: dict[str, str | None] = {}
    for run in runs:
        label = run["tags"].get("ltr.compare.system") or run["name"] or run["run_id"]
        if label in frames:
            label = f"{label}-{run['run_id'][:8]}"
        frames[label], ids[label] = (
            download_frame(uri, run["run_id"], f"per_query/{split}.parquet"),
            run["run_id"],
        )
        fingerprints[label] = run["tags"].get(f"ltr.data.fingerprint.{split}")
    check_same_data(frames, ids, fingerprints, split)
    for label, run in zip(frames, runs, strict=True):
        if leak := run["tags"].get(f"ltr.leakage.{split}"):
            console.print(
                f"[yellow]warning:[/yellow] run {label!r} ({run['run_id']}): {leak}", soft_wrap=True
            )
    data_names = {run["tags"].get("ltr.data") for run in runs}
    if exp.name == FROM_MLFLOW["name"] and len(data_names) == 1 and None not in data_names:
        exp.title = f"{FROM_MLFLOW['title']} on {data_names.pop()}"
    chosen = baseline or (exp.baseline if exp.get("baseline") in frames else next(iter(frames)))
    if chosen not in frames:
        raise ConfigError(f"--baseline {chosen!r} is not one of the runs: {', '.join(frames)}")
    exp.baseline = chosen
    missing = [(s, m) for s in frames for m in exp.metrics if m not in frames[s].columns]
    if missing:
        raise ConfigError(
            f"run {missing[0][0]!r} has no per-query values of {missing[0][1]!r}; logged: {', '.join(frames[missing[0][0]].columns)}"
        )
    report = build_report(frames, exp, seed=seed)
    agreement = build_agreement(frames, exp, seed=seed)
    failures = build_failure_analysis(frames, exp, seed=seed)
    note = "Rebuilt from MLflow runs " + ", ".join(f"{s}={ids[s]}" for s in frames) + "."
    files = write_outputs(
        report, frames, exp, out_dir, seed=seed, note=note, agreement=agreement, failures=failures
    )
    return ComparisonResult(
        report, out_dir, files, None, dict(ids), exp=exp, agreement=agreement, failures=failures
    )

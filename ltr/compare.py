"""``python -m ltr.compare experiment=NAME``: a Yahoo!-challenge-style comparison of several systems.

An experiment file (``experiments/NAME.yaml``) names the data (overrides shared by every system), a
list of systems (a model config plus overrides each), the baseline, the primary metric and the
statistics. Each system is trained, evaluated and logged by the same pipeline core as
``python -m ltr.train`` (:func:`ltr.record.train_and_record`; same config tree, same logging) on the
same splits; the per-query test values of all systems go to
:func:`ltr.comparison.compare`, which gives mean ± 95% bootstrap CI per system and metric, paired
differences against the baseline with their CIs, paired randomisation tests with Holm correction,
effect sizes and W/T/L. The leaderboard is sorted by the primary metric and written as Markdown, CSV
and LaTeX next to PNG plots (NDCG@k with CI bands, per-query differences, CI forest plot, learning
curves and feature importance per system), printed, and logged to an MLflow parent run whose
children are the systems' runs.

With several folds in the shared overrides (``data.fold=all`` on MSLR/MQ, ``data.cv.folds=K`` on
your own file) every system runs the fold protocol of :mod:`ltr.folds` (one child run per fold under
the system's run): the leaderboard pairs the systems over the test queries of all folds pooled, and
``folds.md`` gives each system's per-fold values, mean ± sd over folds and pooled CI. A
``published:`` block (numbers with their ``source``) is printed and written (``published.md``) beside
ours: the mean over folds for a fold protocol, else the mean over the test queries.

The same report can be built from runs already in MLflow (their ``per_query/test.parquet``)::

    python -m ltr.compare --from-mlflow --experiment ltr --run-names lambdamart-synthetic regression-synthetic
    python -m ltr.compare --from-mlflow --parent <parent run id> experiment=synthetic_challenge
    python -m ltr.compare --from-mlflow --run-ids 1a2b... 3c4d... --baseline regression-synthetic

Any other ``key=value`` argument is an override of the train config applied to every system
(``seed=7``, ``tracking=none``, ``num_threads=1``, ``data.n_queries.train=100``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from ltr.agreement import metric_agreement
from ltr.comparison import compare
from ltr.config_check import defaults
from ltr.console import print_tracker_location
from ltr.entry import (
    config_spelling,
    configure_process_environment,
    hydra_error_message,
    interrupted_run,
    run_cli,
    spelled_as,
)
from ltr.errors import ConfigError, DataError, LtrError
from ltr.plots import (
    plot_asl_curves,
    plot_difference_histogram,
    plot_forest,
    plot_ndcg_at_k,
    plot_segments,
)
from ltr.progress import task_progress
from ltr.provenance import command_line, rerun_command, run_tags
from ltr.report import print_comparison
from ltr.resources import config_dir, experiments_dir, work_root
from ltr.schemas import (
    DEFAULT_METRICS,
    StatsSchema,
    check_experiment_block,
    register_configs,
    validate_config,
)
from ltr.segments import (
    builtin_segments,
    query_attributes,
    ranked_labels,
    segment_table,
    segments_markdown,
    user_segments,
    worst_markdown,
    worst_queries,
)
from ltr.tracking import (
    check_server_reachable,
    download_frame,
    find_runs,
    flatten_params,
    mlflow_metric_name,
    resolve_tracking_uri,
)

CONF_DIR = config_dir()
EXPERIMENTS_DIR = experiments_dir()
DEFAULT_STATS = defaults(StatsSchema)


#: the experiment settings of ``--from-mlflow`` without ``experiment=NAME``
FROM_MLFLOW = {
    "name": "from_mlflow",
    "title": "Comparison rebuilt from MLflow runs",
    "baseline": None,
    "primary": DEFAULT_METRICS[0],
    "metrics": DEFAULT_METRICS,
    "stats": DEFAULT_STATS,
}


@dataclass
class ComparisonResult:
    """What a comparison produced: the report, the files written, and the MLflow parent run."""

    report: Any
    out_dir: Path
    files: list[Path]
    parent_run_id: str | None = None
    child_run_ids: dict[str, str | None] = field(default_factory=dict)


# --- experiment files ----------------------------------------------------------------------------------


def available_experiments() -> list[str]:
    """Experiment names, one per ``experiments/*.yaml``."""
    return sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))


def load_experiment(name_or_path: str) -> Any:
    """Load and check ``experiments/NAME.yaml`` (or a path to a YAML file) as an OmegaConf node."""
    path = Path(name_or_path)
    if not path.suffix:
        path = EXPERIMENTS_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"experiment={name_or_path}: no file {path}; available: {', '.join(available_experiments())}"
        )
    try:
        exp = OmegaConf.load(path)
    except (OmegaConfBaseException, OSError, ValueError, yaml.YAMLError) as exc:  # YAMLError: a syntax error
        raise ConfigError(f"{path}: not a valid experiment YAML ({' '.join(str(exc).split())})") from exc
    return check_experiment(exp, str(path))


def check_experiment(exp: Any, where: str) -> Any:
    """The experiment checked against :class:`ltr.schemas.ExperimentSchema` (defaults filled, errors naming
    the file and field, e.g. ``experiments/x.yaml: stats.B``), as an OmegaConf node."""
    return OmegaConf.create(check_experiment_block(exp, where))


def _quoted_list(values: Sequence[str]) -> str:
    return "[" + ",".join(f"'{v}'" for v in values) + "]"


def system_overrides(exp: Any, system: str, cli_overrides: Sequence[str]) -> list[str]:
    """The ``ltr.train`` overrides that define one system: shared, model, per-system, then the command line's."""
    spec = exp.systems[system]
    return [
        *map(str, exp.overrides),
        f"+model={spec.model}",
        f"eval.metrics={_quoted_list(list(exp.metrics))}",
        *map(str, spec.get("overrides") or []),
        *cli_overrides,
    ]


def compose_system(exp: Any, system: str, cli_overrides: Sequence[str]) -> Any:
    """The full train config of one system, composed from ``conf/`` exactly as ``ltr.train`` would."""
    register_configs()
    overrides = system_overrides(exp, system, cli_overrides)
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(
            f"system {system!r}: {hydra_error_message(exc) or exc} (overrides {overrides})"
        ) from exc


def system_search_path(exp: Any, system: str, cli_overrides: Sequence[str]) -> list[str]:
    """The ``hydra.searchpath`` of one system's config: where its ensemble members are composed from too."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=system_overrides(exp, system, cli_overrides),
            return_hydra_config=True,
        )
    return [str(entry) for entry in cfg.hydra.searchpath]


# --- the report ----------------------------------------------------------------------------------------


def data_label(data_cfg: Any) -> str:
    """What the data is called in titles: its config name, or for your own files ``svmlight <train file>``.

    >>> data_label({"name": "synthetic", "kind": "synthetic"})
    'synthetic'
    >>> data_label({"name": "svmlight", "kind": "svmlight", "train": "/data/rank.train"})
    'svmlight rank.train'
    """
    name = str(data_cfg.get("name"))
    if str(data_cfg.get("kind")) == "svmlight" and data_cfg.get("train"):
        return f"{name} {Path(str(data_cfg.get('train'))).name}"
    return name


def titled_for_data(exp: Any, used: str, own: str) -> tuple[Any, str]:
    """The experiment with a title true to the data ``used``, and the parent run's name.

    On the experiment's ``own`` data its title and ``compare-NAME`` stand; on other data (a command-line
    override) the title is ``NAME on <used>`` and the run ``compare-NAME-<used>``, since the experiment's
    own title describes other data.

    >>> from omegaconf import OmegaConf
    >>> exp = OmegaConf.create({"name": "synthetic_challenge", "title": "Comparison on synthetic data"})
    >>> titled_for_data(exp, "synthetic", "synthetic")[0].title, titled_for_data(exp, "synthetic", "synthetic")[1]
    ('Comparison on synthetic data', 'compare-synthetic_challenge')
    >>> e, run = titled_for_data(exp, "svmlight rank.train", "synthetic")
    >>> e.title, run, exp.title
    ('synthetic_challenge on svmlight rank.train', 'compare-synthetic_challenge-svmlight_rank.train', 'Comparison on synthetic data')
    """
    if used == own:
        return exp, f"compare-{exp.name}"
    out = exp.copy()
    out.title = f"{exp.name} on {used}"
    return out, f"compare-{exp.name}-{used.replace(' ', '_')}"


def rank_systems(frames: Mapping[str, Any], primary: str, baseline: str) -> list[str]:
    """Systems by mean ``primary`` over the queries every system scored, best first (stable on ties)."""
    common = np.logical_and.reduce([frames[s][primary].notna().to_numpy() for s in frames])
    means = {
        s: float(frames[s][primary].to_numpy()[common].mean()) if common.any() else np.nan for s in frames
    }
    return sorted(frames, key=lambda s: -means[s] if np.isfinite(means[s]) else np.inf)


def build_report(frames: Mapping[str, Any], exp: Any, *, seed: int) -> Any:
    """:func:`ltr.comparison.compare` over per-query test frames (``qid`` column + one column per metric)."""
    order = rank_systems(frames, exp.primary, exp.baseline)
    per_query = {s: frames[s].set_index("qid")[list(exp.metrics)] for s in order}
    stats = exp.stats
    return compare(
        per_query,
        baseline=str(exp.baseline),
        metrics=list(exp.metrics),
        ci=str(stats.ci),
        B=int(stats.B),
        seed=int(seed),
        alpha=float(stats.alpha),
        confidence=float(stats.confidence),
        correction=str(stats.correction),
        test=str(stats.test),
    )


def at_k_curves(frames: Mapping[str, Any], stats: Any, seed: int, metric: str = "ndcg") -> dict[str, tuple]:
    """Mean and bootstrap CI of ``metric@k`` (k = 1.. as stored) per system: ``{system: (mean, low, high)}``."""
    from ltr.pipeline import robust_bootstrap_ci  # deferred: the pipeline loads the engines

    curves: dict[str, tuple] = {}
    for system, frame in frames.items():
        ks = sorted(
            int(c.split("@")[1])
            for c in frame.columns
            if c.startswith(f"{metric}@") and c.split("@")[1].isdigit()
        )
        ks = [k for k in ks if k == (ks.index(k) + 1)]  # the contiguous 1..K prefix
        if not ks:
            continue
        cis = [
            robust_bootstrap_ci(
                frame[f"{metric}@{k}"].to_numpy(float),
                method=str(stats.ci),
                B=int(stats.B),
                confidence=float(stats.confidence),
                seed=seed,
            )
            for k in ks
        ]
        curves[system] = (
            np.array([c.estimate for c in cis]),
            np.array([c.low for c in cis]),
            np.array([c.high for c in cis]),
        )
    return curves


#: bootstrap resamples of the per-query metric correlations' CIs (the paired tests use ``stats.B``)
AGREEMENT_B = 1000


def build_agreement(frames: Mapping[str, Any], exp: Any, *, seed: int) -> Any:
    """:func:`ltr.agreement.metric_agreement` over the compared metrics (``None`` with fewer than 2)."""
    metrics = list(exp.metrics)
    if len(metrics) < 2:
        return None
    stats = exp.stats
    return metric_agreement(
        {s: frames[s].set_index("qid")[metrics] for s in frames},
        metrics=metrics,
        alpha=float(stats.alpha),
        confidence=float(stats.confidence),
        test=str(stats.test),
        B=AGREEMENT_B,
        test_B=int(stats.B),
        seed=seed,
    )


#: how many of each system's worst queries the failure analysis lists
WORST_K = 5


@dataclass
class FailureAnalysis:
    """The segment table (:func:`ltr.segments.segment_table`) and the worst queries of every system."""

    table: Any
    worst: list[Any]
    metric: str
    baseline: str

    def to_markdown(self, confidence: float) -> str:
        return (
            segments_markdown(self.table, metric=self.metric, baseline=self.baseline, confidence=confidence)
            + "\n"
            + worst_markdown(self.worst, metric=self.metric, baseline=self.baseline)
        )


def segment_column(name: str, path: Path, query_ids: Any) -> Any:
    """The user's segment ``name`` from a CSV with columns ``qid`` and ``segment`` (one row per query)."""
    import pandas as pd  # deferred: pandas (~0.3 s) only when an experiment names a segment file

    where = f"segments.{name} ({path})"
    try:
        table = pd.read_csv(path, dtype={"segment": str})
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read the CSV ({exc})") from exc
    if not {"qid", "segment"} <= set(table.columns):
        raise ConfigError(f"{where}: needs columns qid and segment, has {', '.join(map(str, table.columns))}")
    try:
        ids = table["qid"].astype(query_ids.dtype)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: qid values do not match the data's query ids ({exc})") from exc
    if ids.duplicated().any():
        raise ConfigError(f"{where}: query {ids[ids.duplicated()].iloc[0]!r} is listed twice")
    try:
        return user_segments(pd.Series(table["segment"].to_numpy(), index=ids), query_ids)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from exc


def build_failure_analysis(
    frames: Mapping[str, Any],
    exp: Any,
    *,
    seed: int,
    attributes: Any = None,
    ranked: Mapping[str, Mapping[Any, Any]] | None = None,
) -> FailureAnalysis | None:
    """Segments of the primary metric against the baseline, and each system's worst queries.

    ``attributes`` (:func:`ltr.segments.query_attributes` of the test data) gives every built-in segment;
    without it only ``documents per query`` (from the frames' ``n_docs``), and none without that column.
    ``ranked[system]`` (:func:`ltr.segments.ranked_labels`) adds the ranked labels to the worst queries.
    """
    baseline, primary = str(exp.baseline), str(exp.primary)
    base_frame = frames[baseline].set_index("qid")
    if attributes is None:
        if "n_docs" not in base_frame.columns:
            return None
        attributes = base_frame[["n_docs"]]
    values = {s: frames[s].set_index("qid")[primary] for s in frames}
    stats = exp.stats
    segments = builtin_segments(attributes.loc[base_frame.index])
    for name, path in (exp.get("segments") or {}).items():
        segments[str(name)] = segment_column(str(name), Path(str(path)), base_frame.index)
    table = segment_table(
        values,
        baseline=baseline,
        segments=segments,
        B=int(stats.B),
        confidence=float(stats.confidence),
        seed=seed,
    )
    worst = []
    for system in frames:
        if system != baseline:
            worst += worst_queries(
                values[system], values[baseline], (ranked or {}).get(system, {}), system=system, k=WORST_K
            )
    return FailureAnalysis(table, worst, primary, baseline)


def write_outputs(
    report: Any,
    frames: Mapping[str, Any],
    exp: Any,
    out_dir: Path,
    *,
    seed: int,
    note: str = "",
    agreement: Any = None,
    failures: FailureAnalysis | None = None,
) -> list[Path]:
    """Leaderboard (Markdown, CSV, LaTeX), metric agreement, failure analysis and comparison plots in
    ``out_dir``; returns the files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    title = exp.get("title") or exp.name
    confidence = float(exp.stats.confidence)
    markdown = f"# {title}\n\nSorted by {exp.primary} (primary). {note}\n\n" + report.to_markdown(detail=True)
    if agreement is not None:
        markdown += "\n" + agreement.to_markdown()
    if failures is not None:
        markdown += "\n" + failures.to_markdown(confidence)
    files = [
        out_dir / "leaderboard.md",
        report.to_csv(out_dir / "leaderboard.csv"),
        out_dir / "leaderboard.tex",
    ]
    files[0].write_text(markdown)
    files[2].write_text(report.to_latex(caption=f"{title}, sorted by {exp.primary}", label=f"tab:{exp.name}"))
    plots = out_dir / "plots"
    curves = at_k_curves(frames, exp.stats, seed)
    if curves:
        files.append(plot_ndcg_at_k(curves, plots / "ndcg_at_k.png", confidence=float(exp.stats.confidence)))
    base = frames[exp.baseline][exp.primary].to_numpy(float)
    diffs = {s: frames[s][exp.primary].to_numpy(float) - base for s in report.systems if s != exp.baseline}
    files.append(
        plot_difference_histogram(
            diffs, plots / "difference_histogram.png", metric=str(exp.primary), baseline=str(exp.baseline)
        )
    )
    files.append(plot_forest(report, plots / "ci_forest.png"))
    if agreement is not None:
        (out_dir / "agreement.md").write_text(agreement.to_markdown())
        agreement.to_frame().to_csv(out_dir / "agreement.csv", index=False)
        files += [out_dir / "agreement.md", out_dir / "agreement.csv"]
        files.append(plot_asl_curves(agreement.asl_curves(), plots / "asl_curves.png", alpha=agreement.alpha))
    if failures is not None:
        (out_dir / "segments.md").write_text(failures.to_markdown(confidence))
        failures.table.to_csv(out_dir / "segments.csv", index=False)
        files += [out_dir / "segments.md", out_dir / "segments.csv"]
        files.append(
            plot_segments(
                failures.table, plots / "segments.png", metric=failures.metric, baseline=failures.baseline
            )
        )
    return files


def split_attributes(data: Any) -> Any:
    """:func:`ltr.segments.query_attributes` of a split (relevant = label ≥ 1)."""
    return query_attributes(data.y, data.offsets, data.query_ids)


def ranked_labels_of(ranker: Any, data: Any) -> dict[Any, Any]:
    """qid → (top-10 labels in the ranker's order, top-10 ideal labels) on ``data``."""
    return ranked_labels(data.y, np.asarray(ranker.predict(data), dtype=float), data.offsets, data.query_ids)


def leaderboard_metrics(report: Any) -> dict[str, float]:
    """``leaderboard/<system>/<metric>`` (mean, CI, diff, adjusted p) for the parent run's metrics."""
    out: dict[str, float] = {}
    for r in report.rows:
        key = mlflow_metric_name(f"leaderboard/{r.system}", r.metric)
        out[key], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = r.mean, r.ci_low, r.ci_high
        if not r.is_baseline:
            out[f"{key}_diff"], out[f"{key}_p_adjusted"], out[f"{key}_effect_size"] = (
                r.diff,
                r.pvalue_adjusted,
                r.effect_size,
            )
    return {k: v for k, v in out.items() if np.isfinite(v)}


# --- running a comparison ------------------------------------------------------------------------------


def run_comparison(
    exp: Any, cli_overrides: Sequence[str] = (), *, out_dir: Path | None = None, console: Any = None
) -> ComparisonResult:
    """Train every system of ``exp`` on the same data, build the leaderboard, write and log it."""
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
    from ltr.folds import fold_plan, run_folds  # deferred: imports the pipeline (the engines)
    from ltr.pipeline import check_data_fits, check_run_config, member_search_path  # deferred: the engines
    from ltr.record import connect_and_load, split_datasets, train_and_record  # deferred: the pipeline
    from ltr.tracking import make_tracker  # deferred: MLflow, only for a fold protocol's tracker

    systems = list(configs)
    search_paths = {s: system_search_path(exp, s, cli_overrides) for s in systems}
    first = configs[systems[0]]
    for s, cfg in configs.items():
        validate_config(cfg)
        try:
            with member_search_path(search_paths[s]):  # every system's metrics and model before any training
                check_run_config(cfg)
        except LtrError as exc:
            raise ConfigError(f"system {s!r}: {exc}") from exc
        if OmegaConf.to_container(cfg.data, resolve=True) != OmegaConf.to_container(first.data, resolve=True):
            raise ConfigError(
                f"system {s!r} uses different data than {systems[0]!r}; a comparison needs the same queries"
            )
    exp, run_name = titled_for_data(
        exp, data_label(first.data), data_label(compose_system(exp, systems[0], ()).data)
    )
    root = Path(first.paths.root).resolve()
    out_dir = Path(out_dir) if out_dir is not None else root / "reports" / str(exp.name)
    plan = fold_plan(first.data)
    if plan is None:
        tracker, splits = connect_and_load(first, console)  # an unreachable server fails here
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
    with tracker.start(run_name=run_name, tags=parent_tags):
        settings = OmegaConf.to_container(exp, resolve=True)
        published = settings.pop("published", None)  # metric names with '@' are no MLflow param keys
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
                        recorded = train_and_record(
                            cfg,
                            splits,
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
                        ranked[system] = ranked_labels_of(outcome.ranker, splits["test"])
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
        tracker.log_metrics(leaderboard_metrics(report))
        tracker.set_tags(
            {
                "ltr.compare.best": report.best(str(exp.primary)),
                "ltr.compare.systems": ",".join(report.systems),
            }
        )
        for path in files:
            tracker.log_artifact(path, "plots" if path.parent.name == "plots" else "leaderboard")
        parent_id = tracker.run_id
    print_leaderboard(console, report, exp, out_dir, agreement, failures)
    for text in extra.values():
        console.print(f"\n{text}", markup=False, highlight=False, soft_wrap=True)
    if tracker.enabled:
        print_tracker_location(console, f"parent run {parent_id} ('{run_name}')", tracker.uri)
    return ComparisonResult(report, out_dir, files, parent_id, children)


def published_markdown(exp: Any, ours: Mapping[str, Mapping[str, float]], ours_label: str) -> str:
    """The experiment's ``published:`` numbers (with their source) above our systems' numbers, same columns.

    >>> from omegaconf import OmegaConf
    >>> exp = OmegaConf.create({"metrics": ["ndcg@10"], "published": {"source": "paper, Table 2", "note": "",
    ...                         "systems": {"theirs": {"ndcg@10": 0.5}}}})
    >>> print(published_markdown(exp, {"ours": {"ndcg@10": 0.51234}}, "mean over the test queries"))
    ## Published numbers beside ours
    <BLANKLINE>
    Source: paper, Table 2
    <BLANKLINE>
    | system | ndcg@10 |
    |---|---|
    | theirs (published) | 0.5000 |
    | ours: ours (mean over the test queries) | 0.5123 |
    """
    from ltr.folds import cell  # deferred: ltr.folds imports the pipeline (the engines)

    published = exp.published
    metrics = list(exp.metrics)
    lines = ["## Published numbers beside ours", "", f"Source: {published.source}"]
    if published.get("note"):
        lines += ["", str(published.note)]
    lines += ["", "| system | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for system, values in (published.get("systems") or {}).items():
        lines.append(
            f"| {system} (published) | "
            + " | ".join(cell(float(values[m])) if m in values else "" for m in metrics)
            + " |"
        )
    for system, values in ours.items():
        lines.append(
            f"| ours: {system} ({ours_label}) | " + " | ".join(cell(values[m]) for m in metrics) + " |"
        )
    return "\n".join(lines)


def extra_tables(report: Any, exp: Any, summaries: Mapping[str, Any], confidence: float) -> dict[str, str]:
    """``folds.md`` (a fold protocol) and ``published.md`` (a ``published:`` block): file name → Markdown."""
    from ltr.folds import folds_markdown  # deferred: ltr.folds imports the pipeline (the engines)

    out: dict[str, str] = {}
    if summaries:
        out["folds.md"] = folds_markdown(summaries, confidence)
    if exp.get("published") is not None:
        if summaries:
            ours = {s: dict(summaries[s].mean) for s in report.systems}
            label = "mean over folds"
        else:
            ours = {s: {r.metric: r.mean for r in report.rows if r.system == s} for s in report.systems}
            label = "mean over the test queries"
        out["published.md"] = published_markdown(exp, ours, label)
    return out


def print_leaderboard(
    console: Any,
    report: Any,
    exp: Any,
    out_dir: Path,
    agreement: Any = None,
    failures: FailureAnalysis | None = None,
) -> None:
    """The leaderboard as a terminal table (metric agreement and failure analysis rendered from their
    Markdown), and where the files are. The files keep the Markdown."""
    title = f"Leaderboard: {exp.get('title') or exp.name} — sorted by {exp.primary}"
    sections = [agreement.to_markdown()] if agreement is not None else []
    if failures is not None:
        sections.append(failures.to_markdown(float(exp.stats.confidence)))
    print_comparison(console, report, title=title, sections=sections)
    console.print(f"Written: {out_dir}/leaderboard.{{md,csv,tex}} and {out_dir}/plots/*.png", soft_wrap=True)


def check_same_data(
    frames: Mapping[str, Any], run_ids: Mapping[str, str], fingerprints: Mapping[str, str | None], split: str
) -> None:
    """Refuse runs that were not scored on the same ``split`` data: a ``ConfigError`` naming every run
    (label, run id) with its ``ltr.data.fingerprint.<split>`` tag. Runs that all carry the tag are
    compared by it (two datasets may share query ids); otherwise by the query ids of their frames.

    >>> import pandas as pd
    >>> f = {"a": pd.DataFrame({"qid": [1, 2]}), "b": pd.DataFrame({"qid": [1, 2]})}
    >>> check_same_data(f, {"a": "r1", "b": "r2"}, {"a": "fp1", "b": "fp1"}, "test")
    >>> check_same_data(f, {"a": "r1", "b": "r2"}, {"a": "fp1", "b": "fp2"}, "test")
    Traceback (most recent call last):
    ltr.errors.ConfigError: --from-mlflow: the runs were evaluated on different test data, so ...fp2, 2 queries)...fingerprint...
    """

    def named(label: str) -> str:
        fp = fingerprints[label]
        tag = f"ltr.data.fingerprint.{split}={fp}" if fp else f"no ltr.data.fingerprint.{split} tag"
        return f"{label!r} (run {run_ids[label]}, {tag}, {frames[label]['qid'].nunique()} queries)"

    labels = list(frames)
    if all(fingerprints[s] for s in labels):
        if len({fingerprints[s] for s in labels}) > 1:
            raise ConfigError(
                f"--from-mlflow: the runs were evaluated on different {split} data, so their per-query "
                f"scores cannot be paired: {'; '.join(named(s) for s in labels)}. "
                "Choose runs with one fingerprint (e.g. --run-ids of runs on the same data)"
            )
        return
    first = labels[0]
    reference = set(frames[first]["qid"].tolist())
    for label in labels[1:]:
        qids = set(frames[label]["qid"].tolist())
        if qids != reference:
            raise ConfigError(
                f"--from-mlflow: the runs scored different {split} queries: {len(reference - qids)} of "
                f"{first!r}'s are not in {label!r}'s and {len(qids - reference)} of {label!r}'s not in "
                f"{first!r}'s; {'; '.join(named(s) for s in labels)}. Compare runs of the same data"
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
    print_leaderboard(console, report, exp, out_dir, agreement, failures)
    return ComparisonResult(report, out_dir, files, None, dict(ids))


# --- command line --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ltr.compare",
        description="Challenge-style comparison: train several systems on the same queries and build a leaderboard.",
        epilog=f"Experiments: {', '.join(available_experiments())} (experiments/*.yaml).",
    )
    parser.add_argument("overrides", nargs="*", help="experiment=NAME and train-config overrides (key=value)")
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default <root>/reports/<name>)"
    )
    group = parser.add_argument_group("rebuild from MLflow")
    group.add_argument(
        "--from-mlflow", action="store_true", help="build the report from logged runs, train nothing"
    )
    group.add_argument(
        "--tracking-uri", default=None, help="store to read (default: the project's SQLite store)"
    )
    group.add_argument("--run-ids", nargs="+", default=[], metavar="ID")
    group.add_argument("--run-names", nargs="+", default=[], metavar="NAME")
    group.add_argument(
        "--experiment", default=None, help="MLflow experiment name (with --run-names, or all its runs)"
    )
    group.add_argument(
        "--parent", default=None, metavar="RUN_ID", help="the children of a comparison's parent run"
    )
    group.add_argument(
        "--baseline", default=None, help="baseline run label (default: the experiment's, else the first)"
    )
    group.add_argument("--split", default="test")
    args = parser.parse_args(list(argv))
    bad = [o for o in args.overrides if "=" not in o]
    if bad:
        parser.error(f"expected key=value arguments, got {' '.join(bad)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m ltr.compare``; returns the process exit code."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    name = next((o.split("=", 1)[1] for o in args.overrides if o.startswith("experiment=")), None)
    overrides = [o for o in args.overrides if not o.startswith("experiment=")]
    try:
        if args.from_mlflow:
            exp = load_experiment(name) if name else OmegaConf.create(dict(FROM_MLFLOW))
            root = work_root().resolve()
            seed = next((int(o.split("=", 1)[1]) for o in overrides if o.startswith("seed=")), 42)
            uri = resolve_tracking_uri(args.tracking_uri, root)
            try:  # a dead server: one line now, not MLflow's retries and traceback later
                check_server_reachable(uri)
            except ConfigError as exc:
                why = exc.__cause__ or exc
                raise ConfigError(f"--tracking-uri {uri}: the MLflow server is unreachable ({why})") from exc
            report_from_mlflow(
                uri,
                exp,
                run_ids=args.run_ids,
                run_names=args.run_names,
                experiment=args.experiment,
                parent_run_id=args.parent,
                baseline=args.baseline,
                split=args.split,
                out_dir=args.out or root / "reports" / str(exp.name),
                seed=seed,
            )
            return 0
        if name is None:
            raise ConfigError(
                "choose an experiment: python -m ltr.compare experiment=NAME; available: "
                + ", ".join(available_experiments())
            )
        run_comparison(load_experiment(name), overrides, out_dir=args.out)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    configure_process_environment()
    run_cli(main)  # Ctrl-C and a closed pipe end in one line / quietly

"""``python -m ltr.compare experiment=NAME``: a Yahoo!-challenge-style comparison of several systems.

The command line of :mod:`ltr.experiment.systems`: it reads the arguments, runs the comparison
(:func:`~ltr.experiment.systems.run_comparison`; the experiment file is read by
:mod:`ltr.experiment.experiments`) or rebuilds it from logged runs
(:func:`~ltr.experiment.systems.report_from_mlflow`), and prints a one-screen summary: the leaderboard
one line per system, one line of metric agreement, the segments where a system differs from the baseline
and its worst query, and where the files and the MLflow parent run are (``--full``: the whole report). Every system is trained, evaluated and logged as ``python -m ltr.train`` would; the files
(Markdown, CSV, LaTeX, plots) go to ``reports/NAME/`` (``--out DIR``).

The same report can be built from runs already in MLflow (their ``per_query/test.parquet``)::

    python -m ltr.compare --from-mlflow --experiment ltr --run-names lambdamart-synthetic regression-synthetic
    python -m ltr.compare --from-mlflow --parent <parent run id> experiment=synthetic_challenge
    python -m ltr.compare --from-mlflow --run-ids 1a2b... 3c4d... --baseline regression-synthetic

After the leaderboard it names what to deploy: the best system on the primary metric and the
command that exports it, or, when its model cannot be exported (e.g. a stacked ensemble), the best
system that can. ``--register NAME`` registers the best system (``--register-system S``: another) in
MLflow's model registry as ``models:/NAME/VERSION``.

Any other ``key=value`` argument is an override of the train config applied to every system
(``seed=7``, ``tracking=none``, ``num_threads=1``, ``data.n_queries.train=100``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ltr.cli.running import configure_process_environment, run_cli
from ltr.core.errors import ConfigError, LtrError
from ltr.core.resources import work_root
from ltr.experiment.console import print_tracker_location
from ltr.experiment.experiments import FROM_MLFLOW, available_experiments, load_experiment
from ltr.experiment.leaderboard import FailureAnalysis
from ltr.experiment.systems import ComparisonResult, best_exportable, report_from_mlflow, run_comparison
from ltr.report.tables import print_comparison, summary_table
from ltr.tracking.registry import check_model_name, register_run_model
from ltr.tracking.store import check_server_reachable, resolve_tracking_uri


def print_leaderboard(
    console: Any,
    report: Any,
    exp: Any,
    out_dir: Path,
    agreement: Any = None,
    failures: FailureAnalysis | None = None,
) -> None:
    """The whole report (``--full``): the leaderboard as a terminal table, the per-metric detail, the
    metric agreement and failure analysis rendered from their Markdown, and where the files are."""
    title = f"Leaderboard: {exp.get('title') or exp.name} — sorted by {exp.primary}"
    sections = [report.detail_markdown()]
    sections += [agreement.to_markdown()] if agreement is not None else []
    if failures is not None:
        sections.append(failures.to_markdown(float(exp.stats.confidence)))
    print_comparison(console, report, title=title, sections=sections)
    console.print(f"Written: {out_dir}/leaderboard.{{md,csv,tex}} and {out_dir}/plots/*.png", soft_wrap=True)


def print_summary(console: Any, result: ComparisonResult) -> None:
    """The comparison on one screen: the leaderboard one line per system (CIs where the terminal has room,
    always for the primary metric), one line of metric agreement, the segments where a system differs from
    the baseline and each system's worst query, the extra tables' headline, and the files that hold
    everything (:func:`print_leaderboard` prints it all with ``--full``)."""
    exp, report, primary = result.exp, result.report, str(result.exp.primary)
    table, left_out = summary_table(report, primary=primary, width=console.width)
    console.print()
    console.print(
        f"Leaderboard: {exp.get('title') or exp.name} — sorted by {primary}", style="bold", markup=False
    )
    console.print(table)
    lines = [report.legend(brief=True)]
    if left_out:
        lines.append(f"Not shown at this width: {', '.join(left_out)} (leaderboard.md has every metric).")
    if result.agreement is not None:
        lines.append(result.agreement.summary_line(primary))
    if report.risk:
        lines.append(report.risk_summary_line(primary))
    if result.interleaving is not None:
        lines.append(result.interleaving.summary_line())
    for line in lines:  # wrapped at the console's width: one screen on a terminal, tidy in a file
        console.print(line, markup=False, highlight=False)
    if result.failures is not None:
        heading, rows = result.failures.summary(float(exp.stats.confidence))
        console.print(heading, markup=False, highlight=False)
        grid = Table(box=None, pad_edge=False, header_style="bold", padding=(0, 1, 0, 2))
        grid.add_column("system", no_wrap=True)
        grid.add_column("segments (Δ)")
        grid.add_column("worst query", no_wrap=True)
        for row in rows:
            grid.add_row(*(Text(cell) for cell in row))
        console.print(grid)
    for line in [*extra_lines(exp, report, result.extra), files_line(result.out_dir, result.files)]:
        console.print(line, markup=False, highlight=False)


def extra_lines(exp: Any, report: Any, extra: Any) -> list[str]:
    """One line per extra table (``folds.md``, ``published.md``): what it holds; the published systems'
    primary metric beside ours."""
    primary = str(exp.primary)
    lines = []
    if "folds.md" in extra:
        lines.append("Per fold: folds.md (each fold's test mean, the mean ± sd over folds, the pooled CI).")
    if "published.md" in extra:
        theirs = {
            str(name): float(values[primary])
            for name, values in (exp.published.get("systems") or {}).items()
            if primary in values
        }
        if theirs:
            best = report.best(primary)
            cited = ", ".join(f"{name} {value:.4f}" for name, value in theirs.items())
            lines.append(
                f"Published {primary}: {cited}; ours: {best} {report.row(best, primary).mean:.4f} "
                "(published.md: every metric, with the source)."
            )
        else:
            lines.append(
                f"published.md: no published {primary} in the experiment file (its source is named)."
            )
    return lines


def files_line(out_dir: Path, files: Sequence[Path]) -> str:
    """Where the detail is: the report's files by name, the plots counted.

    >>> files_line(Path("reports/x"), [Path("reports/x/leaderboard.md"), Path("reports/x/plots/a.png")])
    'Detail in reports/x/: leaderboard.md (every metric with its CI, paired tests, agreement, segments, worst queries), plots/ (1 PNG). --full prints the whole report here.'
    """
    names = [p.name for p in files if p.parent.name != "plots"]
    plots = sum(1 for p in files if p.parent.name == "plots")
    shown = [
        name + (" (every metric with its CI, paired tests, agreement, segments, worst queries)"
                if name == "leaderboard.md" else "")
        for name in names
    ] + ([f"plots/ ({plots} PNG)"] if plots else [])  # fmt: skip
    return f"Detail in {out_dir}/: {', '.join(shown)}. --full prints the whole report here."


def print_result(console: Any, result: ComparisonResult, *, full: bool = False) -> None:
    """Everything a comparison shows on the console: the one-screen summary (``full``: the whole report
    and its extra tables), what to deploy, the parent run."""
    if full:
        print_leaderboard(
            console, result.report, result.exp, result.out_dir, result.agreement, result.failures
        )
        texts = [*result.extra.values()]
        texts += [result.interleaving.to_markdown()] if result.interleaving is not None else []
        for text in texts:
            console.print(f"\n{text}", markup=False, highlight=False, soft_wrap=True)
    else:
        print_summary(console, result)
    for line in deployment_lines(result):
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    if result.tracker_uri is not None:
        where = f"parent run {result.parent_run_id} ('{result.run_name}')"
        print_tracker_location(console, where, result.tracker_uri, result.experiment_id, result.parent_run_id)


def deployment_lines(result: ComparisonResult) -> list[str]:
    """What to deploy: the best system on the primary metric, whether its model can be exported, and
    when it cannot, the best system that can (each with the command that exports it)."""
    if not result.export_refusals:
        return []
    primary = str(result.exp.primary)
    best = result.report.best(primary)

    def export_command(system: str) -> str:
        run_id = result.child_run_ids.get(system)
        if run_id is None or result.tracker_uri is None:
            return "train it with python -m ltr.train and export that run (tracking was off here)"
        return f"python -m ltr.export runs:/{run_id}/model --format onnx --out {system}.onnx"

    refusal = result.export_refusals.get(best)
    if best in result.fold_systems:
        return [f"Best on {primary}: {best} (a fold protocol: one model per fold; export a fold's run)"]
    if refusal is None:
        return [f"Best on {primary}: {best}; export it: {export_command(best)}"]
    lines = [f"Best on {primary}: {best}, which cannot be exported ({refusal})."]
    other = best_exportable(result.report, primary, result.export_refusals)
    if other is None:
        lines.append("No system of this comparison can be exported.")
    else:
        mean = result.report.row(other, primary).mean
        lines.append(f"Best exportable: {other} ({primary} = {mean:.4f}); export it: {export_command(other)}")
    return lines


def register_system(result: ComparisonResult, name: str, system: str | None, uri: str | None = None) -> str:
    """Register ``system`` (default: the best on the primary metric) as a new version of the model
    ``name`` on the store ``uri`` (default: the comparison's); returns the line that says so. The
    ``--register`` of :func:`main`."""
    primary = str(result.exp.primary)
    system = system or result.report.best(primary)
    if system not in result.report.systems:
        raise ConfigError(
            f"--register-system {system}: no such system; systems: {', '.join(result.report.systems)}"
        )
    if system in result.fold_systems:
        raise ConfigError(
            f"--register {name}: {system} is a fold protocol (one model per fold, none for the system); "
            "register a fold's run instead"
        )
    run_id, uri = result.child_run_ids.get(system), uri or result.tracker_uri
    if uri is None or run_id is None:
        raise ConfigError(
            f"--register {name}: the comparison was not logged (tracking=none); nothing to register"
        )
    return f"Registered {system} (run {run_id}) as {register_run_model(uri, run_id, name)}"


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
    parser.add_argument(
        "--full",
        action="store_true",
        help="print the whole report (as in leaderboard.md) instead of the one-screen summary",
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
    registry = parser.add_argument_group("model registry")
    registry.add_argument(
        "--register",
        default=None,
        metavar="NAME",
        help="register the best system on the primary metric as a new version of the model NAME "
        "(then models:/NAME/VERSION works wherever a model is taken)",
    )
    registry.add_argument(
        "--register-system", default=None, metavar="SYSTEM", help="register this system instead of the best"
    )
    args = parser.parse_intermixed_args(list(argv))  # overrides before or after the options
    if args.register_system is not None and args.register is None:
        parser.error("--register-system needs --register NAME")
    bad = [o for o in args.overrides if "=" not in o]
    if bad:
        parser.error(f"expected key=value arguments, got {' '.join(bad)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m ltr.compare``; returns the process exit code."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    name = next((o.split("=", 1)[1] for o in args.overrides if o.startswith("experiment=")), None)
    overrides = [o for o in args.overrides if not o.startswith("experiment=")]
    console = Console(highlight=False)
    try:
        if args.register is not None:
            check_model_name(args.register)  # a name MLflow would refuse: now, not after the work
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
            result = report_from_mlflow(
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
                console=console,
            )
            print_result(console, result, full=args.full)
            if args.register is not None:
                line = register_system(result, args.register, args.register_system, uri)
                console.print(line, soft_wrap=True)
            return 0
        if name is None:
            raise ConfigError(
                "choose an experiment: python -m ltr.compare experiment=NAME; available: "
                + ", ".join(available_experiments())
            )
        exp = load_experiment(name)
        if args.register is not None:  # before any training: a system not in the file, no runs logged
            if args.register_system is not None and args.register_system not in exp.systems:
                raise ConfigError(
                    f"--register-system {args.register_system}: no such system in experiment {name}; "
                    f"systems: {', '.join(exp.systems)}"
                )
            if "tracking=none" in overrides:
                raise ConfigError(f"--register {args.register}: needs the runs logged; drop tracking=none")
        result = run_comparison(exp, overrides, out_dir=args.out, console=console)
        print_result(console, result, full=args.full)
        if args.register is not None:
            console.print(register_system(result, args.register, args.register_system), soft_wrap=True)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    configure_process_environment()
    run_cli(main)  # Ctrl-C and a closed pipe end in one line / quietly

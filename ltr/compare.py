"""``python -m ltr.compare experiment=NAME``: a Yahoo!-challenge-style comparison of several systems.

The command line of :mod:`ltr.experiment.systems`: it reads the arguments, runs the comparison
(:func:`~ltr.experiment.systems.run_comparison`; the experiment file is read by
:mod:`ltr.experiment.experiments`) or rebuilds it from logged runs
(:func:`~ltr.experiment.systems.report_from_mlflow`), and prints the leaderboard as a terminal table,
the metric agreement and failure analysis, the extra tables and where the files and the MLflow parent
run are. Every system is trained, evaluated and logged as ``python -m ltr.train`` would; the files
(Markdown, CSV, LaTeX, plots) go to ``reports/NAME/`` (``--out DIR``).

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from rich.console import Console

from ltr.cli.running import configure_process_environment, run_cli
from ltr.core.errors import ConfigError, LtrError
from ltr.core.resources import work_root
from ltr.experiment.console import print_tracker_location
from ltr.experiment.experiments import FROM_MLFLOW, available_experiments, load_experiment
from ltr.experiment.leaderboard import FailureAnalysis
from ltr.experiment.systems import ComparisonResult, report_from_mlflow, run_comparison
from ltr.report.tables import print_comparison
from ltr.tracking.store import check_server_reachable, resolve_tracking_uri


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


def print_result(console: Any, result: ComparisonResult) -> None:
    """Everything a comparison shows on the console: the leaderboard, its extra tables, the parent run."""
    print_leaderboard(console, result.report, result.exp, result.out_dir, result.agreement, result.failures)
    for text in result.extra.values():
        console.print(f"\n{text}", markup=False, highlight=False, soft_wrap=True)
    if result.tracker_uri is not None:
        where = f"parent run {result.parent_run_id} ('{result.run_name}')"
        print_tracker_location(console, where, result.tracker_uri, result.experiment_id, result.parent_run_id)


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
    console = Console(highlight=False)
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
            print_result(console, result)
            return 0
        if name is None:
            raise ConfigError(
                "choose an experiment: python -m ltr.compare experiment=NAME; available: "
                + ", ".join(available_experiments())
            )
        result = run_comparison(load_experiment(name), overrides, out_dir=args.out, console=console)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_result(console, result)
    return 0


if __name__ == "__main__":
    configure_process_environment()
    run_cli(main)  # Ctrl-C and a closed pipe end in one line / quietly

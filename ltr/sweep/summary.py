"""After a Hydra multirun: find the best job, print it, and log it (:class:`SweepSummary` callback).

Each job of ``python -m ltr.train -m ...`` writes ``<sweep dir>/<job>/ltr_result.json`` (its
optimised validation value, its validation/test means, its overrides, command and MLflow run id)
and its MLflow run carries the tag ``ltr.sweep.id = <sweep dir>``. This works with any launcher
(basic, joblib processes) and sweeper (grid, Optuna), because it reads files, not process memory.

At the end of the multirun the callback

1. ranks the jobs by the optimised metric (direction from :func:`metric_direction`),
2. prints a table of all jobs and the best one's command,
3. writes ``<sweep dir>/sweep_summary.json``,
4. logs a ``sweep-summary`` MLflow run (tag ``ltr.sweep.role=summary``; params = the best
   overrides; metrics ``best/valid/...`` and ``best/test/...``; the summary JSON as an artifact) and
   tags the best job's run ``ltr.sweep.best=true``.

>>> rows = [{"value": 0.5, "target": "ndcg@10"}, {"value": 0.7, "target": "ndcg@10"}, {"value": float("nan")}]
>>> best_job(rows)["value"]
0.7
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from hydra.types import RunMode

from ltr.report.progress import progress_enabled
from ltr.tracking.writer import make_tracker, mlflow_metric_name, source_tags

RESULT_FILE = "ltr_result.json"
SUMMARY_FILE = "sweep_summary.json"
OPTUNA_RESULTS = "optimization_results.yaml"  # ltr.sweep.sweeper.RESULTS_FILE (not imported: Optuna)


#: metric-name prefixes where lower is better (every ranking metric in ltr is higher-is-better)
LOWER_IS_BETTER = ("rmse", "mse", "mae", "loss", "logloss", "error")


def metric_direction(metric: str) -> str:
    """``maximize`` for ranking metrics, ``minimize`` for losses/errors (the Optuna study direction).

    >>> metric_direction("ndcg@10"), metric_direction("rmse")
    ('maximize', 'minimize')
    """
    return "minimize" if str(metric).lower().startswith(LOWER_IS_BETTER) else "maximize"


def read_job_results(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """The ``ltr_result.json`` of every job under ``sweep_dir`` (job number = folder name), in job order."""
    rows = []
    for path in Path(sweep_dir).glob(f"*/{RESULT_FILE}"):
        record = json.loads(path.read_text())
        record["job"] = path.parent.name
        rows.append(record)
    return sorted(rows, key=lambda r: (len(r["job"]), r["job"]))


def best_job(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The job with the best finite ``value`` (max, or min for a lower-is-better target); ties → first job."""
    finite = [r for r in rows if isinstance(r.get("value"), int | float) and math.isfinite(r["value"])]
    if not finite:
        return None
    sign = -1.0 if metric_direction(finite[0].get("target", "")) == "minimize" else 1.0
    return max(finite, key=lambda r: sign * r["value"])


def swept_overrides(rows: Sequence[dict[str, Any]]) -> set[str]:
    """Overrides that are not shared by every job (what the sweep varied).

    >>> sorted(swept_overrides([{"overrides": ["+model=x", "a=1"]}, {"overrides": ["+model=x", "a=2"]}]))
    ['a=1', 'a=2']
    """
    sets = [set(r.get("overrides", [])) for r in rows]
    if len(sets) < 2:
        return set().union(*sets) if sets else set()
    return set().union(*sets) - set.intersection(*sets)


def summary_table(rows: Sequence[dict[str, Any]], best: dict[str, Any] | None) -> Any:
    """A rich table: job, the swept overrides, the optimised valid value and its test value; best marked ★."""
    from rich.table import Table

    target = rows[0].get("target", "value") if rows else "value"
    varying = swept_overrides(rows)
    table = Table(title=f"sweep: {len(rows)} jobs, optimised valid {target}")
    table.add_column("job")
    table.add_column("swept overrides", overflow="fold")
    table.add_column(f"valid {target}", justify="right")
    table.add_column(f"test {target}", justify="right")
    for r in rows:
        mark = " ★" if best is not None and r["job"] == best["job"] else ""
        shown = [o.replace("model.params.", "") for o in r.get("overrides", []) if o in varying]
        table.add_row(
            f"{r['job']}{mark}",
            " ".join(shown),
            f"{r['value']:.4f}",
            f"{r.get('test', {}).get(target, float('nan')):.4f}",
        )
    return table


def read_optuna_results(sweep_dir: Path) -> dict[str, Any]:
    """What ltr's Optuna sweeper wrote to ``optimization_results.yaml`` (``{}`` for other sweepers)."""
    path = sweep_dir / OPTUNA_RESULTS
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def summarize_sweep(
    sweep_dir: str | Path, config: Any = None, *, console: Any = None
) -> dict[str, Any] | None:
    """Print, write and (when ``config.tracking`` is enabled) log the best job of a finished sweep."""
    from rich.console import Console

    console = console or Console(highlight=False)
    sweep_dir = Path(sweep_dir).resolve()
    rows = read_job_results(sweep_dir)
    if not rows:
        console.print(f"[bold]Sweep[/bold] no job results found under {sweep_dir}")
        return None
    best = best_job(rows)
    console.print(summary_table(rows, best))
    optuna_results = read_optuna_results(sweep_dir)
    pruning = (optuna_results.get("pruning") or {}).get("summary")
    if pruning:
        console.print(f"[bold]Pruning[/bold] {pruning}", soft_wrap=True)
    summary = {"sweep_id": str(sweep_dir), "n_jobs": len(rows), "best": best, "jobs": rows}
    (sweep_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, allow_nan=True))
    if best is None:
        console.print("[bold]Sweep[/bold] no job returned a finite value")
        return summary
    console.print(
        f"[bold]Best[/bold] job {best['job']}: valid {best['target']} = {best['value']:.4f}; "
        + ", ".join(f"test {m} = {v:.4f}" for m, v in best.get("test", {}).items()),
        soft_wrap=True,
    )
    console.print(f"  rerun: {best['command']}", soft_wrap=True)
    parent = optuna_results.get("mlflow_parent_run")
    if parent:  # ltr's Optuna sweeper logged the study and its best trial on its parent run
        console.print(f"  logged under the MLflow parent run {parent}", soft_wrap=True)
    elif config is not None and config.get("tracking") is not None and config.tracking.get("enabled", True):
        summary["summary_run_id"] = log_summary(summary, config)
        console.print(f"  logged as MLflow run {summary['summary_run_id']}", soft_wrap=True)
    return summary


def log_summary(summary: dict[str, Any], config: Any) -> str | None:
    """Log the summary run (see module docstring) and tag the best job's run; returns the summary run id."""
    tracker = make_tracker(config.tracking, Path(config.paths.root).resolve())
    best = summary["best"]
    tags = {
        "ltr.sweep.id": summary["sweep_id"],
        "ltr.sweep.role": "summary",
        "ltr.sweep.best_run_id": str(best.get("run_id")),
        "ltr.sweep.best_command": best["command"],
        **source_tags("ltr.sweep", job=True),
    }
    with tracker.start(run_name=f"sweep-summary-{Path(summary['sweep_id']).name}", tags=tags):
        tracker.log_params(
            {
                f"best.{o.split('=', 1)[0].lstrip('+~')}": o.split("=", 1)[-1]
                for o in best.get("overrides", [])
            }
        )
        metrics = {"best/value": best["value"], "sweep/n_jobs": summary["n_jobs"]}
        for split in ("valid", "test"):
            metrics.update(
                {mlflow_metric_name(f"best/{split}", m): v for m, v in best.get(split, {}).items()}
            )
        tracker.log_metrics({k: v for k, v in metrics.items() if v is not None and math.isfinite(v)})
        tracker.log_dict(summary, SUMMARY_FILE)
        summary_run = tracker.run_id
    if best.get("run_id"):
        tracker.tag_run(best["run_id"], {"ltr.sweep.best": "true"})
    return summary_run


def sweep_size(config: Any) -> int | None:
    """How many jobs a multirun will launch: Optuna's ``n_trials``, or the size of the override grid.

    >>> from omegaconf import OmegaConf
    >>> sweep_size(OmegaConf.create({"hydra": {"sweeper": {}, "overrides": {"task": ["a=1,2", "b=x,y,z", "c=0"]}}}))
    6
    """
    sweeper = config.hydra.get("sweeper") or {}
    if sweeper.get("n_trials") is not None:
        return int(sweeper.n_trials)
    try:
        parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
    except Exception:  # an override syntax Hydra itself will report
        return None
    total = 1
    for override in parsed:
        if override.is_sweep_override():
            values = list(override.sweep_iterator())
            total *= len(values)
    return total


def progress_line(done: int, total: int | None, elapsed: float) -> str:
    """``sweep: 3/8 jobs done, elapsed 0:01:30, ETA 0:02:30`` (ETA from the mean time per finished job).

    >>> progress_line(2, 8, 60.0)
    'sweep: 2/8 jobs done, elapsed 0:01:00, ETA 0:03:00'
    """
    import datetime

    def fmt(seconds: float) -> str:
        return str(datetime.timedelta(seconds=round(seconds)))

    if total is None or done == 0:
        return f"sweep: {done} jobs done, elapsed {fmt(elapsed)}"
    return f"sweep: {done}/{total} jobs done, elapsed {fmt(elapsed)}, ETA {fmt(elapsed / done * max(total - done, 0))}"


class SweepSummary(Callback):
    """Hydra callback (``hydra.callbacks.sweep_summary`` in ``conf/config.yaml``): progress after each
    job (on a terminal, not in CI) and the summary at the end of the multirun."""

    START_FILE = ".ltr_sweep_start.json"

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        import time

        folder = Path(config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        record = {"start": time.time(), "total": sweep_size(config)}
        (folder / self.START_FILE).write_text(json.dumps(record))

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        """Runs in the job's process (any launcher): count finished jobs from the sweep folder."""
        import sys
        import time

        if not progress_enabled():
            return
        try:
            if HydraConfig.get().mode != RunMode.MULTIRUN:
                return
            folder = Path(HydraConfig.get().sweep.dir)
            start = json.loads((folder / self.START_FILE).read_text())
        except (ValueError, OSError):
            return
        done = len(list(folder.glob(f"*/{RESULT_FILE}")))
        print(
            progress_line(done, start.get("total"), time.time() - start["start"]), file=sys.stderr, flush=True
        )

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        summarize_sweep(config.hydra.sweep.dir, config)

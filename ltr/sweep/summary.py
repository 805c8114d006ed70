"""After a Hydra multirun: find the best job, print it, and log it (:class:`SweepSummary` callback).

Each job of ``python -m ltr.train -m ...`` writes ``<sweep dir>/<job>/ltr_result.json`` (its
optimised validation value, its validation/test means, its overrides, command and MLflow run id)
and its MLflow run carries the tag ``ltr.sweep.id = <sweep dir>``. This works with any launcher
(basic, joblib processes) and sweeper (grid, Optuna), because it reads files, not process memory.

Before the first job of a grid sweep (any sweeper but ltr's Optuna search, which opens its own
parent run: :mod:`ltr.sweep.runs`) the callback opens the sweep's MLflow **parent run**
(:func:`open_grid_parent`); every job's run is its child. At the end of the multirun the callback

1. ranks the jobs by the optimised metric (direction from :func:`metric_direction`),
2. prints a table of all jobs and the best one's command,
3. writes ``<sweep dir>/sweep_summary.json``,
4. logs on the parent run (params = the best overrides; metrics ``best/valid/...`` and
   ``best/test/...``; the summary JSON as an artifact; the description names the best job) and
   ends it FINISHED, and tags the best job's run ``ltr.sweep.best=true``. Without a parent run (it
   could not be opened) a ``sweep-summary`` run (tag ``ltr.sweep.role=summary``) holds the same.

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
        start = sweep_dir / SweepSummary.START_FILE
        record = json.loads(start.read_text()) if start.is_file() else {}
        parent = (record.get("parent") or {}).get("parent_run_id")
        summary["summary_run_id"] = log_summary(summary, config, parent)
        where = "the sweep's parent run" if parent else "MLflow run"
        console.print(f"  logged on {where} {summary['summary_run_id']}", soft_wrap=True)
    return summary


def summary_description(summary: dict[str, Any]) -> str:
    """The sweep parent's description: the best job, its value and test values, the number of jobs.

    >>> summary_description({"n_jobs": 4, "best": {"job": "2", "target": "ndcg@10", "value": 0.71234,
    ...     "test": {"ndcg@10": 0.70001}, "overrides": ["+model=lambdamart", "model.params.learning_rate=0.1"]},
    ...     "jobs": [{"overrides": ["+model=lambdamart", "model.params.learning_rate=0.1"]},
    ...              {"overrides": ["+model=lambdamart", "model.params.learning_rate=0.05"]}]})
    'Best of 4 jobs: job 2 (learning_rate=0.1), valid ndcg@10 = 0.7123; test ndcg@10 = 0.7000.'
    """
    best = summary["best"]
    varying = swept_overrides(summary["jobs"])
    shown = " ".join(o.replace("model.params.", "") for o in best.get("overrides", []) if o in varying)
    text = f"Best of {summary['n_jobs']} jobs: job {best['job']}" + (f" ({shown})" if shown else "")
    text += f", valid {best['target']} = {best['value']:.4f}"
    tests = ", ".join(f"test {m} = {v:.4f}" for m, v in best.get("test", {}).items() if v is not None)
    return text + (f"; {tests}." if tests else ".")


def log_summary(summary: dict[str, Any], config: Any, parent_run_id: str | None = None) -> str | None:
    """Log the summary (see module docstring) and tag the best job's run; returns the run it went to.

    With ``parent_run_id`` (the grid sweep's parent run, :meth:`SweepSummary.on_multirun_start`) the
    summary is written on that run, which then ends FINISHED; otherwise a ``sweep-summary`` run is made.
    """
    from mlflow.entities import Metric, Param, RunTag  # deferred: MLflow loads only when a sweep logs

    from ltr.tracking.store import mask_secrets, retry_call  # deferred: with MLflow above

    tracker = make_tracker(config.tracking, Path(config.paths.root).resolve())
    best = summary["best"]
    tags = {
        "ltr.sweep.id": summary["sweep_id"],
        "ltr.sweep.best_run_id": str(best.get("run_id")),
        "ltr.sweep.best_command": best["command"],
        "mlflow.note.content": summary_description(summary),
    }
    params = {
        f"best.{o.split('=', 1)[0].lstrip('+~')}": o.split("=", 1)[-1] for o in best.get("overrides", [])
    }
    metrics = {"best/value": best["value"], "sweep/n_jobs": summary["n_jobs"]}
    for split in ("valid", "test"):
        metrics.update({mlflow_metric_name(f"best/{split}", m): v for m, v in best.get(split, {}).items()})
    metrics = {k: v for k, v in metrics.items() if v is not None and math.isfinite(v)}
    if parent_run_id is not None:
        client, now = tracker.client, 0
        retry_call(
            client.log_batch,
            parent_run_id,
            metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
            params=[Param(k, mask_secrets(str(v))) for k, v in params.items()],
            tags=[RunTag(k, mask_secrets(str(v))) for k, v in tags.items()],
        )
        retry_call(client.log_dict, parent_run_id, summary, SUMMARY_FILE)
        retry_call(client.set_terminated, parent_run_id, "FINISHED")
        summary_run = parent_run_id
    else:
        tags |= {"ltr.sweep.role": "summary", **source_tags("ltr.sweep", job=True)}
        with tracker.start(run_name=f"sweep-summary-{Path(summary['sweep_id']).name}", tags=tags):
            tracker.log_params(params)
            tracker.log_metrics(metrics)
            tracker.log_dict(summary, SUMMARY_FILE)
            summary_run = tracker.run_id
    if best.get("run_id"):
        tracker.tag_run(best["run_id"], {"ltr.sweep.best": "true"})
    return summary_run


def open_grid_parent(config: Any, sweep_dir: Path) -> dict[str, str] | None:
    """The parent run of a sweep that is not ltr's Optuna search (which opens its own: :mod:`ltr.sweep.runs`).

    Created RUNNING before the first job, named ``sweep <model>-<data> <swept overrides>`` and tagged
    ``ltr.sweep.role=parent`` and ``ltr.sweep.id``; every job's run becomes its child
    (:func:`grid_parent_run_id`), and :func:`log_summary` writes the summary on it at the end.
    Returns ``{"parent_run_id", "tracking_uri"}``, or ``None`` when tracking is off.
    """
    tracking = config.get("tracking")
    if tracking is None or not tracking.get("enabled", True) or config.get("model") is None:
        return None
    from ltr.tracking.store import retry_call  # deferred: MLflow loads only when a sweep logs

    tracker = make_tracker(tracking, Path(config.paths.root).resolve())
    swept = [str(o) for o in config.hydra.overrides.task if "," in str(o)]
    name = " ".join(
        [f"sweep {config.model.name}-{config.data.name}", *(o.replace("model.params.", "") for o in swept)]
    )
    tags = {
        "ltr.sweep.role": "parent",
        "ltr.sweep.id": str(sweep_dir.resolve()),
        **source_tags("ltr.sweep", job=True),
    }
    run = retry_call(tracker.client.create_run, tracker.experiment_id, run_name=name[:250], tags=tags)
    return {"parent_run_id": run.info.run_id, "tracking_uri": tracker.uri}


def swept_keys(config: Any) -> list[str]:
    """The config keys a multirun varies: grid overrides with several values, an Optuna search's params.

    >>> from omegaconf import OmegaConf
    >>> swept_keys(OmegaConf.create({"hydra": {"sweeper": {"params": {"model.params.num_leaves": "x"}},
    ...     "overrides": {"task": ["+model=lambdamart", "model.params.learning_rate=0.05,0.2"]}}}))
    ['model.params.learning_rate', 'model.params.num_leaves']
    """
    try:
        parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
    except Exception:  # an override syntax Hydra itself will report
        parsed = []
    keys = [o.key_or_group for o in parsed if o.is_sweep_override()]
    return keys + [str(k) for k in ((config.hydra.get("sweeper") or {}).get("params") or {})]


def sweep_record() -> dict[str, Any]:
    """In a job of a multirun: what :meth:`SweepSummary.on_multirun_start` recorded (start, size, swept
    keys, parent run); ``{}`` outside a multirun."""
    try:
        if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
            return {}
        return dict(json.loads((Path(HydraConfig.get().sweep.dir) / SweepSummary.START_FILE).read_text()))
    except (ValueError, OSError):
        return {}


def grid_parent_run_id(tracking_uri: str | None) -> str | None:
    """In a job of a grid sweep: the sweep's parent run (:func:`open_grid_parent`) when the job logs to
    the same store, else ``None`` (not a multirun, tracking off, or a job that swept ``tracking.uri``)."""
    if tracking_uri is None:
        return None
    parent = sweep_record().get("parent") or {}
    return parent.get("parent_run_id") if parent.get("tracking_uri") == tracking_uri else None


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
        record: dict[str, Any] = {
            "start": time.time(),
            "total": sweep_size(config),
            "swept": swept_keys(config),
        }
        if "optuna" not in str((config.hydra.get("sweeper") or {}).get("_target_", "")).lower():
            record["parent"] = open_grid_parent(config, folder)  # Optuna's search opens its own
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

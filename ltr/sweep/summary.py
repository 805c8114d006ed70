"""After a Hydra multirun: find the best job, print it, and log it (:class:`SweepSummary` callback).

Each job of ``python -m ltr.train -m ...`` writes ``<sweep dir>/<job>/ltr_result.json`` (its
optimised validation value, its validation/test means, its overrides, command and MLflow run id)
and its MLflow run carries the tag ``ltr.sweep.id = <sweep dir>``. This works with any launcher
(basic, joblib processes) and sweeper (grid, Optuna), because it reads files, not process memory.

As each job ends the callback prints one line for it on standard output (:func:`trial_line`: its
swept overrides, its value or ``pruned`` / ``failed``, the best job so far, its duration), in CI too: it
is the sweep's log. The job's own output went to its log file meanwhile (:mod:`ltr.sweep.console`).

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

import datetime
import json
import math
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from hydra.types import RunMode

from ltr.report.progress import progress_enabled
from ltr.sweep.console import LOG_WIDTH, LaunchLines, add_launch_filter, full_output, remove_launch_filter
from ltr.sweep.pruning import TrainingStopped
from ltr.sweep.runs import end_running_children
from ltr.tracking.writer import make_tracker, mlflow_metric_name, source_tags

RESULT_FILE = "ltr_result.json"
SUMMARY_FILE = "sweep_summary.json"
OPTUNA_RESULTS = "optimization_results.yaml"  # ltr.sweep.sweeper.RESULTS_FILE (not imported: Optuna)

#: grid-sweep parent runs this process opened and has not ended yet ({"parent_run_id", "tracking_uri"})
OPEN_GRID_PARENTS: list[dict[str, str]] = []


#: a float written with a point or an exponent (an integer stays as written)
NUMBER_WITH_POINT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?")

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
        shown = [short_override(o) for o in r.get("overrides", []) if o in varying]
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

    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:  # a log (CI, a file): a row per job, not wrapped at 80 columns
            console.width = LOG_WIDTH
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
        OPEN_GRID_PARENTS[:] = [p for p in OPEN_GRID_PARENTS if p["parent_run_id"] != parent_run_id]
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
    Returns ``{"parent_run_id", "tracking_uri", "sweep_dir"}``, or ``None`` when tracking is off.
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
    parent = {"parent_run_id": run.info.run_id, "tracking_uri": tracker.uri, "sweep_dir": str(sweep_dir)}
    OPEN_GRID_PARENTS.append(parent)  # until the summary ends it FINISHED (or end_open_grid_parents)
    return parent


def end_open_grid_parents(status: str) -> None:
    """End every grid-sweep parent run this process opened and did not finish with ``status``:
    ``KILLED`` / ``FAILED`` when the sweep stopped before :meth:`SweepSummary.on_multirun_end`,
    ``FINISHED`` at its end when no job gave a value to summarise."""
    if not OPEN_GRID_PARENTS:  # a single run's error: no MLflow import (~2 s) on the way out
        return
    from mlflow.tracking import MlflowClient  # deferred: MLflow loads only when a sweep logs

    from ltr.tracking.store import retry_call  # deferred: with MLflow above

    while OPEN_GRID_PARENTS:
        parent = OPEN_GRID_PARENTS.pop()
        client = MlflowClient(tracking_uri=parent["tracking_uri"])
        if status != "FINISHED":
            retry_call(client.set_tag, parent["parent_run_id"], "error", f"the sweep ended {status}")
            # jobs of launcher=joblib are SIGKILLed with the sweep: their runs end here
            end_running_children(client, parent["parent_run_id"], Path(parent["sweep_dir"]), status)
        retry_call(client.set_terminated, parent["parent_run_id"], status)


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


def swept_keys(config: Any) -> list[str]:
    """The keys a multirun varies: the sweeper's ``params`` (an Optuna search space, or Hydra's sweep
    definitions), then the comma lists / ranges / choices on the command line.

    >>> from omegaconf import OmegaConf
    >>> swept_keys(OmegaConf.create({"hydra": {"sweeper": {"params": {"lr": "interval(0, 1)"}},
    ...     "overrides": {"task": ["+model=lambdamart", "b=x,y", "c=0"]}}}))
    ['lr', 'b']
    """
    sweeper = config.hydra.get("sweeper") or {}
    keys = [str(k) for k in (sweeper.get("params") or {})]
    try:
        parsed = OverridesParser.create().parse_overrides(list(config.hydra.overrides.task))
    except Exception:  # an override syntax Hydra itself will report
        return keys
    for override in parsed:
        if override.is_sweep_override() and override.key_or_group not in keys:
            keys.append(override.key_or_group)
    return keys


def short_override(override: str) -> str:
    """An override as a trial line and the summary table show it: ``model.params.`` dropped, a float
    to 4 significant digits (the rerun command keeps every digit).

    >>> short_override("model.params.learning_rate=0.03574712922600244"), short_override("+model=xendcg")
    ('learning_rate=0.03575', '+model=xendcg')
    >>> short_override("model.params.num_leaves=63"), short_override("model.params.lambda_l2=1e-05")
    ('num_leaves=63', 'lambda_l2=1e-05')
    """
    key, sep, value = override.replace("model.params.", "").partition("=")
    if sep and NUMBER_WITH_POINT.fullmatch(value):
        value = f"{float(value):.4g}"
    return f"{key}{sep}{value}"


def trial_line(
    job: str,
    position: int,
    total: int | None,
    shown: Sequence[str],
    outcome: str,
    *,
    best: dict[str, Any] | None = None,
    seconds: float | None = None,
    eta: float | None = None,
) -> str:
    """The line printed when a sweep's job ends: the job (its folder, Optuna's trial number), how many
    jobs have ended of how many, its swept overrides, its outcome, the best job so far, its duration.

    >>> best = {"job": "1", "value": 0.72014}
    >>> trial_line("3", 4, 20, ["learning_rate=0.05", "num_leaves=63"], "valid ndcg@10 = 0.7123", best=best, seconds=12.3)
    'trial 3 [4/20]  learning_rate=0.05 num_leaves=63  valid ndcg@10 = 0.7123  (best so far 0.7201, trial 1)  12 s'
    >>> trial_line("0", 1, None, [], "pruned at round 12", seconds=75, eta=150)
    'trial 0 [1]  pruned at round 12  1:15, ETA 0:02:30'
    """
    counted = f"{position}/{total}" if total else f"{position}"
    parts = [f"trial {job} [{counted}]", " ".join(shown), outcome]
    if best is not None:
        parts.append(f"(best so far {best['value']:.4f}, trial {best['job']})")
    if seconds is not None:
        took = _duration(seconds)
        parts.append(took if eta is None else f"{took}, ETA {datetime.timedelta(seconds=round(eta))}")
    return "  ".join(p for p in parts if p)


def _duration(seconds: float) -> str:
    """``12 s`` under a minute, else ``m:ss`` / ``h:mm:ss``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def job_outcome(job_return: Any, result: dict[str, Any] | None) -> str:
    """A finished job in words: ``valid ndcg@10 = 0.7123``, ``pruned at round 12``, ``failed: <error>``.

    >>> from types import SimpleNamespace
    >>> job_outcome(SimpleNamespace(_return_value=ValueError("bad\\nsecond line")), None)
    'failed: ValueError: bad'
    """
    if result is not None:
        return f"valid {result.get('target', 'value')} = {result['value']:.4f}"
    returned = getattr(job_return, "_return_value", None)  # .return_value would log a failed job again
    if isinstance(returned, TrainingStopped):
        return f"pruned at round {returned.step}"
    if isinstance(returned, BaseException):
        message = (str(returned).strip().splitlines() or [""])[0]
        text = f"{type(returned).__name__}: {message}" if message else type(returned).__name__
        return f"failed: {text[:300]}"
    return f"returned {returned!r}"


def claim_position(folder: Path) -> int:
    """The next number of ``folder`` (1, 2, …), claimed by creating the file of that name: jobs ending
    at once in several processes get distinct numbers.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     [claim_position(Path(tmp) / "ended") for _ in range(3)]
    [1, 2, 3]
    """
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.iterdir())) + 1
    while True:
        try:
            os.close(os.open(folder / str(number), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return number
        except FileExistsError:
            number += 1


def set_sweep_total(sweep_dir: str | Path, total: int) -> None:
    """Say how many jobs this multirun will run (ltr's Optuna sweeper: the trials a stored study still
    lacks), for the ``[ended/total]`` of the trial lines."""
    path = Path(sweep_dir) / SweepSummary.START_FILE
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):  # no SweepSummary callback in this app's config
        return
    record["total"] = int(total)
    path.write_text(json.dumps(record))


class SweepSummary(Callback):
    """Hydra callback (``hydra.callbacks.sweep_summary`` in ``conf/config.yaml``): one line per job as it
    ends (:func:`trial_line`; with an ETA on a terminal), and the summary at the end of the multirun.

    Each job's own output goes to its log file meanwhile, and Hydra's launch lines are not printed
    (:mod:`ltr.sweep.console`; ``hydra.verbose=ltr`` shows both).
    """

    START_FILE = ".ltr_sweep_start.json"
    ENDED_DIR = ".ltr_sweep_ended"  # one empty file per ended job: claim_position

    def __init__(self) -> None:
        self.launch_filter: LaunchLines | None = None
        self.job_start: float | None = None

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        folder = Path(config.hydra.sweep.dir)
        folder.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {
            "start": time.time(),
            "total": sweep_size(config),
            "keys": swept_keys(config),
        }
        if "optuna" not in str((config.hydra.get("sweeper") or {}).get("_target_", "")).lower():
            record["parent"] = open_grid_parent(config, folder)  # Optuna's search opens its own
        (folder / self.START_FILE).write_text(json.dumps(record))
        where = f"sweep in {folder.resolve()}: a line per job as it ends"
        if full_output(config.hydra.verbose):
            print(f"{where}, after its output", flush=True)
        else:
            self.launch_filter = add_launch_filter(drop=True)
            print(f"{where}; each job's own output is in <job>/{config.hydra.job.name}.log", flush=True)

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        self.job_start = time.monotonic()

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        """Runs in the job's process (any launcher): print the job's :func:`trial_line` on standard output."""
        try:
            if HydraConfig.get().mode != RunMode.MULTIRUN:
                return
            folder = Path(HydraConfig.get().sweep.dir)
            start = json.loads((folder / self.START_FILE).read_text())
        except (ValueError, OSError):
            return
        job_dir = Path(HydraConfig.get().runtime.output_dir)
        result_file = job_dir / RESULT_FILE
        result = json.loads(result_file.read_text()) if result_file.is_file() else None
        position = claim_position(folder / self.ENDED_DIR)
        keys = set(start.get("keys", []))
        shown = [
            short_override(o) for o in (job_return.overrides or []) if o.split("=", 1)[0].lstrip("+~") in keys
        ]
        total = start.get("total")
        eta = None
        if total and progress_enabled() and position < total:
            eta = (time.time() - start["start"]) / position * (total - position)
        line = trial_line(
            job_dir.name,
            position,
            total,
            shown,
            job_outcome(job_return, result),
            best=best_job(read_job_results(folder)),
            seconds=time.monotonic() - self.job_start if self.job_start is not None else None,
            eta=eta,
        )
        print(line, flush=True)

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        if self.launch_filter is not None:
            remove_launch_filter(self.launch_filter)
            self.launch_filter = None
        summarize_sweep(config.hydra.sweep.dir, config)
        end_open_grid_parents("FINISHED")  # no job value to log: the parent still ends

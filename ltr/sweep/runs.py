"""A sweep's study in MLflow: one parent run per study, one child run per trial, the best one promoted.

* :func:`open_parent_run` creates the parent run (tags ``ltr.sweep.role=parent``, ``ltr.sweep.study``)
  and keeps its id as the study's user attribute ``ltr.mlflow_parent_run``, so a resumed sweep and every
  worker on the same study log under the same parent. Each trial's job gets the id through
  :data:`ENV_PARENT` and opens its run as a child (``mlflow.parentRunId``); the child holds the trial's
  params, its curve and ``ltr.trial.state`` (COMPLETE or PRUNED).
* :func:`promote` (at the end of a sweep) logs on the parent: the best trial's metrics as
  ``best/<metric>``, its searched parameters as params ``best.<key>`` (a later, better trial of an
  extended study is written as tags, since MLflow params cannot change), tags naming the best trial,
  its run and the command that reruns it, the best trial's model linked as an output of the parent,
  counts of trials per state, and Optuna's plots (:func:`save_plots`) as PNG artifacts under ``optuna/``.

Every worker of a study writes on the one parent run, possibly at the same moment: each write goes
through :func:`ltr.tracking.store.retry_call`, which calls again after a lost get-or-create insert (two workers
adding the same new param, tag or metric key on a server with a PostgreSQL or MySQL store).
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr.core import interrupts
from ltr.tracking.store import mask_secrets, retry_call
from ltr.tracking.writer import make_tracker, mlflow_metric_name

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

ENV_PARENT = "LTR_PARENT_RUN_ID"
PARENT_ATTR = "ltr.mlflow_parent_run"
RUN_ATTR = "ltr.run_id"  # a trial's MLflow run (set by its job)
COMMAND_ATTR = "ltr.command"  # the command that reruns a trial (set by its job)

#: Optuna's matplotlib plots saved for every sweep: file stem → function name in optuna.visualization.matplotlib
PLOTS = {
    "optimization_history": "plot_optimization_history",
    "param_importances": "plot_param_importances",
    "parallel_coordinate": "plot_parallel_coordinate",
    "intermediate_values": "plot_intermediate_values",
}


def parent_tracker(config: Any) -> Any:
    """The tracker of ``config.tracking`` (``None`` when tracking is off or the config has none)."""
    tracking = config.get("tracking") if config is not None else None
    if tracking is None or not tracking.get("enabled", True):
        return None
    return make_tracker(tracking, Path(config.paths.root).resolve())


def open_parent_run(study: optuna.Study, tracker: Any, storage: str | None) -> str:
    """The study's parent run: the stored one (set RUNNING again), or a new one stored on the study."""
    client = tracker.client
    stored = study.user_attrs.get(PARENT_ATTR)
    if stored:
        retry_call(client.update_run, stored, status="RUNNING")
        return str(stored)
    tags = {
        "ltr.sweep.role": "parent",
        "ltr.sweep.study": study.study_name,
        "ltr.sweep.storage": mask_secrets(storage or "in memory"),
    }
    run = retry_call(
        client.create_run, tracker.experiment_id, run_name=f"sweep-{study.study_name}", tags=tags
    )
    winner = first_parent(client, tracker.experiment_id, tags)  # two workers starting at once: one wins
    if winner != run.info.run_id:
        retry_call(client.delete_run, run.info.run_id)
    study.set_user_attr(PARENT_ATTR, winner)
    return winner


def aborted_status(exc: BaseException) -> str:
    """The status a run ends with when ``exc`` stops it: ``KILLED`` for Ctrl-C / SIGTERM (also when a
    library turned the signal into another error, :mod:`ltr.core.interrupts`), else ``FAILED``.

    >>> aborted_status(KeyboardInterrupt()), aborted_status(ValueError())
    ('KILLED', 'FAILED')
    """
    return "FAILED" if interrupts.carried_by(exc) is None else "KILLED"


def end_parent_run(tracker: Any, run_id: str, exc: BaseException, sweep_dir: Path | None = None) -> None:
    """End a sweep's parent run KILLED or FAILED (:func:`aborted_status`) with the reason as its
    ``error`` tag, so an interrupted or failed sweep leaves no parent RUNNING; with ``sweep_dir``, this
    sweep's child runs still RUNNING too (:func:`end_running_children`). A store that cannot be reached
    any more leaves them as they are (the sweep's own error is what the user needs to see)."""
    status = aborted_status(exc)
    reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    with contextlib.suppress(Exception):
        retry_call(tracker.client.set_tag, run_id, "error", mask_secrets(reason)[:5000])
    with contextlib.suppress(Exception):
        if sweep_dir is not None:
            end_running_children(tracker.client, run_id, sweep_dir, status)
    with contextlib.suppress(Exception):
        retry_call(tracker.client.set_terminated, run_id, status)


def end_running_children(client: Any, parent_run_id: str, sweep_dir: Path, status: str) -> list[str]:
    """End ``status`` every child of ``parent_run_id`` that this sweep (its folder, the runs' tag
    ``ltr.sweep.id``) started and that is still RUNNING; returns their ids.

    A job that runs in this process ends its own run (:class:`~ltr.tracking.writer.Tracker`); a job of
    ``launcher=joblib`` runs in a worker process that joblib kills with SIGKILL when the sweep stops,
    so its run would stay RUNNING. Other sweeps' children (another worker of the same study) are left
    alone: their sweep folder differs.
    """
    experiment = client.get_run(parent_run_id).info.experiment_id
    query = (
        f"tags.`mlflow.parentRunId` = '{parent_run_id}' and tags.`ltr.sweep.id` = '{sweep_dir.resolve()}'"
        " and attributes.status = 'RUNNING'"
    )
    ended = []
    for run in retry_call(client.search_runs, [experiment], filter_string=query, max_results=1000):
        retry_call(client.set_tag, run.info.run_id, "error", f"the sweep ended {status} while this job ran")
        retry_call(client.set_terminated, run.info.run_id, status)
        ended.append(run.info.run_id)
    return ended


def first_parent(client: Any, experiment_id: str, tags: Mapping[str, str]) -> str:
    """The earliest RUNNING parent run with these tags (study name and storage).

    Workers that start at once each create a parent run; a study user attribute cannot arbitrate
    (Optuna writes it last-writer-wins), but every worker searches only after creating its own run, so
    each sees the earliest candidate and all agree on it (ties in start time: the smaller run id).
    """
    query = (
        " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items()) + " and attributes.status = 'RUNNING'"
    )
    runs = retry_call(client.search_runs, [experiment_id], filter_string=query, max_results=1000)
    return str(min(runs, key=lambda r: (r.info.start_time, r.info.run_id)).info.run_id)


def save_plots(study: optuna.Study, folder: Path) -> list[Path]:
    """Optuna's optimisation history, parameter importances, parallel coordinates and intermediate values
    as PNGs in ``folder``; a plot Optuna cannot draw yet (e.g. importances of one trial) is left out."""
    import matplotlib  # deferred: plotting loads only at the end of a sweep

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # deferred: as above
    import optuna.visualization.matplotlib as optuna_plots  # deferred: as above

    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for stem, function in PLOTS.items():
        try:
            with warnings.catch_warnings():  # Optuna marks its matplotlib plots experimental
                warnings.simplefilter("ignore")
                axes = getattr(optuna_plots, function)(study)
        except (ValueError, RuntimeError, ZeroDivisionError) as exc:
            log.info("Optuna plot %s skipped: %s", stem, exc)
            continue
        figure = axes.flat[0].figure if hasattr(axes, "flat") else axes.figure
        path = folder / f"{stem}.png"
        figure.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(figure)
        saved.append(path)
    return saved


def promote(study: optuna.Study, tracker: Any, parent: str, sweep_dir: Path) -> None:
    """Log the best trial and the study's plots on the parent run and end it FINISHED (module docstring)."""
    from mlflow.entities import LoggedModelOutput, Metric, Param, RunTag  # deferred: slow import
    from mlflow.exceptions import MlflowException  # deferred: as above
    from optuna.trial import TrialState  # deferred: Optuna loads only when a sweep runs

    client = tracker.client
    now = int(time.time() * 1000)
    trials = study.get_trials(deepcopy=False)
    counts = {f"sweep/n_{state.name.lower()}": sum(t.state == state for t in trials) for state in TrialState}
    retry_call(client.log_batch, parent, metrics=[Metric(k, float(v), now, 0) for k, v in counts.items()])
    for path in save_plots(study, sweep_dir / "optuna_plots"):
        retry_call(client.log_artifact, parent, str(path), "optuna")
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if complete:
        best = study.best_trial
        tags = {"ltr.sweep.best_trial": str(best.number), "ltr.sweep.best_value": repr(best.value)}
        run_id = best.user_attrs.get(RUN_ATTR)
        if best.user_attrs.get(COMMAND_ATTR):
            tags["ltr.sweep.best_command"] = best.user_attrs[COMMAND_ATTR]
        params = {f"best.{key.lstrip('+~')}": str(value) for key, value in best.params.items()}
        try:
            retry_call(client.log_batch, parent, params=[Param(k, v) for k, v in params.items()])
        except MlflowException:  # a later best of an extended study: params cannot change, tags can
            tags.update(params)
        if run_id:
            tags["ltr.sweep.best_run_id"] = run_id
            best_run = client.get_run(run_id)
            metrics = {
                mlflow_metric_name("best", name): value
                for name, value in best_run.data.metrics.items()
                if not name.startswith("curve/")
            }
            retry_call(client.log_batch, parent, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()])
            models = client.search_logged_models(
                experiment_ids=[best_run.info.experiment_id], filter_string=f"source_run_id = '{run_id}'"
            )
            if models:
                outputs = client.get_run(parent).outputs
                linked = {o.model_id for o in (outputs.model_outputs if outputs else [])}
                if models[0].model_id not in linked:
                    # another worker of the study may link it between the check and here
                    with contextlib.suppress(MlflowException):
                        client.log_outputs(parent, [LoggedModelOutput(models[0].model_id, step=0)])
                tags["ltr.sweep.best_model_uri"] = f"models:/{models[0].model_id}"
        retry_call(client.log_batch, parent, tags=[RunTag(k, mask_secrets(v)) for k, v in tags.items()])
    retry_call(client.set_terminated, parent, "FINISHED")

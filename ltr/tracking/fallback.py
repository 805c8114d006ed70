"""Runs that fell back to a local store when their server died, copied back to the server.

A :class:`~ltr.tracking.writer.Tracker` whose server stops answering moves its run to
``<root>/mlflow-fallback.db`` and prints the command that imports it later:
``python -m ltr.tracking import-fallback STORE --to URI`` (:func:`import_fallback`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ltr.core.errors import ConfigError
from ltr.tracking.store import (
    HTTP_LIMITS,
    check_server_reachable,
    check_store_uri,
    experiment_id,
    is_connection_error,
    is_server_uri,
    mask_secrets,
    resolve_tracking_uri,
    retry_call,
)
from ltr.tracking.writer import METRIC_BATCH, PARAM_BATCH, TAG_PARENT

TAG_IMPORTED_AS = "ltr.fallback.imported_as"


TAG_IMPORTED_FROM = "ltr.fallback.imported_from"


def import_fallback(store: str | os.PathLike[str], target_uri: str) -> list[tuple[str, str]]:
    """Copy every run of a fallback store not imported yet to ``target_uri``; ``[(old id, new id)]``.

    Each run keeps its experiment (by name), name, tags, params, full metric histories, dataset inputs
    (the Datasets panel), status, artifacts and logged models (so ``runs:/<new id>/model`` loads); a
    child run's ``mlflow.parentRunId`` names its imported parent, and children the server already held
    under the parent's half-written run there move under the imported parent. The fallback run is tagged
    ``ltr.fallback.imported_as`` and skipped by the next import.

    A server that is unreachable, or stops answering part-way, is one :class:`~ltr.core.errors.ConfigError`
    (bounded retries, :data:`~ltr.tracking.store.HTTP_LIMITS`) and nothing is lost: the runs not imported stay untagged in
    the store, and the next import replaces a half-copied run (found by ``ltr.fallback.source_run_id``).
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)
    from mlflow.tracking import MlflowClient  # deferred: slow import (see the module docstring)

    source = Path(store).resolve()
    if not source.is_file():
        raise ConfigError(f"import-fallback: no fallback store {source} (the path printed by the run)")
    target_uri = resolve_tracking_uri(target_uri, Path.cwd())
    shown = mask_secrets(target_uri)
    check_store_uri(target_uri)
    if is_server_uri(target_uri):
        for name, value in HTTP_LIMITS.items():
            os.environ.setdefault(name, value)
    check_server_reachable(
        target_uri,
        option="import-fallback --to",
        fix="then import again (the fallback store keeps every run)",
    )
    src, dst = MlflowClient(f"sqlite:///{source}"), MlflowClient(target_uri)
    experiments = {e.experiment_id: e.name for e in src.search_experiments()}
    runs = src.search_runs(list(experiments), max_results=5000, order_by=["attributes.start_time ASC"])
    imported = {  # fallback run id -> its imported copy (earlier imports included)
        run.info.run_id: run.data.tags[TAG_IMPORTED_AS].rsplit(" run ", 1)[-1]
        for run in runs
        if TAG_IMPORTED_AS in run.data.tags
    }
    pending = [run for run in runs if TAG_IMPORTED_AS not in run.data.tags]
    done: list[tuple[str, str]] = []
    for run in pending:
        old = run.info.run_id
        try:
            new_id = _import_run(src, dst, run, experiments[run.info.experiment_id], source, imported)
        except (MlflowException, OSError, ConnectionError) as exc:
            reason = mask_secrets(str(exc)).strip().splitlines()
            if is_connection_error(exc):
                what = f"the MLflow server {shown} stopped answering"
            elif isinstance(exc, MlflowException):
                what = f"{shown} refused a run"
            else:
                what = f"copying a run to {shown} failed"
            raise ConfigError(
                f"import-fallback: {what} after {len(done)} of {len(pending)} "
                f"run(s) ({type(exc).__name__}: {reason[0][:200] if reason else ''}); nothing is lost: the "
                f"runs not imported stay in {source}; run the same command again when the server is back"
            ) from exc
        src.set_tag(old, TAG_IMPORTED_AS, f"{shown} run {new_id}")
        imported[old] = new_id
        done.append((old, new_id))
    return done


def _adopt_children(dst: Any, exp_id: str, server_run: str, new_id: str) -> None:
    """Children the server got before it died, under the half-written ``server_run``, move under its copy.

    A comparison whose server died after its first systems finished has those systems' runs on the
    server and the rest in the fallback store; once the parent is imported, one parent holds them all.
    The half-written run is tagged ``ltr.fallback.superseded_by`` (nothing to do on another store).
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)

    for child in dst.search_runs([exp_id], f"tags.`{TAG_PARENT}` = '{server_run}'", max_results=5000):
        dst.set_tag(child.info.run_id, TAG_PARENT, new_id)
    try:
        dst.set_tag(server_run, "ltr.fallback.superseded_by", new_id)
    except MlflowException as exc:
        if is_connection_error(exc):
            raise


def _import_run(
    src: Any, dst: Any, run: Any, experiment: str, source: Path, imported: Mapping[str, str]
) -> str:
    """Copy one fallback run (see :func:`import_fallback`) to ``dst``; the id of the copy."""
    import contextlib
    import tempfile

    import mlflow  # deferred: slow import (see the module docstring)
    from mlflow.entities import LoggedModelStatus, Metric, Param  # deferred: slow import

    old = run.info.run_id
    exp_id = experiment_id(dst, experiment)
    for partial in dst.search_runs([exp_id], f"tags.`ltr.fallback.source_run_id` = '{old}'"):
        dst.delete_run(partial.info.run_id)  # a copy an interrupted import left half-done
    tags = {k: v for k, v in run.data.tags.items() if k != "mlflow.runName"}
    tags[TAG_IMPORTED_FROM] = f"{source} run {old}"
    tags["ltr.fallback.source_run_id"] = old
    if tags.get(TAG_PARENT):
        parent = imported.get(tags[TAG_PARENT])
        if parent is None:
            tags.pop(TAG_PARENT)
        else:
            tags[TAG_PARENT] = parent
    elif server_parent := tags.get("ltr.fallback.server_parent_run_id"):
        with contextlib.suppress(mlflow.exceptions.MlflowException):  # the parent stayed on this server
            tags[TAG_PARENT] = dst.get_run(server_parent).info.run_id
    new_id = dst.create_run(
        exp_id, start_time=run.info.start_time, tags=tags, run_name=run.info.run_name
    ).info.run_id
    params = [Param(k, v) for k, v in run.data.params.items()]
    for i in range(0, len(params), PARAM_BATCH):
        dst.log_batch(new_id, params=params[i : i + PARAM_BATCH])
    metrics = [
        Metric(m.key, m.value, m.timestamp, m.step)
        for key in run.data.metrics
        for m in src.get_metric_history(old, key)
    ]
    for i in range(0, len(metrics), METRIC_BATCH):
        dst.log_batch(new_id, metrics=metrics[i : i + METRIC_BATCH])
    if server_run := run.data.tags.get("ltr.fallback.server_run_id"):
        _adopt_children(dst, exp_id, server_run, new_id)
    if run.inputs is not None and run.inputs.dataset_inputs:
        retry_call(dst.log_inputs, new_id, datasets=list(run.inputs.dataset_inputs))  # shared dataset rows
    with tempfile.TemporaryDirectory() as tmp:
        if src.list_artifacts(old):
            dst.log_artifacts(new_id, src.download_artifacts(old, "", tmp))
    for model in src.search_logged_models([run.info.experiment_id], filter_string=f"source_run_id = '{old}'"):
        copy = dst.create_logged_model(
            exp_id,
            name=model.name,
            source_run_id=new_id,
            tags=model.tags,
            params=model.params,
            model_type=model.model_type,
        )
        with tempfile.TemporaryDirectory() as tmp:
            local = mlflow.artifacts.download_artifacts(artifact_uri=model.artifact_location, dst_path=tmp)
            dst.log_model_artifacts(copy.model_id, local)
        dst.finalize_logged_model(copy.model_id, LoggedModelStatus.READY)
    dst.set_terminated(new_id, run.info.status, end_time=run.info.end_time)
    return new_id

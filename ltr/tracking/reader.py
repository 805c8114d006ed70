"""Reading runs back: finished runs by id, name, experiment or parent, and their Parquet artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ltr.core.errors import ConfigError


def find_runs(
    uri: str,
    *,
    run_ids: Sequence[str] = (),
    run_names: Sequence[str] = (),
    experiment: str | None = None,
    parent_run_id: str | None = None,
) -> list[dict[str, Any]]:
    """Runs chosen by id, by name, by experiment and/or as children of a parent run (finished only).

    Returns ``[{"run_id", "name", "experiment_id", "tags"}]`` in the order asked for (ids, then names),
    else by start time. Unknown ids/names raise :class:`~ltr.core.errors.ConfigError` naming them.
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)
    from mlflow.tracking import MlflowClient  # deferred: slow import (see the module docstring)

    client = MlflowClient(tracking_uri=uri)

    def record(run: Any) -> dict[str, Any]:
        return {
            "run_id": run.info.run_id,
            "name": run.info.run_name,
            "experiment_id": run.info.experiment_id,
            "tags": dict(run.data.tags),
        }

    out: list[dict[str, Any]] = []
    for run_id in run_ids:
        try:
            out.append(record(client.get_run(run_id)))
        except MlflowException as exc:
            raise ConfigError(f"--run-ids: no run {run_id!r} in {uri}") from exc
    if run_names or experiment or parent_run_id:
        if experiment:
            exp = client.get_experiment_by_name(experiment)
            if exp is None:
                names = [e.name for e in client.search_experiments()]
                raise ConfigError(
                    f"--experiment: no experiment {experiment!r} in {uri}; found: {', '.join(names)}"
                )
            experiment_ids = [exp.experiment_id]
        else:
            experiment_ids = [e.experiment_id for e in client.search_experiments()]
        clauses = ["attributes.status = 'FINISHED'"]
        if parent_run_id:
            clauses.append(f"tags.mlflow.parentRunId = '{parent_run_id}'")
        runs = client.search_runs(
            experiment_ids, " and ".join(clauses), max_results=5000, order_by=["attributes.start_time ASC"]
        )
        if run_names:
            by_name: dict[str, Any] = {}
            for run in runs:  # the latest run of a name wins
                by_name[run.info.run_name] = run
            missing = [n for n in run_names if n not in by_name]
            if missing:
                raise ConfigError(
                    f"--run-names: no finished run named {', '.join(map(repr, missing))} in {uri}; "
                    f"found: {', '.join(sorted(by_name)[:20])}"
                )
            out += [record(by_name[n]) for n in run_names]
        else:
            out += [record(r) for r in runs if r.data.tags.get("ltr.compare.role") != "parent"]
    return out


def download_frame(uri: str, run_id: str, artifact_file: str) -> Any:
    """Read a Parquet artifact of a run (e.g. ``per_query/test.parquet``) into a DataFrame."""
    import tempfile

    import pandas as pd  # deferred: only --from-mlflow reads frames back
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)
    from mlflow.tracking import MlflowClient  # deferred: slow import (see the module docstring)

    client = MlflowClient(tracking_uri=uri)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            local = client.download_artifacts(run_id, artifact_file, tmp)
        except (MlflowException, OSError) as exc:
            raise ConfigError(
                f"run {run_id} has no artifact {artifact_file!r} (runs logged by ltr.train have per_query/<split>.parquet)"
            ) from exc
        return pd.read_parquet(local)

"""The one module that talks to MLflow.

A :class:`Tracker` wraps one MLflow run: flattened params, metrics (with steps for per-iteration
curves), artifacts and the model. :class:`NullTracker` has the same methods and does nothing
(``tracking=none``). Metric names follow ``docs/architecture.md``: ``@`` is not allowed by MLflow,
so ``ndcg@10`` on the test split is logged as ``test/ndcg_at_10``.

MLflow is imported inside the functions that use it: importing it takes seconds, and a run with
``tracking=none`` (or a helper such as :func:`mlflow_metric_name`) never needs it.

>>> flatten_params({"model": {"params": {"learning_rate": 0.1}}, "seed": 1})
{'model.params.learning_rate': '0.1', 'seed': '1'}
>>> mlflow_metric_name("test", "ndcg@10")
'test/ndcg_at_10'
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ltr.errors import ConfigError

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

#: MLflow's limit on one param value (characters)
PARAM_VALUE_LIMIT = 6000
_BATCH = 900  # MLflow accepts up to 1000 metrics / 100 params per log_batch call
_PARAM_BATCH = 100


def flatten_params(tree: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Flatten a nested mapping to ``{"a.b.c": "value"}`` strings (lists are JSON-encoded)."""
    out: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if value:
                out.update(flatten_params(value, prefix=f"{name}."))
            else:
                out[name] = "{}"
        elif isinstance(value, list | tuple):
            out[name] = json.dumps(list(value))[:PARAM_VALUE_LIMIT]
        else:
            out[name] = str(value)[:PARAM_VALUE_LIMIT]
    return out


def mlflow_metric_name(split: str, metric: str, suffix: str = "") -> str:
    """``("test", "ndcg@10") -> "test/ndcg_at_10"``; MLflow rejects ``@`` in metric names."""
    name = metric.replace("@", "_at_")
    name = re.sub(r"[^0-9A-Za-z_\-./ ]", "_", name)
    return f"{split}/{name}{suffix}" if split else f"{name}{suffix}"


def default_tracking_uri(root: str | os.PathLike[str]) -> str:
    """The local SQLite store in the project folder: ``sqlite:///<abs root>/mlflow.db``."""
    return f"sqlite:///{Path(root).resolve() / 'mlflow.db'}"


def resolve_tracking_uri(uri: str | None, root: str | os.PathLike[str]) -> str:
    """``None`` → the local SQLite store; a relative ``sqlite:///x.db`` is made absolute."""
    if not uri:
        return default_tracking_uri(root)
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return f"sqlite:///{Path(uri[len('sqlite:///') :]).resolve()}"
    return uri


def dashboard_command(uri: str) -> str:
    """The shell command that opens the MLflow dashboard on this store."""
    mlflow_exe = Path(sys.executable).with_name("mlflow")
    exe = shlex.quote(str(mlflow_exe)) if mlflow_exe.exists() else "mlflow"
    if uri.startswith(("http://", "https://")):
        return f"open {uri} in a browser"
    return f"{exe} ui --backend-store-uri {shlex.quote(uri)} --host 127.0.0.1 --port 5000"


def check_server_reachable(uri: str, timeout: float = 5.0) -> None:
    """Fail fast, before any training, when ``uri`` is an MLflow server that does not answer."""
    if not uri.startswith(("http://", "https://")):
        return
    import urllib.error
    import urllib.request

    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (user-given URL)
            if response.status != 200:
                raise ConfigError(f"tracking.uri={uri}: {url} answered HTTP {response.status}")
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise ConfigError(
            f"tracking.uri={uri}: the MLflow server is unreachable ({exc}); start it, fix the URI, "
            "or run with tracking=none"
        ) from exc


class NullTracker:
    """Same interface as :class:`Tracker`; records nothing (``tracking=none``)."""

    enabled = False
    run_id: str | None = None
    uri: str | None = None

    experiment_id: str | None = None

    @contextmanager
    def start(self, **_: Any) -> Iterator[NullTracker]:
        yield self

    def log_params(self, params: Mapping[str, Any]) -> None: ...
    def set_tags(self, tags: Mapping[str, Any]) -> None: ...
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None: ...
    def log_history(self, history: Mapping[str, Mapping[str, list[float]]]) -> None: ...
    def log_dict(self, data: Any, artifact_file: str) -> None: ...
    def log_text(self, text: str, artifact_file: str) -> None: ...
    def log_artifact(self, path: str | os.PathLike[str], artifact_path: str | None = None) -> None: ...
    def log_frame(self, frame: Any, artifact_file: str) -> None: ...
    def log_iteration_values(self, rows: list[tuple[int, dict[str, float]]]) -> None: ...
    def spawn(self) -> NullTracker:
        return self

    def tag_run(self, run_id: str, tags: Mapping[str, Any]) -> None: ...

    def log_ranker(self, ranker: Any, example: Any = None) -> None: ...


class Tracker:
    """One MLflow run on a store (SQLite file or server).

    Use as ``with tracker.start(run_name=..., tags=...): ...``. A normal exit ends the run
    FINISHED; an exception ends it FAILED with the traceback stored as ``error/traceback.txt``;
    Ctrl-C (KeyboardInterrupt) ends it KILLED. Whatever was logged before stays.
    """

    enabled = True

    def __init__(self, uri: str, experiment: str, *, artifact_root: str | os.PathLike[str] | None = None):
        import mlflow  # deferred: slow import (see the module docstring)
        from mlflow.tracking import MlflowClient  # deferred: slow import (see the module docstring)

        self.uri = uri
        self.experiment = experiment
        self._mlflow = mlflow
        self.run_id: str | None = None
        # the first access creates (migrates) a new SQLite store; parallel jobs take turns for it,
        # and the fluent API's store (used by log_model) is created inside the lock too
        with _store_lock(uri):
            self.client = MlflowClient(tracking_uri=uri)
            _retry(self.client.search_experiments, max_results=1)
            previous = mlflow.get_tracking_uri()
            mlflow.set_tracking_uri(uri)
            try:
                _retry(mlflow.search_experiments, max_results=1)
            finally:
                mlflow.set_tracking_uri(previous)
            existing = _retry(self.client.get_experiment_by_name, experiment)
            if existing is not None:
                self.experiment_id = existing.experiment_id
            else:
                location = Path(artifact_root).resolve().as_uri() if artifact_root else None
                # the dashboard opens a "model training" experiment on its runs table (not the GenAI view)
                self.experiment_id = _retry(
                    self.client.create_experiment,
                    experiment,
                    artifact_location=location,
                    tags={"mlflow.experimentKind": "custom_model_development"},
                )

    def spawn(self) -> Tracker:
        """A new tracker on the same store and experiment (e.g. for child runs of a comparison)."""
        other = object.__new__(Tracker)
        other.uri, other.experiment, other.client, other._mlflow = (
            self.uri,
            self.experiment,
            self.client,
            self._mlflow,
        )
        other.experiment_id, other.run_id = self.experiment_id, None
        return other

    @contextmanager
    def start(
        self,
        *,
        run_name: str | None = None,
        tags: Mapping[str, Any] | None = None,
        parent_run_id: str | None = None,
    ) -> Iterator[Tracker]:
        """Create a run (a child of ``parent_run_id`` when given) and end it FINISHED / FAILED / KILLED."""
        mlflow = self._mlflow
        all_tags = {k: str(v) for k, v in (tags or {}).items()}
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        run = _retry(self.client.create_run, self.experiment_id, run_name=run_name, tags=all_tags)
        self.run_id = run.info.run_id
        # also the active fluent-API run, which mlflow.<flavor>.log_model needs; the previous
        # tracking URI is restored afterwards so the process-wide MLflow state is left as found
        previous_uri = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(self.uri)
        _retry(mlflow.start_run, run_id=self.run_id, nested=mlflow.active_run() is not None)
        status = "FINISHED"
        try:
            yield self
        except KeyboardInterrupt:
            status = "KILLED"
            self._record_error("interrupted (KeyboardInterrupt / SIGINT)")
            raise
        except BaseException:
            status = "FAILED"
            text = traceback.format_exc()
            self._record_error(text)
            raise
        finally:
            _retry(mlflow.end_run, status=status)
            mlflow.set_tracking_uri(previous_uri)

    def tag_run(self, run_id: str, tags: Mapping[str, Any]) -> None:
        """Set tags on another (finished) run of this store, e.g. mark the best job of a sweep."""
        for key, value in tags.items():
            _retry(self.client.set_tag, run_id, key, str(value))

    def _record_error(self, text: str) -> None:
        """Store the traceback as ``error/traceback.txt`` and its last line as the ``error`` tag."""
        self.log_text(text, "error/traceback.txt")
        _retry(self.client.set_tag, self._run(), "error", text.strip().splitlines()[-1][:5000])

    # --- params, tags, metrics -----------------------------------------------------------------
    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param  # deferred: slow import (see the module docstring)

        items = [Param(k, str(v)[:PARAM_VALUE_LIMIT]) for k, v in params.items()]
        for i in range(0, len(items), _PARAM_BATCH):
            _retry(self.client.log_batch, self._run(), params=items[i : i + _PARAM_BATCH])

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        from mlflow.entities import RunTag  # deferred: slow import (see the module docstring)

        items = [RunTag(k, str(v)[:5000]) for k, v in tags.items()]
        for i in range(0, len(items), _PARAM_BATCH):
            _retry(self.client.log_batch, self._run(), tags=items[i : i + _PARAM_BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric  # deferred: slow import (see the module docstring)

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step or 0) for k, v in metrics.items()]
        for i in range(0, len(items), _BATCH):
            _retry(self.client.log_batch, self._run(), metrics=items[i : i + _BATCH])

    def log_history(self, history: Mapping[str, Mapping[str, list[float]]]) -> None:
        """Per-iteration curves ``{"valid": {"ndcg@10": [...]}}`` as ``curve/valid/ndcg_at_10``, step = iteration.

        The ``curve/`` prefix keeps them apart from the final per-split metrics (``valid/ndcg_at_10``).
        """
        from mlflow.entities import Metric  # deferred: slow import (see the module docstring)

        now = int(time.time() * 1000)
        items = [
            Metric(mlflow_metric_name(f"curve/{split}", metric), float(value), now, step)
            for split, curves in history.items()
            for metric, values in curves.items()
            for step, value in enumerate(values)
        ]
        for i in range(0, len(items), _BATCH):
            _retry(self.client.log_batch, self._run(), metrics=items[i : i + _BATCH])

    def log_iteration_values(self, rows: list[tuple[int, dict[str, float]]]) -> None:
        """Log buffered ``on_iteration`` values ``[(i, {"valid/ndcg@10": v})]`` as ``curve/valid/ndcg_at_10`` at step i."""
        from mlflow.entities import Metric  # deferred: slow import (see the module docstring)

        now = int(time.time() * 1000)
        items = [
            Metric(mlflow_metric_name("curve", key), float(value), now, step)
            for step, values in rows
            for key, value in values.items()
        ]
        for i in range(0, len(items), _BATCH):
            _retry(self.client.log_batch, self._run(), metrics=items[i : i + _BATCH])

    # --- artifacts -------------------------------------------------------------------------------
    def log_dict(self, data: Any, artifact_file: str) -> None:
        _retry(self.client.log_dict, self._run(), data, artifact_file)

    def log_text(self, text: str, artifact_file: str) -> None:
        _retry(self.client.log_text, self._run(), text, artifact_file)

    def log_artifact(self, path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        _retry(self.client.log_artifact, self._run(), str(path), artifact_path)

    def log_frame(self, frame: Any, artifact_file: str) -> None:
        """A pandas DataFrame as a Parquet artifact (e.g. ``per_query/test.parquet``)."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / Path(artifact_file).name
            frame.to_parquet(local, index=False)
            parent = str(Path(artifact_file).parent)
            self.log_artifact(local, None if parent == "." else parent)

    def log_ranker(self, ranker: Any, example: Any = None) -> None:
        """Log the fitted model under ``model/`` the way the ranker asks (``ranker.logged_model()``).

        ``("pyfunc", ranker)`` (every ``ltr`` ranker): :func:`ltr.models.pyfunc.log_pyfunc_model`, one
        input for every model (features ``f1 …`` + optional ``qid``), native engine files inside.
        """
        # the requirements are given explicitly; silence MLflow's environment-inference chatter
        for noisy in (
            "mlflow.utils.environment",
            "mlflow.utils.uv_utils",
            "mlflow.models.model",
            "mlflow.pyfunc",
        ):
            logging.getLogger(noisy).setLevel(logging.ERROR)
        flavor, model = ranker.logged_model()
        if flavor != "pyfunc":
            raise ValueError(
                f"{type(ranker).__name__}.logged_model() asks for MLflow flavour {flavor!r}; known: pyfunc"
            )
        # deferred: imports mlflow (seconds), which only a run that logs a model needs
        from ltr.models.pyfunc import log_pyfunc_model

        _retry(log_pyfunc_model, model, name="model", input_example=example)

    # --- helpers ---------------------------------------------------------------------------------
    def _run(self) -> str:
        if self.run_id is None:
            raise RuntimeError("Tracker.start() must be entered before logging")
        return self.run_id


@contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """An exclusive ``fcntl`` lock on ``<db>-lock`` next to a SQLite store (no-op for servers)."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    import fcntl

    lock_path = Path(uri[len("sqlite:///") :] + "-lock")  # matches the ignored mlflow.db-*
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_lock_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return "database is locked" in text or "database table is locked" in text


def _retry(fn: Any, *args: Any, attempts: int = 12, **kwargs: Any) -> Any:
    """Call ``fn``; on an SQLite lock error (parallel jobs on one store) retry with exponential backoff.

    Waits 0.05 s, 0.1 s, … capped at 2 s (≈ 15 s in total) plus a per-process offset so that
    concurrent jobs do not retry in lock-step; any other error propagates at once.
    """
    delay = 0.05
    for attempt in range(attempts):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if attempt == attempts - 1 or not _is_lock_error(exc):
                raise
            time.sleep(delay + (os.getpid() % 17) / 1000)
            delay = min(delay * 2, 2.0)
    raise RuntimeError("unreachable")  # pragma: no cover


def make_tracker(tracking_cfg: Mapping[str, Any], root: str | os.PathLike[str]) -> Tracker | NullTracker:
    """Build the tracker a config asks for; an unreachable server fails here, before training."""
    if not tracking_cfg.get("enabled", True):
        return NullTracker()
    uri = resolve_tracking_uri(tracking_cfg.get("uri"), root)
    check_server_reachable(uri)
    artifact_root = Path(root) / "mlartifacts" if uri.startswith("sqlite:") else None
    return Tracker(uri, str(tracking_cfg.get("experiment", "ltr")), artifact_root=artifact_root)


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
    else by start time. Unknown ids/names raise :class:`~ltr.errors.ConfigError` naming them.
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

"""Writing runs: a :class:`Tracker` wraps one MLflow run, :class:`NullTracker` records nothing.

A tracker logs flattened params, metrics (with steps for per-iteration curves), artifacts and the
model (``tracking=none``: :class:`NullTracker`, same methods). Metric names follow
``docs/architecture.md``: ``@`` is not allowed by MLflow, so ``ndcg@10`` on the test split is logged
as ``test/ndcg_at_10``. A server that dies mid-run moves the run to a local fallback store
(:class:`Tracker`; :mod:`ltr.tracking.fallback` copies it back later). Every param, tag and text
written passes :func:`~ltr.tracking.store.mask_secrets`.

MLflow's own run-page panels: :meth:`Tracker.log_datasets` logs the splits as dataset inputs (digest =
ltr's data fingerprint, :class:`SplitDataset`) and :func:`source_tags` names the entry point in the
Source field.

>>> flatten_params({"model": {"params": {"learning_rate": 0.1}}, "seed": 1})
{'model.params.learning_rate': '0.1', 'seed': '1'}
>>> mlflow_metric_name("test", "ndcg@10")
'test/ndcg_at_10'
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr.core import interrupts
from ltr.core.errors import ConfigError, Terminated
from ltr.tracking.store import (
    HTTP_LIMITS,
    RUNS_VIEW_TAG,
    check_server_reachable,
    check_store_uri,
    check_writable_file,
    is_connection_error,
    is_server_uri,
    mask_secrets,
    masked,
    open_store,
    process_uris,
    resolve_tracking_uri,
    retry_call,
    runs_view,
)

#: a run's table (an MLflow table artifact) of what is not charted: CI bounds, spreads, counts, p-values
SUMMARY_TABLE = "summary/metrics.json"

#: MLflow's limit on one param value (characters)
PARAM_VALUE_LIMIT = 6000


METRIC_BATCH = 900  # MLflow accepts up to 1000 metrics / 100 params per log_batch call


PARAM_BATCH = 100


#: the local store a run moves to when its tracking server stops answering (under the work root)
FALLBACK_DB = "mlflow-fallback.db"


FALLBACK_ARTIFACTS = "mlartifacts-fallback"


#: tags of a run in the fallback store: the server it was meant for, and where it was imported to
TAG_FALLBACK_FOR = "ltr.fallback.tracking_uri"


#: MLflow's own tags for the run page's Source field (the entry point) and the Datasets panel
TAG_SOURCE_NAME = "mlflow.source.name"


TAG_SOURCE_TYPE = "mlflow.source.type"


TAG_PARENT = "mlflow.parentRunId"


DATASET_CONTEXT = "mlflow.data.context"


@dataclass(frozen=True)
class SplitDataset:
    """One split as MLflow's Datasets panel shows it (:meth:`Tracker.log_datasets`).

    ``digest`` is ltr's data fingerprint (:meth:`ltr.data.RankingData.fingerprint`, also the run's
    ``ltr.data.fingerprint.<split>`` tag), never a digest MLflow computes over the arrays; ``source``
    is the file the split was read from; ``context`` is the split (``train``, ``valid``, ``test``);
    ``profile`` (shown in the dataset's details) holds its size.
    """

    name: str
    digest: str
    source: str
    context: str
    profile: Mapping[str, Any] = field(default_factory=dict)


def source_tags(entry: str, *, job: bool = False) -> dict[str, str]:
    """MLflow's Source field of a run: the entry point (``ltr.train``, ``ltr.compare``, ``ltr.sweep``).

    ``job`` marks a run one job of a sweep started (MLflow's source type ``JOB``), else ``LOCAL``.

    >>> source_tags("ltr.compare")
    {'mlflow.source.name': 'ltr.compare', 'mlflow.source.type': 'LOCAL'}
    """
    return {TAG_SOURCE_NAME: entry, TAG_SOURCE_TYPE: "JOB" if job else "LOCAL"}


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


#: MLflow's run tag listing its table artifacts (what ``mlflow.log_table`` sets)
TAG_TABLES = "mlflow.loggedArtifacts"


def table_json(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as MLflow's table file: ``{"columns": [...], "data": [[...], ...]}`` (pandas' ``split``
    orientation), floats written exactly (``repr``), NaN and ±inf as ``null``.

    >>> table_json([{"metric": "ndcg@10", "mean": 0.1 + 0.2, "ci_low": float("nan")}])
    '{"columns": ["metric", "mean", "ci_low"], "data": [["ndcg@10", 0.30000000000000004, null]]}'
    """
    columns = list(dict.fromkeys(k for row in rows for k in row))

    def cell(v: Any) -> Any:
        v = v.item() if hasattr(v, "item") else v  # numpy scalars as Python numbers
        return None if isinstance(v, float) and not math.isfinite(v) else v

    return json.dumps({"columns": columns, "data": [[cell(row.get(c)) for c in columns] for row in rows]})


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
    def log_table(self, rows: Sequence[Mapping[str, Any]], artifact_file: str) -> None: ...
    def log_iteration_values(self, rows: list[tuple[int, dict[str, float]]]) -> None: ...
    def log_datasets(self, datasets: Sequence[SplitDataset]) -> None: ...
    def spawn(self) -> NullTracker:
        return self

    def tag_run(self, run_id: str, tags: Mapping[str, Any]) -> None: ...
    def set_status(self, run_id: str, status: str) -> None: ...
    def set_runs_view(self, metric_keys: Sequence[str]) -> None: ...

    def log_ranker(self, ranker: Any, example: Any = None) -> None: ...


class Tracker:
    """One MLflow run on a store (SQLite file or server).

    Use as ``with tracker.start(run_name=..., tags=...): ...``. A normal exit ends the run
    FINISHED; an exception ends it FAILED with the traceback stored as ``error/traceback.txt``;
    Ctrl-C (KeyboardInterrupt) or SIGTERM (:class:`~ltr.core.errors.Terminated`) ends it KILLED. Whatever was logged before stays.

    On a server with a ``fallback_root``, everything logged is also kept in memory (artifacts copied
    to a temporary folder); when the server stops answering (connection refused or timed out after
    the bounded retries of :data:`~ltr.tracking.store.HTTP_LIMITS`), the run moves to the local SQLite store
    ``<fallback_root>/mlflow-fallback.db``: a new run there gets all that was logged so far, and the
    rest of the run, the model included, goes there. :attr:`fallback_from` then names the server,
    and the command that imports the run later (:func:`ltr.tracking.fallback.import_fallback`) is printed on stderr.
    Every param, tag and text written passes :func:`~ltr.tracking.store.mask_secrets`.
    """

    enabled = True

    def __init__(
        self,
        uri: str,
        experiment: str,
        *,
        artifact_root: str | os.PathLike[str] | None = None,
        fallback_root: str | os.PathLike[str] | None = None,
    ):
        import mlflow  # deferred: slow import (see the module docstring)

        self.uri = uri
        self.experiment = experiment
        self._mlflow = mlflow
        self.run_id: str | None = None
        self.fallback_root = Path(fallback_root).resolve() if fallback_root and is_server_uri(uri) else None
        #: the server URI (masked) this run was meant for, once it moved to the fallback store
        self.fallback_from: str | None = None
        self._journal: list[tuple[str, tuple[Any, ...]]] | None = None
        self._stash: Path | None = None
        self._run_name: str | None = None
        self._run_tags: dict[str, str] = {}
        self._parent: Tracker | None = None
        self.client, self.experiment_id = open_store(mlflow, uri, experiment, artifact_root)

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
        other.fallback_root, other.fallback_from = self.fallback_root, self.fallback_from
        other._journal, other._stash, other._run_name, other._run_tags = None, None, None, {}
        other._parent = self  # a child that moves to the fallback store takes its parent along
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
        import shutil
        import tempfile

        all_tags = {k: mask_secrets(str(v)) for k, v in (tags or {}).items()}
        if parent_run_id:
            all_tags[TAG_PARENT] = parent_run_id
        self._run_name, self._run_tags = run_name, all_tags
        if self.fallback_root is not None and self.fallback_from is None:
            self._journal, self._stash = [], Path(tempfile.mkdtemp(prefix="ltr-run-"))
        try:
            with process_uris(self.uri):  # MLflow's process-wide URIs, restored exactly when the run ends
                self.run_id = None
                self._guarded(self._open_run, journaled=True)  # a fallback opens the run itself
                status = "FINISHED"
                try:
                    yield self
                except BaseException as exc:
                    carried = interrupts.carried_by(exc)  # a signal a library turned into another error too
                    status = "FAILED" if carried is None else "KILLED"
                    if carried is None:
                        self._record_error(traceback.format_exc())
                    else:
                        signal = (
                            "SIGTERM" if isinstance(carried, Terminated) else "KeyboardInterrupt / SIGINT"
                        )
                        self._record_error(f"interrupted ({signal})")
                    raise
                finally:
                    self._guarded(lambda: self._end_run(status), journaled=False)
                    if self.fallback_from is not None:
                        print(
                            fallback_message(self.run_id or "", self.uri, self.fallback_from), file=sys.stderr
                        )
        finally:
            if self._stash is not None:
                shutil.rmtree(self._stash, ignore_errors=True)
            self._journal, self._stash = None, None

    def _open_run(self) -> None:
        """Create the run on the current store and make it the fluent API's active run (log_model needs it)."""
        mlflow = self._mlflow
        run = retry_call(
            self.client.create_run, self.experiment_id, run_name=self._run_name, tags=self._run_tags
        )
        self.run_id = run.info.run_id
        # the caller restores the previous tracking URI, leaving the process-wide MLflow state as found
        mlflow.set_tracking_uri(self.uri)
        retry_call(mlflow.start_run, run_id=self.run_id, nested=mlflow.active_run() is not None)

    def _end_run(self, status: str) -> None:
        """End the fluent run on this tracker's store (a child run may have moved it, see :meth:`_fall_back`)."""
        self._mlflow.set_tracking_uri(self.uri)
        retry_call(self._mlflow.end_run, status=status)

    def _guarded(self, action: Any, *, journaled: bool) -> Any:
        """Run ``action``; when the server is gone, move the run to the fallback store and finish there.

        ``journaled``: the fallback itself redoes the action (a journal entry is replayed, the run is
        opened); any other action is run again on the new store.
        """
        try:
            return action()
        except Exception as exc:
            if self._journal is None or not is_connection_error(exc):
                raise
            self._fall_back(exc)
            return None if journaled else action()

    def _log(self, method: str, *args: Any) -> None:
        """``client.<method>(run_id, *args)``, kept in the journal while a fallback is possible."""
        if self._journal is not None:
            self._journal.append((method, args))
        self._guarded(lambda: retry_call(getattr(self.client, method), self._run(), *args), journaled=True)

    def _fall_back(self, exc: BaseException) -> None:
        """Open a run in ``<fallback_root>/mlflow-fallback.db`` and replay the journal into it."""
        import contextlib

        assert self.fallback_root is not None and self._journal is not None  # noqa: S101 (checked by _guarded)
        mlflow = self._mlflow
        server, server_run = mask_secrets(self.uri), self.run_id
        store = self.fallback_root / FALLBACK_DB
        reason = (
            mask_secrets(str(exc)).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        )
        print(
            f"warning: the MLflow server {server} stopped answering ({reason}); "
            f"the run continues in the local store {store}",
            file=sys.stderr,
        )
        with contextlib.suppress(Exception):  # leaves the fluent run; telling the dead server fails
            mlflow.end_run("FAILED")
        uri = f"sqlite:///{store}"
        check_writable_file(store, f"the fallback store for {server}")
        self.client, self.experiment_id = open_store(
            mlflow, uri, self.experiment, self.fallback_root / FALLBACK_ARTIFACTS
        )
        self.uri, self.fallback_from = uri, server
        self._run_tags = {
            **self._run_tags,
            TAG_FALLBACK_FOR: server,
            "ltr.fallback.server_run_id": server_run or "",
        }
        journal, self._journal = self._journal, None
        self._follow_parent(exc)
        self._open_run()
        for method, args in journal:
            retry_call(getattr(self.client, method), self._run(), *args)

    def _follow_parent(self, exc: BaseException) -> None:
        """Keep a child run's parent link in the fallback store: its parent moves there too.

        The parent (the tracker this one was spawned from, e.g. a comparison's run) is moved with
        everything it logged so far unless it already moved; the child's ``mlflow.parentRunId`` then
        names the parent's run in the fallback store (and ``ltr.fallback.server_parent_run_id`` the one
        on the server). :func:`ltr.tracking.fallback.import_fallback` maps it to the imported parent.
        """
        server_parent = self._run_tags.get(TAG_PARENT)
        parent = self._parent
        if not server_parent:
            return
        movable = parent is not None and parent.fallback_from is None and parent._journal is not None
        if movable and parent is not None and parent.run_id == server_parent:
            parent._fall_back(exc)
        if parent is not None and parent.fallback_from is not None and parent.run_id:
            self._run_tags[TAG_PARENT] = parent.run_id
            self._run_tags["ltr.fallback.server_parent_run_id"] = server_parent
        else:  # no parent that could move: the link would name a run the fallback store does not hold
            self._run_tags.pop(TAG_PARENT, None)
            self._run_tags["ltr.fallback.server_parent_run_id"] = server_parent

    def tag_run(self, run_id: str, tags: Mapping[str, Any]) -> None:
        """Set tags on another (finished) run of this store, e.g. mark the best job of a sweep."""
        for key, value in tags.items():
            retry_call(self.client.set_tag, run_id, key, mask_secrets(str(value)))

    def set_status(self, run_id: str, status: str) -> None:
        """End a run of this store with ``status`` (FINISHED, FAILED or KILLED), e.g. a pruned trial's."""
        retry_call(self.client.set_terminated, run_id, status)

    def set_runs_view(self, metric_keys: Sequence[str]) -> None:
        """Make ``metric_keys`` the columns (and the first the sort) of the experiment's runs table in
        the view :func:`~ltr.tracking.store.dashboard_url` opens (:func:`~ltr.tracking.store.runs_view`;
        the latest run's keys win)."""
        value = json.dumps(runs_view(metric_keys))
        self._guarded(
            lambda: retry_call(self.client.set_experiment_tag, self.experiment_id, RUNS_VIEW_TAG, value),
            journaled=False,
        )

    def _record_error(self, text: str) -> None:
        """Store the traceback as ``error/traceback.txt`` and its last line as the ``error`` tag."""
        self.log_text(text, "error/traceback.txt")
        self.set_tags({"error": text.strip().splitlines()[-1][:5000]})

    # --- params, tags, metrics -----------------------------------------------------------------
    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param  # deferred: slow import (see the module docstring)

        items = [Param(k, mask_secrets(str(v))[:PARAM_VALUE_LIMIT]) for k, v in params.items()]
        for i in range(0, len(items), PARAM_BATCH):
            self._log("log_batch", [], items[i : i + PARAM_BATCH])

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        from mlflow.entities import RunTag  # deferred: slow import (see the module docstring)

        items = [RunTag(k, mask_secrets(str(v))[:5000]) for k, v in tags.items()]
        for i in range(0, len(items), PARAM_BATCH):
            self._log("log_batch", [], [], items[i : i + PARAM_BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric  # deferred: slow import (see the module docstring)

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step or 0) for k, v in metrics.items()]
        for i in range(0, len(items), METRIC_BATCH):
            self._log("log_batch", items[i : i + METRIC_BATCH])

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
        for i in range(0, len(items), METRIC_BATCH):
            self._log("log_batch", items[i : i + METRIC_BATCH])

    def log_iteration_values(self, rows: list[tuple[int, dict[str, float]]]) -> None:
        """Log buffered ``on_iteration`` values ``[(i, {"valid/ndcg@10": v})]`` as ``curve/valid/ndcg_at_10`` at step i."""
        from mlflow.entities import Metric  # deferred: slow import (see the module docstring)

        now = int(time.time() * 1000)
        items = [
            Metric(mlflow_metric_name("curve", key), float(value), now, step)
            for step, values in rows
            for key, value in values.items()
        ]
        for i in range(0, len(items), METRIC_BATCH):
            self._log("log_batch", items[i : i + METRIC_BATCH])

    def log_datasets(self, datasets: Sequence[SplitDataset]) -> None:
        """The run's splits as MLflow dataset inputs (the run page's Datasets panel), one call.

        Each is an :class:`mlflow.data.meta_dataset.MetaDataset` (no arrays: MLflow computes no digest)
        whose digest is ltr's fingerprint and whose source is the local file, with the split as its
        ``mlflow.data.context`` input tag. Logged like everything else (fallback journal, masking).
        """
        from mlflow.data.dataset_source_registry import get_dataset_source_from_json  # deferred: slow import
        from mlflow.data.meta_dataset import MetaDataset  # deferred: slow import (see the module docstring)
        from mlflow.entities import Dataset, DatasetInput, InputTag  # deferred: slow import

        inputs = []
        for split in datasets:
            source = get_dataset_source_from_json(json.dumps({"uri": mask_secrets(split.source)}), "local")
            entity = MetaDataset(source, name=split.name, digest=split.digest)._to_mlflow_entity()
            profile = json.dumps(dict(split.profile)) if split.profile else None
            entity = Dataset(entity.name, entity.digest, entity.source_type, entity.source, profile=profile)
            inputs.append(DatasetInput(entity, tags=[InputTag(DATASET_CONTEXT, split.context)]))
        if inputs:
            self._log("log_inputs", inputs)

    # --- artifacts -------------------------------------------------------------------------------
    def log_dict(self, data: Any, artifact_file: str) -> None:
        self._log("log_dict", masked(data), artifact_file)

    def log_text(self, text: str, artifact_file: str) -> None:
        self._log("log_text", mask_secrets(text), artifact_file)

    def log_artifact(self, path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
        """Upload one file; while a fallback is possible, a copy is kept to replay it there."""
        local = Path(path)
        if self._stash is not None and self._journal is not None:
            import shutil

            copy = self._stash / str(len(self._journal)) / local.name
            copy.parent.mkdir(parents=True)
            shutil.copy2(local, copy)
            local = copy
        self._log("log_artifact", str(local), artifact_path)

    def log_table(self, rows: Sequence[Mapping[str, Any]], artifact_file: str) -> None:
        """``rows`` as an MLflow table artifact: the dashboard shows it as a table (the run's
        ``mlflow.loggedArtifacts`` tag lists it, as ``mlflow.log_table`` does); the file is
        :func:`table_json` (every float exact)."""
        self.log_text(table_json(rows), artifact_file)
        tables = json.loads(self._run_tags.get(TAG_TABLES, "[]"))
        if {"path": artifact_file, "type": "table"} not in tables:
            tables.append({"path": artifact_file, "type": "table"})
        self._run_tags[TAG_TABLES] = json.dumps(tables)
        self.set_tags({TAG_TABLES: self._run_tags[TAG_TABLES]})

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

        self._guarded(
            lambda: retry_call(log_pyfunc_model, model, name="model", input_example=example), journaled=False
        )

    # --- helpers ---------------------------------------------------------------------------------
    def _run(self) -> str:
        if self.run_id is None:
            raise RuntimeError("Tracker.start() must be entered before logging")
        return self.run_id


def fallback_message(run_id: str, fallback_uri: str, server: str) -> str:
    """What a run that moved to the fallback store prints at its end: where it is, how to import it."""
    store = fallback_uri[len("sqlite:///") :]
    return (
        f"warning: run {run_id} was recorded in the local fallback store {store} because the MLflow "
        f"server {server} stopped answering; when it is back, import the run with:\n"
        f"    {shlex.quote(sys.executable)} -m ltr.tracking import-fallback {shlex.quote(store)} "
        f"--to {shlex.quote(server)}"
    )


def make_tracker(tracking_cfg: Mapping[str, Any], root: str | os.PathLike[str]) -> Tracker | NullTracker:
    """Build the tracker a config asks for; a bad URI, a read-only store or an unreachable server fails
    here, before training, with a :class:`~ltr.core.errors.ConfigError` naming ``tracking.uri``.

    For a server, :data:`~ltr.tracking.store.HTTP_LIMITS` bound MLflow's retries (unless the environment sets them) and the
    run falls back to ``<root>/mlflow-fallback.db`` if the server dies (see :class:`Tracker`).
    """
    if not tracking_cfg.get("enabled", True):
        return NullTracker()
    uri = resolve_tracking_uri(tracking_cfg.get("uri"), root)
    check_store_uri(uri)
    if is_server_uri(uri):
        for name, value in HTTP_LIMITS.items():
            os.environ.setdefault(name, value)
    check_server_reachable(uri)
    artifact_root = Path(root) / "mlartifacts" if uri.startswith("sqlite:") else None
    if artifact_root is not None:
        check_writable_file(artifact_root / ".ltr-probe", f"tracking.uri={uri} (its artifact folder)")
    import sqlite3  # deferred: only to name the errors of a store that cannot be opened

    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)
    from sqlalchemy.exc import SQLAlchemyError  # deferred: MLflow's database layer, loaded with mlflow

    try:
        return Tracker(
            uri, str(tracking_cfg.get("experiment", "ltr")), artifact_root=artifact_root, fallback_root=root
        )
    except (MlflowException, OSError, sqlite3.Error, SQLAlchemyError) as exc:
        first = mask_secrets(str(exc)).strip().splitlines()
        raise ConfigError(
            f"tracking.uri={mask_secrets(uri)}: cannot open the MLflow store "
            f"({type(exc).__name__}: {first[0][:300] if first else ''}); fix the URI or run with tracking=none"
        ) from exc


def log_into_run(
    uri: str, run_id: str, folder: str | os.PathLike[str], artifact_path: str, *, option: str
) -> str:
    """Copy every file under ``folder`` into the existing run ``run_id`` of the store ``uri``, under
    ``artifact_path`` (e.g. ``explain/``), without reopening or ending the run (its status is kept: an
    analysis of a finished run's model joins that run). Returns the artifact URI written to.

    A run that does not exist is a :class:`~ltr.core.errors.ConfigError` naming ``option`` (``--log-to``).
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)
    from mlflow.tracking import MlflowClient  # deferred: as above

    with process_uris(uri):
        client = MlflowClient(uri)
        try:
            run = retry_call(client.get_run, run_id)
        except MlflowException as exc:
            raise ConfigError(
                f"{option} {run_id}: no such run in {mask_secrets(uri)} ({exc.message.splitlines()[0]})"
            ) from None
        retry_call(client.log_artifacts, run_id, str(folder), artifact_path)
        return f"{run.info.artifact_uri}/{artifact_path}"

"""The one module that talks to MLflow.

A :class:`Tracker` wraps one MLflow run: flattened params, metrics (with steps for per-iteration
curves), artifacts and the model. :class:`NullTracker` has the same methods and does nothing
(``tracking=none``). Metric names follow ``docs/architecture.md``: ``@`` is not allowed by MLflow,
so ``ndcg@10`` on the test split is logged as ``test/ndcg_at_10``.

Servers: credentials in ``http://user:password@host`` move to MLflow's environment variables and
:func:`mask_secrets` hides them in everything written; retries are bounded (:data:`HTTP_LIMITS`); a
server that dies mid-run moves the run to a local fallback store, and
``python -m ltr.tracking import-fallback STORE --to URI`` (:func:`import_fallback`) copies it back.
Bad schemes and unwritable stores fail in :func:`make_tracker` with one :class:`~ltr.errors.ConfigError`.
Parallel writers: every store call goes through :func:`retry_call`, which waits out SQLite's
``database is locked`` and calls again after a lost get-or-create insert (two processes adding the same
new dataset, tag or param at once on a PostgreSQL- or MySQL-backed server).

MLflow's own run-page panels: :meth:`Tracker.log_datasets` logs the splits as dataset inputs (digest =
ltr's data fingerprint, :class:`SplitDataset`) and :func:`source_tags` names the entry point in the
Source field.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr.errors import ConfigError, LtrError

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

#: MLflow's limit on one param value (characters)
PARAM_VALUE_LIMIT = 6000
_BATCH = 900  # MLflow accepts up to 1000 metrics / 100 params per log_batch call
_PARAM_BATCH = 100
#: URI schemes a tracking store may have (``postgresql+psycopg2`` counts as ``postgresql``)
STORE_SCHEMES = ("http", "https", "sqlite", "file", "postgresql", "mysql", "mssql", "databricks")
#: bounded retries for a tracking server, set for the run unless the user's environment sets them:
#: a dead server costs ≈ 1 + 2 s of back-off per call instead of MLflow's minutes
HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}
#: the local store a run moves to when its tracking server stops answering (under the work root)
FALLBACK_DB = "mlflow-fallback.db"
FALLBACK_ARTIFACTS = "mlartifacts-fallback"
#: tags of a run in the fallback store: the server it was meant for, and where it was imported to
TAG_FALLBACK_FOR = "ltr.fallback.tracking_uri"
TAG_IMPORTED_AS = "ltr.fallback.imported_as"
TAG_IMPORTED_FROM = "ltr.fallback.imported_from"
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


_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*):[^/\s@]*@")


def mask_secrets(text: str) -> str:
    """Hide the password of every URI in ``text``: ``http://user:secret@host`` → ``http://user:***@host``.

    Every param, tag, text artifact and error message the tracker writes goes through this.

    >>> mask_secrets("ltr.train tracking.uri=http://ann:s3cr3t@127.0.0.1:5000 seed=1")
    'ltr.train tracking.uri=http://ann:***@127.0.0.1:5000 seed=1'
    """
    return _USERINFO.sub(r"\g<head>:***@", text)


def _masked(value: Any) -> Any:
    """``value`` with :func:`mask_secrets` applied to every string inside it (dicts and lists kept)."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, Mapping):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value


def split_credentials(uri: str) -> tuple[str, str | None, str | None]:
    """``http://user:pw@host:port/p`` → ``("http://host:port/p", "user", "pw")`` (percent-decoded).

    MLflow takes a server's credentials from ``MLFLOW_TRACKING_USERNAME`` / ``_PASSWORD``, not from the URI.

    >>> split_credentials("http://ann:p%40ss@127.0.0.1:5000")
    ('http://127.0.0.1:5000', 'ann', 'p@ss')
    >>> split_credentials("sqlite:////tmp/mlflow.db")
    ('sqlite:////tmp/mlflow.db', None, None)
    """
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return uri, None, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), unquote(user), unquote(password)


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
    """``None`` → the local SQLite store; a relative ``sqlite:///x.db`` is made absolute.

    Credentials in a server URI move to ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``
    (where MLflow reads them) and the URI without them is returned, so it can be printed and logged.
    """
    if not uri:
        return default_tracking_uri(root)
    uri, user, password = split_credentials(uri)
    if user is not None:
        os.environ["MLFLOW_TRACKING_USERNAME"] = user
        os.environ["MLFLOW_TRACKING_PASSWORD"] = password or ""
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


def check_server_reachable(
    uri: str, timeout: float = 5.0, *, option: str = "tracking.uri", fix: str = "or run with tracking=none"
) -> None:
    """Fail fast, before any training, when ``uri`` is an MLflow server that does not answer.

    The one-line :class:`~ltr.errors.ConfigError` names ``option`` (``tracking.uri``, or
    ``import-fallback --to``) and ends an unreachable server's message with ``fix``.
    """
    if not uri.startswith(("http://", "https://")):
        return
    import base64
    import urllib.error
    import urllib.request

    uri, user, password = split_credentials(uri)
    if user is None and os.environ.get("MLFLOW_TRACKING_USERNAME"):
        user, password = (
            os.environ["MLFLOW_TRACKING_USERNAME"],
            os.environ.get("MLFLOW_TRACKING_PASSWORD", ""),
        )
    url = uri.rstrip("/") + "/health"
    request = urllib.request.Request(url)  # noqa: S310 (user-given URL)
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (user-given URL)
            if response.status != 200:
                raise ConfigError(f"{option}={uri}: {url} answered HTTP {response.status}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ConfigError(
                f"{option}={uri}: the MLflow server refused the credentials (HTTP {exc.code}); give them "
                "as http://USER:PASSWORD@host:port or in MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD"
            ) from exc
        raise ConfigError(f"{option}={uri}: {url} answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(
            f"{option}={uri}: the MLflow server is unreachable ({mask_secrets(str(exc))}); start it, "
            f"fix the URI, {fix}"
        ) from exc


def check_store_uri(uri: str) -> None:
    """Refuse, with one line naming ``tracking.uri``, a URI of an unknown scheme or a store ltr cannot write.

    A plain path (no ``:``) is MLflow's file store and passes; ``sqlite:///…`` must name a file in a
    folder that can be created and written; ``http(s)://`` must name a host.

    >>> check_store_uri("ftp://example.org/runs")
    Traceback (most recent call last):
    ltr.errors.ConfigError: tracking.uri=ftp://example.org/runs: unknown scheme 'ftp'; use http(s)://host:port for an MLflow server, sqlite:///path/to/mlflow.db for a local store, or tracking=none
    """
    from urllib.parse import urlsplit

    hint = "use http(s)://host:port for an MLflow server, sqlite:///path/to/mlflow.db for a local store, or tracking=none"
    shown = mask_secrets(uri)
    if ":" not in uri:
        return
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme.split("+", 1)[0].lower() not in STORE_SCHEMES:
        name = uri.split(":", 1)[0] if not sep else scheme
        raise ConfigError(f"tracking.uri={shown}: unknown scheme {name!r}; {hint}")
    base = scheme.split("+", 1)[0].lower()
    if base in ("http", "https") and not urlsplit(uri).hostname:
        raise ConfigError(f"tracking.uri={shown}: names no server host; {hint}")
    if base == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ConfigError(
                f"tracking.uri={shown}: a SQLite store is sqlite:///relative/mlflow.db or "
                "sqlite:////absolute/mlflow.db (three or four slashes)"
            )
        check_writable_file(Path(rest[1:]), f"tracking.uri={shown}")


def check_writable_file(path: Path, what: str) -> None:
    """Fail with one line when ``path`` (or, missing, its folder) cannot be created or written.

    Tries for real (a probe file, opening ``path`` for update): permission bits say nothing for root
    or on read-only mounts.
    """
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".ltr-write-probe-"):
            pass
        if path.exists():
            with open(path, "r+b"):
                pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"{what}: {path} is not writable ({reason}); point it to a writable place, or run with tracking=none"
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
    def log_datasets(self, datasets: Sequence[SplitDataset]) -> None: ...
    def spawn(self) -> NullTracker:
        return self

    def tag_run(self, run_id: str, tags: Mapping[str, Any]) -> None: ...
    def set_status(self, run_id: str, status: str) -> None: ...

    def log_ranker(self, ranker: Any, example: Any = None) -> None: ...


class Tracker:
    """One MLflow run on a store (SQLite file or server).

    Use as ``with tracker.start(run_name=..., tags=...): ...``. A normal exit ends the run
    FINISHED; an exception ends it FAILED with the traceback stored as ``error/traceback.txt``;
    Ctrl-C (KeyboardInterrupt) ends it KILLED. Whatever was logged before stays.

    On a server with a ``fallback_root``, everything logged is also kept in memory (artifacts copied
    to a temporary folder); when the server stops answering (connection refused or timed out after
    the bounded retries of :data:`HTTP_LIMITS`), the run moves to the local SQLite store
    ``<fallback_root>/mlflow-fallback.db``: a new run there gets all that was logged so far, and the
    rest of the run, the model included, goes there. :attr:`fallback_from` then names the server,
    and the command that imports the run later (:func:`import_fallback`) is printed on stderr.
    Every param, tag and text written passes :func:`mask_secrets`.
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
        self.client, self.experiment_id = _open_store(mlflow, uri, experiment, artifact_root)

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

        mlflow = self._mlflow
        all_tags = {k: mask_secrets(str(v)) for k, v in (tags or {}).items()}
        if parent_run_id:
            all_tags[TAG_PARENT] = parent_run_id
        self._run_name, self._run_tags = run_name, all_tags
        if self.fallback_root is not None and self.fallback_from is None:
            self._journal, self._stash = [], Path(tempfile.mkdtemp(prefix="ltr-run-"))
        previous_uri = mlflow.get_tracking_uri()
        try:
            self.run_id = None
            self._guarded(self._open_run, journaled=True)  # a fallback opens the run itself
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
                self._guarded(lambda: self._end_run(status), journaled=False)
                if self.fallback_from is not None:
                    print(fallback_message(self.run_id or "", self.uri, self.fallback_from), file=sys.stderr)
        finally:
            mlflow.set_tracking_uri(previous_uri)
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
            if self._journal is None or not _is_connection_error(exc):
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
        self.client, self.experiment_id = _open_store(
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
        on the server). :func:`import_fallback` maps it to the imported parent.
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

    def _record_error(self, text: str) -> None:
        """Store the traceback as ``error/traceback.txt`` and its last line as the ``error`` tag."""
        self.log_text(text, "error/traceback.txt")
        self.set_tags({"error": text.strip().splitlines()[-1][:5000]})

    # --- params, tags, metrics -----------------------------------------------------------------
    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param  # deferred: slow import (see the module docstring)

        items = [Param(k, mask_secrets(str(v))[:PARAM_VALUE_LIMIT]) for k, v in params.items()]
        for i in range(0, len(items), _PARAM_BATCH):
            self._log("log_batch", [], items[i : i + _PARAM_BATCH])

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        from mlflow.entities import RunTag  # deferred: slow import (see the module docstring)

        items = [RunTag(k, mask_secrets(str(v))[:5000]) for k, v in tags.items()]
        for i in range(0, len(items), _PARAM_BATCH):
            self._log("log_batch", [], [], items[i : i + _PARAM_BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric  # deferred: slow import (see the module docstring)

        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step or 0) for k, v in metrics.items()]
        for i in range(0, len(items), _BATCH):
            self._log("log_batch", items[i : i + _BATCH])

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
            self._log("log_batch", items[i : i + _BATCH])

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
            self._log("log_batch", items[i : i + _BATCH])

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
        self._log("log_dict", _masked(data), artifact_file)

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


def is_server_uri(uri: str) -> bool:
    """Whether ``uri`` names an MLflow server (``http://`` or ``https://``)."""
    return uri.startswith(("http://", "https://"))


def _open_store(
    mlflow: Any, uri: str, experiment: str, artifact_root: str | os.PathLike[str] | None
) -> tuple[Any, str]:
    """A client of ``uri`` and the id of ``experiment`` there (created if missing)."""
    from mlflow.tracking import MlflowClient  # deferred: slow import (see the module docstring)

    # the first access creates (migrates) a new SQLite store; parallel jobs take turns for it,
    # and the fluent API's store (used by log_model) is created inside the lock too
    with _store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
        retry_call(client.search_experiments, max_results=1)
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(uri)
        try:
            retry_call(mlflow.search_experiments, max_results=1)
        finally:
            mlflow.set_tracking_uri(previous)
        location = Path(artifact_root).resolve().as_uri() if artifact_root else None
        return client, _experiment_id(client, experiment, location)


def _experiment_id(client: Any, experiment: str, location: str | None = None) -> str:
    """The id of ``experiment`` on ``client``'s store, created (artifacts at ``location``) if missing.

    Two processes creating it at once (sweep workers on a new server): the one that loses gets
    ``RESOURCE_ALREADY_EXISTS`` and looks the experiment up by name.
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)

    existing = retry_call(client.get_experiment_by_name, experiment)
    if existing is not None:
        return str(existing.experiment_id)
    # the dashboard opens a "model training" experiment on its runs table (not the GenAI view)
    try:
        return str(
            retry_call(
                client.create_experiment,
                experiment,
                artifact_location=location,
                tags={"mlflow.experimentKind": "custom_model_development"},
            )
        )
    except MlflowException as exc:  # another process (a sweep worker) made it first
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
        return str(retry_call(client.get_experiment_by_name, experiment).experiment_id)


#: what an MLflow error says when the server did not answer (after the bounded retries)
_CONNECTION_SIGNS = (
    "Max retries exceeded",
    "Connection refused",
    "Connection aborted",
    "Connection reset",
    "RemoteDisconnected",
    "timed out",
    "Failed to establish a new connection",
)


def _is_connection_error(exc: BaseException) -> bool:
    """The server did not answer (refused, reset, timed out); not an error the server answered with."""
    import requests  # deferred: MLflow's HTTP client, loaded with mlflow
    from mlflow.exceptions import MlflowException, RestException  # deferred: slow import

    if isinstance(exc, RestException):
        return False
    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout | ConnectionError):
        return True
    if isinstance(exc, MlflowException | requests.exceptions.RequestException | OSError):
        return any(sign in str(exc) for sign in _CONNECTION_SIGNS)
    return False


def fallback_message(run_id: str, fallback_uri: str, server: str) -> str:
    """What a run that moved to the fallback store prints at its end: where it is, how to import it."""
    store = fallback_uri[len("sqlite:///") :]
    return (
        f"warning: run {run_id} was recorded in the local fallback store {store} because the MLflow "
        f"server {server} stopped answering; when it is back, import the run with:\n"
        f"    {shlex.quote(sys.executable)} -m ltr.tracking import-fallback {shlex.quote(store)} "
        f"--to {shlex.quote(server)}"
    )


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


#: how each database MLflow supports words a unique-key violation (PostgreSQL, SQLite, MySQL, SQL Server)
_DUPLICATE_KEY_SIGNS = (
    "duplicate key value violates unique constraint",
    "unique constraint failed",
    "duplicate entry",
    "cannot insert duplicate key",
)


def _is_concurrent_insert_error(exc: BaseException) -> bool:
    """Another client inserted the same row between MLflow's look-up and its insert (a lost get-or-create).

    MLflow's SQLAlchemy store looks rows up, then inserts the missing ones: two runs logging the same new
    dataset (``log_inputs``; same name and digest), or two workers setting the same new tag or param
    on a shared parent run, both insert, and on a server with several writers (PostgreSQL, MySQL) one
    gets the database's unique-key error, e.g. ``RestException: BAD_REQUEST:
    (psycopg2.errors.UniqueViolation) duplicate key value violates unique constraint "dataset_pk"``.
    Its transaction was rolled back, so calling again finds the row and succeeds. An
    ``RESOURCE_ALREADY_EXISTS`` answer (a name that is taken, e.g. ``create_experiment``) is MLflow's
    final word, left to the caller.

    >>> from mlflow.exceptions import RestException
    >>> _is_concurrent_insert_error(RestException({"error_code": "BAD_REQUEST", "message": "(psycopg2.errors."
    ...     'UniqueViolation) duplicate key value violates unique constraint "dataset_pk"'}))
    True
    >>> _is_concurrent_insert_error(RestException({"error_code": "RESOURCE_ALREADY_EXISTS", "message":
    ...     "Experiment(name=x) already exists. Error: duplicate key value violates unique constraint"}))
    False
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import (see the module docstring)

    if not isinstance(exc, MlflowException) or exc.error_code == "RESOURCE_ALREADY_EXISTS":
        return False
    text = str(exc).lower()
    return any(sign in text for sign in _DUPLICATE_KEY_SIGNS)


#: calls again after a lost get-or-create insert (:func:`_is_concurrent_insert_error`); the retry finds
#: the row, so a duplicate that persists beyond these is a real error and propagates
_INSERT_RACE_RETRIES = 3


def retry_call(fn: Any, *args: Any, attempts: int = 12, **kwargs: Any) -> Any:
    """Call ``fn``; retry with exponential backoff on an SQLite lock error (parallel jobs on one store)
    and, at most :data:`_INSERT_RACE_RETRIES` times, on a lost get-or-create insert (parallel writers
    on a server, :func:`_is_concurrent_insert_error`).

    Waits 0.05 s, 0.1 s, … capped at 2 s (≈ 15 s in total) plus a per-process offset so that
    concurrent jobs do not retry in lock-step; any other error propagates at once.
    """
    delay, races = 0.05, 0
    for attempt in range(attempts):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            race = _is_concurrent_insert_error(exc) and races < _INSERT_RACE_RETRIES
            if attempt == attempts - 1 or not (race or _is_lock_error(exc)):
                raise
            races += race
            time.sleep(delay + (os.getpid() % 17) / 1000)
            delay = min(delay * 2, 2.0)
    raise RuntimeError("unreachable")  # pragma: no cover


def make_tracker(tracking_cfg: Mapping[str, Any], root: str | os.PathLike[str]) -> Tracker | NullTracker:
    """Build the tracker a config asks for; a bad URI, a read-only store or an unreachable server fails
    here, before training, with a :class:`~ltr.errors.ConfigError` naming ``tracking.uri``.

    For a server, :data:`HTTP_LIMITS` bound MLflow's retries (unless the environment sets them) and the
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


def import_fallback(store: str | os.PathLike[str], target_uri: str) -> list[tuple[str, str]]:
    """Copy every run of a fallback store not imported yet to ``target_uri``; ``[(old id, new id)]``.

    Each run keeps its experiment (by name), name, tags, params, full metric histories, dataset inputs
    (the Datasets panel), status, artifacts and logged models (so ``runs:/<new id>/model`` loads); a
    child run's ``mlflow.parentRunId`` names its imported parent, and children the server already held
    under the parent's half-written run there move under the imported parent. The fallback run is tagged
    ``ltr.fallback.imported_as`` and skipped by the next import.

    A server that is unreachable, or stops answering part-way, is one :class:`~ltr.errors.ConfigError`
    (bounded retries, :data:`HTTP_LIMITS`) and nothing is lost: the runs not imported stay untagged in
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
            if _is_connection_error(exc):
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
        if _is_connection_error(exc):
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
    exp_id = _experiment_id(dst, experiment)
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
    for i in range(0, len(params), _PARAM_BATCH):
        dst.log_batch(new_id, params=params[i : i + _PARAM_BATCH])
    metrics = [
        Metric(m.key, m.value, m.timestamp, m.step)
        for key in run.data.metrics
        for m in src.get_metric_history(old, key)
    ]
    for i in range(0, len(metrics), _BATCH):
        dst.log_batch(new_id, metrics=metrics[i : i + _BATCH])
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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ltr.tracking import-fallback STORE --to URI``: bring runs of a fallback store home."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ltr.tracking", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser("import-fallback", help="copy the runs of a fallback store to a tracking URI")
    imp.add_argument("store", help=f"the fallback SQLite file the run printed (<root>/{FALLBACK_DB})")
    imp.add_argument("--to", dest="target", required=True, help="tracking URI to import into")
    args = parser.parse_args(argv)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # retries: the error line says it
    try:
        pairs = import_fallback(args.store, args.target)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for old, new in pairs:
        print(f"imported run {old} as run {new}")
    print(f"{len(pairs)} run(s) imported into {mask_secrets(args.target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

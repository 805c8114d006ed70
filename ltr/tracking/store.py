"""Where runs are kept: tracking URIs, their credentials and masking, reachability, and a store's retries.

A tracking URI is a local SQLite store (``sqlite:///<root>/mlflow.db``, the default: where
``python -m ltr.train`` logs) or an MLflow server (``http(s)://host:port``). Credentials in a server
URI (``http://user:password@host``) move to MLflow's environment variables and :func:`mask_secrets`
hides them in everything written; retries against a server are bounded (:data:`HTTP_LIMITS`). Bad
schemes and unwritable stores fail with one :class:`~ltr.core.errors.ConfigError` naming
``tracking.uri``. Parallel writers: every store call goes through :func:`retry_call`, which waits out
SQLite's ``database is locked`` and calls again after a lost get-or-create insert (two processes
adding the same new dataset, tag or param at once on a PostgreSQL- or MySQL-backed server).

MLflow is imported inside the functions that use it: importing it takes seconds, and a run with
``tracking=none`` never needs it.

>>> mask_secrets("ltr.train tracking.uri=http://ann:s3cr3t@127.0.0.1:5000 seed=1")
'ltr.train tracking.uri=http://ann:***@127.0.0.1:5000 seed=1'
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ltr.core.errors import ConfigError

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


#: URI schemes a tracking store may have (``postgresql+psycopg2`` counts as ``postgresql``)
STORE_SCHEMES = ("http", "https", "sqlite", "file", "postgresql", "mysql", "mssql", "databricks")


#: bounded retries for a tracking server, set for the run unless the user's environment sets them:
#: a dead server costs ≈ 1 + 2 s of back-off per call instead of MLflow's minutes
HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}


#: ``scheme://user:password@`` up to the *last* ``@`` of the authority (``/``, ``?``, ``#`` or whitespace end
#: it), as :func:`split_credentials` and ``urllib`` read it: an unencoded ``@`` in a password is masked too
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*):[^/?#\s]*@")
#: the same with reserved characters (``/ ? #``) left unencoded in the password, up to the first ``@``
#: (what follows ``:`` must not read as a port: ``http://h:5000?x=a:b@c`` has no password)
_LOOSE_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*):(?!\d*(?:[/?#\s]|$))\S*?@")
#: query parameters that carry a secret: tokens, keys, signatures, passwords (S3/GCS/Azure signed URLs too)
_SECRET_PARAM = re.compile(
    r"(?P<head>[?&;][^=&;#\s]*(?:token|key|secret|password|passwd|pwd|sig|signature|credential|auth)[^=&#\s]*=)"
    r"[^&;#\s]+",
    re.IGNORECASE,
)


def mask_secrets(text: str) -> str:
    """Hide the password of every URI in ``text``: ``http://user:secret@host`` → ``http://user:***@host``,
    also with an unencoded ``/``, ``?`` or ``#`` in it, and the value of every token-like query parameter
    (``?token=``, ``api_key=``, ``X-Amz-Signature=``, ``sig=``, …): ``?token=***``.

    Every param, tag, text artifact, console line and error message the tracker, the model loader and
    ``ltr.export`` write goes through this.

    >>> mask_secrets("http://ann:p/w#x@h:5000/a?token=abc&n=1 s3://b/k?X-Amz-Signature=f00&X-Amz-Credential=AK")
    'http://ann:***@h:5000/a?token=***&n=1 s3://b/k?X-Amz-Signature=***&X-Amz-Credential=***'

    >>> mask_secrets("ltr.train tracking.uri=http://ann:s3cr3t@127.0.0.1:5000 seed=1")
    'ltr.train tracking.uri=http://ann:***@127.0.0.1:5000 seed=1'
    """
    text = _USERINFO.sub(r"\g<head>:***@", text)
    text = _LOOSE_USERINFO.sub(
        lambda m: m.group(0) if m.group(0).endswith(":***@") else f"{m['head']}:***@", text
    )
    return _SECRET_PARAM.sub(r"\g<head>***", text)


def masked(value: Any) -> Any:
    """``value`` with :func:`mask_secrets` applied to every string inside it (dicts and lists kept)."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, Mapping):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
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


#: MLflow's dashboard opens an experiment on its GenAI overview unless the URL asks for model training
TRAINING_VIEW = "workflowType=machine_learning"
#: the experiment tag name (after ``mlflow.sharedViewState.``) of ltr's runs-table view (:func:`runs_view`)
RUNS_VIEW = "ltr"
RUNS_VIEW_TAG = f"mlflow.sharedViewState.{RUNS_VIEW}"
#: where ``mlflow ui`` (:func:`dashboard_command`) serves a local store
LOCAL_DASHBOARD = "http://127.0.0.1:5000"


def dashboard_url(uri: str, experiment_id: str, run_id: str | None = None) -> str:
    """The dashboard page of a run, or of an experiment's runs table in ltr's view (:func:`runs_view`).

    Both open on MLflow's model-training pages (:data:`TRAINING_VIEW`), not its GenAI overview. A
    server URI gives its own address (credentials removed); a local store, the address
    :func:`dashboard_command` serves.

    >>> dashboard_url("sqlite:////tmp/mlflow.db", "3")
    'http://127.0.0.1:5000/#/experiments/3/runs?viewStateShareKey=ltr&workflowType=machine_learning'
    >>> dashboard_url("http://ann:pw@10.0.0.1:5000/", "3", "ab12")
    'http://10.0.0.1:5000/#/experiments/3/runs/ab12?workflowType=machine_learning'
    """
    base = split_credentials(uri)[0].rstrip("/") if is_server_uri(uri) else LOCAL_DASHBOARD
    if run_id:
        return f"{base}/#/experiments/{experiment_id}/runs/{run_id}?{TRAINING_VIEW}"
    return f"{base}/#/experiments/{experiment_id}/runs?viewStateShareKey={RUNS_VIEW}&{TRAINING_VIEW}"


def runs_view(metric_keys: Sequence[str]) -> dict[str, Any]:
    """MLflow's runs-table view state (a "shared view", stored as the experiment tag :data:`RUNS_VIEW_TAG`):
    the runs' Source and Models, then ``metric_keys`` as columns, sorted by the first, highest first.

    >>> runs_view(["test/ndcg_at_10", "test/err_at_10"])["selectedColumns"][2:]
    ['metrics.`test/ndcg_at_10`', 'metrics.`test/err_at_10`']
    """
    columns = [f"metrics.`{key}`" for key in dict.fromkeys(metric_keys)]
    return {
        "selectedColumns": ["attributes.`Source`", "attributes.`Models`", *columns],
        "orderByKey": columns[0] if columns else "attributes.start_time",
        "orderByAsc": False,
    }


def check_server_reachable(
    uri: str,
    timeout: float = 5.0,
    *,
    option: str = "tracking.uri",
    fix: str = "or run with tracking=none",
    where: str | None = None,
) -> None:
    """Fail fast, before any training, when ``uri`` is an MLflow server that does not answer.

    The one-line :class:`~ltr.core.errors.ConfigError` starts ``where`` (default ``<option>=<uri>``:
    ``tracking.uri``, ``--tracking-uri``, or ``import-fallback --to``), ends an unreachable server's
    message with ``fix``, and shows no credentials (:func:`mask_secrets`). One request, ``timeout``
    seconds at most: a closed port fails at once, a server that accepts and never answers after
    ``timeout``.
    """
    if not uri.startswith(("http://", "https://")):
        return
    import base64
    import http.client
    import urllib.error
    import urllib.request

    uri, user, password = split_credentials(uri)
    shown = mask_secrets(uri)
    prefix = where or f"{option}={shown}"
    if user is None and os.environ.get("MLFLOW_TRACKING_USERNAME"):
        user, password = (
            os.environ["MLFLOW_TRACKING_USERNAME"],
            os.environ.get("MLFLOW_TRACKING_PASSWORD", ""),
        )
    url = uri.rstrip("/") + "/health"
    try:
        request = urllib.request.Request(url)  # noqa: S310 (user-given URL)
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (user-given URL)
            if response.status != 200:
                raise ConfigError(f"{prefix}: {mask_secrets(url)} answered HTTP {response.status}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ConfigError(
                f"{prefix}: the MLflow server refused the credentials (HTTP {exc.code}); give them "
                "as http://USER:PASSWORD@host:port or in MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD"
            ) from exc
        raise ConfigError(f"{prefix}: {mask_secrets(url)} answered HTTP {exc.code}") from exc
    except http.client.InvalidURL:  # e.g. an unencoded '/' in a password reads as the host:port
        raise ConfigError(
            f"{prefix}: not a valid server address (host:port); percent-encode '/', '?', '#' and '@' in a "
            "user name or password (e.g. / as %2F)"
        ) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(
            f"{prefix}: the MLflow server is unreachable ({mask_secrets(str(exc))}); start it, fix the URI, {fix}"
        ) from exc


def check_store_uri(uri: str) -> None:
    """Refuse, with one line naming ``tracking.uri``, a URI of an unknown scheme or a store ltr cannot write.

    A plain path (no ``:``) is MLflow's file store and passes; ``sqlite:///…`` must name a file in a
    folder that can be created and written; ``http(s)://`` must name a host.

    >>> check_store_uri("ftp://example.org/runs")
    Traceback (most recent call last):
    ltr.core.errors.ConfigError: tracking.uri=ftp://example.org/runs: unknown scheme 'ftp'; use http(s)://host:port for an MLflow server, sqlite:///path/to/mlflow.db for a local store, or tracking=none
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


def is_server_uri(uri: str) -> bool:
    """Whether ``uri`` names an MLflow server (``http://`` or ``https://``)."""
    return uri.startswith(("http://", "https://"))


@contextmanager
def process_uris(tracking_uri: str, registry_uri: str | None = None) -> Iterator[None]:
    """Point MLflow's process-wide tracking (and registry) URI at a store, then restore them exactly.

    MLflow's fluent API (``mlflow.start_run``, ``log_model``, ``download_artifacts`` of ``runs:/`` and
    ``models:/``) reads process-wide URIs, and ``mlflow.set_tracking_uri`` also exports
    ``MLFLOW_TRACKING_URI`` (``set_registry_uri``: ``MLFLOW_REGISTRY_URI``) to the environment.
    Restoring with ``set_*_uri(get_*_uri())`` would pin the *resolved default* and leak it into the
    environment of every later subprocess; this restores the unset state as unset.
    """
    import mlflow  # deferred: slow import (see the module docstring)
    from mlflow.tracking._model_registry import utils as registry_utils  # deferred: as above
    from mlflow.tracking._tracking_service import utils as tracking_utils  # deferred: as above

    saved = (
        tracking_utils._tracking_uri,
        registry_utils._registry_uri,
        {k: os.environ.get(k) for k in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")},
    )
    mlflow.set_tracking_uri(tracking_uri)
    if registry_uri is not None:
        mlflow.set_registry_uri(registry_uri)
    try:
        yield
    finally:
        tracking_utils._tracking_uri, registry_utils._registry_uri = saved[0], saved[1]
        for key, value in saved[2].items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def open_store(
    mlflow: Any, uri: str, experiment: str, artifact_root: str | os.PathLike[str] | None
) -> tuple[Any, str]:
    """A client of ``uri`` and the id of ``experiment`` there (created if missing)."""
    from mlflow.tracking import MlflowClient  # deferred: slow import (see the module docstring)

    # the first access creates (migrates) a new SQLite store; parallel jobs take turns for it,
    # and the fluent API's store (used by log_model) is created inside the lock too
    with _store_lock(uri):
        client = MlflowClient(tracking_uri=uri)
        retry_call(client.search_experiments, max_results=1)
        with process_uris(uri):
            retry_call(mlflow.search_experiments, max_results=1)
        location = Path(artifact_root).resolve().as_uri() if artifact_root else None
        return client, experiment_id(client, experiment, location)


def experiment_id(client: Any, experiment: str, location: str | None = None) -> str:
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


def is_connection_error(exc: BaseException) -> bool:
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

"""The one model loader: a fitted ``ltr`` ranker from an MLflow model URI or a folder on disk.

Accepted sources (:func:`load_model`):

- ``runs:/<run id>/model`` — the model ``python -m ltr.train`` logged in a run;
- ``models:/<name>/<version>`` (or ``models:/<name>@<alias>``) — a version of a registered model;
- any other artifact URI MLflow resolves (``mlflow-artifacts:/``, ``s3://``, ``gs://``, ``wasbs://``,
  ``file:/``) that holds a logged ``ltr`` model;
- a folder written by :meth:`ltr.models.base.BaseRanker.save` (it holds ``manifest.json``);
- a local copy of a logged model (``MLmodel`` and ``artifacts/ranker/``), e.g. what
  ``mlflow artifacts download`` writes.

Every logged ``ltr`` model is the pyfunc wrapper of :mod:`ltr.models.pyfunc` around the ranker's own
saved folder (``artifacts/ranker``), so all of them load that folder with
:func:`ltr.models.load_ranker` (native engine files, never unpickled) and score with the ranker itself.
A URI is read from the tracking store ``tracking_uri`` (a server, or a ``sqlite:///`` store; the
commands' default is :func:`~ltr.tracking.store.resolve_tracking_uri`'s: where ``ltr.train`` logs).
Errors name the option the user gave the source with (``--model``, ``MODEL``).

The system's name is the registered model name for ``models:/`` and the ranker's model name (the
``conf/model`` name, e.g. ``lambdamart``) otherwise.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ltr.core.errors import ConfigError, LtrError
from ltr.models import load_ranker
from ltr.models.base import MANIFEST
from ltr.tracking.store import (
    HTTP_LIMITS,
    check_server_reachable,
    is_server_uri,
    mask_secrets,
    process_uris,
)

#: the folder of a logged model holding the saved ranker (:data:`ltr.models.pyfunc.ARTIFACT`; that
#: module imports MLflow at load, so the name is repeated here and a test keeps the two equal)
ARTIFACT = "ranker"
#: the saved ranker's folder inside a logged model
RANKER_FOLDER = Path("artifacts") / ARTIFACT
#: sources read from a tracking store (anything else is a folder on disk)
URI_SCHEMES = ("runs:/", "models:/", "mlflow-artifacts:/", "s3://", "gs://", "wasbs://", "file:/")


@dataclass(frozen=True)
class LoadedModel:
    """A fitted ranker, the source it came from (as given) and the name it goes by."""

    ranker: Any
    source: str
    name: str


def ranker_folder(folder: Path) -> Path | None:
    """The saved ranker inside ``folder`` (itself, or its pyfunc ``artifacts/ranker``), or None."""
    for candidate in (folder, folder / RANKER_FOLDER):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def _registered_name(source: str) -> str:
    """``models:/NAME/VERSION`` or ``models:/NAME@ALIAS`` → NAME.

    >>> _registered_name("models:/ranker/3"), _registered_name("models:/ranker@champion")
    ('ranker', 'ranker')
    """
    rest = source[len("models:/") :]
    return rest.split("/", 1)[0].split("@", 1)[0]


def load_model(
    source: str, *, tracking_uri: str, option: str = "--model", uri_option: str = "--tracking-uri"
) -> LoadedModel:
    """Load the ranker ``source`` names (see the module docstring); errors start ``<option> <source>:``.

    Before anything is downloaded: the store must exist (a read never creates one), a server must
    answer within seconds (:func:`~ltr.tracking.store.check_server_reachable`, naming ``uri_option``),
    and the run the model belongs to must not be deleted (:func:`check_run_live`). Credentials in
    ``source`` or the store's URI never appear in a message (:func:`~ltr.tracking.store.mask_secrets`).

    >>> load_model("runs:/abc/model", tracking_uri="sqlite:////nowhere/mlflow.db")
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: --model runs:/abc/model: no MLflow store at /nowhere/mlflow.db (a read never creates one); pass the store that logged the model with --tracking-uri (a sqlite:/// file or an http:// server)
    """
    where = f"{option} {mask_secrets(source)}"
    if source.startswith(URI_SCHEMES) and not Path(source).exists():
        uses_store = (
            source.startswith(("runs:/", "models:/"))
            or source.startswith("mlflow-artifacts:/")
            and not (source.startswith("mlflow-artifacts://"))
        )
        if uses_store:  # read through the tracking store
            check_store_exists(tracking_uri, where, uri_option)
            _reachable(tracking_uri, uri_option)
            check_run_live(source, tracking_uri, where)
        elif source.startswith("mlflow-artifacts://"):  # the artifact server named in the URI itself
            _reachable(f"http://{urlsplit(source).netloc}", uri_option, where=f"{where}: its artifact server")
        with tempfile.TemporaryDirectory(prefix="ltr-model-") as tmp:
            local = _download(source, tracking_uri, Path(tmp), where)
            folder = ranker_folder(local)
            if folder is None:
                raise ConfigError(
                    f"{where}: not an ltr model (no {MANIFEST}, nor {RANKER_FOLDER / MANIFEST} of a logged "
                    "model, among its artifacts)"
                )
            ranker = _load(folder, where)
        name = _registered_name(source) if source.startswith("models:/") else ranker.name
        return LoadedModel(ranker, source, name)
    if "://" in source or source.startswith(("runs:", "models:")):
        raise ConfigError(
            f"{where}: expected runs:/<run id>/model, models:/<name>/<version>, an MLflow artifact URI "
            "or a folder"
        )
    path = Path(source)
    if not path.exists():
        raise ConfigError(f"{where}: no such file or folder")
    if not path.is_dir():
        raise ConfigError(f"{where}: a model is a folder (saved ranker or logged model), not a file")
    folder = ranker_folder(path)
    if folder is None:
        raise ConfigError(
            f"{where}: not an ltr model (no {MANIFEST}, nor {RANKER_FOLDER / MANIFEST} of a logged model, "
            f"in {path})"
        )
    ranker = _load(folder, where)
    return LoadedModel(ranker, source, ranker.name)


def _reachable(uri: str, option: str, where: str | None = None) -> None:
    """A server must answer within seconds; MLflow's own retries are bounded for what follows."""
    if is_server_uri(uri):
        for name, value in HTTP_LIMITS.items():  # MLflow's retries: seconds, not minutes
            os.environ.setdefault(name, value)
    check_server_reachable(uri, option=option, fix=f"or pass another {option}", where=where)


#: a damaged saved folder fails in the reading code with one of these (a missing key, a wrong type, a bad zip)
_DAMAGED = (KeyError, TypeError, ValueError, IndexError, EOFError, OSError, zipfile.BadZipFile)


def _load(folder: Path, where: str) -> Any:
    try:
        return load_ranker(folder)
    except LtrError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except _DAMAGED as exc:
        raise ConfigError(
            f"{where}: the saved model in {folder} is damaged ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None


#: what every SQLite database file starts with
SQLITE_HEADER = b"SQLite format 3\x00"


def check_store_exists(tracking_uri: str, where: str, uri_option: str = "--tracking-uri") -> None:
    """A local store must exist and be one: MLflow would create (or migrate into) an empty one on a read.

    A ``sqlite:///`` file must be an SQLite database (an empty file would become a new store); a file
    store (a folder path or ``file:``) must be a folder.
    """
    hint = f"pass the store that logged the model with {uri_option} (a sqlite:/// file or an http:// server)"
    if tracking_uri.startswith("sqlite:///"):
        file = Path(tracking_uri[len("sqlite:///") :])
        if not file.is_file():
            raise ConfigError(f"{where}: no MLflow store at {file} (a read never creates one); {hint}")
        with open(file, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
        if head != SQLITE_HEADER:
            what = "an empty file" if not head else "not an SQLite database"
            raise ConfigError(f"{where}: {file} is {what}, not an MLflow store; {hint}")
    elif tracking_uri.startswith("file:") or ("://" not in tracking_uri and tracking_uri):
        folder = Path(urlsplit(tracking_uri).path if tracking_uri.startswith("file:") else tracking_uri)
        if not folder.is_dir():
            raise ConfigError(f"{where}: no MLflow file store at {folder} (a read never creates one); {hint}")


def _run_of(source: str, client: Any) -> str | None:
    """The id of the run a model URI's model was logged in (None when it names none)."""
    if source.startswith("runs:/"):
        return source[len("runs:/") :].split("/", 1)[0] or None
    if source.startswith("mlflow-artifacts:/"):
        parts = [p for p in source[len("mlflow-artifacts:/") :].split("/") if p]
        return parts[1] if len(parts) > 2 and RUN_ID.fullmatch(parts[1]) else None
    rest = source[len("models:/") :]
    name, _, version = rest.partition("/")
    if "@" in name and not version:
        name, _, alias = name.partition("@")
        return client.get_model_version_by_alias(name, alias).run_id or None
    if not version and name.startswith("m-"):  # an MLflow 3 logged model id
        return client.get_logged_model(name).source_run_id or None
    if version.isdigit():
        return client.get_model_version(name, version).run_id or None
    return None


#: MLflow's run ids: 32 hexadecimal digits
RUN_ID = re.compile(r"[0-9a-f]{32}")


def check_run_live(source: str, tracking_uri: str, where: str) -> None:
    """Refuse a model whose run (or the run's experiment) is deleted, naming it and how to restore it.

    MLflow keeps a deleted run's artifacts until ``mlflow gc``, so it would load without a word.
    """
    from mlflow.exceptions import MlflowException  # deferred: slow import; only a model URI needs MLflow
    from mlflow.tracking import MlflowClient  # deferred: as above

    client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    shown = mask_secrets(tracking_uri)
    try:
        run_id = _run_of(source, client)
        if run_id is None:
            return
        run = client.get_run(run_id)
        experiment = client.get_experiment(run.info.experiment_id)
    except MlflowException as exc:
        first = mask_secrets(str(exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{where}: cannot find it in {shown}: {first}") from None
    env = f"MLFLOW_TRACKING_URI={shlex.quote(shown)}"
    if experiment.lifecycle_stage != "active":  # deleting an experiment deletes its runs: restore it
        raise ConfigError(
            f"{where}: run {run_id} is in experiment {experiment.name!r} ({experiment.experiment_id}), which is "
            f"{experiment.lifecycle_stage}; restore it with `{env} mlflow experiments restore "
            f"--experiment-id {experiment.experiment_id}`, or name a live run"
        )
    if run.info.lifecycle_stage != "active":
        raise ConfigError(
            f"{where}: run {run_id} is {run.info.lifecycle_stage} (lifecycle stage); its model is not used. "
            f"Restore the run with `{env} mlflow runs restore --run-id {run_id}`, or name a live run"
        )


def _download(source: str, tracking_uri: str, into: Path, where: str) -> Path:
    """The logged model's files, downloaded from the store into ``into``."""
    import mlflow  # deferred: slow import (seconds); only a model URI needs MLflow
    from mlflow.exceptions import MlflowException  # deferred: as above

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # no progress bars in the output
    # MLflow resolves runs:/ (the run's logged model) and models:/ (the registry) through its
    # process-wide tracking and registry URIs, whatever tracking_uri= says: point both at the store
    try:
        with process_uris(tracking_uri, tracking_uri):
            return Path(mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=str(into)))
    except (MlflowException, OSError, ImportError) as exc:  # ImportError: a cloud store's client is missing
        first = mask_secrets(str(exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{where}: cannot load it from {mask_secrets(tracking_uri)}: {first}") from None

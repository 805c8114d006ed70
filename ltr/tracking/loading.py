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
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr.core.errors import ConfigError, LtrError
from ltr.models import load_ranker
from ltr.models.base import MANIFEST
from ltr.tracking.store import check_server_reachable, mask_secrets, process_uris

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


def load_model(source: str, *, tracking_uri: str, option: str = "--model") -> LoadedModel:
    """Load the ranker ``source`` names (see the module docstring); errors start ``<option> <source>:``.

    >>> load_model("runs:/abc/model", tracking_uri="sqlite:////nowhere/mlflow.db")
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: --model runs:/abc/model: no MLflow store at /nowhere/mlflow.db; pass the store that logged the model with --tracking-uri (a sqlite:/// file or an http:// server)
    """
    where = f"{option} {source}"
    if source.startswith(URI_SCHEMES) and not Path(source).exists():
        if source.startswith(("runs:/", "models:/")):  # read through the tracking store
            check_store_exists(tracking_uri, where)
            check_server_reachable(tracking_uri)
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


def _load(folder: Path, where: str) -> Any:
    try:
        return load_ranker(folder)
    except LtrError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def check_store_exists(tracking_uri: str, where: str) -> None:
    """A ``sqlite:///`` store must exist: MLflow would create an empty one and then not find the model."""
    if tracking_uri.startswith("sqlite:///"):
        file = Path(tracking_uri[len("sqlite:///") :])
        if not file.is_file():
            raise ConfigError(
                f"{where}: no MLflow store at {file}; pass the store that logged the model with "
                "--tracking-uri (a sqlite:/// file or an http:// server)"
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

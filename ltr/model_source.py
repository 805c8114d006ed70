"""Load a fitted ``ltr`` ranker from where it was kept: an MLflow model URI or a folder on disk.

Accepted sources (:func:`load_model`):

- ``runs:/<run id>/model`` — the model ``python -m ltr.train`` logged in a run;
- ``models:/<name>/<version>`` (or ``models:/<name>@<alias>``) — a version of a registered model;
- a folder written by :meth:`ltr.models.base.BaseRanker.save` (it holds ``manifest.json``);
- a local copy of a logged model (``MLmodel`` and ``artifacts/ranker/``), e.g. what
  ``mlflow artifacts download`` writes.

Every logged ``ltr`` model is the pyfunc wrapper of :mod:`ltr.models.pyfunc` around the ranker's own
saved folder (``artifacts/ranker``), so all four load that folder with
:func:`ltr.models.load_ranker` (native engine files, no pickle) and score with the ranker itself.
A URI is read from the tracking store ``tracking_uri`` (a server, or a ``sqlite:///`` store).

The system's name is the registered model name for ``models:/`` and the ranker's model name (the
``conf/model`` name, e.g. ``lambdamart``) otherwise.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr.errors import ConfigError, LtrError
from ltr.models import load_ranker
from ltr.models.base import MANIFEST
from ltr.tracking import check_server_reachable, mask_secrets

#: Folder of the saved ranker inside a logged model (:data:`ltr.models.pyfunc.ARTIFACT`).
RANKER_FOLDER = Path("artifacts") / "ranker"
URI_SCHEMES = ("runs:/", "models:/")


@dataclass(frozen=True)
class LoadedModel:
    """A fitted ranker, the source it came from (as given) and the name it goes by."""

    ranker: Any
    source: str
    name: str


def _ranker_folder(folder: Path, source: str) -> Path:
    if (folder / MANIFEST).is_file():
        return folder
    if (folder / RANKER_FOLDER / MANIFEST).is_file():
        return folder / RANKER_FOLDER
    where = "among its artifacts" if source.startswith(URI_SCHEMES) else f"in {folder}"
    raise ConfigError(
        f"--model {source}: not an ltr model (no {MANIFEST}, nor {RANKER_FOLDER / MANIFEST} of a logged model, "
        f"{where})"
    )


def _registered_name(source: str) -> str:
    """``models:/NAME/VERSION`` or ``models:/NAME@ALIAS`` → NAME.

    >>> _registered_name("models:/ranker/3"), _registered_name("models:/ranker@champion")
    ('ranker', 'ranker')
    """
    rest = source[len("models:/") :]
    return rest.split("/", 1)[0].split("@", 1)[0]


def load_model(source: str, *, tracking_uri: str) -> LoadedModel:
    """Load the ranker ``source`` names (see the module docstring); errors name ``--model``."""
    if source.startswith(URI_SCHEMES):
        check_store_exists(tracking_uri, source)
        check_server_reachable(tracking_uri)
        with tempfile.TemporaryDirectory(prefix="ltr-model-") as tmp:
            local = _download(source, tracking_uri, Path(tmp))
            ranker = load_ranker(_ranker_folder(local, source))
        name = _registered_name(source) if source.startswith("models:/") else ranker.name
        return LoadedModel(ranker, source, name)
    if "://" in source or source.startswith(("runs:", "models:")):
        raise ConfigError(
            f"--model {source}: expected runs:/<run id>/model, models:/<name>/<version> or a folder"
        )
    folder = Path(source)
    if not folder.exists():
        raise ConfigError(f"--model {source}: no such file or folder")
    if not folder.is_dir():
        raise ConfigError(f"--model {source}: a model is a folder (saved ranker or logged model), not a file")
    try:
        ranker = load_ranker(_ranker_folder(folder, source))
    except LtrError as exc:
        raise ConfigError(f"--model {source}: {exc}") from None
    return LoadedModel(ranker, source, ranker.name)


def check_store_exists(tracking_uri: str, source: str) -> None:
    """A ``sqlite:///`` store must exist: MLflow would create an empty one and then not find the model.

    >>> check_store_exists("sqlite:////nowhere/mlflow.db", "runs:/abc/model")
    Traceback (most recent call last):
    ...
    ltr.errors.ConfigError: --model runs:/abc/model: no MLflow store at /nowhere/mlflow.db; pass the store that logged the model with --tracking-uri (a sqlite:/// file or an http:// server)
    """
    if tracking_uri.startswith("sqlite:///"):
        file = Path(tracking_uri[len("sqlite:///") :])
        if not file.is_file():
            raise ConfigError(
                f"--model {source}: no MLflow store at {file}; pass the store that logged the model with "
                "--tracking-uri (a sqlite:/// file or an http:// server)"
            )


def _download(source: str, tracking_uri: str, into: Path) -> Path:
    """The logged model's files, downloaded from the store into ``into``."""
    import mlflow  # deferred: slow import (seconds); only a model URI needs MLflow
    from mlflow.exceptions import MlflowException  # deferred: as above

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # no progress bars in the output
    # MLflow resolves runs:/ (the run's logged model) and models:/ (the registry) through its
    # process-wide tracking and registry URIs, whatever tracking_uri= says: point both at the store
    previous = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_registry_uri(tracking_uri)
    try:
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=str(into)))
    except (MlflowException, OSError) as exc:
        first = mask_secrets(str(exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(
            f"--model {source}: cannot load it from {mask_secrets(tracking_uri)}: {first}"
        ) from None
    finally:
        mlflow.set_tracking_uri(previous[0])
        mlflow.set_registry_uri(previous[1])

"""Where the model to export comes from: a saved ``ltr`` ranker folder or a logged MLflow model.

``MODEL`` is one of

* a folder written by ``ranker.save`` (it holds ``manifest.json``);
* a logged model downloaded or stored on disk (a folder with ``artifacts/ranker/manifest.json``,
  the pyfunc layout of :mod:`ltr.models.pyfunc`);
* an MLflow model URI — ``runs:/<run id>/model``, ``models:/<name>/<version>``, ``models:/<name>@alias``
  or any artifact URI MLflow resolves — read from ``--tracking-uri`` (default: ``$MLFLOW_TRACKING_URI``,
  else ltr's local store ``sqlite:///<$LTR_ROOT or .>/mlflow.db``).

In every case the ranker is rebuilt from its native files by :func:`ltr.models.load_ranker`
(never unpickled).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ltr.errors import ConfigError
from ltr.models import load_ranker
from ltr.models.base import MANIFEST
from ltr.resources import work_root

#: the folder of a logged model holding the saved ranker (ltr.models.pyfunc.ARTIFACT; that module
#: imports MLflow at load, so the name is repeated here and a test keeps the two equal)
ARTIFACT = "ranker"
URI_SCHEMES = ("runs:/", "models:/", "mlflow-artifacts:/", "s3://", "gs://", "wasbs://", "file:/")


def ranker_folder(folder: Path) -> Path | None:
    """The saved ranker inside ``folder`` (itself, or its pyfunc ``artifacts/ranker``), or None."""
    for candidate in (folder, folder / "artifacts" / ARTIFACT):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def default_tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else the local store ``sqlite:///<$LTR_ROOT or .>/mlflow.db``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(work_root() / 'mlflow.db').resolve()}"


def load_model(model: str, tracking_uri: str | None = None) -> Any:
    """The fitted ranker ``model`` names (module docstring); a ConfigError when nothing is there."""
    path = Path(model)
    if not model.startswith(URI_SCHEMES) or path.exists():
        folder = ranker_folder(path) if path.is_dir() else None
        if folder is None:
            raise ConfigError(
                f"MODEL {model}: not a saved ltr ranker folder (no {MANIFEST}, nor artifacts/{ARTIFACT}/{MANIFEST}) "
                "and not an MLflow model URI (runs:/<run id>/model, models:/<name>/<version>)"
            )
        return load_ranker(folder)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one line of output, not a bar
    import mlflow  # deferred: MLflow loads only for a logged model

    mlflow.set_tracking_uri(tracking_uri or default_tracking_uri())
    with tempfile.TemporaryDirectory(prefix="ltr-export-") as tmp:
        try:
            local = Path(mlflow.artifacts.download_artifacts(artifact_uri=model, dst_path=tmp))
        except Exception as exc:  # noqa: BLE001 - MLflow raises many types; the message names the cause
            raise ConfigError(
                f"MODEL {model}: cannot download it from {mlflow.get_tracking_uri()}: {exc}"
            ) from None
        folder = ranker_folder(local)
        if folder is None:
            raise ConfigError(f"MODEL {model}: not an ltr model (no artifacts/{ARTIFACT}/{MANIFEST} in it)")
        return load_ranker(folder)

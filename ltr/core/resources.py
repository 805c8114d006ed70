"""Where ``ltr`` finds its own files: the Hydra config tree and the experiment files.

Both ship inside the package and are found with one lookup, ``importlib.resources.files("ltr")``:

- an installed wheel holds real folders ``ltr/conf`` and ``ltr/experiments`` (pyproject.toml copies
  the repository's top-level ``conf/`` and ``experiments/`` there);
- in a checkout (and an editable install) ``ltr/conf`` and ``ltr/experiments`` are symlinks to those
  top-level folders, so the same lookup reads the files you edit.

Nothing here depends on the working directory: data, caches, run outputs and the MLflow store are
placed by ``paths.root`` (``conf/paths/default.yaml``: ``$LTR_ROOT``, else the folder you run from).

>>> (config_dir() / "config.yaml").is_file(), (config_dir() / "model" / "lambdamart.yaml").is_file()
(True, True)
>>> "synthetic_challenge" in {p.stem for p in experiments_dir().glob("*.yaml")}
True
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from ltr.core.errors import LtrError

PACKAGE = "ltr"


def package_folder(name: str) -> Path:
    """The folder ``ltr/<name>`` shipped with the package, as a file-system path.

    Raises :class:`ltr.core.errors.LtrError` naming the folder when the installation lacks it (a wheel
    built without the package data, or a checkout whose ``ltr/<name>`` symlink is gone).
    """
    folder = resources.files(PACKAGE) / name
    if not isinstance(folder, Path) or not folder.is_dir():
        raise LtrError(
            f"ltr's {name}/ folder is missing at {folder}: reinstall ltr from a complete wheel, or in a "
            f"checkout restore the symlink (ln -s ../{name} ltr/{name})"
        )
    return folder


def config_dir() -> Path:
    """The primary Hydra config folder (``config.yaml`` and the groups ``model/``, ``data/``, …)."""
    return package_folder("conf")


def experiments_dir() -> Path:
    """The folder of the comparison files ``NAME.yaml`` that ``python -m ltr.compare experiment=NAME`` reads."""
    return package_folder("experiments")


def source_checkout(root: Path | None = None) -> Path | None:
    """The repository root when ``ltr`` is imported from a git checkout, else ``None`` (an installed wheel).

    ``root`` is the folder holding the ``ltr`` package (default: this installation's). It is a
    checkout when it holds both ``.git`` (a folder, or a file in a git worktree) and
    ``pyproject.toml``; run provenance records a commit only then, so a virtual environment that
    happens to live inside some other repository never records that repository's commit.

    >>> source_checkout(Path("/")) is None
    True
    """
    root = Path(__file__).resolve().parents[2] if root is None else root
    if (root / ".git").exists() and (root / "pyproject.toml").is_file():
        return root
    return None


def work_root() -> Path:
    """The folder data, caches, run outputs and the MLflow store go under: ``$LTR_ROOT``, else ``.``.

    The same default as the Hydra setting ``paths.root`` (``conf/paths/default.yaml``), for the
    entry points that are not Hydra apps (``python -m ltr.data``, ``python -m ltr.compare --from-mlflow``).
    """
    return Path(os.environ.get("LTR_ROOT", "."))

"""Where a run came from: the command that reruns it, the Hydra sweep it belongs to, data and code identity.

Every entry point tags its MLflow runs with :func:`run_tags`; :func:`rerun_command` is the one place a
command line is quoted.

>>> rerun_command("ltr.train", ["+model=lambdamart", "eval.metrics=[ndcg@1, map]"], python="python")
"python -m ltr.train +model=lambdamart 'eval.metrics=[ndcg@1, map]'"
"""

from __future__ import annotations

import json
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode

import ltr
from ltr.core.resources import source_checkout
from ltr.sweep.summary import sweep_record
from ltr.tracking.store import mask_secrets
from ltr.tracking.writer import source_tags

#: distributions whose versions every run records as ``version.<name>`` tags
TRACKED_PACKAGES = (
    "numpy",
    "scipy",
    "pandas",
    "lightgbm",
    "xgboost-cpu",
    "scikit-learn",
    "catboost",
    "mlflow",
    "hydra-core",
    "optuna",
)


def rerun_command(entry: str, overrides: Sequence[str], *, python: str | None = None) -> str:
    """``<python> -m ENTRY OVERRIDES...``, shell-quoted, with this interpreter unless ``python`` is given."""
    return " ".join(shlex.quote(a) for a in [python or sys.executable, "-m", entry, *overrides])


def hydra_overrides() -> list[str] | None:
    """The overrides of the running Hydra job (``hydra.overrides.task``), or ``None`` outside Hydra.

    For a sweep job these are its own values, not the sweep's comma lists.
    """
    try:
        return [str(o) for o in HydraConfig.get().overrides.task] if HydraConfig.initialized() else None
    except ValueError:  # a HydraConfig without the job's overrides (e.g. a bare compose)
        return None


def command_line(entry: str = "ltr.train") -> tuple[str, list[str]]:
    """The command that reruns this run, and the overrides it carries.

    Under Hydra the job's overrides follow ``python -m ENTRY``; outside Hydra, ``sys.argv[1:]``. A
    password in a URL (``tracking.uri=http://ann:pw@host``) is masked (``ann:***@``): the command is
    printed, logged and saved, and the user knows the password.
    """
    overrides = hydra_overrides()
    if overrides is None:
        overrides = list(sys.argv[1:])
    overrides = [mask_secrets(o) for o in overrides]
    return rerun_command(entry, overrides), overrides


#: overrides left out of a run's name: where it writes, how it runs, what the name already says
UNNAMED_OVERRIDES = (
    "hydra.",
    "paths.",
    "tracking.",
    "num_threads",
    "backend.",
    "model=",
    "data=",
    "eval.bootstrap.",
)
#: prefixes dropped from an override in a run's name (``model.params.n_trees=20`` → ``n_trees=20``)
NAME_PREFIXES = ("model.params.", "model.engine_params.", "model.", "data.", "eval.")
#: longest run name: MLflow's runs table shows about this much; the full overrides are in ``ltr.overrides``
MAX_RUN_NAME = 100


def run_name(cfg: Any, overrides: Sequence[str] | None = None, *, suffix: str = "") -> str:
    """A run's name: ``<model>-<data><suffix>`` and the overrides that make it differ, shortened.

    ``tracking.run_name`` (then followed by ``suffix``) wins when set. The overrides are the Hydra job's (:func:`hydra_overrides`:
    for a sweep's job, its own values, those the sweep varies first: :func:`ltr.sweep.summary.sweep_record`), without the ones in :data:`UNNAMED_OVERRIDES` and with the
    prefixes in :data:`NAME_PREFIXES` dropped; names longer than :data:`MAX_RUN_NAME` end in ``…``.

    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"model": {"name": "lambdamart"}, "data": {"name": "synthetic"}, "tracking": {}})
    >>> run_name(cfg, ["+model=lambdamart", "model.params.n_trees=20", "tracking.uri=x", "+model.engine_params.max_bin=63"])
    'lambdamart-synthetic n_trees=20 max_bin=63'
    >>> run_name(cfg, ["model.params.n_trees=20"], suffix="-fold1")
    'lambdamart-synthetic-fold1 n_trees=20'
    """
    explicit = (cfg.get("tracking") or {}).get("run_name")
    if explicit:
        return f"{explicit}{suffix}"
    base = f"{cfg.model.name}-{cfg.data.name}{suffix}"
    given = (hydra_overrides() or []) if overrides is None else list(overrides)
    swept = set(sweep_record().get("keys", []))  # in a sweep's job, what the sweep varies comes first
    shown = []
    for override in sorted(given, key=lambda o: str(o).lstrip("+~").split("=", 1)[0] not in swept):
        text = str(override).lstrip("+~")
        if text.startswith(UNNAMED_OVERRIDES):
            continue
        for prefix in NAME_PREFIXES:
            if text.startswith(prefix):
                text = text[len(prefix) :]
                break
        shown.append(text)
    name = " ".join([base, *shown])
    return name if len(name) <= MAX_RUN_NAME else name[: MAX_RUN_NAME - 1] + "…"


def sweep_tags() -> dict[str, str]:
    """``ltr.sweep.id`` (the sweep folder) and ``ltr.sweep.job`` when this is a Hydra multirun job."""
    try:
        if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
            return {}
        hc = HydraConfig.get()
        return {"ltr.sweep.id": str(Path(hc.sweep.dir).resolve()), "ltr.sweep.job": str(hc.job.num)}
    except ValueError:  # a HydraConfig without run-mode information
        return {}


def git_state(repo: Path) -> dict[str, str]:
    """``{"git.commit": sha, "git.dirty": "true"|"false"}`` when ``repo`` is a git checkout, else ``{}``."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"git.commit": sha, "git.dirty": str(bool(dirty)).lower()}


def package_versions() -> dict[str, str]:
    """``{"version.<distribution>": version}`` for the installed :data:`TRACKED_PACKAGES`, and
    ``version.ltr``: ltr's own (the import name's; the distribution is ``ltr-workbench``).

    >>> import ltr
    >>> package_versions()["version.ltr"] == ltr.__version__
    True
    """
    tags = {"version.ltr": ltr.__version__}
    for package in TRACKED_PACKAGES:
        try:
            tags[f"version.{package}"] = version(package)
        except PackageNotFoundError:
            continue
    return tags


def run_tags(cfg: Any, splits: Mapping[str, Any], *, entry: str = "ltr.train") -> dict[str, str]:
    """What a run must record beyond its params: provenance, data identity, library versions.

    MLflow's Source field names ``entry`` (:func:`ltr.tracking.writer.source_tags`; type ``JOB`` for a job of
    a Hydra multirun).
    """
    command, overrides = command_line(entry)
    tags: dict[str, str] = {
        "ltr.command": command,
        "ltr.overrides": json.dumps(overrides),
        "ltr.argv": " ".join(shlex.quote(a) for a in sys.argv),
        "ltr.cwd": str(Path.cwd()),
        "ltr.model": str(cfg.model.name),
        "ltr.data": str(cfg.data.name),
        "ltr.data.synthetic": str(bool(cfg.data.get("synthetic", False))).lower(),
        "ltr.metric_preset": str(cfg.eval.preset),
        "ltr.seed": str(cfg.seed),
        "python": platform.python_version(),
    }
    sweep = sweep_tags()
    tags.update(sweep)
    tags.update(source_tags(entry, job=bool(sweep)))
    for split, data in splits.items():
        tags[f"ltr.data.fingerprint.{split}"] = data.fingerprint()
    tags.update(package_versions())
    tags.update(git_state(checkout) if (checkout := source_checkout()) else {})  # installed: version.ltr
    return tags

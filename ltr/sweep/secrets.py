"""Credentials never leave ``ltr`` or Hydra in plain text: Hydra's saved configs and every log record masked.

A URL with ``user:password@`` (``hydra.sweeper.storage=postgresql://ann:pw@db/optuna``,
``tracking.uri=http://ann:pw@host:5000``) is what a run needs, so it stays in the config in memory,
but whatever is printed or saved shows it as ``user:***@`` (:func:`~ltr.tracking.store.mask_secrets`):

* Hydra saves every job's ``.hydra/config.yaml``, ``hydra.yaml`` (which also holds the ``env_set`` by
  which ltr's Optuna sweeper tells a job its storage) and ``overrides.yaml``, and the sweep's
  ``multirun.yaml``, before any ltr code runs: :class:`MaskSecrets` (a Hydra callback of ``ltr.train``,
  ``hydra.callbacks.mask_secrets``) rewrites them masked as each job starts (Hydra calls
  ``on_job_start`` right after saving them) and rewrites ``multirun.yaml`` at the end of the sweep;
* every log record (Hydra's launch lines ``#3 : tracking.uri=…``, ``Error executing job with
  overrides: […]``, ltr's own records, in the console and in each job's log file) is masked where it
  is made (:func:`mask_log_records`: a log record factory, so handlers Hydra sets up per job keep it);
* ltr's own outputs mask at the source: MLflow params, tags and artifacts (:class:`~ltr.tracking.writer.Tracker`),
  the rerun commands (:func:`ltr.experiment.provenance.command_line`), the sweeper's ``multirun.yaml``
  and messages.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from ltr.tracking.store import mask_secrets

#: the files Hydra writes into a job's output subdirectory (``hydra.output_subdir``, ``.hydra``)
JOB_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")
MULTIRUN_FILE = "multirun.yaml"

_factory_installed = False


def mask_file(path: Path) -> bool:
    """Rewrite ``path`` with every URL's password masked; ``True`` when it held one (else untouched).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "hydra.yaml"
    >>> _ = p.write_text("storage: postgresql://ann:pw@db/optuna\\n")
    >>> mask_file(p), p.read_text()
    (True, 'storage: postgresql://ann:***@db/optuna\\n')
    """
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    hidden = mask_secrets(text)
    if hidden == text:
        return False
    path.write_text(hidden)
    return True


def mask_files(paths: Iterable[Path]) -> None:
    """:func:`mask_file` each existing path."""
    for path in paths:
        if path.is_file():
            mask_file(path)


def mask_log_records() -> None:
    """From now on every log record's message is masked when it is made (once per process).

    A record factory rather than a handler filter: Hydra configures new handlers for each job, and a
    record propagated from any logger passes here first.
    """
    global _factory_installed
    if _factory_installed:
        return
    previous = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        with contextlib.suppress(Exception):  # a record whose message cannot be formatted stays as it is
            message = record.getMessage()
            hidden = mask_secrets(message)
            if hidden != message:
                record.msg, record.args = hidden, None
        return record

    logging.setLogRecordFactory(masked_record)
    _factory_installed = True


class MaskSecrets(Callback):
    """Hydra callback: Hydra's saved files and every log record with credentials masked (module docstring)."""

    def __init__(self) -> None:
        mask_log_records()  # Hydra builds its callbacks before the first launch line

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        mask_log_records()

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        mask_log_records()

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        """Right after Hydra saved the job's files (and, in a sweep, the sweep's ``multirun.yaml``)."""
        mask_log_records()
        hydra = config.hydra
        if hydra.get("output_subdir") is not None:
            folder = Path(hydra.runtime.output_dir) / str(hydra.output_subdir)
            mask_files(folder / name for name in JOB_FILES)
        with contextlib.suppress(Exception):  # a single run has no sweep folder
            mask_files([Path(hydra.sweep.dir) / MULTIRUN_FILE])

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        mask_files([Path(config.hydra.sweep.dir) / MULTIRUN_FILE])

"""What a multirun prints: one line per trial; each job's own output goes to the job's log file.

On ``python -m ltr.train -m ...`` (a grid, or an Optuna search) the console shows per job only the line
:class:`ltr.sweep.summary.SweepSummary` prints when it ends, then the sweep's summary. What a job prints
by itself — the data summary, its progress bar, the results table, where MLflow keeps the run — and
its INFO log records go to the job's log file, ``<sweep dir>/<job>/<job name>.log`` (``train.log``:
the file handler of Hydra's ``hydra/job_logging``, which always held the job's log records)
(:func:`job_console`). Warnings and errors still reach the console, and so does a failed job's
``error: ...`` line; a job that fails with anything else leaves its traceback in that log file.
Hydra's launch lines (``Launching 4 jobs locally``, ``#3 : <overrides>``) are not printed
(:class:`LaunchLines`).

``hydra.verbose=ltr`` (ltr's DEBUG records too) or ``hydra.verbose=true`` (every library's) keeps each
job's whole output on the console, as a single run prints it (:func:`full_output`). Either way the
overrides by which ltr's Optuna sweeper tells a job its trial (``+hydra.job.env_set.LTR_OPTUNA_...``)
are never shown: the sweeper takes them out of the launch lines (:func:`launch_lines`).

>>> full_output(False), full_output(True), full_output("ltr")
(False, True, True)
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from rich.console import Console

from ltr.core.errors import LtrError
from ltr.report.progress import progress_held_back
from ltr.sweep.pruning import TrainingStopped

#: the loggers of Hydra's launchers that log ``Launching N jobs`` and one ``#N : overrides`` line per job
LAUNCHER_LOGGERS = (
    "hydra._internal.core_plugins.basic_launcher",
    "hydra_plugins.hydra_joblib_launcher._core",
)
#: an override of a ``hydra.`` key, ``+`` or not, its value quoted or not (Hydra itself leaves out only
#: ``hydra.X=...`` from its launch lines, not ``+hydra.job.env_set.X=...``)
INTERNAL_OVERRIDE = re.compile(r"""(?:^|\s+)\+?hydra\.[^\s=]+=(?:'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|\S*)""")
#: width of a job's console output in its log file and of the sweep summary in a log (rich would take 80 columns for a file)
LOG_WIDTH = 160


def full_output(verbose: Any) -> bool:
    """Whether ``hydra.verbose`` asks for each job's whole output: ``true``, a logger name or a list of them.

    >>> full_output([]), full_output(["ltr", "hydra"])
    (False, True)
    """
    if isinstance(verbose, bool | str):
        return bool(verbose)
    try:
        return len(verbose) > 0
    except TypeError:
        return bool(verbose)


def without_internal_overrides(line: str) -> str:
    """A launch line without its ``hydra.`` overrides.

    >>> pruner = "'{\\"_target_\\": \\"optuna.pruners.NopPruner\\"}'"
    >>> without_internal_overrides(f"\\t#3 : a=1 +hydra.job.env_set.P={pruner} b=2 +hydra.job.env_set.S=1")
    '\\t#3 : a=1 b=2'
    """
    return INTERNAL_OVERRIDE.sub("", line)


class LaunchLines(logging.Filter):
    """A filter on the launchers' loggers: with ``drop`` their INFO records are not printed; without,
    each record loses its internal overrides (:func:`without_internal_overrides`). Warnings pass as they are.
    """

    def __init__(self, *, drop: bool) -> None:
        super().__init__()
        self.drop = drop

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        if self.drop:
            return False
        message = record.getMessage()
        if "hydra." in message:
            record.msg, record.args = without_internal_overrides(message), None
        return True


def add_launch_filter(*, drop: bool) -> LaunchLines:
    """Put a :class:`LaunchLines` filter on every launcher logger (until :func:`remove_launch_filter`)."""
    launch_filter = LaunchLines(drop=drop)
    for name in LAUNCHER_LOGGERS:
        logging.getLogger(name).addFilter(launch_filter)
    return launch_filter


def remove_launch_filter(launch_filter: LaunchLines) -> None:
    """Take a filter of :func:`add_launch_filter` off the launcher loggers."""
    for name in LAUNCHER_LOGGERS:
        logging.getLogger(name).removeFilter(launch_filter)


@contextmanager
def launch_lines(*, drop: bool) -> Iterator[None]:
    """The launchers' lines filtered by :class:`LaunchLines` inside the block.

    >>> launcher = logging.getLogger(LAUNCHER_LOGGERS[0])
    >>> record = launcher.makeRecord(launcher.name, logging.INFO, "", 0, "\\t#0 : a=1 +hydra.x=2", None, None)
    >>> with launch_lines(drop=False):
    ...     launcher.filter(record), record.getMessage()
    (True, '\\t#0 : a=1')
    >>> launcher.filters
    []
    """
    launch_filter = add_launch_filter(drop=drop)
    try:
        yield
    finally:
        remove_launch_filter(launch_filter)


def held_back_log() -> Path | None:
    """The file that takes a multirun job's own output: the job's log file; ``None`` for a single run,
    outside Hydra, or with ``hydra.verbose`` (:func:`full_output`)."""
    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN or full_output(hydra_cfg.verbose):
        return None
    for handler in logging.getLogger().handlers:  # hydra/job_logging's file handler: one file for both
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return Path(hydra_cfg.runtime.output_dir) / f"{hydra_cfg.job.name}.log"


@contextmanager
def console_records_from(level: int) -> Iterator[None]:
    """Inside the block the root logger's console handlers (not its files) pass only records at ``level``
    or above; their levels are restored after."""
    handlers = [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    before = [h.level for h in handlers]
    for handler in handlers:
        handler.setLevel(max(handler.level, level))
    try:
        yield
    finally:
        for handler, old in zip(handlers, before, strict=True):
            handler.setLevel(old)


@contextmanager
def job_console() -> Iterator[Console]:
    """The console a job prints to: the terminal, or for a multirun job (:func:`held_back_log`) its log
    file, with its INFO log records kept off the console and no progress bar for the block.

    A job that fails with an exception other than ltr's own errors (a bug) leaves its traceback in the
    log file; ltr's errors and a pruned trial leave one line.
    """
    path = held_back_log()
    if path is None:
        yield Console(highlight=False)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with (
        path.open("a", encoding="utf-8") as stream,
        console_records_from(logging.WARNING),
        progress_held_back(),
    ):
        try:
            yield Console(file=stream, highlight=False, width=LOG_WIDTH, color_system=None)
        except BaseException as exc:
            if isinstance(exc, LtrError | TrainingStopped):
                stream.write(f"{type(exc).__name__}: {exc}\n")
            else:
                stream.write(traceback.format_exc())
            raise

"""What a Dask run prints: Dask's and the engines' own output is held back, and shown if the run fails.

While ltr's LocalCluster runs (:func:`~ltr.distributed.backend.dask_client`), three kinds of output
would otherwise reach the console of a run that logs at INFO (Hydra's ``ltr.train``):

* the driver's Dask log records (:data:`DASK_LOGGERS`): the nanny's ``Worker process still alive
  after 4.0 seconds, killing`` as the cluster stops, now and then a closing connection's traceback;
* every worker's console: LightGBM's native ``[LightGBM] [Info] Trying to bind port …`` lines (it
  logs the network set-up before it reads ``verbosity``, and keeps its log level per thread),
  XGBoost's ``Task [xgboost.dask-0] … got rank 0``, the worker's own Dask records;
* ``lightgbm.dask``'s ``Finding random open ports for workers`` on the driver
  (:class:`ltr.distributed.lgbm.LightGBMLog`).

:func:`quiet_cluster` holds the driver's Dask records back and gives a folder where each worker
writes its console (:func:`redirect_worker_console`). A failure is still reported: the exception
itself (a worker's error is raised on the driver), and, unless it is one of ltr's own clear errors
(``LtrError``), the records held back before it and the last lines of every worker's console.
After a success one DEBUG line summarises what was held back. With ltr at DEBUG (:func:`ltr_verbose`,
``hydra.verbose=true``) only Dask's INFO chatter is held back and the workers print as they do.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ltr.core.errors import LtrError

log = logging.getLogger(__name__)

#: the loggers of Dask's machinery (``distributed``) and of its network layer (``tornado``)
DASK_LOGGERS = ("distributed", "tornado")
#: the last lines of each worker's console shown when a run fails
TAIL_LINES = 40


def ltr_verbose() -> bool:
    """Whether ltr logs at DEBUG (``hydra.verbose=true``): Dask and the engines then print as they do.

    >>> ltr, before = logging.getLogger("ltr"), logging.getLogger("ltr").level
    >>> ltr.setLevel(logging.DEBUG); ltr_verbose()
    True
    >>> ltr.setLevel(logging.INFO); ltr_verbose()
    False
    >>> ltr.setLevel(before)
    """
    return logging.getLogger("ltr").isEnabledFor(logging.DEBUG)


class HeldBack(logging.Handler):
    """Keeps the last ``limit`` records at WARNING or above, and counts them all.

    >>> held = HeldBack()
    >>> for _ in range(2):
    ...     held.emit(logging.makeLogRecord({"name": "distributed.nanny", "levelno": 30, "msg": "still alive"}))
    >>> held.summary()
    '2 Dask records: 2x distributed.nanny: still alive'
    """

    def __init__(self, limit: int = 50) -> None:
        super().__init__(logging.WARNING)
        self.records: deque[logging.LogRecord] = deque(maxlen=limit)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.count += 1

    def summary(self) -> str:
        """How many records, and each distinct (logger, first line) of the kept ones with its count."""
        seen = Counter((r.name, (r.getMessage().splitlines() or [""])[0]) for r in self.records)
        kinds = "; ".join(f"{n}x {name}: {text}" for (name, text), n in seen.items())
        return f"{self.count} Dask records: {kinds}"


def redirect_worker_console(folder: str, driver_pid: int) -> str | None:
    """On a worker process: its standard output and error (the file descriptors, where native
    libraries print too) go to ``folder/worker-<pid>.log`` from now on; that path. Nothing changes
    in the driver's own process (``driver_pid``: a cluster of threads): ``None``."""
    if os.getpid() == driver_pid:
        return None
    path = os.path.join(folder, f"worker-{os.getpid()}.log")
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return path


def _consoles(folder: Path) -> dict[str, list[str]]:
    """The non-empty worker consoles in ``folder``: file name → lines."""
    out = {}
    for path in sorted(folder.glob("worker-*.log")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if lines:
            out[path.stem] = lines
    return out


@contextmanager
def _held_back_records(held: HeldBack) -> Iterator[None]:
    """The records of :data:`DASK_LOGGERS` and their children go to ``held`` while the block runs
    (``distributed`` at WARNING: its INFO chatter is not even made); the loggers are put back after."""
    children = {
        name
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
        and any(name.startswith(f"{root}.") for root in DASK_LOGGERS)
        and (logger.handlers or not logger.propagate)  # would bypass its parent: redirected too
    }
    saved = []
    for name in (*DASK_LOGGERS, *sorted(children)):
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate, list(logger.handlers)))
        logger.handlers, logger.propagate = [held], False
    distributed = logging.getLogger("distributed")
    distributed.setLevel(max(distributed.level, logging.WARNING))
    try:
        yield
    finally:
        for logger, level, propagate, handlers in saved:
            logger.setLevel(level)
            logger.handlers, logger.propagate = handlers, propagate


@contextmanager
def quiet_cluster() -> Iterator[Path | None]:
    """Hold back Dask's and the workers' output while the block runs (module docstring); yields the
    folder for the workers' consoles (:func:`redirect_worker_console`), ``None`` when ltr logs at DEBUG.

    >>> with quiet_cluster() as folder:
    ...     logging.getLogger("distributed.nanny").warning("Worker process still alive after 4.0 seconds, killing")
    >>> folder.exists()
    False
    """
    if ltr_verbose():
        distributed = logging.getLogger("distributed")
        level = distributed.level
        distributed.setLevel(max(level, logging.WARNING))
        try:
            yield None
        finally:
            distributed.setLevel(level)
        return
    with tempfile.TemporaryDirectory(prefix="ltr-dask-") as tmp:
        folder = Path(tmp)
        failure: Exception | None = None
        held = HeldBack()
        try:
            with _held_back_records(held):
                yield folder
        except Exception as e:
            failure = e
            raise
        finally:  # the loggers are back: what is shown now is printed as it would have been
            consoles = _consoles(folder)
            if failure is not None and not isinstance(failure, LtrError):
                _report(held, consoles)
            elif held.count or consoles:
                lines = ", ".join(f"{name}: {len(text)} lines" for name, text in consoles.items())
                log.debug("held back: %s; worker consoles: %s", held.summary(), lines or "empty")


def _report(held: HeldBack, consoles: dict[str, list[str]]) -> None:
    """After a failure: the records held back, each through its own logger, then the last
    :data:`TAIL_LINES` lines of each worker's console."""
    if held.records:
        log.warning(
            "Dask's log before the failure (the last %d of %d records):", len(held.records), held.count
        )
        for record in held.records:
            logging.getLogger(record.name).handle(record)
    for name, lines in consoles.items():
        tail = lines[-TAIL_LINES:]
        log.warning("%s printed (the last %d of %d lines):\n%s", name, len(tail), len(lines), "\n".join(tail))

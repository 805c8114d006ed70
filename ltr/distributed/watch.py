"""Every cluster call of a run watched: a lost worker or a silent scheduler ends the run in one line.

A Dask worker that dies mid-run (killed, out of memory, its machine gone) used to hang the run:
each shard is pinned to its worker (``workers=[w], allow_other_workers=False``), and so are
``lightgbm.dask``'s training tasks, so a task or result of the dead worker waits for it forever,
while the surviving LightGBM workers wait for their lost peer in LightGBM's own network layer
(``time_out``: 120 minutes). Or the survivors' socket error came back as a ``LightGBMError`` traceback.

:func:`watched` runs one blocking cluster call (a fit, a gather) in a helper thread and, every
:data:`POLL_SECONDS`, asks the scheduler which workers it has (bounded by :data:`PROBE_TIMEOUT`):

* a worker that was there when the call started is gone → :class:`~ltr.core.errors.ClusterError`
  naming it, what was running and what to do, at once (not when the call would have ended);
* the scheduler does not answer within :data:`PROBE_TIMEOUT` → the same error, naming the scheduler;
* the call ends in an exception while a worker was lost, or in Dask's own errors of a lost worker
  (``KilledWorker``, a closed connection, a cancelled future) → the same error, chained to it;
* ``timeout`` (seconds, for calls that have a natural bound) passed → the same error.

Ctrl-C and SIGTERM still reach the main thread at once (it only waits in ``join``). The helper thread
is a daemon: the caller leaves, and closing the cluster (:func:`~ltr.distributed.backend.dask_client`)
ends the work it was waiting for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ltr.core.errors import ClusterError

T = TypeVar("T")

#: seconds between two questions to the scheduler about its workers
POLL_SECONDS = 0.5
#: seconds the scheduler has to answer that question
PROBE_TIMEOUT = 30.0
#: Dask's exception names that mean a worker or the connection to the cluster was lost
LOST_NAMES = (
    "KilledWorker",
    "CommClosedError",
    "FutureCancelledError",
    "CancelledError",
    "StreamClosedError",
    "FutureLost",
)

ADVICE = (
    "the run stops here. Check the worker's memory (backend.memory_limit; more partitions per worker "
    "make smaller shards) and that its machine is up, then run the command again"
)


def current_workers(client: Any) -> set[str]:
    """The scheduler's workers now (one RPC, answered within :data:`PROBE_TIMEOUT` or a ClusterError).

    Not ``client.scheduler_info()["workers"]``: when its refresh fails or the client is momentarily
    not "running", that returns the client's cached identity, whose periodic refresh asks for no
    workers, so a cluster with two workers read as none (a CI run failed on it).
    """
    try:
        return set(client.nthreads(callback_timeout=PROBE_TIMEOUT))
    except Exception as exc:  # a timeout, a closed connection: the scheduler is out of reach
        where = getattr(client, "scheduler", None)
        address = getattr(where, "address", None) or "the Dask scheduler"
        raise ClusterError(
            f"{address} did not answer within {PROBE_TIMEOUT:.0f} s ({type(exc).__name__}); " + ADVICE
        ) from exc


def lost_error(lost: Iterable[str], what: str) -> ClusterError:
    """The one-line error for workers lost during ``what``.

    >>> str(lost_error(["tcp://127.0.0.1:4001"], "training")).split(";")[0]
    'Dask worker tcp://127.0.0.1:4001 was lost during training (its process died or was killed)'
    """
    names = sorted(lost)
    which = f"worker {names[0]}" if len(names) == 1 else f"workers {', '.join(names)}"
    return ClusterError(f"Dask {which} was lost during {what} (its process died or was killed); " + ADVICE)


def is_lost_worker_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is one of Dask's errors of a lost worker or connection."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__name__ in LOST_NAMES:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def watched(client: Any, call: Callable[[], T], what: str, *, timeout: float | None = None) -> T:
    """``call()``'s result, or a :class:`~ltr.core.errors.ClusterError` as soon as a worker is lost, the
    scheduler stops answering, or ``timeout`` seconds pass (module docstring)."""
    expected = current_workers(client)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name=f"ltr-dask {what}", daemon=True)
    thread.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        thread.join(POLL_SECONDS)
        if not thread.is_alive():
            break
        lost = expected - current_workers(client)
        if lost:
            raise lost_error(lost, what)
        if deadline is not None and time.monotonic() > deadline:
            raise ClusterError(f"{what} on the Dask cluster did not end within {timeout:.0f} s; " + ADVICE)
    error = box.get("error")
    if error is None:
        return box["value"]
    if isinstance(error, ClusterError):
        raise error
    try:
        lost = expected - current_workers(client)
    except ClusterError:
        lost = set()
    if lost:
        raise lost_error(lost, what) from error
    if is_lost_worker_error(error):
        raise ClusterError(
            f"the Dask cluster lost a worker or its connection during {what} ({type(error).__name__}); "
            + ADVICE
        ) from error
    raise error


def gather(client: Any, futures: Any, what: str, *, timeout: float | None = None) -> Any:
    """``client.gather(futures)`` under :func:`watched`."""
    return watched(client, lambda: client.gather(futures), what, timeout=timeout)

"""Ctrl-C and SIGTERM that no library can lose: the handler raises and also writes the signal down.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be when the signal arrives, and
some places lose it (each seen on a loaded machine, in ``ltr.train`` interrupted during boosting):

* inside a garbage-collector callback it is printed as "Exception ignored in …" (a traceback) and
  dropped: training ran on to its last round and the run ended FINISHED;
* inside a numba-compiled function (ltr's metric kernels, called each round for early stopping) it comes
  out as ``SystemError: CPUDispatcher(...) returned a result with an exception set``: the run ended FAILED
  with a traceback instead of KILLED with one line.

So while :func:`recorded` is active (every command, :mod:`ltr.cli.running`), SIGINT and SIGTERM are
written down before the exception is raised. :func:`carried_by` tells, for whatever exception ended the
work, whether a signal was behind it; :func:`raise_if_received` raises it again at a safe point (every
boosting round), when it was dropped, and the dropped one's "Exception ignored" traceback is not printed.

>>> with recorded():
...     carried_by(ValueError()) is None
True
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from typing import Any

from ltr.core.errors import Terminated

_received: list[int] = []  # the signals received while recorded() is active, in order


def _exception(signum: int) -> KeyboardInterrupt:
    """What a signal raises: :class:`~ltr.core.errors.Terminated` for SIGTERM, ``KeyboardInterrupt`` else."""
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _handler(signum: int, frame: Any) -> None:
    _received.append(signum)
    raise _exception(signum)


def _quiet_about_signals(previous: Any) -> Any:
    """A ``sys.unraisablehook`` that says nothing of a recorded signal dropped where Python cannot raise
    it (a garbage-collector callback, ``__del__``): it is raised again at the next safe point. Anything
    else goes to ``previous``."""

    def hook(unraisable: Any) -> None:
        if not (_received and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            previous(unraisable)

    return hook


def received() -> KeyboardInterrupt | None:
    """The exception of the first signal received while :func:`recorded` is active, else ``None``."""
    return _exception(_received[0]) if _received else None


def carried_by(exc: BaseException) -> KeyboardInterrupt | None:
    """The interruption behind ``exc``: ``exc`` itself when it is one, else the signal received (that a
    library turned into another exception), else ``None`` (a plain error).

    >>> type(carried_by(KeyboardInterrupt())).__name__, carried_by(SystemError())
    ('KeyboardInterrupt', None)
    """
    return exc if isinstance(exc, KeyboardInterrupt) else received()


def raise_if_received() -> None:
    """Raise the signal received again: called at safe points (each boosting round), so an interruption
    that a library dropped still stops the work."""
    exc = received()
    if exc is not None:
        raise exc


@contextlib.contextmanager
def recorded() -> Iterator[None]:
    """While the body runs, SIGINT raises ``KeyboardInterrupt`` and SIGTERM
    :class:`~ltr.core.errors.Terminated` in the main thread, each written down first (see the module
    docstring). The previous handlers and an empty record are restored after. Outside the main thread (a
    handler cannot be set there) nothing changes."""
    try:
        previous = {signum: signal.signal(signum, _handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield
        return
    _received.clear()
    unraisable_hook, sys.unraisablehook = sys.unraisablehook, _quiet_about_signals(sys.unraisablehook)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = unraisable_hook
        _received.clear()

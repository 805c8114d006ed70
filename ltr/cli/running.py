"""How every command (``python -m ltr.train``, ``ltr.compare``, …) ends: exit codes and one error line.

Commands import this module, never each other. Besides the process environment it holds the
one policy for how a command ends (:func:`run_cli`, :func:`run_hydra_app`):

* a user error (:class:`~ltr.core.errors.LtrError`, or a Hydra/OmegaConf composition error: an unknown
  group option, a misspelt key, bad override syntax) → one line ``error: ...`` on stderr, exit 2;
* Ctrl-C → one line ``interrupted: ...`` (:class:`~ltr.core.errors.Interrupted` says what happened to the work, e.g.
  ``run 1a2b marked KILLED``), exit 130 (128 + SIGINT, as shells report it);
* SIGTERM (``kill PID``, a batch scheduler, ``docker stop``) → the same, as
  :class:`~ltr.core.errors.Terminated` (a
  ``KeyboardInterrupt`` too, so every MLflow run in progress ends KILLED exactly as on Ctrl-C): one line
  ``terminated: ...``, exit 143 (128 + SIGTERM). Without this a SIGTERM ended the process at once and
  left its MLflow runs RUNNING forever;
* either signal is also written down (:mod:`ltr.core.interrupts`), so one that a library turned into
  another error (numba: ``SystemError``) still ends the command as interrupted, and one a library
  dropped (a garbage-collector callback) still stops training at the next boosting round;
* ``on_abort`` (a command's hook, e.g. ``ltr.train``'s open sweep parent run) is told ``KILLED`` or
  ``FAILED`` when the command ends by a signal or an error, so no parent run stays RUNNING;
* a closed pipe (``... | head -1``) → no output, no traceback, exit 141 (128 + SIGPIPE, what ``cat``
  killed by the signal reports);
* ``HYDRA_FULL_ERROR=1`` (set by the user) keeps the full Python traceback, as Hydra documents.

A user error's message is rewritten to the command's spelling of options first
(:mod:`ltr.cli.spelling`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

from ltr.cli.spelling import Spelling, spelled_as
from ltr.core import interrupts
from ltr.core.errors import Interrupted, LtrError, Terminated

EXIT_USAGE = 2  # bad input (every ltr entry point)


EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130


EXIT_TERMINATED = 128 + signal.SIGTERM  # 143


EXIT_BROKEN_PIPE = 128 + 13  # 141: SIGPIPE (signal.SIGPIPE does not exist on Windows)


FULL_ERROR = "HYDRA_FULL_ERROR"


def configure_process_environment() -> None:
    """Environment for the engines, set before they load (only by entry points, never on import).

    ``OMP_WAIT_POLICY=PASSIVE`` stops OpenMP threads (LightGBM, XGBoost) from busy-waiting: on a
    shared or oversubscribed machine busy-waiting made a 2-thread LightGBM fit ~5× slower than
    1 thread (measured here: 62 s vs 12 s for 100 rounds; 8–12 s with PASSIVE).

    >>> configure_process_environment()
    >>> all(name in os.environ for name in ("OMP_WAIT_POLICY", "MLFLOW_DISABLE_TELEMETRY"))
    True
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def interruption(exc: KeyboardInterrupt, message: str) -> Interrupted:
    """``exc`` re-raised with ``message`` (what happened to the work), keeping whether it was a SIGTERM.

    >>> type(interruption(Terminated(), "run 1 marked KILLED")).__name__
    'Terminated'
    """
    return Terminated(message) if isinstance(exc, Terminated) else Interrupted(message)


@contextlib.contextmanager
def interrupted_run(tracker: Any) -> Iterator[None]:
    """Ctrl-C in the body → :class:`Interrupted` naming the tracker's run (``run 1a2b marked KILLED``).

    The tracker ends its run KILLED on ``KeyboardInterrupt`` (:meth:`ltr.tracking.writer.Tracker.start`);
    this only says so. Without a tracking store the message is empty (``interrupted``).
    """
    try:
        yield
    except BaseException as exc:
        carried = interrupts.carried_by(exc)  # a signal a library turned into another error counts too
        if carried is None or (isinstance(exc, Interrupted) and str(exc)):
            raise
        run_id = getattr(tracker, "run_id", None) if getattr(tracker, "enabled", False) else None
        raise interruption(carried, f"run {run_id} marked KILLED" if run_id else "") from None


def run_cli(
    main: Callable[[], int | None],
    *,
    spelling: Spelling | None = None,
    on_abort: Callable[[str], None] | None = None,
) -> NoReturn:
    """Run an entry point's ``main`` and exit with the policy of the module docstring.

    ``main`` returns the exit code (``None`` = 0). ``spelling`` rewrites option names in error
    messages (:func:`respell`). ``on_abort(status)`` is called with ``KILLED`` (Ctrl-C, SIGTERM) or
    ``FAILED`` (an error, a non-zero ``sys.exit``) before the command ends that way.
    """
    sys.exit(_ended(main, spelling, on_abort=on_abort))


def print_result(produce: Callable[[Any], str], args: Any) -> int:
    """A text command's ``main`` body: ``produce(args)``'s text on stdout and exit status 0, or for a
    user error (:class:`~ltr.core.errors.LtrError`) one ``error:`` line on stderr and status 2.

    >>> print_result(lambda args: f"{args}\\n", "ok")
    ok
    0
    """
    try:
        text = produce(args)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def run_hydra_app(app: Callable[[], Any], *, on_abort: Callable[[str], None] | None = None) -> NoReturn:
    """Run a ``@hydra.main`` function under :func:`run_cli`, with Hydra's composition errors as one line.

    Hydra prints its own multi-line report (and exits 1) unless ``HYDRA_FULL_ERROR`` is set; it is
    set for the call so the exception reaches :func:`hydra_error_message`. A user who set it keeps the
    full traceback. ``on_abort``: as for :func:`run_cli`.
    """
    user_full_error = os.environ.get(FULL_ERROR)
    os.environ[FULL_ERROR] = "1"
    try:
        code = _ended(app, None, traceback_wanted=user_full_error == "1", on_abort=on_abort)
    finally:
        if user_full_error is None:
            os.environ.pop(FULL_ERROR, None)
    sys.exit(code)


def _ended(
    main: Callable[[], Any],
    spelling: Spelling | None,
    *,
    traceback_wanted: bool = False,
    on_abort: Callable[[str], None] | None = None,
) -> int:
    """Run ``main``; the exit code under the policy of the module docstring (messages on stderr)."""
    try:
        with interrupts.recorded():
            try:
                with spelled_as(spelling):
                    code = main()
            except KeyboardInterrupt:
                _abort(on_abort, "KILLED")
                raise
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    _abort(on_abort, "FAILED")
                raise
            except BaseException as exc:
                carried = interrupts.carried_by(exc)  # a signal turned into another error by a library
                _abort(on_abort, "FAILED" if carried is None else "KILLED")
                if carried is not None:
                    raise interruption(carried, "") from None
                raise
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit (a traceback)
        return int(code or 0)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt as exc:
        what = f": {exc}" if str(exc) else ""
        terminated = isinstance(exc, Terminated)
        _say(f"{'terminated' if terminated else 'interrupted'}{what}")
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except Exception as exc:
        message = error_message(exc)
        if message is None or traceback_wanted:
            raise
        if not getattr(exc, "ltr_reported", False):  # a sweep job printed it already
            _say(f"error: {message}")
        return EXIT_USAGE


def exit_with_error(exc: BaseException) -> NoReturn:
    """Print ``error: <message>`` for a user error and exit 2 now (inside a Hydra task function, where a
    raised error would get Hydra's own "Error executing job" line first)."""
    message = error_message(exc)
    if message is None:
        raise exc
    _say(f"error: {message}")
    sys.exit(EXIT_USAGE)


def mark_reported(exc: BaseException) -> None:
    """Note that ``exc`` was printed (by a sweep's job), so the end of the command does not print it again."""
    exc.ltr_reported = True  # type: ignore[attr-defined]


def _abort(on_abort: Callable[[str], None] | None, status: str) -> None:
    """Tell the command's ``on_abort`` hook how it ends; the hook failing (a store gone) does not hide
    the error or signal that ends the command."""
    if on_abort is not None:
        with contextlib.suppress(Exception):
            on_abort(status)


def _say(line: str) -> None:
    with contextlib.suppress(BrokenPipeError, ValueError):  # stderr closed too: nothing left to tell
        print(line, file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again (Python's docs)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def error_message(exc: BaseException) -> str | None:
    """The one-line message of a user error, or ``None`` for a bug (which keeps its traceback).

    A Hydra/OmegaConf error is a user error here: at the command line it comes from composing the
    user's overrides (see :func:`hydra_error_message`).
    """
    if isinstance(exc, LtrError):
        return str(exc)
    return hydra_error_message(exc)


def hydra_error_message(exc: BaseException) -> str | None:
    """One line for a Hydra composition error (``None`` when ``exc`` is not one).

    * an unknown group option (``+model=nonexist``) → the option and the available ones;
    * a misspelt key (``model.params.num_leafs=3``) → the key and the keys its block accepts;
    * a value of the wrong type → the key and OmegaConf's reason;
    * bad override syntax → the override and the parser's reason.
    """
    from hydra.errors import HydraException, MissingConfigException, OverrideParseException  # deferred: hydra
    from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

    if not isinstance(exc, HydraException | OmegaConfBaseException):
        return None
    cause = _innermost(exc, OmegaConfBaseException)
    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file and exc.options:
        group, _, name = exc.missing_cfg_file.rpartition("/")
        options = [o for o in exc.options if not o.endswith("schema")]  # ltr's typed bases, not choices
        return f"{group}={name}: no such {group} config; available: {', '.join(options)}"
    if isinstance(exc, OverrideParseException):
        reason = _first_line(str(exc))
        return f"cannot parse the override {exc.override!r}: {reason} (grammar: https://hydra.cc/docs/advanced/override_grammar/basic/)"
    if cause is not None and getattr(cause, "full_key", None):
        key = cause.full_key
        if isinstance(cause, ConfigKeyError | AttributeError) and "not in" in str(cause):
            accepted = _accepted_keys(cause)
            where = (
                f"{key.rpartition('.')[0] or 'the config'} accepts: {accepted}" if accepted else "no such key"
            )
            return f"{key}: unknown key; {where}"
        return f"{key}: {_first_line(str(cause))}"
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip() and "\t" not in line)


def _innermost(exc: BaseException, kind: type) -> Any:
    found, seen = None, exc
    while seen is not None:
        if isinstance(seen, kind):
            found = seen
        seen = seen.__cause__
    return found


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _accepted_keys(cause: Any) -> str:
    """The keys of the typed block a misspelt key was set in (its dataclass fields), or ''."""
    kind = getattr(cause, "object_type", None)
    if kind is not None and dataclasses.is_dataclass(kind):
        return ", ".join(f.name for f in dataclasses.fields(kind))
    parent = getattr(cause, "parent_node", None)
    keys = list(parent.keys()) if isinstance(parent, Mapping) else []
    return ", ".join(map(str, keys))

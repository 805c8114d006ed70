"""Progress bars with ETA for training iterations, sweeps and comparisons; quiet in CI.

A bar is shown only when a person is watching: standard error is a terminal and neither ``CI`` nor
``LTR_NO_PROGRESS`` is set to a true value (``1``, ``true``, ``yes``), and no caller holds the bars back
(:func:`progress_held_back`: a sweep's job, whose output goes to its log file). Otherwise every helper
here is a no-op with the same interface, so callers never branch.

>>> progress_enabled(environ={"CI": "true"}, isatty=True)
False
>>> progress_enabled(environ={}, isatty=False)
False
>>> progress_enabled(environ={}, isatty=True)
True
>>> with progress_held_back():
...     progress_enabled(environ={}, isatty=True)
False
>>> with iteration_progress(10, "fit", enabled=False) as tick:
...     tick(0, {"valid/ndcg@10": 0.5})
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

OnIteration = Callable[[int, dict[str, float]], None]
_TRUE = {"1", "true", "yes", "on"}
_HELD_BACK: ContextVar[bool] = ContextVar("ltr_progress_held_back", default=False)


@contextmanager
def progress_held_back() -> Iterator[None]:
    """No progress bar inside the block, whatever the terminal (a sweep's job: :mod:`ltr.sweep.console`)."""
    token = _HELD_BACK.set(True)
    try:
        yield
    finally:
        _HELD_BACK.reset(token)


def progress_enabled(*, environ: Mapping[str, str] | None = None, isatty: bool | None = None) -> bool:
    """True when a progress bar should be drawn (a TTY, and not CI / ``LTR_NO_PROGRESS`` / held back)."""
    if _HELD_BACK.get():
        return False
    env = os.environ if environ is None else environ
    if env.get("CI", "").strip().lower() in _TRUE or env.get("LTR_NO_PROGRESS", "").strip().lower() in _TRUE:
        return False
    return sys.stderr.isatty() if isatty is None else isatty


def _bar(description: str, total: int | None, console: Any = None):  # noqa: ANN202 - rich types stay internal
    # deferred: rich's progress machinery loads only when a bar is drawn (a terminal, not CI)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
        transient=console is None,
    )
    task = progress.add_task(description, total=total, status="")
    return progress, task


@contextmanager
def iteration_progress(
    total: int | None, description: str = "training", *, enabled: bool | None = None, console: Any = None
) -> Iterator[OnIteration]:
    """Yield an ``on_iteration(i, values)`` callback that advances a bar of ``total`` iterations.

    The bar shows the latest validation value (the first ``valid/...`` key, else the first key) and an
    ETA; early stopping simply ends the bar before ``total``.
    """
    if not (progress_enabled() if enabled is None else enabled):
        yield lambda i, values: None
        return
    progress, task = _bar(description, total, console)

    def tick(i: int, values: dict[str, float]) -> None:
        shown = next((k for k in values if k.startswith("valid/")), next(iter(values), None))
        status = f"{shown} {values[shown]:.4f}" if shown is not None else ""
        progress.update(task, completed=i + 1, status=status)

    with progress:
        yield tick


@contextmanager
def task_progress(
    total: int, description: str, *, enabled: bool | None = None, console: Any = None
) -> Iterator[Callable[[str], None]]:
    """Yield ``advance(label)`` for a loop of ``total`` jobs (systems of a comparison, sweep jobs)."""
    if not (progress_enabled() if enabled is None else enabled):
        yield lambda label: None
        return
    progress, task = _bar(description, total, console)

    def advance(label: str) -> None:
        progress.update(task, advance=1, status=label)

    with progress:
        yield advance

"""Files an export writes: never over an input, never a half-written file over an old result.

Every file a target writes (``--out`` and its side files, e.g. Vespa's rank profile) is first written
under the same name into a fresh hidden folder next to ``--out`` (:class:`Staging`, same filesystem),
scored there by the parity check, and moved over the old files (``os.replace``: each one whole or not
at all) only when the write and the check succeeded. A failed write (disk full, a file-size limit, an
interrupt) or a failed check removes the staged files and leaves the previous ``--out`` byte for byte.

:func:`check_not_inputs` refuses, before any work, an output that is the same file as an input (the
model's files, ``--check`` data, the feature map): compared as resolved paths and with
``os.path.samefile`` (symlinks, hard links, ``./x`` against ``x``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ltr.core.errors import ConfigError
from ltr.io.outputs import first_same_file

#: the prefix of a staging folder (hidden; removed after every export, also a failed one)
STAGING_PREFIX = ".ltr-export-"


def check_not_inputs(outputs: Iterable[tuple[str, Path]], inputs: Iterable[tuple[str, Path]]) -> None:
    """Refuse an output that is an input, or two outputs that are one file; ``(option, path)`` pairs.

    >>> check_not_inputs([("--out", Path("m.txt"))], [("--check", Path("./m.txt"))])
    Traceback (most recent call last):
    ltr.core.errors.ConfigError: --out m.txt: is the same file as --check m.txt; nothing written (the input would be overwritten)
    """
    outputs, inputs = list(outputs), list(inputs)
    for i, (option, out) in enumerate(outputs):
        if out.is_dir():
            raise ConfigError(f"{option} {out}: is a folder; give the file to write")
        clash = first_same_file(out, inputs)
        if clash is not None:
            raise ConfigError(
                f"{option} {out}: is the same file as {clash[0]} {clash[1]}; nothing written (the input would "
                "be overwritten)"
            )
        clash = first_same_file(out, outputs[:i])
        if clash is not None:
            raise ConfigError(
                f"{option} {out}: is also the file of {clash[0]}; give {clash[0].split()[0]} a different name"
            )


def folder_files(folder: Path, label: str) -> list[tuple[str, Path]]:
    """Every file under ``folder`` (a saved model's), as inputs named ``label``."""
    return [(label, p) for p in sorted(folder.rglob("*")) if p.is_file()]


class Staging:
    """A hidden folder next to ``final`` where the export's files are written before they replace the old."""

    def __init__(self, final: Path, folder: Path) -> None:
        self.final, self.folder = final, folder

    @property
    def path(self) -> Path:
        """Where the target writes ``final`` (same name, in the staging folder)."""
        return self.folder / self.final.name

    def install(self) -> list[Path]:
        """Move every staged file over its final name (each ``os.replace`` is atomic); the final paths."""
        moved = []
        for staged in sorted(self.folder.iterdir()):
            target = self.final.parent / staged.name
            os.replace(staged, target)
            moved.append(target)
        return moved


@contextmanager
def staging(final: Path) -> Iterator[Staging]:
    """A :class:`Staging` for ``final``; its folder (and whatever was not installed) is removed on exit."""
    final.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=final.parent))
    try:
        yield Staging(final, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

"""Output files of the commands: checked before any work, written atomically.

A command that writes files (``ltr.evaluate --write-run/--write-scores``, ``ltr.clicks propensity
--output``, ``ltr.clicks simulate OUT --features-out``) calls :func:`check_outputs` first, with every
output and every input it will read, each under the option that names it. Refused, before anything
is read or computed:

* an output that is the same file as an input (``os.path.samefile`` when both exist, so symlinks and
  hard links count; else the resolved paths, so ``./x`` and ``x`` are one file): writing it would
  destroy the input;
* two outputs that are the same file (the second would overwrite the first);
* an output that is a folder, whose folder does not exist, or whose folder is not writable: the
  command would fail only after its work.

:func:`replacing` (and :func:`write_text_atomically` on it) then writes to a temporary file in the
output's folder and renames it over the output once the writing succeeded, so a failure (a full
disk, Ctrl-C, an error half-way) never leaves a truncated file where the old result was. An output
that is a symlink keeps its link: the file it points to is replaced.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "data.txt").write_text("1 qid:1 1:0\\n")
>>> check_outputs({"--write-run": d / "sub" / ".." / "data.txt"}, {"--data": [d / "data.txt"]})
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: --write-run .../data.txt is the same file as --data .../data.txt: writing it would destroy the input; choose another output path
>>> write_text_atomically(d / "run.txt", "1 Q0 a 1 0.5 t\\n").read_text()
'1 Q0 a 1 0.5 t\\n'
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from ltr.core.errors import ConfigError, DataError

PathLike = str | os.PathLike[str]


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file: ``os.path.samefile`` when both exist, else equal resolved paths.

    >>> same_file("x.txt", "./x.txt"), same_file("x.txt", "y.txt")
    (True, False)
    """
    with contextlib.suppress(OSError):
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    return Path(a).resolve() == Path(b).resolve()


def check_outputs(
    outputs: Mapping[str, PathLike | None], inputs: Mapping[str, Iterable[PathLike | None]]
) -> None:
    """Refuse (``ConfigError`` naming the options) outputs that would destroy an input or each other, or
    that cannot be written (see the module docstring). ``outputs``: option → path (``None``: not given);
    ``inputs``: option → the paths it names (files or folders; ``None`` skipped)."""
    given = [(option, path) for option, path in outputs.items() if path is not None]
    read = [(option, path) for option, paths in inputs.items() for path in paths if path is not None]
    for i, (option, path) in enumerate(given):
        check_writable(option, path)
        clash = first_same_file(path, read)
        if clash is not None:
            raise ConfigError(
                f"{option} {path} is the same file as {clash[0]} {clash[1]}: writing it would "
                "destroy the input; choose another output path"
            )
        clash = first_same_file(path, given[:i])
        if clash is not None:
            raise ConfigError(
                f"{option} {path} is the same file as {clash[0]} {clash[1]}: one would overwrite the "
                "other; give them different paths"
            )


def first_same_file(path: PathLike, named: Iterable[tuple[str, PathLike]]) -> tuple[str, PathLike] | None:
    """The first ``(option, path)`` of ``named`` that is the same file as ``path`` (:func:`same_file`).

    >>> first_same_file("x.txt", [("--data", "y.txt"), ("--scores", "./x.txt")])
    ('--scores', './x.txt')
    """
    return next(((option, other) for option, other in named if same_file(path, other)), None)


def check_writable(option: str, path: PathLike) -> None:
    """Refuse an output that is a folder, or whose folder does not exist or is not writable."""
    if str(path) == "":
        raise ConfigError(f"{option}: the path is empty; give a file path")
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{option} {path}: is a folder; give a file path")
    folder = target.resolve().parent
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{option} {path}: {folder} is a file, not a folder")
    if not folder.is_dir():
        raise ConfigError(f"{option} {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: the folder {folder} is not writable")


@contextlib.contextmanager
def replacing(path: PathLike) -> Iterator[Path]:
    """A temporary path in ``path``'s folder (same file suffixes) to write to; renamed over ``path`` when
    the body succeeds, deleted when it fails. An OS error is a ``DataError`` naming ``path``."""
    target = Path(path).resolve()  # a symlink's target is replaced, the link kept
    try:
        handle, name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=f"-{target.name}")
    except OSError as exc:
        raise DataError(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        _keep_mode(temporary, target)
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise DataError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _keep_mode(temporary: Path, target: Path) -> None:
    """The permissions the output would have had: the old file's, else the umask's default (``mkstemp``
    creates 0600)."""
    if target.exists():
        mode = target.stat().st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    os.chmod(temporary, mode)


def write_text_atomically(path: PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`replacing`; returns ``path``."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return Path(path)

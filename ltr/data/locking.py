"""Advisory ``flock`` locks between processes, released by the kernel when their holder exits.

:func:`flocked` locks a lock file (created if missing) or an existing folder while a block runs:
exclusive to change what it guards, shared to read it. A process that is killed never blocks the next
one. Without ``fcntl`` (Windows), or where the lock cannot be opened (a read-only folder, where
nobody writes), the block runs unlocked and the callers' atomic renames still keep every file whole.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder, flocked(Path(folder)) as locked:
...     locked
True
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def flocked(path: Path, *, shared: bool = False) -> Iterator[bool]:
    """Hold an ``flock`` on ``path`` while the block runs; yields whether the lock is held.

    ``path`` is a folder (locked through a read-only descriptor, nothing is created) or a lock file
    (created if missing, left in place: removing it would let two processes lock two different files).
    """
    fd = None
    if fcntl is not None:
        flags = os.O_RDONLY if path.is_dir() else os.O_RDWR | os.O_CREAT
        with contextlib.suppress(OSError):
            fd = os.open(path, flags, 0o666)
    if fd is None:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the lock

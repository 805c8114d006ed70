"""Compressed inputs: gzip, bzip2, xz and zstd files read transparently by every reader of ``ltr``.

:func:`open_input` is the one opener every reader uses (the SVMlight engines, the sidecars, qrels,
runs, score files): it returns a binary stream of the file's *decompressed* bytes, so an encoding
policy, a line number or a byte offset always refers to the decompressed text.

- The format is recognised by the file's leading bytes (its "magic": ``1F 8B 08`` gzip, ``BZh1``-``BZh9``
  bzip2, ``FD 37 7A 58 5A 00`` xz, ``28 B5 2F FD`` zstd), never by its name alone: a
  ``train.txt`` that is gzip-compressed is read as gzip. A name that promises a compression the bytes
  do not have (``train.txt.gz`` holding plain text or bzip2 data) is a :class:`~ltr.core.errors.DataError`,
  because the file was most likely renamed or half-written by mistake.
- Concatenated streams (``cat a.gz b.gz``, ``pbzip2``, multi-frame zstd) read as one text.
- A zip, 7-Zip or RAR archive, an LZ4 or Unix ``compress`` (``.Z``) file is refused with a message
  naming the command that unpacks it: an archive holds several files, and the others are rare.
- A truncated or corrupt stream is a ``DataError`` naming the file, the decompressor's reason and the
  line of the decompressed text it reached; never a traceback.

Decompression streams in bounded pieces (:data:`PIECE` bytes of output at a time), so reading a file
never holds the whole decompressed text unless the caller asks for it (:func:`read_input`).

>>> import tempfile, pathlib, gzip
>>> p = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
>>> _ = p.write_bytes(gzip.compress(b"301 Q0 d1 1 2.5 x\\n"))
>>> compression_of(p).name, read_input(p)
('gzip', b'301 Q0 d1 1 2.5 x\\n')
>>> _ = p.write_bytes(gzip.compress(b"301 Q0 d1 1 2.5 x\\n")[:-6])
>>> read_input(p)
Traceback (most recent call last):
...
ltr.core.errors.DataError: ...run.txt: the gzip stream is truncated: it ends in line 2 of the decompressed text (after 18 bytes); ...
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from ltr.core.errors import DataError

#: Decompressed bytes produced per decompressor call (bounds the memory of a stream).
PIECE = 4 << 20
_IN_BLOCK = 1 << 20  # compressed bytes read per call (zstd: _ZSTD_IN_BLOCK, as it has no output limit)
_ZSTD_IN_BLOCK = 128 << 10


@dataclass(frozen=True)
class Compression:
    """One compression format: how to recognise it and how to decompress it."""

    name: str  #: short name, e.g. ``"gzip"``
    magic: bytes  #: leading bytes of every stream of the format
    suffixes: tuple[str, ...]  #: file-name endings that promise this format
    tool: str  #: the command line that decompresses it (for messages)
    new: Callable[[], object]  #: a fresh streaming decompressor
    step: Callable[[object, bytes], tuple[bytes, bytes]]  #: (output, input left over) of one call
    pending: Callable[[object], bool]  #: whether the decompressor has output without more input


def _zlib_step(d, data: bytes) -> tuple[bytes, bytes]:
    out = d.decompress(data, PIECE)
    return out, (d.unused_data if d.eof else d.unconsumed_tail)


def _bounded_step(d, data: bytes) -> tuple[bytes, bytes]:  # bz2, lzma: leftover input kept inside
    out = d.decompress(data, PIECE)
    return out, (d.unused_data if d.eof else b"")


def _zstd_step(d, data: bytes) -> tuple[bytes, bytes]:
    out = d.decompress(data)
    return out, (d.unused_data if d.eof else b"")


def _never(d) -> bool:
    return False


def _has_output(d) -> bool:
    return not d.eof and not d.needs_input


#: The formats read transparently, by magic bytes.
COMPRESSIONS: tuple[Compression, ...] = (
    Compression("gzip", b"\x1f\x8b\x08", (".gz", ".gzip"), "gunzip -k", lambda: zlib.decompressobj(31),
                _zlib_step, _never),
    Compression("bzip2", b"BZh", (".bz2",), "bunzip2 -k", bz2.BZ2Decompressor, _bounded_step, _has_output),
    Compression("xz", b"\xfd7zXZ\x00", (".xz",), "unxz -k", lzma.LZMADecompressor, _bounded_step, _has_output),
    Compression("zstd", b"\x28\xb5\x2f\xfd", (".zst", ".zstd"), "unzstd",
                lambda: zstandard.ZstdDecompressor().decompressobj(), _zstd_step, _never),
)  # fmt: skip

#: Leading bytes of formats that are refused → (what it is, the command that unpacks it).
REFUSED: tuple[tuple[bytes, str, str], ...] = (
    (b"PK\x03\x04", "a zip archive", "unzip"),
    (b"PK\x05\x06", "an (empty) zip archive", "unzip"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x"),
    (b"Rar!\x1a\x07", "a RAR archive", "unrar x"),
    (b"\x04\x22\x4d\x18", "an LZ4-compressed file", "unlz4"),
    (b"\x1f\x9d", "a Unix compress (.Z) file", "uncompress"),
)
#: Errors the decompressors raise on a corrupt stream.
_CORRUPT = (zlib.error, OSError, lzma.LZMAError, zstandard.ZstdError, EOFError, ValueError)


def _head(path: Path, n: int = 8) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror or e}") from None


def compression_of(path: str | Path) -> Compression | None:
    """The compression of ``path`` by its leading bytes (``None``: not compressed).

    Raises ``DataError`` for a refused format (zip and other archives) and for a name ending in a
    compression suffix (``.gz``, ``.bz2``, ``.xz``, ``.zst``) whose bytes are not that format.

    >>> import tempfile, pathlib, bz2
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.txt").write_bytes(bz2.compress(b"x\\n"))
    >>> compression_of(d / "a.txt").name
    'bzip2'
    >>> _ = (d / "a.txt.gz").write_bytes(b"1 qid:1 1:0.5\\n")
    >>> compression_of(d / "a.txt.gz")
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: .../a.txt.gz: the name ends in .gz but the file is not gzip-compressed (it is plain, uncompressed data); rename it or compress it again
    """
    path = Path(path)
    head = _head(path)
    for magic, what, unpack in REFUSED:
        if head.startswith(magic):
            raise DataError(
                f"{path}: is {what}, which ltr does not read (it reads gzip, bzip2, xz and zstd files); "
                f"unpack it first ({unpack} {path})"
            )
    found = next((c for c in COMPRESSIONS if head.startswith(c.magic)), None)
    if found is not None and found.name == "bzip2" and head[3:4] not in b"123456789":
        found = None  # "BZh" then the block size 1-9: text that merely starts with "BZh" is text
    suffix = path.suffix.lower()
    promised = next((c for c in COMPRESSIONS if suffix in c.suffixes), None)
    if promised is not None and promised is not found:
        actual = "plain, uncompressed data" if found is None else f"{found.name}-compressed"
        raise DataError(
            f"{path}: the name ends in {path.suffix} but the file is not {promised.name}-compressed "
            f"(it is {actual}); rename it or compress it again"
        )
    return found


def _pieces(kind: Compression, f: BinaryIO) -> Iterator[bytes]:
    """Decompressed pieces of every concatenated stream in ``f``; ``EOFError`` if one is cut short."""
    block = _ZSTD_IN_BLOCK if kind.name == "zstd" else _IN_BLOCK
    d = kind.new()
    data = b""
    while True:
        if not data and not kind.pending(d):
            data = f.read(block)
            if not data:
                return
        out, data = kind.step(d, data)
        if out:
            yield out
        if d.eof:  # a stream ended: another may follow (gzip may be padded with NUL bytes)
            if kind.name == "gzip":
                data = data.lstrip(b"\0")
            while not data:
                data = f.read(block)
                if not data:
                    return
                if kind.name == "gzip":
                    data = data.lstrip(b"\0")
            d = kind.new()
        elif not data and not kind.pending(d):
            data = f.read(block)
            if not data:
                raise EOFError("the stream ends before its end-of-stream marker")


class DecompressedReader(io.RawIOBase):
    """A readable binary stream of a compressed file's decompressed bytes (see :func:`open_input`).

    Errors of the decompressor become ``DataError``\\ s naming the file and the line reached.
    """

    def __init__(self, path: Path, kind: Compression) -> None:
        super().__init__()
        self.path = path
        self.kind = kind
        self._file = open(path, "rb")  # noqa: SIM115 (closed in close())
        self._pieces = _pieces(kind, self._file)
        self._piece = memoryview(b"")
        self.offset = 0  #: decompressed bytes produced so far

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        """Copy up to ``len(b)`` decompressed bytes into ``b``; 0 at the end of the data."""
        view = memoryview(b).cast("B")
        filled = 0
        while filled < len(view):
            if not self._piece:
                try:
                    piece = next(self._pieces)
                except StopIteration:
                    break
                except _CORRUPT as exc:
                    raise self._error(exc) from None
                self.offset += len(piece)  # every earlier piece was handed out whole: exact on errors
                self._piece = memoryview(piece)
            take = min(len(self._piece), len(view) - filled)
            view[filled : filled + take] = self._piece[:take]
            self._piece = self._piece[take:]
            filled += take
        return filled

    def _lines_before_error(self) -> int:
        """Line feeds in the ``offset`` bytes produced before the error, decompressed again (only on
        errors: counting them while reading would cost every read ~5 % of its time)."""
        lines = 0
        seen = 0
        with open(self.path, "rb") as f:
            try:
                for piece in _pieces(self.kind, f):
                    lines += piece.count(b"\n", 0, self.offset - seen)
                    seen += len(piece)
                    if seen >= self.offset:
                        break
            except _CORRUPT:
                pass
        return lines

    def _error(self, exc: BaseException) -> DataError:
        where = (
            f"line {self._lines_before_error() + 1} of the decompressed text (after {self.offset:,} bytes)"
        )
        name = self.kind.name
        if isinstance(exc, EOFError):
            return DataError(
                f"{self.path}: the {name} stream is truncated: it ends in {where}; the file was probably "
                f"cut short while being copied or written (test it with: {self.kind.tool.split()[0]} -t)"
            )
        reason = str(exc) or type(exc).__name__
        return DataError(f"{self.path}: the {name} stream is corrupt in {where}: {reason}")

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()


def open_input(path: str | Path) -> BinaryIO:
    """Open any input file ``ltr`` reads (data, sidecar, qrels, run, scores) as a binary stream of its
    decompressed bytes: plain files as they are, gzip/bzip2/xz/zstd files decompressed on the fly.

    Raises ``DataError`` for an unreadable file, a refused format (:data:`REFUSED`) or a mismatched
    name (:func:`compression_of`); reading raises ``DataError`` for a truncated or corrupt stream.

    >>> import tempfile, pathlib, lzma
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.xz"
    >>> _ = p.write_bytes(lzma.compress(b"301 0 d1 2\\n"))
    >>> with open_input(p) as f:
    ...     f.read()
    b'301 0 d1 2\\n'
    """
    path = Path(path)
    kind = compression_of(path)
    try:
        if kind is None:
            return open(path, "rb")  # noqa: SIM115 (the caller closes it)
        return io.BufferedReader(DecompressedReader(path, kind), buffer_size=1 << 16)
    except OSError as e:
        raise DataError(f"{path}: cannot read: {e.strerror or e}") from None


def read_input(path: str | Path) -> bytes:
    """All (decompressed) bytes of an input file, through :func:`open_input`.

    >>> import tempfile, pathlib, bz2
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.bz2"
    >>> _ = p.write_bytes(bz2.compress(b"301 Q0 d1 1 2.5 x\\n") * 2)
    >>> read_input(p)
    b'301 Q0 d1 1 2.5 x\\n301 Q0 d1 1 2.5 x\\n'
    """
    path = Path(path)
    if compression_of(path) is None:
        try:
            return path.read_bytes()
        except OSError as e:
            raise DataError(f"{path}: cannot read: {e.strerror or e}") from None
    out = io.BytesIO()
    with open_input(path) as f:
        while piece := f.read(PIECE):
            out.write(piece)
    return out.getvalue()

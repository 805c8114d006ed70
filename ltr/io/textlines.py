"""One encoding policy for every text file ``ltr`` reads (SVMlight data, sidecars, qrels, runs).

- A leading UTF-8 byte order mark (``EF BB BF``, what Windows editors write) is ignored.
- Lines end with LF or CRLF. A carriage return *not* followed by a line feed (old Mac "CR-only"
  line endings, or a stray ``\\r``) is an error naming ``file:line``: read as a space it would
  silently glue lines together, e.g. hide every following line inside a ``#`` comment.
- Only LF ends a line: Unicode line separators (U+2028, U+2029, U+0085) and form feeds are ordinary
  characters, so inside a comment they are just comment text.
- Fields are separated by ASCII whitespace (space, tab, ``\\r``, form feed, vertical tab), as in
  trec_eval and the SVMlight grammar; a no-break space is part of a field.
- The text is UTF-8; anything else is an error naming ``file:line``. A file that starts with a UTF-16
  byte order mark (Windows "Unicode" text) gets its own message saying so.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
>>> _ = p.write_bytes(b"\\xef\\xbb\\xbf301 Q0 d1\\r\\n# a\\xe2\\x80\\xa8comment\\n302\\tQ0 d2\\n")
>>> [(n, split_fields(line)) for n, line in read_lines(p)]
[(1, ['301', 'Q0', 'd1']), (2, ['#', 'a\\u2028comment']), (3, ['302', 'Q0', 'd2'])]
>>> _ = p.write_bytes(b"301 Q0 d1\\r302 Q0 d2\\r")
>>> list(read_lines(p))
Traceback (most recent call last):
...
ltr.core.errors.DataError: ...run.txt:1: a carriage return (\\r) not followed by a line feed: ...
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ltr.core.errors import DataError
from ltr.io.compression import open_input, read_input

#: The UTF-8 byte order mark, ignored at the start of a file.
BOM = b"\xef\xbb\xbf"
#: ASCII whitespace that separates fields (never a line break on its own: see :func:`lone_cr`).
FIELD_SPACE = " \t\r\f\v"
_FIELDS = re.compile(r"[^ \t\r\f\v]+")
_LONE_CR = re.compile(rb"\r(?!\n)")


def bom_length(buf: bytes | memoryview) -> int:
    """Bytes of a leading UTF-8 byte order mark: 3 or 0.

    >>> bom_length(b"\\xef\\xbb\\xbf1 qid:1"), bom_length(b"1 qid:1")
    (3, 0)
    """
    return len(BOM) if bytes(buf[: len(BOM)]) == BOM else 0


#: UTF-16 byte order marks (little and big endian): such a file is not UTF-8 text.
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
#: What every reader says about a UTF-16 file (after ``file:1:``).
UTF16_TEXT = (
    "the file is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8 "
    "(e.g. iconv -f UTF-16 -t UTF-8)"
)


def is_utf16(buf: bytes | memoryview) -> bool:
    """Whether the bytes start with a UTF-16 byte order mark.

    >>> is_utf16("1 qid:1".encode("utf-16")), is_utf16(b"1 qid:1")
    (True, False)
    """
    return bytes(buf[:2]) in UTF16_BOMS


def lone_cr(buf: bytes) -> int:
    """Offset of the first carriage return not followed by a line feed, or -1.

    >>> lone_cr(b"a\\r\\nb\\n"), lone_cr(b"a\\r\\nb\\rc\\n"), lone_cr(b"a\\r")
    (-1, 4, 1)
    """
    found = _LONE_CR.search(buf)
    return -1 if found is None else found.start()


def line_of(buf: bytes, offset: int) -> int:
    """1-based line number of the byte at ``offset`` (LF-terminated lines).

    >>> line_of(b"a\\nb\\nc", 4)
    3
    """
    return buf.count(b"\n", 0, offset) + 1


#: What every reader says about a CR-only line ending (after ``file:line:``).
LONE_CR_TEXT = (
    "a carriage return (\\r) not followed by a line feed: CR-only (old Mac) line endings are not "
    "supported; convert the file to LF or CRLF line endings (e.g. tr '\\r' '\\n')"
)


def decode_text(path: str | Path, buf: bytes) -> str:
    """The file's text under the policy above (BOM dropped, CR-only rejected, UTF-8 checked).

    >>> decode_text("x", b"\\xef\\xbb\\xbfa\\r\\nb\\n")
    'a\\r\\nb\\n'
    """
    if is_utf16(buf):  # before the CR check: UTF-16's CR is followed by a NUL byte
        raise DataError(f"{path}:1: {UTF16_TEXT}")
    at = lone_cr(buf)
    if at >= 0:
        raise DataError(f"{path}:{line_of(buf, at)}: {LONE_CR_TEXT}")
    skip = bom_length(buf)
    try:
        return buf[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}:{line_of(buf, skip + exc.start)}: not UTF-8 text ({exc.reason} at byte {skip + exc.start})"
        ) from None


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for every line of a text file, without the line ending.

    A gzip, bzip2, xz or zstd file is decompressed first (:func:`ltr.io.compression.read_input`); the
    policy and the line numbers then apply to the decompressed text. Errors (unreadable file, corrupt
    or truncated compressed data, CR-only line endings, not UTF-8) are
    :class:`~ltr.core.errors.DataError`\\ s naming the file (and line).
    """
    text = decode_text(path, read_input(path))
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, line.removesuffix("\r")


def record_line_numbers(path: str | Path) -> list[int]:
    """The 1-based numbers of the lines of ``path`` that hold a record, in file order: every line but
    blank and comment-only ones (``#`` first), which the SVMlight readers skip. Row ``i`` of a file read
    without regrouping came from line ``record_line_numbers(path)[i]`` (what ``ltr.explain`` reports).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
    ...     _ = f.write(b"# header\\n1 qid:1 1:0.5\\n\\n  \\t\\n0 qid:1 1:0.1 # d2\\r\\n")
    >>> record_line_numbers(f.name)
    [2, 5]
    >>> os.unlink(f.name)
    """
    return list(_record_numbers(path))


def _record_numbers(path: str | Path) -> Iterator[int]:
    """The 1-based numbers of the lines of ``path`` that hold a record (not blank, not comment-only)."""
    with open_input(path) as f:
        for number, raw in enumerate(f, start=1):
            if number == 1:
                raw = raw[bom_length(raw) :]
            if raw.partition(b"#")[0].strip():
                yield number


def split_fields(line: str) -> list[str]:
    """Fields of a line, separated by ASCII whitespace only.

    >>> split_fields(" a\\tb\\u00a0c \\u2028d ")
    ['a', 'b\\xa0c', '\\u2028d']
    """
    return _FIELDS.findall(line)


def check_no_bom(path: str | Path, number: int, fields: list[str]) -> list[str]:
    """The fields of a data line, unless one holds a byte order mark (U+FEFF): past the start of the
    file it is invisible and would silently rename a topic or document (typically two files
    concatenated, the second one with a BOM), so it is an error naming ``file:line``.

    >>> check_no_bom("run.txt", 7, ["\\ufeff301", "Q0"])
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: run.txt:7: a byte order mark (U+FEFF) inside the file, in '\\ufeff301' (were files concatenated?); remove it
    """
    for field in fields:
        if "\ufeff" in field:
            raise DataError(
                f"{path}:{number}: a byte order mark (U+FEFF) inside the file, in {field!r} "
                "(were files concatenated?); remove it"
            )
    return fields


def data_line_number(path: str | Path, row: int) -> int:
    """The 1-based line of 0-based data row ``row`` of an SVMlight/LETOR file: what a message about a
    row of the parsed data names. Blank and comment-only lines are not rows (the parsers' rule).

    Reads the file again, so only error paths call it.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.txt"
    >>> _ = p.write_text("# header\\n1 qid:1 1:0\\n\\n0 qid:1 1:1 # docid = b\\n")
    >>> data_line_number(p, 0), data_line_number(p, 1)
    (2, 4)
    """
    for seen, number in enumerate(_record_numbers(path)):
        if seen == row:
            return number
    raise ValueError(f"{path} has no data row {row}")  # a caller's bug: rows come from this file

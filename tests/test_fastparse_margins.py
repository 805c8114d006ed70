"""How far the fast parser's kernels reach (ltr/data/_fastparse.py), checked where it matters: at the ends.

What the numba kernels may touch, and the constants that say so:

* ``CHUNK`` (32 MB): a window of the file; it ends after its last newline (``n`` valid bytes, the rest of
  the window not the kernels' business) or at the end of the file. ``parse_path(chunk=...)`` and the
  module constant (read at call time) are the hooks; here windows of 48-200 bytes, so their ends fall
  on tokens of every length.
* a part ``buf[lo:hi]``: ``hi`` is a line start or ``n``; no kernel reads ``buf[hi]``.
* ``SWAR_REACH`` (40): the eight-bytes-at-a-time token reader ``_swar_token`` makes three unaligned
  8-byte loads (``_load8``, no bounds check) and reads at most 25 bytes from a token's start; it runs
  only where ``SWAR_REACH`` bytes of the part remain, else the byte-by-byte path does.
* ``_count_bytes`` counts in blocks of 64 × 255 bytes and looks one byte ahead for a CR's LF: a block
  runs only while it ends strictly before the part's end (the tail is counted byte by byte).
* pass 2 writes each part's rows ``row0..row_end`` and entries ``k0..k_end`` that pass 1 counted, never
  more (more means the file changed between the passes: an error).

In production the bytes past ``n`` are the next line (a memory-mapped window), stale bytes of an earlier
window (the read and decompression buffers) or nothing (the end of a mapping): a read there may change a
number, or crash. Here every window reaches the kernels as a copy of its ``n`` valid bytes followed by
*poison* (digits, ``.5``, colons, newlines), so reading past the end changes the result instead; the
result must equal the pure-Python reference parser's (``_pyparse``). Output arrays are replaced by views
in front of sentinel guard zones, so a write past the counted share shows. The one read that cannot
change a result (the 8-byte loads' last byte, a delimiter either way) is measured on a bounds-checked
build of ``_swar_token``.
"""

from __future__ import annotations

import gzip
import os
import types
from pathlib import Path

import numba
import numpy as np
import pytest

from ltr.core.errors import DataError
from ltr.data import _fastparse
from ltr.data._syntax import ParseOptions
from ltr.data.reading import parse_file

POISONS = {
    "digits": b"2 " * 32,  # extends a number that runs into the end, then ends it
    "decimal": b".5 " * 21,  # turns an integer that runs into the end into a decimal
    "colons": b":" * 64,  # completes 'qid' into 'qid:', an index into 'index:'
    "newlines": b"\n" * 64,  # completes a trailing CR into CRLF
}


# --- hooks ------------------------------------------------------------------------------------------
def _poisoned(windows, poison: bytes):
    """Wrap a window generator (``_chunks`` / ``_stream_chunks``): each window becomes a fresh array of
    its ``n`` valid bytes followed by ``poison`` (the kernels get ``n``; nothing past it is theirs)."""

    def wrapped(*args, **kwargs):
        for buf, n, offset in windows(*args, **kwargs):
            padded = np.empty(n + len(poison), dtype=np.uint8)
            padded[:n] = buf[:n]
            padded[n:] = np.frombuffer(poison, dtype=np.uint8)
            yield padded, n, offset

    return wrapped


def poison_windows(monkeypatch, poison: bytes) -> None:
    monkeypatch.setattr(_fastparse, "_chunks", _poisoned(_fastparse._chunks, poison))
    monkeypatch.setattr(_fastparse, "_stream_chunks", _poisoned(_fastparse._stream_chunks, poison))


def _outcome(path: Path, engine: str, opts: ParseOptions, threads: int = 1):
    """What a parse gives: its arrays, or its error message (``file:line: ...``)."""
    try:
        raw = parse_file(path, opts, engine=engine, n_threads=threads)
    except DataError as e:
        return ("error", str(e))
    arrays = [raw.y, raw.qid, raw.dense, raw.indptr, raw.indices, raw.data]
    return (
        "ok",
        raw.n_features,
        *(None if a is None else (a.dtype.str, a.shape, a.tobytes()) for a in arrays),
    )


FIELDS = ("outcome", "n_features", "y", "qid", "dense", "indptr", "indices", "data")


def _same_as_reference(path: Path, opts: ParseOptions, monkeypatch, chunk: int, threads: int) -> None:
    monkeypatch.setattr(_fastparse, "CHUNK", chunk)
    monkeypatch.setattr(_fastparse, "STREAM_CHUNK", chunk)
    fast = _outcome(path, "numba", opts, threads)
    ref = _outcome(path, "python", opts)
    if fast != ref:
        field = next((name for name, a, b in zip(FIELDS, fast, ref, strict=False) if a != b), "outcome")
        where = f"{path.name} ending {path.read_bytes()[-40:]!r}, windows of {chunk} bytes, {threads} part(s)"
        raise AssertionError(f"{where}: {field} differs: fast {fast[:2]}, reference {ref[:2]}")


# --- the eight-bytes-at-a-time reader's reach ------------------------------------------------------
def _checked_load8(arr, idx):
    """``_load8`` as eight indexed byte reads (the same little-endian value), so numba's bounds check sees each."""
    w = np.uint64(0)
    for k in range(8):
        w |= np.uint64(arr[idx + np.uint64(k)]) << np.uint64(8 * k)
    return w


def _big_endian_load8(arr, idx):
    """``_load8`` as a big-endian machine reads it: ``arr[idx]`` is the top byte."""
    w = np.uint64(0)
    for k in range(8):
        w = (w << np.uint64(8)) | np.uint64(arr[idx + k])
    return w


def _checked_build(names: list[str]) -> dict[str, object]:
    """The kernels ``names`` compiled again with numba's bounds checks (a read or write outside an array is
    an IndexError, not a crash), calling each other and an 8-byte load that is checked too; not cached,
    not parallel (``prange`` runs as ``range``)."""
    scope = dict(vars(_fastparse))
    scope["_load8"] = numba.njit(boundscheck=True, inline="always")(_checked_load8)
    built = {}
    for name in names:
        f = getattr(_fastparse, name).py_func
        function = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__)
        built[name] = scope[name] = numba.njit(boundscheck=True, nogil=True)(function)
    return built


def _checked_swar_token():
    """``_swar_token`` with bounds checks: a read past the array is an IndexError."""
    return _checked_build(["_digit_run", "_digits_value", "_swar_token"])["_swar_token"]


def _reach(checked, token: bytes) -> tuple[int, tuple]:
    """The fewest bytes from the token's start that ``checked`` reads without an IndexError, and its result."""
    tail = token + b" " + b"9" * 64
    for length in range(1, len(tail) + 1):
        buf = np.frombuffer(tail[:length], dtype=np.uint8).copy()
        try:
            return length, checked(buf, 0)
        except IndexError:
            continue
    raise AssertionError(f"{token!r} reads past {len(tail)} bytes")


@pytest.mark.skipif(not _fastparse.SWAR, reason="big-endian machine: the byte-by-byte path is the only one")
def test_swar_token_reads_no_further_than_the_reach_its_caller_allows():
    """Kills: ``SWAR_REACH`` below the reader's true reach (``SWAR_REACH = 24``: a 24-byte token ending a
    file then reads the byte after the file's last one — a delimiter-or-not test whose outcome is the same
    either way, so no parse result shows it; only a bounds-checked build does), and a reader that reads
    further than 25 bytes."""
    checked = _checked_swar_token()
    rng = np.random.default_rng(0)
    alphabet = np.frombuffer(b"0123456789:.-+ e\nx", dtype=np.uint8)
    tokens = [
        b"1234567:-1234567.1234567",  # the longest accepted: index, sign, 7 + 7 digits
        b"1234567:1234567.1234567",
        b"1234567:+1234567.",
        b"1:5",
        b"12345678:1",  # handed over, after reading as far
        b"1:12345678",
        *(bytes(rng.choice(alphabet, 30)) for _ in range(300)),
    ]
    reaches = {}
    for token in tokens:
        length, result = _reach(checked, token)
        padded = np.frombuffer(token + b" " + b"9" * 64, dtype=np.uint8).copy()
        assert tuple(result) == tuple(_fastparse._swar_token(padded, 0)), token  # the same reader
        reaches[token] = length
    assert max(reaches.values()) == 25  # the module's "< 26 bytes from a token's start"
    assert reaches[b"1234567:-1234567.1234567"] == 25
    assert max(reaches.values()) <= _fastparse.SWAR_REACH


# --- reads at a window's end -----------------------------------------------------------------------
def _number_tokens() -> list[bytes]:
    """``index:value`` tokens of every length 3-26, with and without a decimal part, a sign, 1-8 digits."""
    out = []
    for index in (b"1", b"1234567"):
        for sign in (b"", b"-"):
            for whole in range(1, 9):
                out.append(index + b":" + sign + b"7" * whole)
                for frac in range(0, 9):
                    out.append(index + b":" + sign + b"3" * whole + b"." + b"1" * frac)
    return out


#: the ends of files without a final newline: the last token runs into the end of the valid bytes
ODD_ENDS = [
    b"0 qid",
    b"0 qi",
    b"1 qid:",
    b"1 qid:7",
    b"0 qid:1 3",
    b"0 qid:1 3:",
    b"2",
    b"1 qid:1 #",
    b"1 qid:1 1:5 ",
]
LINE = b"1 qid:1 1:0.5 2:3\n"


@pytest.mark.parametrize("poison", list(POISONS))
def test_numbers_running_into_the_end_of_a_window_parse_like_the_reference(tmp_path, monkeypatch, poison):
    """Every token shape as the file's last bytes (no final newline), after 0-2 lines (the odd ends also
    after comment lines only, and with the column count left to the parsers), in windows of the whole
    file or 48/97 bytes, one or two parts per window; the bytes after each window's end are poison.

    Kills: ``SWAR_REACH`` at most 23 (the fast path then runs for a token ending ≤ 23 bytes after it starts
    and takes poison for digits, e.g. ``1234567:-1234567.123456`` + ``2 ``); any byte-path loop reading
    ``buf[hi]`` (``j < hi`` → ``j <= hi`` in ``_scan_number``, ``i + 3 < hi`` → ``<=`` for ``qid:`` in
    ``_fill_part`` and ``i + 3 < n`` in ``_first_qid``)."""
    poison_windows(monkeypatch, POISONS[poison])
    # float64: every digit a read past the end adds shows
    opts = ParseOptions(output="csr", n_features=1234567, allow_unsorted=True, dtype="float64")
    path = tmp_path / "end.txt"
    for k, token in enumerate(_number_tokens()):
        path.write_bytes(LINE * (k % 3) + b"1 qid:1 " + token)
        for chunk in (1 << 20, 48, 97):
            _same_as_reference(path, opts, monkeypatch, chunk, threads=1 + k % 2)
    for k, end in enumerate(ODD_ENDS):
        for before in (b"", LINE, b"# no data yet\n\n"):
            path.write_bytes(before + end)
            for options in (opts, ParseOptions(output="auto", dtype="float64")):
                for chunk in (1 << 20, 48):
                    _same_as_reference(path, options, monkeypatch, chunk, threads=1 + k % 2)


def _lines_files(folder: Path) -> tuple[Path, Path]:
    """60 lines of 0-6 tokens of several shapes (a few with comments), no final newline; plain and gzip."""
    rng = np.random.default_rng(1)
    lines = []
    for i in range(60):
        tokens = [
            f"{j}:{rng.choice(['7', '-0.25', '1234567.1234567', '3.', '12', '+.5'])}"
            for j in range(1, 1 + i % 7)
        ]
        lines.append(f"{i % 3} qid:{i // 5} {' '.join(tokens)}".encode() + (b" # c" if i % 11 == 0 else b""))
    text = b"\n".join(lines)  # no final newline
    plain = folder / "lines.txt"
    plain.write_bytes(text)
    packed = folder / "lines.txt.gz"
    packed.write_bytes(gzip.compress(text))
    return plain, packed


@pytest.mark.parametrize("poison", ["digits", "decimal"])
def test_tokens_at_every_distance_from_a_window_end_parse_like_the_reference(tmp_path, monkeypatch, poison):
    """Lines whose tokens end 1-60 bytes before a window's end (windows of 40-200 bytes, also gzip's
    stream windows), one or two parts: the fast path's switch to the byte path at ``SWAR_REACH``."""
    poison_windows(monkeypatch, POISONS[poison])
    plain, packed = _lines_files(tmp_path)
    opts = ParseOptions(output="dense", n_features=7, dtype="float64")
    for chunk in range(40, 201, 7):
        for path in (plain, packed):
            _same_as_reference(path, opts, monkeypatch, chunk, threads=1 + chunk % 2)


@pytest.mark.parametrize("blocks", [1, 2])
def test_a_lone_cr_ending_a_part_of_whole_count_blocks_is_found(tmp_path, monkeypatch, blocks):
    """A part of exactly 64·255·k bytes whose last byte is a lone CR, followed by an LF that is not the
    part's: the file's last line ends in a lone CR, an error for both parsers.

    Kills (``_count_bytes``): ``while i + 64 * 255 < n`` → ``<=`` (the last block's look-ahead then reads
    the byte after the part and takes the poison LF for the CR's)."""
    poison_windows(monkeypatch, POISONS["newlines"])
    size = 64 * 255 * blocks
    body = LINE * ((size - 40) // len(LINE))
    last = b"0 qid:1 1:1 #"
    path = tmp_path / "cr.txt"
    path.write_bytes(body + last + b"c" * (size - len(body) - len(last) - 1) + b"\r")
    assert path.stat().st_size == size and path.read_bytes().endswith(b"c\r")
    fast = _outcome(path, "numba", ParseOptions(), threads=1)
    assert fast == _outcome(path, "python", ParseOptions())
    assert fast[0] == "error" and "carriage return" in fast[1].lower(), fast[1]


# --- writes past the counted share ----------------------------------------------------------------
SENTINEL = 0x5A
GUARD = 16  # rows / entries of guard zone after each output array


class GuardedOutput(_fastparse._Output):
    """:class:`_fastparse._Output` whose arrays are views in front of ``GUARD`` rows of sentinel bytes."""

    made: list[GuardedOutput] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.zones = {}
        for name in ("y", "qid", "X", "indptr", "indices", "data"):
            a = getattr(self, name)
            whole = np.empty((a.shape[0] + GUARD, *a.shape[1:]), dtype=a.dtype)
            whole[: a.shape[0]] = a
            whole.reshape(-1).view(np.uint8)[a.nbytes :] = SENTINEL
            setattr(self, name, whole[: a.shape[0]])  # C-contiguous: the kernels see a plain array
            self.zones[name] = (whole, a.nbytes)
        GuardedOutput.made.append(self)

    def written_past(self) -> list[str]:
        """The arrays whose guard zone no longer holds only the sentinel."""
        return [
            name
            for name, (whole, used) in self.zones.items()
            if np.any(whole.reshape(-1).view(np.uint8)[used:] != SENTINEL)
        ]


@pytest.fixture
def guarded(monkeypatch):
    GuardedOutput.made = []
    monkeypatch.setattr(_fastparse, "_Output", GuardedOutput)
    return GuardedOutput.made


@pytest.mark.parametrize("output", ["dense", "csr"])
def test_parsing_writes_nothing_past_the_counted_rows_and_entries(tmp_path, monkeypatch, guarded, output):
    """Files with blank and comment lines (pass 1's counts are upper bounds, parts leave gaps that are
    closed), windows of 40-200 bytes, one or two parts: results equal the reference, guard zones intact."""
    rng = np.random.default_rng(2)
    lines = []
    for i in range(50):
        feats = " ".join(
            f"{j}:{rng.normal():.5g}" for j in sorted(rng.choice(np.arange(1, 9), 4, replace=False))
        )
        lines.append(f"{i % 4} qid:{i // 6} {feats}")
        if i % 5 == 0:
            lines.append(rng.choice(["", "# 1:2 3:4 a comment with colons", "   "]))
    path = tmp_path / "gaps.txt"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    opts = ParseOptions(output=output, n_features=8)
    for chunk in range(40, 201, 9):
        _same_as_reference(path, opts, monkeypatch, chunk, threads=1 + chunk % 2)
    assert guarded and not [g.written_past() for g in guarded if g.written_past()]


def _rewrite_between_passes(monkeypatch, path: Path, text: bytes) -> None:
    """Once pass 1 has read ``path``, replace its bytes by ``text`` (same size, same mtime): only the
    kernels' own row / entry checks can notice."""
    stat = path.stat()
    windows = _fastparse._chunks
    calls = {"n": 0}

    def chunks(p, chunk, identity=None):
        calls["n"] += 1
        yield from windows(p, chunk, identity)
        if calls["n"] == 1:
            path.write_bytes(text)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    monkeypatch.setattr(_fastparse, "_chunks", chunks)


@pytest.mark.parametrize(
    ("output", "what"), [("dense", "rows"), ("csr", "rows"), ("csr", "entries")], ids=lambda v: v
)
def test_more_rows_or_entries_than_counted_raise_without_writing_past_them(
    tmp_path, monkeypatch, guarded, output, what
):
    """A same-size, same-mtime rewrite between the passes with more rows (or, same rows, more entries)
    than pass 1 counted: a DataError, and nothing written past the counted share.

    Kills (``_fill_part``): ``if r >= row_end`` → ``r > row_end`` and ``if k >= k_end`` → ``k > k_end``
    (each writes one row / entry past its share before the next one raises; the error alone does not show
    it, the guard zone does — before, only a crash did)."""
    first = b"1 qid:1 1:0.5 2:1 # " + b"c" * 60 + b"\n"
    if what == "rows":  # the comment becomes four rows
        rows = b"1 qid:1 1:0.5 2:1\n" * 4
        second = rows + b"#" + b"c" * (len(first) - len(rows) - 2) + b"\n"
    else:  # the comment becomes more entries on the same row
        second = b"1 qid:1 " + b" ".join(b"%d:1" % j for j in range(1, 10))
        second += b" #" + b"c" * (len(first) - len(second) - 3) + b"\n"
    assert len(second) == len(first)
    path = tmp_path / "sneaky.txt"
    path.write_bytes(first * 20)
    _rewrite_between_passes(monkeypatch, path, second * 20)
    with pytest.raises(DataError, match="changed while it was being parsed"):
        _fastparse.parse_path(path, ParseOptions(output=output, n_features=20), n_threads=1)
    (out,) = guarded
    assert out.written_past() == []


# --- every kernel, bounds-checked --------------------------------------------------------------------
#: the kernels, callees first; those the Python side calls are swapped into the module
KERNELS = [
    "_digit_run", "_digits_value", "_swar_token", "_split", "_scale", "_lower", "_match_word", "_parse_number",
    "_parse_uint", "_raised_to_index", "_slow_number", "_scan_number", "_count_part", "_token_error", "_fill_part",
    "_count_bytes",
    "_first_lone_cr", "_bound_chunk", "_first_qid", "_compact", "_count_chunk", "_fill_chunk", "_part_bounds",
    "_last_newline", "_canonicalize_rows", "_zero_bytes", "_line_end_index", "_max_last_index", "_max_index_chunk",
]  # fmt: skip
CALLED_FROM_PYTHON = [
    "_bound_chunk", "_count_chunk", "_fill_chunk", "_first_qid", "_first_lone_cr", "_part_bounds",
    "_last_newline", "_compact", "_canonicalize_rows", "_max_index_chunk",
]  # fmt: skip


@pytest.mark.slow  # compiling the kernels again with bounds checks takes 20-60 s
def test_no_kernel_reads_or_writes_past_a_window_or_an_output_array(tmp_path, monkeypatch):
    """The same ends as above on a bounds-checked build of every kernel, with windows of exactly their
    ``n`` valid bytes (no slack to hide in) and exactly-sized outputs: any access past one is an IndexError.

    Kills what no parse result shows: the SWAR path allowed one byte nearer the end than it reads (``i +
    SWAR_REACH <= hi`` → ``<= hi + 16``, or ``SWAR_REACH = 24``: the last load's last byte, the byte after
    a 24-byte token ending the file); and again the count blocks' look-ahead (``_count_bytes``: ``<`` →
    ``<=`` reads the byte after a part of whole blocks, here an IndexError without any lone CR)."""
    built = _checked_build(KERNELS)
    for name in CALLED_FROM_PYTHON:
        monkeypatch.setattr(_fastparse, name, built[name])
    poison_windows(monkeypatch, b"")  # a fresh array of exactly n bytes per window
    opts = ParseOptions(output="csr", n_features=1234567, allow_unsorted=True, dtype="float64")
    path = tmp_path / "end.txt"
    ends = [b"1 qid:1 " + token for token in _number_tokens()] + ODD_ENDS
    for k, end in enumerate(ends):
        path.write_bytes(LINE * (k % 3) + end)
        for chunk in (1 << 20, 48):
            _same_as_reference(path, opts, monkeypatch, chunk, threads=1 + k % 2)
    size = 64 * 255  # one whole count block, then the same with a one-byte tail
    body = LINE * ((size - 40) // len(LINE))
    exact = body + b"0 qid:1 1:1 #" + b"c" * (size - len(body) - 14) + b"\n"
    assert len(exact) == size
    for text in (exact, exact + b"1", exact[:-1] + b"\r"):
        path.write_bytes(text)
        _same_as_reference(path, ParseOptions(output="dense"), monkeypatch, 1 << 20, threads=1)
    for k, end in enumerate(ODD_ENDS):  # the column count left to the parsers: the counting pass's own scan
        path.write_bytes(b"# no data yet\n" + end)
        _same_as_reference(path, ParseOptions(output="auto"), monkeypatch, 48, threads=1 + k % 2)
    for file in _lines_files(tmp_path):
        for chunk in range(40, 201, 23):
            _same_as_reference(
                file, ParseOptions(output="dense", n_features=7), monkeypatch, chunk, threads=2
            )


# --- where the parts start ---------------------------------------------------------------------------
def test_part_bounds_read_only_the_valid_bytes():
    """Parts start at line starts of ``buf[:n]``, found from those bytes alone.

    Was a latent out-of-bounds read (fixed): with fewer valid bytes than parts (a 1-byte last window and
    two threads) the search for part 1's start began at 0 and read ``buf[-1]``, i.e. the last byte of the
    whole buffer (numba wraps negative indices): the bounds then depended on that byte (stale data or the
    next line), though every outcome was a valid split.
    """
    rng = np.random.default_rng(3)
    for _ in range(2000):
        n = int(rng.integers(0, 12))
        parts = int(rng.integers(1, 5))
        valid = rng.choice(np.frombuffer(b"ab \n", dtype=np.uint8), n)
        bounds = set()
        for tail in (b"\n" * 8, b"x" * 8):  # what follows the valid bytes must not matter
            buf = np.concatenate([valid, np.frombuffer(tail, dtype=np.uint8)])
            got = _fastparse._part_bounds(buf, n, parts)
            assert got[0] == 0 and got[-1] == n and np.all(np.diff(got) >= 0)
            assert all(b in (0, n) or valid[b - 1] == ord("\n") for b in got), (valid.tobytes(), got)
            bounds.add(tuple(got))
        assert len(bounds) == 1, (valid.tobytes(), parts, bounds)


# --- the column count from each line's last index ------------------------------------------------------
def _count_lines(rng: np.random.Generator, n: int) -> bytes:
    """Valid lines whose ends fall at every offset from an 8-byte word: values of 1-9 characters, CRLF or
    LF, trailing blanks, comments holding larger ``index:value`` pairs, label-only lines, comment lines."""
    lines = []
    for k in range(n):
        ids = np.sort(rng.choice(np.arange(1, 40), int(rng.integers(0, 6)), replace=False))
        tokens = [b"%d:%s" % (i, b"7" * int(rng.integers(1, 10))) for i in ids]
        line = b" ".join([b"%d qid:%d" % (k % 3, 1 + k // 4), *tokens])
        line += b" " * int(rng.integers(0, 3))
        if k % 5 == 2:
            line += b"# 99:1 " + b"c" * int(rng.integers(0, 9))
        if k % 11 == 4:
            line = b"#" + b" 88:2" * int(rng.integers(0, 3))
        lines.append(line + (b"\r\n" if k % 7 == 3 else b"\n"))
    return b"".join(lines)


def test_the_column_count_from_each_lines_last_index_is_the_references(tmp_path, monkeypatch):
    """Without ``n_features`` the counting pass reads only each line's last index (``_max_last_index``:
    line ends and ``#`` found eight bytes at a time, then read back). The count must be the reference's:
    kills reading a comment's ``99:1`` or ``88:2`` as an index, a line end missed inside a word or at a
    window's end, the last line without a newline, and a label or ``qid:`` taken as an index."""
    poison_windows(monkeypatch, POISONS["colons"])
    rng = np.random.default_rng(11)
    path = tmp_path / "count.txt"
    for case in range(12):
        text = _count_lines(rng, 30)
        if case % 3 == 1:
            text = text.rstrip(b"\r\n")  # the last line ends the file
        if case % 3 == 2:
            text += b"4 qid:99 60:1"  # the largest index on a last line without a newline
        path.write_bytes(text)
        for chunk in (48, 101, 1 << 20):
            for output in ("auto", "dense", "csr"):
                _same_as_reference(
                    path, ParseOptions(output=output), monkeypatch, chunk, threads=1 + case % 2
                )
    assert _outcome(path, "numba", ParseOptions(output="dense"))[1] == 60


def test_without_eight_byte_reads_the_column_count_is_the_same():
    """A big-endian machine (``SWAR`` false) must not read words, whose first byte is then the top one (the
    masks would find the last line end of a word, not the first): built here as on such a machine
    (``SWAR = False`` and an 8-byte load whose first byte is the top one), the count reads byte by byte
    and equals the eight-bytes-at-a-time count."""
    scope = dict(vars(_fastparse))
    scope["SWAR"] = False
    scope["_load8"] = numba.njit(inline="always")(_big_endian_load8)
    f = _fastparse._max_last_index.py_func
    bytewise = numba.njit(types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__))
    rng = np.random.default_rng(5)
    for _ in range(20):
        text = _count_lines(rng, 12) + b"1 qid:9 3:1 # 77:1"
        buf = np.frombuffer(text + b"\n" * 8, dtype=np.uint8)
        for lo, hi in ((0, len(text)), (len(text) // 3, len(text))):
            lo = text.rfind(b"\n", 0, lo) + 1  # a part starts at a line start
            want = _fastparse._max_last_index(buf, lo, hi, 1)
            assert bytewise(buf, lo, hi, 1) == want
    assert bytewise(np.frombuffer(b"1 5:1\n1 12:1\n", dtype=np.uint8), 0, 13, 1) == 11


@pytest.mark.parametrize("output", ["dense", "csr"])
@pytest.mark.parametrize(
    "line",
    [
        b"1 qid:1 9:1 2:1",  # unsorted after an index past every line's last
        b"1 qid:1 2:1 9:1 9:2 3:1",  # a duplicate, then unsorted
        b"1 qid:1 9:1 2:x",  # a bad value after it
        b"1 qid:1 9:nan 2:1",  # the index past the count is itself non-finite
        b"1 qid:1 9:1 2:1 abc",  # a last token that is no index:value
        b"1 qid:1 9:1 12345678901:1",  # a last index of 11 digits
        b"1 qid:1 0:1 9:1 2:1",  # index 0 comes first
    ],
)
def test_an_index_past_every_lines_last_fails_as_the_reference_fails(
    tmp_path, monkeypatch, guarded, line, output
):
    """A line whose indices do not increase can hold an index larger than every line's last one, hence
    larger than the counted columns: the fill pass must neither store it (a write past the row: the last
    row's shows in the guard zone) nor call it 'index too large' (the reference counts every index), but
    fail where and as the reference fails."""
    rows = b"0 qid:1 1:0.5 2:1\n" * 3
    path = tmp_path / "beyond.txt"
    for text in (rows + line + b"\n" + rows, rows + line + b"\n"):
        path.write_bytes(text)
        for threads in (1, 2):
            _same_as_reference(path, ParseOptions(output=output), monkeypatch, 1 << 20, threads=threads)
        assert _outcome(path, "numba", ParseOptions(output=output))[0] == "error"
    assert guarded and not [g.written_past() for g in guarded if g.written_past()]


@pytest.mark.parametrize("output", ["dense", "csr"])
def test_a_valid_line_past_the_counted_columns_means_the_file_changed(tmp_path, monkeypatch, output):
    """Increasing indices past the count cannot come from the bytes pass 1 read (their last index was
    counted): the file changed between the passes, an error, not a row silently cut to the counted columns."""
    path = tmp_path / "sneaky.txt"
    path.write_bytes(b"1 qid:1 1:1 2:1 3:1\n" * 4)
    _rewrite_between_passes(monkeypatch, path, b"1 qid:1 1:1 2:1 3:1\n" * 3 + b"1 qid:1 1:1 2:1 9:1\n")
    with pytest.raises(DataError, match="changed while it was being parsed"):
        _fastparse.parse_path(path, ParseOptions(output=output), n_threads=1)

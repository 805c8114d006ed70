"""Reading one ranking file without the cache: a parsing engine, the LightGBM sidecars, and the
assembly of a checked :class:`~ltr.data.dataset.RankingData`.

Both :func:`ltr.data.svmlight.load_svmlight` (directly) and :mod:`ltr.data.cache` (on a cache miss)
read files through :func:`parse_file` and :func:`build_dataset`; this module sits below both so
neither imports the other's internals.

>>> import tempfile, pathlib
>>> from ltr.data._syntax import ParseOptions
>>> p = pathlib.Path(tempfile.mkdtemp()) / "toy.txt"
>>> _ = p.write_text("1 qid:3 1:0.5\\n0 qid:3 2:1\\n")
>>> d = build_dataset(p, parse_file(p, ParseOptions(), "python"), ParseOptions(), None, None, False, None)
>>> d.y.tolist(), d.query_ids.tolist(), d.X.shape
([1.0, 0.0], [3], (2, 2))
"""

from __future__ import annotations

import importlib.util
import logging
import re
import stat
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import DataError
from ltr.core.ranking import query_of_row
from ltr.data import _pyparse
from ltr.data._syntax import ParseOptions, error_message
from ltr.data.dataset import RankingData, offsets_from_qid
from ltr.io.compression import compression_of, open_input, read_input
from ltr.io.textlines import FIELD_SPACE, bom_length, check_no_bom, read_lines

log = logging.getLogger(__name__)

ENGINES = ("auto", "numba", "python")
_DOCID = re.compile(r"docid\s*=\s*(\S+)")


def check_data_file(path: Path) -> None:
    """Raise a ``DataError`` that says what ``path`` is unless it is a regular file ``ltr`` reads.

    A directory, a named pipe (FIFO), a socket or a device each get their own message with the fix;
    so do an archive (zip, 7-Zip, RAR) or a compression ``ltr`` does not read, recognised by the
    leading bytes whatever the name, and a name whose compression suffix the bytes contradict (see
    :func:`ltr.io.compression.compression_of`). gzip, bzip2, xz and zstd files are read transparently.

    >>> import tempfile, pathlib, gzip
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> check_data_file(d)
    Traceback (most recent call last):
    ltr.core.errors.DataError: ... is a directory, not a data file; pass one of the files inside it
    >>> _ = (d / "t.txt").write_bytes(gzip.compress(b"1 qid:1 1:0.5\\n"))
    >>> check_data_file(d / "t.txt")  # gzip under any name: read transparently
    >>> _ = (d / "t.zip").write_bytes(b"PK\\x03\\x04" + bytes(30))
    >>> check_data_file(d / "t.zip")
    Traceback (most recent call last):
    ltr.core.errors.DataError: .../t.zip: is a zip archive, which ltr does not read (it reads gzip, bzip2, xz and zstd files); unpack it first (unzip ...)
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as e:
        raise DataError(f"{path}: cannot be read ({e.strerror or e})") from None
    if stat.S_ISDIR(mode):
        raise DataError(f"{path}: is a directory, not a data file; pass one of the files inside it")
    if not stat.S_ISREG(mode):
        kind = (
            "a named pipe (FIFO)"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
        )
        raise DataError(
            f"{path}: is {kind}, not a regular file; the parser reads a file more than once "
            "(it counts, then parses, and the cache keys on it), so save the stream to a file first"
        )
    compression_of(path)


def _locate(path: Path, line_start: int, tok_start: int, tok_end: int) -> tuple[int, bytes]:
    """(1-based line of the byte at ``line_start``, bytes ``tok_start:tok_end``) of the decompressed file.

    Reads the file (through :func:`~ltr.io.compression.open_input`) in blocks up to the token; only on errors.
    """
    count = 0
    pos = 0
    token = b""
    with open_input(path) as f:
        while pos < tok_end:
            block = f.read(1 << 24)
            if not block:
                break
            if pos < line_start:
                count += block.count(b"\n", 0, max(0, line_start - pos))
            if pos + len(block) > tok_start:
                token += block[max(0, tok_start - pos) : max(0, tok_end - pos)]
            pos += len(block)
    return count + 1, token


def _failure_to_error(path: Path, fail: _pyparse.ParseFailure, opts: ParseOptions) -> DataError:
    end = fail.tok_start + max(0, min(fail.tok_end - fail.tok_start, 200))
    line, token = _locate(path, fail.line_start, fail.tok_start, end)
    msg = error_message(
        fail.code, token.decode("utf-8", "replace"), index=fail.index, prev=fail.prev, opts=opts
    )
    return DataError(f"{path}:{line}: {msg}")


def parse_file(
    path: Path, opts: ParseOptions, engine: str = "auto", n_threads: int | None = None
) -> _pyparse.RawParse:
    """Run one parsing engine on a file and turn its failures into ``DataError``s.

    A file without data rows (empty, or only blank and comment lines) is a ``DataError`` too.
    """
    check_value(engine, str, Constraint(choices=ENGINES), "engine")
    try:
        if engine == "python" or (engine == "auto" and not _fast_available()):
            raw = _pyparse.parse_bytes(read_input(path), opts)
        else:
            from ltr.data import _fastparse  # deferred: numba (~0.2 s to import) only for the fast engine

            raw = _fastparse.parse_path(path, opts, n_threads=n_threads)
    except _pyparse.ParseFailure as fail:
        raise _failure_to_error(path, fail, opts) from None
    if raw.y.shape[0] == 0:
        raise DataError(f"{path}: no data rows (the file is empty or has only blank and comment lines)")
    return raw


def _fast_available() -> bool:
    return importlib.util.find_spec("ltr.data._fastparse") is not None


# --- sidecars ------------------------------------------------------------------------------------
def _read_column(path: Path, kind: str, parse) -> list:
    """One value per non-blank line, read under :mod:`ltr.io.textlines`' encoding policy."""
    out = []
    for lineno, line in read_lines(path):
        tok = line.strip(FIELD_SPACE)
        if not tok:
            continue
        check_no_bom(path, lineno, [tok])
        try:
            out.append(parse(tok))
        except ValueError:
            raise DataError(f"{path}:{lineno}: expected {kind}, got {tok[:80]!r}") from None
    return out


def read_query_sizes(path: str | Path) -> np.ndarray:
    """LightGBM ``.query`` sidecar: one positive group size per line (LF or CRLF), in row order."""
    path = Path(path)

    def parse(s: str) -> int:
        v = int(s)
        if v <= 0:
            raise ValueError(s)
        return v

    return np.asarray(_read_column(path, "a positive integer group size", parse), dtype=np.int64)


def read_weights(path: str | Path) -> np.ndarray:
    """LightGBM ``.weight`` sidecar: one finite non-negative weight per row."""
    path = Path(path)

    def parse(s: str) -> float:
        v = float(s)
        if not np.isfinite(v) or v < 0:
            raise ValueError(s)
        return v

    return np.asarray(_read_column(path, "a finite non-negative weight", parse), dtype=np.float64)


def read_positions(path: str | Path) -> np.ndarray:
    """LightGBM ``.position`` sidecar: one position id per row (e.g. ``pos_3``), as strings."""
    return np.asarray(_read_column(Path(path), "a position id", str), dtype=object)


def position_codes(ids: np.ndarray) -> np.ndarray:
    """Integer position ids from sidecar strings: the trailing number (``pos_3`` → 3) when every id
    has one, otherwise codes in sorted order of the distinct strings (LightGBM treats them as categories).

    >>> position_codes(np.array(["pos_2", "pos_10", "3"], dtype=object)).tolist()
    [2, 10, 3]
    >>> position_codes(np.array(["top", "mid", "top"], dtype=object)).tolist()
    [1, 0, 1]
    """
    numbers = [re.search(r"(\d+)$", str(v)) for v in ids]
    if all(m is not None for m in numbers):
        return np.array([int(m.group(1)) for m in numbers], dtype=np.int64)
    return np.unique(np.asarray(ids, dtype=str), return_inverse=True)[1].astype(np.int64)


def _groups_from_sizes(sizes: np.ndarray, n_rows: int, source: Path) -> np.ndarray:
    if int(sizes.sum()) != n_rows:
        raise DataError(
            f"{source}: group sizes sum to {int(sizes.sum())} but the data file has {n_rows} rows"
        )
    return np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)


def _query_weights(w: np.ndarray, offsets: np.ndarray, source: Path) -> np.ndarray:
    """Per-row weights → per-query weights (they must be constant within each query)."""
    starts = offsets[:-1]
    qw = w[starts] if starts.size else np.zeros(0)
    varies = np.flatnonzero(w != np.repeat(qw, np.diff(offsets)))
    if varies.size:
        row = int(varies[0])
        q = query_of_row(offsets, row)
        raise DataError(
            f"{source}:{row + 1}: weight {w[row]:g} differs from {qw[q]:g} earlier in query #{q + 1}; "
            "ranking weights are per query, so all rows of a query need the same weight"
        )
    return qw


def _read_docids(path: Path) -> np.ndarray:
    """Per-row comment (the ``docid = X`` value when present), skipping blank/comment-only lines."""
    out: list[str] = []
    with open_input(path) as f:
        for number, raw in enumerate(f):
            if number == 0:
                raw = raw[bom_length(raw) :]  # a BOM-only first line is blank, as for the parser
            body, _, comment = raw.partition(b"#")
            if not body.strip():
                continue
            text = comment.decode("utf-8", "replace").strip()
            m = _DOCID.search(text)
            out.append(m.group(1) if m else text)
    return np.asarray(out, dtype=str)


def regroup_order(qid: np.ndarray) -> np.ndarray:
    """Stable row order that makes each qid contiguous: queries by first appearance, rows in file order.

    >>> regroup_order(np.array([5, 3, 5, 3, 9])).tolist()
    [0, 2, 1, 3, 4]
    """
    _, first, inverse = np.unique(qid, return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(first.shape[0])
    return np.argsort(rank[inverse], kind="stable")


def build_dataset(
    path: Path,
    raw: _pyparse.RawParse,
    opts: ParseOptions,
    qfile: Path | None,
    wfile: Path | None,
    docid: bool,
    name: str | None,
    position_file: Path | None = None,
) -> RankingData:
    """Attach sidecars, regroup if asked, and wrap parsed arrays into a checked ``RankingData``."""
    n = raw.y.shape[0]
    if raw.n_replaced:
        log.warning(
            "%s: %d NaN/inf/huge feature values handled with nonfinite=%r",
            path,
            raw.n_replaced,
            opts.nonfinite,
        )
    if raw.dense is not None:
        X = raw.dense
    else:
        X = sp.csr_matrix((raw.data, raw.indices, raw.indptr), shape=(n, raw.n_features))
    qid = raw.qid
    if qid is None:
        if qfile is None:
            raise DataError(
                f"{path}: the file has no qid: tokens and no .query sidecar ({path}.query); "
                "ranking data needs query groups"
            )
        qid = _groups_from_sizes(read_query_sizes(qfile), n, qfile)
    docids = _read_docids(path) if docid else None
    row_w = None
    if wfile is not None:
        row_w = read_weights(wfile)
        if row_w.shape[0] != n:
            raise DataError(f"{wfile}: {row_w.shape[0]} weights but the data file has {n} rows")
    position = None
    if position_file is not None:
        position = position_codes(read_positions(position_file))
        if position.shape[0] != n:
            raise DataError(f"{position_file}: {position.shape[0]} positions but the data file has {n} rows")
    label = name or str(path)
    if opts.regroup:
        order = regroup_order(qid)
        if np.any(order != np.arange(n)):
            X, y, qid = X[order], raw.y[order], qid[order]
            docids = None if docids is None else docids[order]
            row_w = None if row_w is None else row_w[order]
            position = None if position is None else position[order]
            raw.y = y
    offsets = offsets_from_qid(qid, source=str(path))  # a split qid block: the error names the file
    weight = None
    if row_w is not None:
        weight = _query_weights(row_w, offsets, wfile)
    return RankingData(X=X, y=raw.y, qid=qid, name=label, weight=weight, docid=docids, position=position)

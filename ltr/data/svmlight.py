"""Strict, fast reading and exact writing of SVMlight / LETOR ranking files.

A line is ``label qid:Q index:value ... # comment`` (LF or CRLF). Indices are 1-based unless
``zero_based=True``; they are never guessed. Files without ``qid:`` (LightGBM's layout) take their
query groups from a ``.query`` sidecar (one group size per line) and optional per-row ``.weight``
sidecar. Every malformed line raises :class:`ltr.errors.DataError` naming ``file:line`` and what was
expected; see :class:`ltr.data._syntax.ParseOptions` for the strict defaults and their opt-ins.

Example
-------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "toy.txt"
>>> _ = p.write_bytes(b"2 qid:1 1:0.5 3:1\\r\\n0 qid:1 2:0.25\\n1 qid:4 1:1 # docid = d3\\n")
>>> d = load_svmlight(p, engine="python")
>>> d.X.tolist(), d.y.tolist(), d.group_sizes.tolist()
([[0.5, 0.0, 1.0], [0.0, 0.25, 0.0], [1.0, 0.0, 0.0]], [2.0, 0.0, 1.0], [2, 1])
>>> load_svmlight(p, n_features=2, engine="python")
Traceback (most recent call last):
...
ltr.errors.DataError: ...toy.txt:1: feature index 3 is above n_features=2 ('3:1')
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np
import scipy.sparse as sp

from ltr.data import _pyparse
from ltr.data._syntax import ParseOptions, error_message
from ltr.data.dataset import RankingData, offsets_from_qid
from ltr.errors import ConfigError, DataError

log = logging.getLogger(__name__)

ENGINES = ("auto", "numba", "python")
_DOCID = re.compile(r"docid\s*=\s*(\S+)")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_writer(path: Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success rename it to ``path`` (never half a file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    text = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
    try:
        with os.fdopen(fd, mode, **text) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _line_number(path: Path, offset: int) -> int:
    """1-based line number of the byte at ``offset`` (counts newlines before it, in blocks)."""
    count = 0
    remaining = offset
    with open(path, "rb") as f:
        while remaining > 0:
            block = f.read(min(remaining, 1 << 24))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count + 1


def _failure_to_error(path: Path, fail: _pyparse.ParseFailure, opts: ParseOptions) -> DataError:
    with open(path, "rb") as f:
        f.seek(fail.tok_start)
        token = f.read(max(0, min(fail.tok_end - fail.tok_start, 200))).decode("utf-8", "replace")
    line = _line_number(path, fail.line_start)
    msg = error_message(fail.code, token, index=fail.index, prev=fail.prev, opts=opts)
    return DataError(f"{path}:{line}: {msg}")


def parse_file(
    path: Path, opts: ParseOptions, engine: str = "auto", n_threads: int | None = None
) -> _pyparse.RawParse:
    """Run one parsing engine on a file and turn its failures into ``DataError``s."""
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {ENGINES}, got {engine!r}")
    try:
        if engine == "python" or (engine == "auto" and not _fast_available()):
            return _pyparse.parse_bytes(path.read_bytes(), opts)
        from ltr.data import _fastparse

        return _fastparse.parse_path(path, opts, n_threads=n_threads)
    except _pyparse.ParseFailure as fail:
        raise _failure_to_error(path, fail, opts) from None


def _fast_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("ltr.data._fastparse") is not None


# --- sidecars ------------------------------------------------------------------------------------
def _sidecar(path: Path, given: str | Path | None, suffix: str) -> Path | None:
    if given == "auto":
        cand = Path(str(path) + suffix)
        return cand if cand.is_file() else None
    return None if given is None else Path(given)


def _read_column(path: Path, kind: str, parse) -> list:
    out = []
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            tok = raw.strip()
            if not tok:
                continue
            try:
                out.append(parse(tok.decode()))
            except (ValueError, UnicodeDecodeError):
                raise DataError(f"{path}:{lineno}: expected {kind}, got {raw.strip()[:80]!r}") from None
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
        q = int(np.searchsorted(offsets, row, side="right") - 1)
        raise DataError(
            f"{source}:{row + 1}: weight {w[row]:g} differs from {qw[q]:g} earlier in query #{q + 1}; "
            "ranking weights are per query, so all rows of a query need the same weight"
        )
    return qw


def _read_docids(path: Path) -> np.ndarray:
    """Per-row comment (the ``docid = X`` value when present), skipping blank/comment-only lines."""
    out: list[str] = []
    with open(path, "rb") as f:
        for raw in f:
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


# --- public API ----------------------------------------------------------------------------------
def load_svmlight(
    path: str | Path,
    *,
    n_features: int | None = None,
    zero_based: bool = False,
    allow_unsorted: bool = False,
    integer_labels: bool = True,
    allow_negative_labels: bool = False,
    label_range: tuple[float, float] | None = None,
    nonfinite: str = "error",
    huge: float | None = None,
    output: str = "auto",
    density: float = 0.25,
    dtype: str = "float32",
    regroup: bool = False,
    query_file: str | Path | None = "auto",
    weight_file: str | Path | None = "auto",
    position_file: str | Path | None = "auto",
    docid: bool = False,
    engine: str = "auto",
    n_threads: int | None = None,
    cache_dir: str | Path | None = None,
    name: str | None = None,
) -> RankingData:
    """Read one SVMlight/LETOR file into a :class:`RankingData` (strict by default).

    Options are those of :class:`~ltr.data._syntax.ParseOptions` plus:

    query_file, weight_file: LightGBM sidecars for files without ``qid:``; ``"auto"`` uses
        ``PATH.query`` / ``PATH.weight`` when they exist. A file with neither qids nor a ``.query``
        sidecar is an error. Row weights become per-query weights (they must be constant per query).
    position_file: LightGBM ``.position`` sidecar (``"auto"``: ``PATH.position`` when it exists):
        one display position id per row, kept as ``RankingData.position`` (see :func:`position_codes`).
    docid: keep each row's comment (the ``docid = X`` value in LETOR files) as ``RankingData.docid``.
    engine: ``"numba"`` (fast, chunked, parallel), ``"python"`` (reference) or ``"auto"`` (numba).
    n_threads: parser threads (numba engine; default: numba's thread count, i.e. all cores).
    cache_dir: when given, read through the binary cache in that folder (see :mod:`ltr.data.cache`).
    """
    path = Path(path)
    opts = ParseOptions(
        n_features=n_features,
        zero_based=zero_based,
        allow_unsorted=allow_unsorted,
        integer_labels=integer_labels,
        allow_negative_labels=allow_negative_labels,
        label_range=None if label_range is None else tuple(label_range),
        nonfinite=nonfinite,
        huge=ParseOptions.huge if huge is None else float(huge),
        output=output,
        density=density,
        dtype=dtype,
        regroup=regroup,
    )
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    qfile = _sidecar(path, query_file, ".query")
    wfile = _sidecar(path, weight_file, ".weight")
    pfile = _sidecar(path, position_file, ".position")
    if cache_dir is not None:
        from ltr.data.cache import load_cached

        return load_cached(
            path,
            opts,
            cache_dir=cache_dir,
            query_file=qfile,
            weight_file=wfile,
            position_file=pfile,
            docid=docid,
            engine=engine,
            n_threads=n_threads,
            name=name,
        )
    return build_dataset(
        path, parse_file(path, opts, engine, n_threads), opts, qfile, wfile, docid, name, position_file=pfile
    )


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


def _format_values(values: np.ndarray) -> list[str]:
    """Shortest text that reads back to the same value in the array's dtype (``%.9g`` / ``%.17g``)."""
    if values.dtype == np.float32:
        return [f"{v:.9g}" for v in values.tolist()]
    return [repr(v) for v in np.asarray(values, dtype=np.float64).tolist()]


def _format_label(v: float) -> str:
    return str(int(v)) if np.isfinite(v) and v == int(v) else repr(float(v))


def write_svmlight(
    data: RankingData,
    path: str | Path,
    *,
    comments: Sequence[str] | None = None,
    zero_based: bool = False,
) -> Path:
    """Write ``data`` as sparse SVMlight lines ``label qid:Q i:v ... [# comment]`` (zeros omitted).

    Values round-trip exactly: float32 with ``%.9g``, float64 with ``repr``; integer labels are
    written without a decimal point. ``comments`` (one per row, no newlines) default to
    ``docid = X`` when ``data.docid`` is set. The file is written to a temporary name and renamed,
    so a reader never sees half a file.
    """
    path = Path(path)
    n = data.n_docs
    if comments is None and data.docid is not None:
        comments = [f"docid = {d}" for d in data.docid]
    if comments is not None:
        if len(comments) != n:
            raise ConfigError(f"comments must have one entry per row ({n}), got {len(comments)}")
        for i, c in enumerate(comments):
            if "\n" in c or "\r" in c:
                raise ConfigError(f"comments[{i}] contains a line break: {c!r}")
    shift = 0 if zero_based else 1
    X = data.X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sort_indices()
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    with atomic_writer(path) as f:
        for i in range(n):
            if sp.issparse(X):
                lo, hi = X.indptr[i], X.indptr[i + 1]
                cols, vals = X.indices[lo:hi], np.asarray(X.data[lo:hi], dtype=dtype)
                keep = vals != 0
                cols, vals = cols[keep], vals[keep]
            else:
                row = np.asarray(X[i], dtype=dtype)
                cols = np.flatnonzero(row != 0)
                vals = row[cols]
            parts = [_format_label(data.y[i]), f"qid:{int(data.qid[i])}"]
            parts += [f"{c + shift}:{t}" for c, t in zip(cols.tolist(), _format_values(vals), strict=True)]
            if comments is not None:
                parts.append("# " + comments[i])
            f.write(" ".join(parts) + "\n")
    return path

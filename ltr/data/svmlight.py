"""Strict, fast reading and exact writing of SVMlight / LETOR ranking files.

A line is ``label qid:Q index:value ... # comment`` (LF or CRLF). Indices are 1-based unless
``zero_based=True``; they are never guessed. Files without ``qid:`` (LightGBM's layout) take their
query groups from a ``.query`` sidecar (one group size per line) and optional per-row ``.weight``
sidecar. Every malformed line raises :class:`ltr.core.errors.DataError` naming ``file:line`` and what was
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
ltr.core.errors.DataError: ...toy.txt:1: feature index 3 is above n_features=2 ('3:1')
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import ConfigError
from ltr.data._syntax import ParseOptions
from ltr.data.dataset import RankingData
from ltr.data.reading import (
    build_dataset,
    check_data_file,
    parse_file,
    position_codes,
    read_positions,
    read_query_sizes,
    read_weights,
    regroup_order,
)
from ltr.io.compression import COMPRESSIONS

__all__ = [  # the loader's helpers stay importable from here, where users found them
    "atomic_writer",
    "load_svmlight",
    "position_codes",
    "read_positions",
    "read_query_sizes",
    "read_weights",
    "regroup_order",
    "write_svmlight",
]


COMPRESSION_SUFFIXES = frozenset(suffix for c in COMPRESSIONS for suffix in c.suffixes)


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


def _sidecar(path: Path, given: str | Path | None, suffix: str) -> Path | None:
    """The sidecar to read: ``given``, or for ``"auto"`` ``PATH<suffix>`` when it exists, else (for a
    compressed ``train.txt.gz``) the uncompressed name's ``train.txt<suffix>``."""
    if given == "auto":
        names = [str(path) + suffix]
        if path.suffix.lower() in COMPRESSION_SUFFIXES:
            names.append(str(path.with_suffix("")) + suffix)
        return next((Path(n) for n in names if Path(n).is_file()), None)
    return None if given is None else Path(given)


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
    verify_cache: bool = False,
    name: str | None = None,
) -> RankingData:
    """Read one SVMlight/LETOR file into a :class:`RankingData` (strict by default).

    Options are those of :class:`~ltr.data._syntax.ParseOptions` plus:

    query_file, weight_file: LightGBM sidecars for files without ``qid:``; ``"auto"`` uses
        ``PATH.query`` / ``PATH.weight`` when they exist (for ``train.txt.gz`` also ``train.txt.query``).
        A file with neither qids nor a ``.query`` sidecar is an error. Row weights become per-query weights (they must be constant per query).
    position_file: LightGBM ``.position`` sidecar (``"auto"``: ``PATH.position`` when it exists):
        one display position id per row, kept as ``RankingData.position`` (see :func:`position_codes`).
    docid: keep each row's comment (the ``docid = X`` value in LETOR files) as ``RankingData.docid``.
    engine: ``"numba"`` (fast, chunked, parallel), ``"python"`` (reference) or ``"auto"`` (numba).
    n_threads: parser threads (numba engine; default: numba's thread count, i.e. all cores).
    cache_dir: when given, read through the binary cache in that folder (see :mod:`ltr.data.cache`; a
        folder that cannot be written falls back to the per-user cache, then to no cache, with one warning).
    verify_cache: key the cache entry on a hash of every byte of the file and its sidecars instead of
        size, mtime and sampled blocks (for tools that rewrite files in place keeping size and mtime).
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
    check_data_file(path)
    qfile = _sidecar(path, query_file, ".query")
    wfile = _sidecar(path, weight_file, ".weight")
    pfile = _sidecar(path, position_file, ".position")
    if cache_dir is not None:
        # deferred: the cache's numba checksum (~0.4 s to import) loads only when a cache is used
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
            full_hash=verify_cache,
        )
    return build_dataset(
        path, parse_file(path, opts, engine, n_threads), opts, qfile, wfile, docid, name, position_file=pfile
    )


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

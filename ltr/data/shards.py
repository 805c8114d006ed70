"""Shards of a ranking dataset: many files, or one file cut into byte ranges on query boundaries.

A *shard* is a unit one process parses on its own with ``ltr``'s parser: a whole file, or the
bytes ``[start, stop)`` of one file. :func:`plan_shards` turns a data spec into shards without
reading the data:

* a **glob** (``DIR/train-*.txt``), a **directory** (its regular files, sorted by name) or a list
  of paths → one shard per file, in sorted order;
* **one file** and ``n_parts > 1`` → ``n_parts`` byte ranges of near-equal size, each ending where
  a new query starts (found by reading a few lines around each cut, never the whole file), so
  every range holds whole queries.

:func:`read_shard` parses one shard into a :class:`~ltr.data.RankingData`, with the same
strictness and the same ``DataError`` text as :func:`~ltr.data.svmlight.load_svmlight`: a bad line
in a byte range is reported as ``FILE:LINE`` with the line's number *in the file* (the newlines
before it are counted only when there is an error). With ``cache_dir`` every shard is read through
the binary cache (:mod:`ltr.data.cache`): one entry per file, or per byte range of a file (keyed on
the file's identity, the range and the parse options). The cuts are a function of the file and
``n_parts`` only, so the same file cut into the same number of parts hits the same entries.

The shards of a split must not share a query: :func:`check_disjoint_queries` names the two files
(or byte ranges) that hold the same qid. With ``regroup=True`` such a query is gathered instead,
as a local parse of the concatenated files with ``regroup=True`` would: :func:`straddling_moves`
gives each straddling qid to its *owner*, the first shard holding it; :func:`take_queries` cuts
its rows out of the later shards and :func:`regroup_shard` drops them there and appends them to
the owner's rows of that query (rows in shard order, queries in order of first appearance).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
>>> _ = p.write_bytes(b"1 qid:1 1:1\\n0 qid:1 1:2\\n2 qid:2 1:3\\n0 qid:3 1:4\\n0 qid:3 1:5\\n")
>>> [(s.start, s.stop) for s in plan_shards(p, 2)]
[(0, 36), (36, 60)]
>>> [read_shard(s, {"engine": "python"}).query_ids.tolist() for s in plan_shards(p, 2)]
[[1, 2], [3]]
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import ConfigError, DataError
from ltr.data import _pyparse
from ltr.data._syntax import ParseOptions
from ltr.data.dataset import RankingData
from ltr.data.reading import (
    _failure_to_error,
    _fast_available,
    build_dataset,
    check_data_file,
    read_query_sizes,
    regroup_order,
)
from ltr.data.svmlight import COMPRESSION_SUFFIXES, _sidecar, load_svmlight
from ltr.io.compression import open_input

#: bytes read at a time while looking for the next query boundary after a cut
_SCAN_BLOCK = 1 << 20
_QID = re.compile(rb"^[ \t]*\S+[ \t]+qid:([^ \t\r\n#]+)")
#: load_svmlight options a byte range cannot honour (they describe or read the whole file)
_WHOLE_FILE_ONLY = ("query_file", "weight_file", "position_file", "docid")


#: bytes on each side of a cut (and at each end of a file) whose digest is a shard's content check
_STAMP_BYTES = 4096


@dataclass(frozen=True)
class FileStamp:
    """What a file looked like when its shards were planned: its size, modification time and a digest of
    the bytes around each cut (:func:`file_stamp`), checked by the worker that reads a shard."""

    size: int
    mtime_ns: int
    digest: str


@dataclass(frozen=True)
class Shard:
    """Bytes ``[start, stop)`` of ``path``; ``stop=None`` is the whole file (``start`` is then 0).

    ``stamp`` (set by :func:`plan_shards`): the file as planned; :func:`read_shard` refuses a file that
    no longer matches it (:func:`check_unchanged`), since byte ranges cut on the old file's query
    boundaries would silently lose rows or cut a line of the new one.

    ``query_id_offset``: added to the query ids of a whole file grouped by its ``.query`` sidecar, whose
    groups are numbered from 0 in every file (:func:`number_sidecar_queries`).
    """

    path: Path
    start: int = 0
    stop: int | None = None
    stamp: FileStamp | None = None
    query_id_offset: int = 0

    @property
    def whole(self) -> bool:
        return self.stop is None

    def __str__(self) -> str:
        return str(self.path) if self.whole else f"{self.path} (bytes {self.start}-{self.stop})"


def expand_sources(spec: str | os.PathLike | Sequence[str | os.PathLike], where: str = "data") -> list[Path]:
    """The files a data spec names: a glob pattern, a directory (its regular files), a file, or a list.

    Sorted by name within each glob or directory; a pattern matching nothing is a ``DataError``
    naming ``where`` and the pattern. A glob's or directory's LightGBM sidecars (``X.query``,
    ``X.weight``, ``X.position`` beside a matched ``X``) are not data files: they are left out.
    """
    if isinstance(spec, (list, tuple)):
        return [p for item in spec for p in expand_sources(item, where)]
    text = os.fspath(spec)
    if glob.has_magic(text):
        found = _without_sidecars(sorted(Path(p) for p in glob.glob(text) if Path(p).is_file()))
        if not found:
            raise DataError(f"{where}: the pattern {text!r} matches no file")
        return found
    path = Path(text)
    if path.is_dir():
        found = _without_sidecars(
            sorted(p for p in path.iterdir() if stat.S_ISREG(p.stat().st_mode) and not p.name.startswith("."))
        )
        if not found:
            raise DataError(f"{where}: the directory {path} holds no data file")
        return found
    check_data_file(path)
    return [path]


#: LightGBM's sidecar suffixes: ``X.query`` beside ``X`` holds X's group sizes, not data
SIDECAR_SUFFIXES = (".query", ".weight", ".position")


def _without_sidecars(files: list[Path]) -> list[Path]:
    """``files`` without the sidecars of other files in the list (``a.txt.query`` beside ``a.txt`` or
    beside a compressed ``a.txt.gz``, as :func:`~ltr.data.svmlight.load_svmlight` finds them).

    >>> files = [Path("a.txt"), Path("a.txt.query"), Path("b.query"), Path("c.txt.gz"), Path("c.txt.weight")]
    >>> [p.name for p in _without_sidecars(files)]
    ['a.txt', 'b.query', 'c.txt.gz']
    """
    names = {str(p) for p in files}

    def is_sidecar(p: Path) -> bool:
        base = str(p.with_suffix(""))
        return p.suffix in SIDECAR_SUFFIXES and (
            base in names or any(base + c in names for c in COMPRESSION_SUFFIXES)
        )

    return [p for p in files if not is_sidecar(p)]


def _line_qid(line: bytes) -> bytes | None:
    """The qid token of a data line, ``None`` for a blank or comment line (or one without qid)."""
    m = _QID.match(line)
    if m is None:
        return None
    token = m.group(1)
    try:
        return str(int(token)).encode()  # qid:007 and qid:7 are one query, as for the parser
    except ValueError:
        return token


def _line_start(f: Any, byte: int) -> int:
    """Offset of the start of the line holding ``byte`` (searching back a block at a time)."""
    end = byte
    while end > 0:
        lo = max(0, end - _SCAN_BLOCK)
        f.seek(lo)
        at = f.read(end - lo).rfind(b"\n")
        if at >= 0:
            return lo + at + 1
        end = lo
    return 0


def next_query_start(path: Path, offset: int) -> int:
    """The first query boundary at or after ``offset``: the start of the first line at or after it
    whose qid differs from the data line before it; the file size when the file ends first.

    Only the lines around ``offset`` up to that boundary are read.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_bytes(b"1 qid:1 1:1\\n0 qid:1 1:2\\n2 qid:2 1:3\\n")
    >>> next_query_start(p, 1), next_query_start(p, 24), next_query_start(p, 25)
    (24, 24, 36)
    """
    size = path.stat().st_size
    if offset <= 0:
        return 0
    with open(path, "rb") as f:
        pos = _line_start(f, offset - 1)
        f.seek(pos)
        previous: bytes | None = None
        while pos < size:
            line = f.readline()
            if not line:
                break
            qid = _line_qid(line)
            if qid is not None:
                if previous is not None and qid != previous and pos >= offset:
                    return pos
                previous = qid
            pos += len(line)
    return size


def byte_ranges(path: str | Path, n_parts: int) -> list[tuple[int, int]]:
    """At most ``n_parts`` non-empty byte ranges covering ``path``, each ending on a query boundary.

    Cut ``k`` is the first query start after byte ``size * k / n_parts``; cuts that coincide (a
    query longer than a part) are merged, so fewer ranges can come back.
    """
    path = Path(path)
    check_data_file(path)
    size = path.stat().st_size
    cuts = [0]
    for k in range(1, n_parts):
        cut = next_query_start(path, size * k // n_parts)
        if cuts[-1] < cut < size:
            cuts.append(cut)
    cuts.append(size)
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def file_stamp(path: Path, cuts: Sequence[int] = ()) -> FileStamp:
    """``path``'s size, modification time and a blake2b digest of the :data:`_STAMP_BYTES` at each end of
    the file and on each side of every cut in ``cuts``: a cheap content check (a few KiB read), which
    catches a file rewritten with the same size and modification time where it matters most, at the cuts.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.txt"
    >>> _ = p.write_bytes(b"1 qid:1 1:1\\n")
    >>> file_stamp(p).size
    12
    """
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for at in sorted({0, st.st_size, *(min(c, st.st_size) for c in cuts)}):
            lo = max(0, at - _STAMP_BYTES)
            f.seek(lo)
            h.update(f.read(min(st.st_size, at + _STAMP_BYTES) - lo))
    return FileStamp(st.st_size, st.st_mtime_ns, h.hexdigest())


def check_unchanged(shard: Shard) -> None:
    """A ``DataError`` naming the file when it no longer matches the stamp taken when ``shard`` was
    planned (size, modification time, the bytes around the cuts); nothing for a shard without a stamp."""
    planned = shard.stamp
    if planned is None:
        return
    try:
        cuts = [] if shard.whole else [shard.start, int(shard.stop or 0)]
        now: FileStamp | None = file_stamp(shard.path, cuts)
    except OSError:
        now = None
    if now == planned:
        return
    if now is None:
        what = "is gone"
    elif now.size != planned.size:
        what = f"is {now.size:,} bytes, was {planned.size:,}"
    elif now.mtime_ns != planned.mtime_ns:
        what = "was modified"
    else:
        what = "has other bytes at a shard boundary"
    raise DataError(
        f"{shard.path}: the file changed since its shards were planned ({what}); its byte ranges no "
        "longer hold whole queries. Leave data files unchanged while a run reads them, and run the "
        "command again to plan the shards on the file as it is now"
    )


def plan_shards(spec: Any, n_parts: int = 1, where: str = "data") -> list[Shard]:
    """Shards for a data spec (module docstring): one per file, or byte ranges of a single file; each
    carries its file's :func:`file_stamp` (with the cuts), checked again when it is read."""
    if n_parts < 1:
        raise ConfigError(f"{where}: n_parts must be at least 1, got {n_parts}")
    files = expand_sources(spec, where)
    if len(files) == 1 and n_parts > 1:
        return [
            Shard(files[0], a, b, file_stamp(files[0], [a, b])) for a, b in byte_ranges(files[0], n_parts)
        ]
    return [Shard(p, stamp=file_stamp(p)) for p in files]


def _first_data_line(path: Path) -> bytes:
    """The first line of ``path`` (decompressed) that is neither blank nor a comment; ``b""`` if none."""
    with open_input(path) as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith(b"#"):
                return line
    return b""


def number_sidecar_queries(shards: Sequence[Shard], options: Mapping[str, Any] | None = None) -> list[Shard]:
    """``shards`` with the query ids of sidecar-grouped files made unique across the files.

    A file without ``qid:`` tokens takes its queries from its ``.query`` sidecar, numbered 0, 1, … in
    that file, so two such files of one glob would both hold "query 0": refused as a query split across
    files, or, with ``regroup=True``, silently merged into one query. Here the sidecar files' queries are
    numbered one after another in shard order, as one file with the concatenated sidecar would number
    them; files with ``qid:`` tokens keep theirs.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("a.txt", "b.txt"):
    ...     _ = (d / name).write_text("1 1:1\\n0 1:2\\n2 1:3\\n")
    ...     _ = (d / (name + ".query")).write_text("2\\n1\\n")
    >>> [s.query_id_offset for s in number_sidecar_queries(plan_shards(d))]
    [0, 2]
    >>> [read_shard(s, {"engine": "python"}).query_ids.tolist() for s in number_sidecar_queries(plan_shards(d))]
    [[0, 1], [2, 3]]
    """
    given = (options or {}).get("query_file", "auto")
    out, next_id = [], 0
    for shard in shards:
        sidecar = _sidecar(shard.path, given, ".query") if shard.whole else None
        if sidecar is None or _line_qid(_first_data_line(shard.path)) is not None:
            out.append(shard)
            continue
        out.append(replace(shard, query_id_offset=next_id))
        next_id += int(read_query_sizes(sidecar).shape[0])
    return out


def _parse_options(options: Mapping[str, Any]) -> ParseOptions:
    declared = {k: v for k, v in options.items() if k in ParseOptions.__dataclass_fields__}
    if declared.get("huge") is None:
        declared.pop("huge", None)
    if declared.get("label_range") is not None:
        declared["label_range"] = tuple(declared["label_range"])
    return ParseOptions(**declared)


def _parse_range(shard: Shard, opts: ParseOptions, engine: str, n_threads: int | None) -> _pyparse.RawParse:
    """Parse bytes ``[start, stop)`` of a file; a failure is reported at its byte offset in the file."""
    with open(shard.path, "rb") as f:
        f.seek(shard.start)
        buf = f.read(int(shard.stop) - shard.start)
    try:
        if engine == "python" or (engine == "auto" and not _fast_available()):
            raw = _pyparse.parse_bytes(buf, opts)
        else:
            from ltr.data import _fastparse  # deferred: numba (~0.2 s to import) only for the fast engine

            with tempfile.NamedTemporaryFile(suffix=".txt") as tmp:
                tmp.write(buf)
                tmp.flush()
                raw = _fastparse.parse_path(Path(tmp.name), opts, n_threads=n_threads)
    except _pyparse.ParseFailure as fail:
        fail.line_start += shard.start
        fail.tok_start += shard.start
        fail.tok_end += shard.start
        raise _failure_to_error(shard.path, fail, opts) from None
    if raw.y.shape[0] == 0:
        raise DataError(f"{shard}: no data rows (only blank and comment lines)")
    return raw


def read_shard(
    shard: Shard, options: Mapping[str, Any] | None = None, name: str | None = None
) -> RankingData:
    """Parse one shard with ``load_svmlight`` ``options`` (``engine``, ``cache_dir``, parse options).

    A whole file goes through :func:`~ltr.data.svmlight.load_svmlight` itself (sidecars, cache);
    a byte range through the same parser, with errors at the file's own line numbers, and through
    the cache's entry for that range when ``cache_dir`` is given (``verify_cache``: keyed on every byte).
    """
    options = dict(options or {})
    check_unchanged(shard)  # the file as planned, or an error naming it (before reading)
    data = _read_shard(shard, options, name)
    check_unchanged(shard)  # and after: a file rewritten while it was read
    return data


def _read_shard(shard: Shard, options: dict[str, Any], name: str | None) -> RankingData:
    """:func:`read_shard` without the checks that the file is still as planned."""
    if shard.whole:
        data = load_svmlight(shard.path, name=name, **options)
        if shard.query_id_offset:
            data = replace(data, qid=data.qid + shard.query_id_offset)
        return data
    refused = [k for k in _WHOLE_FILE_ONLY if options.get(k) not in (None, "auto", False)]
    if refused:
        raise ConfigError(
            f"{shard.path}: {', '.join(refused)} need(s) the whole file; split the data into one file "
            "per shard instead of byte ranges"
        )
    for key in _WHOLE_FILE_ONLY:
        options.pop(key, None)
    cache_dir = options.pop("cache_dir", None)
    full_hash = bool(options.pop("verify_cache", False))
    engine = str(options.pop("engine", "auto"))
    n_threads = options.pop("n_threads", None)
    opts = _parse_options(options)

    def parse() -> _pyparse.RawParse:
        raw = _parse_range(shard, opts, engine, n_threads)
        if raw.qid is None:
            raise DataError(
                f"{shard.path}: byte-range shards need qid: tokens (a .query sidecar covers the whole file)"
            )
        return raw

    if cache_dir is None:
        return build_dataset(shard.path, parse(), opts, None, None, False, name)
    # deferred: the cache's numba checksum (~0.4 s to import) loads only when a cache is used
    from ltr.data.cache import load_cached_range

    start, stop = shard.start, int(shard.stop or 0)
    return load_cached_range(
        shard.path, start, stop, opts, parse, cache_dir=cache_dir, name=name, full_hash=full_hash
    )


def widen(data: RankingData, n_features: int) -> RankingData:
    """``data`` with ``n_features`` columns (zero columns appended): shards parsed apart infer their
    own width from their largest index, the split's width is the largest of them.

    >>> d = RankingData(X=np.ones((2, 1), np.float32), y=[0, 1], qid=[1, 1])
    >>> widen(d, 3).X.tolist()
    [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    have = data.X.shape[1]
    if have == n_features:
        return data
    if have > n_features:
        raise DataError(f"{data.name}: {have} features, more than the split's {n_features}")
    if sp.issparse(data.X):
        X = sp.csr_matrix((data.X.data, data.X.indices, data.X.indptr), shape=(data.X.shape[0], n_features))
    else:
        X = np.zeros((data.X.shape[0], n_features), dtype=data.X.dtype)
        X[:, :have] = data.X
    return replace(data, X=X)


def check_disjoint_queries(sources: Sequence[str], query_ids: Sequence[np.ndarray]) -> None:
    """Raise a ``DataError`` naming both shards when two shards hold rows of the same qid.

    >>> check_disjoint_queries(["a.txt", "b.txt"], [np.array([1, 2]), np.array([2, 3])])
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: qid 2 has rows in a.txt and in b.txt: a query must lie in one shard ...
    """
    owner: dict[int, int] = {}
    for i, ids in enumerate(query_ids):
        for q in np.unique(np.asarray(ids)).tolist():
            j = owner.setdefault(int(q), i)
            if j != i:
                raise DataError(
                    f"qid {q} has rows in {sources[j]} and in {sources[i]}: a query must lie in one shard "
                    "(write each query's rows into one file, or load with regroup=True "
                    "(data.regroup=true) to gather them)"
                )


def straddling_moves(query_ids: Sequence[np.ndarray]) -> dict[int, dict[int, list[int]]]:
    """``moves[j][i]``: the qids whose rows shard ``j`` hands to shard ``i``, the first shard holding
    them (each shard's ``query_ids`` given in shard order; shards without straddling queries are absent).

    >>> straddling_moves([np.array([1, 2]), np.array([2, 3]), np.array([2, 3, 4])])
    {1: {0: [2]}, 2: {0: [2], 1: [3]}}
    >>> straddling_moves([np.array([1]), np.array([2])])
    {}
    """
    shard_of = np.repeat(np.arange(len(query_ids)), [len(q) for q in query_ids])
    every = np.concatenate([np.asarray(q, dtype=np.int64) for q in query_ids]) if query_ids else shard_of
    _, first, inverse = np.unique(every, return_index=True, return_inverse=True)
    owner = shard_of[first][inverse]
    moves: dict[int, dict[int, list[int]]] = {}
    for at in np.flatnonzero(owner != shard_of).tolist():
        moves.setdefault(int(shard_of[at]), {}).setdefault(int(owner[at]), []).append(int(every[at]))
    return moves


def take_queries(data: RankingData, qids: Sequence[int]) -> RankingData:
    """The rows of the queries ``qids`` of ``data``, in ``data``'s order (on the worker holding it)."""
    return data.subset(np.flatnonzero(np.isin(data.query_ids, np.asarray(qids, dtype=np.int64))))


def _stack(parts: Sequence[RankingData]) -> dict[str, Any]:
    """The row arrays of ``parts`` one after another, widened to the widest (qids may repeat)."""
    width = max(p.n_features for p in parts)
    parts = [widen(p, width) for p in parts]
    if any(p.is_sparse for p in parts):
        X: Any = sp.vstack([sp.csr_matrix(p.X) for p in parts], format="csr")
    else:
        X = np.concatenate([p.X for p in parts])
    weighted = [p.weight is not None for p in parts]
    if any(weighted) and not all(weighted):
        raise DataError(
            f"{parts[0].name}: a query straddles shards with and without a .weight sidecar; "
            "give every file of the split its weights"
        )
    return {
        "X": X,
        "y": np.concatenate([p.y for p in parts]),
        "qid": np.concatenate([p.qid for p in parts]),
        "row_weight": np.concatenate([np.repeat(p.weight, p.group_sizes) for p in parts])
        if all(weighted)
        else None,
        "docid": None if any(p.docid is None for p in parts) else np.concatenate([p.docid for p in parts]),
        "position": None
        if any(p.position is None for p in parts)
        else np.concatenate([p.position for p in parts]),
    }


def regroup_shard(data: RankingData, give: Sequence[int], pieces: Sequence[RankingData]) -> RankingData:
    """``data`` without the queries ``give`` (owned by earlier shards), with the rows of ``pieces``
    (the rows of its own queries found in later shards, in shard order) appended to its rows of the
    same qid: queries keep ``data``'s order, each query's rows are in shard order — ``regroup_order``
    of the rows stacked in shard order.

    >>> d = RankingData(X=np.eye(3, dtype=np.float32), y=[1, 0, 2], qid=[5, 5, 6])
    >>> later = RankingData(X=np.ones((2, 2), np.float32), y=[3, 4], qid=[5, 5])
    >>> r = regroup_shard(d, [6], [later])
    >>> r.qid.tolist(), r.y.tolist(), r.X.tolist()
    ([5, 5, 5, 5], [1.0, 0.0, 3.0, 4.0], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    """
    keep = np.flatnonzero(~np.isin(data.query_ids, np.asarray(list(give), dtype=np.int64)))
    if not pieces:
        return data.subset(keep)
    rows = _stack([data.subset(keep), *pieces])
    order = regroup_order(rows["qid"])
    qid = rows["qid"][order]
    weight = None
    if rows["row_weight"] is not None:
        row_weight = rows["row_weight"][order]
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        weight = row_weight[starts]
        differs = np.flatnonzero(row_weight != np.repeat(weight, np.diff(np.r_[starts, qid.shape[0]])))
        if differs.size:
            raise DataError(
                f"{data.name}: qid {qid[differs[0]]} has different weights in the shards holding it"
            )
    return RankingData(
        X=rows["X"][order],
        y=rows["y"][order],
        qid=qid,
        name=data.name,
        weight=weight,
        docid=None if rows["docid"] is None else rows["docid"][order],
        position=None if rows["position"] is None else rows["position"][order],
    )

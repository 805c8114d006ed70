"""Binary cache of parsed ranking files: one folder of ``.npy`` arrays + a checksummed manifest.

Layout (``<cache_dir>/<file stem>-<key>/``)::

    manifest.json   format version, key, source identity, parse options, shapes, and for every
                    array file its size in bytes and a 64-bit checksum (:mod:`ltr.data._checksum`)
    y.npy qid.npy   labels (float64), query ids (int64)
    X.npy           dense features, or indptr.npy / indices.npy / data.npy for CSR
    weight.npy      per-query weights (only when a .weight sidecar was used)
    position.npy    per-row position ids (only when a .position sidecar was used)
    docid.npy       per-row comments (only when loaded with docid=True)

**Key** = hash of the source file's identity (size, ``st_mtime_ns`` and a blake2b digest of the
size plus 36 sampled blocks: the first and last MiB and 34 evenly spaced 64 KiB blocks — about
4 MiB read whatever the file size, so identifying a 2 GB MSLR fold costs milliseconds; a full
content hash would cost about as much as the reload it protects. Pass ``full_hash=True`` to hash
every byte), the same identity of every sidecar used, and every parse option. Any edit of the file
changes its mtime, and a different file put in its place differs in size or sampled bytes.

**Byte ranges** (the shards :mod:`ltr.data.shards` cuts one large file into) have entries of their
own: :func:`load_cached_range` keys bytes ``[start, stop)`` of a file on the same file identity,
the range and the parse options, and stores the range in the manifest; everything else (layout,
verification, atomic writes, the per-user fallback) is the whole file's. The planner cuts a file
the same way for the same number of parts, so a second run hits; another number of parts gives
other ranges and so other entries. The key hashes the file's identity, not the range's bytes: with
``verify_cache=True`` every worker reads the whole file once to hash it (reading, not parsing).

``verify_cache=True`` (``load_svmlight``; ``data.verify_cache`` in a config; ``--verify-cache`` in
``python -m ltr.data``) keys on a hash of every byte instead, for tools that rewrite files in place
keeping their size and mtime.

**Reload** memory-maps the ``.npy`` files (read-only; parallel jobs share the pages) after checking
the manifest's JSON shape and every file's size and checksum, which covers **every byte of the file**
(the ``.npy`` header with its dtype, byte order and shape included). A missing, truncated, corrupted
or malformed entry is reported in the log and rebuilt, never used.

**Writes are atomic**: an entry is written into a private temporary folder
(``.tmp-<key>.<host>.<pid>.*``) and renamed into place with one ``os.replace``; a job that loses the
race to another writer uses the winner's entry. Temporary folders left by a killed writer (its pid is
gone on this host, or older than a day) are removed by the next load through that cache.

**Read-only storage**: when the entry cannot be written to ``cache_dir`` (read-only mount, no
permission, disk full) it goes to the per-user cache (:func:`user_cache_dir`: ``$LTR_CACHE_DIR``,
else ``$XDG_CACHE_HOME/ltr``, else ``~/.cache/ltr``), and when that fails too the data is used
uncached; one warning per cache folder and process says which. Reads look in ``cache_dir`` first, then
in the per-user cache. Once ``cache_dir`` accepts writes again, an entry found only in the per-user
cache is moved there (copied, verified, then the per-user copies of that file are removed:
:func:`promote_entry`), and a new entry written to ``cache_dir`` removes the per-user entries of the
same file (older versions): the per-user cache is a stopgap, not a second home. The key still decides
what may be served: a per-user entry of an older version of the file is never used.

>>> import tempfile, pathlib
>>> from ltr.data._syntax import ParseOptions
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> _ = (tmp / "a.txt").write_text("1 qid:1 1:0.5\\n0 qid:1 2:1\\n")
>>> d1 = load_cached(tmp / "a.txt", ParseOptions(), cache_dir=tmp / "cache", engine="python")
>>> d2 = load_cached(tmp / "a.txt", ParseOptions(), cache_dir=tmp / "cache", engine="python")
>>> d1.fingerprint() == d2.fingerprint(), len(list((tmp / "cache").iterdir()))
(True, 1)
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import LtrError
from ltr.data._checksum import checksum
from ltr.data._pyparse import RawParse
from ltr.data._syntax import ParseOptions
from ltr.data.dataset import RankingData
from ltr.data.reading import build_dataset, parse_file

log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # 2: checksums cover whole files (the .npy headers too)
_SAMPLE_BLOCKS = 34
_BLOCK = 64 << 10
_EDGE = 1 << 20
STALE_SECONDS = 24 * 3600  # a temporary folder this old is a dead writer's, whatever its pid says
#: the array files an entry may list (anything else in a manifest makes it invalid)
ARRAY_FILES = frozenset(
    f"{n}.npy" for n in ("y", "qid", "X", "indptr", "indices", "data", "weight", "docid", "position")
)
_warned: set[str] = set()


class CacheInvalid(Exception):
    """An entry that must not be used (missing, truncated, corrupted, or for other inputs)."""


def file_identity(path: Path, *, full_hash: bool = False) -> dict:
    """Size, mtime and a content digest of ``path`` (sampled blocks by default, every byte if ``full_hash``)."""
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    h.update(str(st.st_size).encode())
    with open(path, "rb") as f:
        if full_hash or st.st_size <= 2 * _EDGE + _SAMPLE_BLOCKS * _BLOCK:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        else:
            h.update(f.read(_EDGE))
            for k in range(_SAMPLE_BLOCKS):
                f.seek(_EDGE + (st.st_size - 2 * _EDGE - _BLOCK) * k // (_SAMPLE_BLOCKS - 1))
                h.update(f.read(_BLOCK))
            f.seek(st.st_size - _EDGE)
            h.update(f.read(_EDGE))
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "digest": h.hexdigest(), "full": bool(full_hash)}


def cache_key(
    path: Path,
    opts: ParseOptions,
    *,
    query_file: Path | None = None,
    weight_file: Path | None = None,
    docid: bool = False,
    full_hash: bool = False,
    position_file: Path | None = None,
    byte_range: tuple[int, int] | None = None,
) -> tuple[str, dict]:
    """The entry key (32 hex digits) and the JSON-able description it hashes.

    ``byte_range=(start, stop)``: the key of the bytes ``[start, stop)`` of ``path`` (a shard).
    """
    desc = {
        "format": FORMAT_VERSION,
        "source": file_identity(path, full_hash=full_hash),
        "query_file": None if query_file is None else file_identity(query_file, full_hash=full_hash),
        "weight_file": None if weight_file is None else file_identity(weight_file, full_hash=full_hash),
        "docid": bool(docid),
        "options": opts.as_dict(),
    }
    if position_file is not None:  # only present when used, so older keys stay valid
        desc["position_file"] = file_identity(position_file, full_hash=full_hash)
    if byte_range is not None:  # likewise: whole-file keys are unchanged
        desc["range"] = [int(byte_range[0]), int(byte_range[1])]
    blob = json.dumps(desc, sort_keys=True).encode()
    return hashlib.blake2b(blob, digest_size=16).hexdigest(), desc


def entry_dir(cache_dir: Path, path: Path, key: str) -> Path:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", path.name)[:60]
    return Path(cache_dir) / f"{stem}-{key}"


def file_checksum(path: Path) -> str:
    """Checksum of every byte of ``path`` (for a ``.npy`` file: header and data)."""
    if path.stat().st_size == 0:
        return checksum(b"")
    return checksum(np.memmap(path, dtype=np.uint8, mode="r"))


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:40] or "host"


def _arrays(data: RankingData) -> dict[str, np.ndarray]:
    out = {"y": data.y, "qid": data.qid}
    if data.is_sparse:
        X = sp.csr_matrix(data.X)
        out.update(indptr=X.indptr, indices=X.indices, data=X.data)
    else:
        out["X"] = np.ascontiguousarray(data.X)
    if data.weight is not None:
        out["weight"] = data.weight
    if data.docid is not None:
        out["docid"] = np.asarray(data.docid, dtype=str)
    if data.position is not None:
        out["position"] = data.position
    return out


def write_entry(target: Path, data: RankingData, key: str, desc: dict, source: Path) -> Path:
    """Write ``data`` as a cache entry at ``target`` atomically; returns the entry that ends up there."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:8]}.{_host()}.{os.getpid()}.", dir=target.parent))
    try:
        files = {}
        for name, arr in _arrays(data).items():
            arr = np.ascontiguousarray(arr)
            np.save(tmp / f"{name}.npy", arr, allow_pickle=False)
            file = tmp / f"{name}.npy"
            files[file.name] = {"bytes": file.stat().st_size, "checksum": file_checksum(file)}
        manifest = {
            **desc,
            "key": key,
            "source_path": str(source),
            "shape": list(data.X.shape),
            "sparse": bool(data.is_sparse),
            "files": files,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        with open(tmp / "manifest.json", "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        _install(tmp, target, key)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _install(tmp: Path, target: Path, key: str) -> None:
    """Rename ``tmp`` to ``target``; move a bad existing entry out of the way first."""
    try:
        os.replace(tmp, target)
        return
    except OSError:
        pass
    try:  # someone else's entry is there: keep it if it is good
        read_entry(target, key)
        return
    except CacheInvalid:
        pass
    trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=target.parent))
    with contextlib.suppress(OSError):  # another process may have moved it already
        os.replace(target, trash / "old")
    with contextlib.suppress(OSError):  # another process may have installed its entry first
        os.replace(tmp, target)
    shutil.rmtree(trash, ignore_errors=True)


def _check_shape(manifest: object) -> dict:
    """``manifest`` as a dict of the shape :func:`write_entry` writes; raise :class:`CacheInvalid` otherwise."""
    if not isinstance(manifest, dict):
        raise CacheInvalid(f"manifest is a JSON {type(manifest).__name__}, not an object")
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise CacheInvalid("manifest lists no files")
    for name, info in files.items():
        if name not in ARRAY_FILES:
            raise CacheInvalid(f"manifest lists an unknown file {name!r}")
        if not (
            isinstance(info, dict)
            and type(info.get("bytes")) is int
            and isinstance(info.get("checksum"), str)
        ):
            raise CacheInvalid(f"manifest entry of {name} is not {{bytes: int, checksum: str}}")
    shape = manifest.get("shape")
    if not (isinstance(shape, list) and len(shape) == 2 and all(type(n) is int and n >= 0 for n in shape)):
        raise CacheInvalid(f"manifest shape {shape!r} is not [rows, features]")
    if not isinstance(manifest.get("sparse"), bool) or not isinstance(manifest.get("source_path"), str):
        raise CacheInvalid("manifest lacks a boolean 'sparse' or a 'source_path'")
    needed = {"y.npy", "qid.npy"} | (
        {"indptr.npy", "indices.npy", "data.npy"} if manifest["sparse"] else {"X.npy"}
    )
    if not needed <= set(files):
        raise CacheInvalid(f"manifest lacks {', '.join(sorted(needed - set(files)))}")
    return manifest


def read_manifest(entry: Path, key: str | None = None) -> dict:
    """Load an entry's manifest and check its JSON shape, its format version, its key (when given) and that
    every file it lists exists with the listed size; raise :class:`CacheInvalid` otherwise.

    Checksums are not read here: :func:`read_entry` verifies each file's checksum as it loads it.
    """
    try:
        manifest = json.loads((entry / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise CacheInvalid(f"unreadable manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise CacheInvalid("manifest is for another format")
    if key is not None and manifest.get("key") != key:
        raise CacheInvalid("manifest is for another key")
    _check_shape(manifest)
    for name, info in manifest["files"].items():
        p = entry / name
        try:
            size = p.stat().st_size
        except OSError:
            raise CacheInvalid(f"{name} is missing") from None
        if size != info["bytes"]:
            raise CacheInvalid(f"{name} has {size} bytes, manifest says {info['bytes']} (truncated?)")
    return manifest


def _load_arrays(entry: Path, manifest: dict) -> dict[str, np.ndarray]:
    out = {}
    for name, info in manifest["files"].items():
        try:
            got = file_checksum(entry / name)
            arr = np.load(entry / name, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CacheInvalid(f"{name} does not load ({e})") from None
        if got != info["checksum"]:
            raise CacheInvalid(f"{name} checksum {got} != manifest {info['checksum']} (corrupted)")
        out[name[: -len(".npy")]] = np.asarray(arr)
    return out


def read_entry(entry: Path, key: str | None = None, *, name: str | None = None) -> RankingData:
    """A verified entry as ``RankingData`` (arrays memory-mapped read-only); raise :class:`CacheInvalid`."""
    manifest = read_manifest(entry, key)
    a = _load_arrays(entry, manifest)
    try:
        shape = tuple(manifest["shape"])
        if manifest["sparse"]:
            X = sp.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=shape, copy=False)
        else:
            X = a["X"]
        if X.shape != shape:
            raise CacheInvalid(f"X has shape {X.shape}, manifest says {shape}")
        return RankingData(
            X=X,
            y=a["y"],
            qid=a["qid"],
            name=name or manifest["source_path"],
            weight=a.get("weight"),
            docid=a.get("docid"),
            position=a.get("position"),
        )
    except (KeyError, ValueError, TypeError, LtrError) as e:
        raise CacheInvalid(f"inconsistent entry ({e})") from None


def user_cache_dir() -> Path:
    """The per-user cache folder used when ``cache_dir`` is not writable: ``$LTR_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/ltr``, else ``~/.cache/ltr``.

    >>> import os
    >>> os.environ["LTR_CACHE_DIR"] = "/srv/ltr-cache"
    >>> str(user_cache_dir())
    '/srv/ltr-cache'
    >>> del os.environ["LTR_CACHE_DIR"]
    """
    if os.environ.get("LTR_CACHE_DIR"):
        return Path(os.environ["LTR_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ltr"


def _writer_gone(name: str, age: float) -> bool:
    """Whether the temporary folder ``name`` (``.tmp-<key>.<host>.<pid>.*`` or ``.trash-*``) is abandoned."""
    if age > STALE_SECONDS:
        return True
    parts = name.split(".")
    if name.startswith(".tmp-") and len(parts) >= 5 and parts[2] == _host() and parts[3].isdigit():
        try:
            os.kill(int(parts[3]), 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive but someone else's (EPERM)
            return False
    return False


def clean_leftovers(cache_dir: Path) -> list[Path]:
    """Remove the temporary folders of writers that died in ``cache_dir``; return what was removed."""
    removed = []
    now = time.time()
    try:
        with os.scandir(cache_dir) as it:
            found = [(e.name, e.stat(follow_symlinks=False).st_mtime) for e in it
                     if e.name.startswith((".tmp-", ".trash-")) and e.is_dir(follow_symlinks=False)]  # fmt: skip
    except OSError:
        return removed
    for name, mtime in found:
        if _writer_gone(name, now - mtime):
            shutil.rmtree(Path(cache_dir) / name, ignore_errors=True)
            if not (Path(cache_dir) / name).exists():
                log.info("removed %s, left by a writer that did not finish", Path(cache_dir) / name)
                removed.append(Path(cache_dir) / name)
    return removed


def _remove_entry(entry: Path) -> None:
    """Remove an entry in one rename (a reader never sees it half-deleted), then its files."""
    with contextlib.suppress(OSError):
        trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=entry.parent))
        os.replace(entry, trash / "old")
        shutil.rmtree(trash, ignore_errors=True)


def drop_entries_of(cache_dir: Path, source: Path, byte_range: list[int] | None = None) -> list[Path]:
    """Remove every entry of ``cache_dir`` made from the file ``source`` (any key) — of its bytes
    ``byte_range`` when given, of the whole file otherwise; return them.

    Used on the per-user cache once ``source``'s own ``cache_dir`` holds its entry: the per-user
    entries of that file (or range) are then either older versions (another key) or superseded copies.
    """
    removed = []
    for entry in sorted(Path(cache_dir).glob(f"{glob.escape(entry_dir(cache_dir, source, '').name)}*")):
        try:
            manifest = json.loads((entry / "manifest.json").read_text())
            if manifest.get("source_path") != str(source) or manifest.get("range") != byte_range:
                continue
        except (OSError, ValueError, AttributeError):
            continue
        _remove_entry(entry)
        removed.append(entry)
    return removed


def promote_entry(
    user_entry: Path, user_copy: RankingData, cache_dir: Path, key: str, *, name: str
) -> RankingData:
    """Serve an entry found only in the per-user cache from ``cache_dir`` once that accepts it.

    ``user_copy`` is the entry as already read (and verified). Its files are copied into ``cache_dir`` (atomically, like :func:`write_entry`), verified
    there by :func:`read_entry`, and the per-user copies of that source file are removed; while
    ``cache_dir`` still refuses writes, the per-user entry is served as before. The key is the same,
    so the entry describes the same file and options: nothing is re-parsed.
    """
    target = cache_dir / user_entry.name  # the same <file>-<key> name
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key[:8]}.{_host()}.{os.getpid()}.", dir=cache_dir))
    except OSError:
        return user_copy  # still read-only: the per-user entry stays the one in use
    try:
        for file in user_entry.iterdir():
            shutil.copy2(file, tmp / file.name)
        _install(tmp, target, key)
        promoted = read_entry(target, key, name=name)
    except (OSError, CacheInvalid):
        return user_copy
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("cache entry moved from the per-user cache %s to %s", user_entry, target)
    manifest = read_manifest(target, key)
    drop_entries_of(user_entry.parent, Path(manifest["source_path"]), manifest.get("range"))
    return promoted


def _warn_once(cache_dir: Path, message: str, *args: object) -> None:
    if str(cache_dir) not in _warned:
        _warned.add(str(cache_dir))
        log.warning(message, *args)


def load_cached(
    path: Path,
    opts: ParseOptions,
    *,
    cache_dir: str | Path,
    query_file: Path | None = None,
    weight_file: Path | None = None,
    docid: bool = False,
    engine: str = "auto",
    n_threads: int | None = None,
    name: str | None = None,
    full_hash: bool = False,
    position_file: Path | None = None,
) -> RankingData:
    """Load ``path`` through the cache: reuse a verified entry, or parse and write a new one.

    Looks in ``cache_dir``, then in :func:`user_cache_dir`; a new entry goes to the first of the two
    that accepts it (one warning when ``cache_dir`` does not), or nowhere (one warning) when neither does.
    """
    path = Path(path)
    key, desc = cache_key(path, opts, query_file=query_file, weight_file=weight_file, docid=docid,
                          full_hash=full_hash, position_file=position_file)  # fmt: skip

    def build() -> RankingData:
        raw = parse_file(path, opts, engine, n_threads)
        return build_dataset(
            path, raw, opts, query_file, weight_file, docid, name, position_file=position_file
        )

    return _through_cache(path, key, desc, Path(cache_dir), build, name or str(path))


def load_cached_range(
    path: Path,
    start: int,
    stop: int,
    opts: ParseOptions,
    parse: Callable[[], RawParse],
    *,
    cache_dir: str | Path,
    name: str | None = None,
    full_hash: bool = False,
) -> RankingData:
    """Bytes ``[start, stop)`` of ``path`` through the cache: a verified entry of that range, or
    ``parse()`` (the range's parser output) built into ``RankingData`` and written as a new entry.

    The key is :func:`cache_key` with ``byte_range``; lookups, checks and writes are
    :func:`load_cached`'s.

    >>> import tempfile, pathlib
    >>> from ltr.data import _pyparse
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "a.txt").write_bytes(b"1 qid:1 1:0.5\\n0 qid:2 2:1\\n")
    >>> parse = lambda: _pyparse.parse_bytes(b"0 qid:2 2:1\\n", ParseOptions())
    >>> d = load_cached_range(tmp / "a.txt", 14, 26, ParseOptions(), parse, cache_dir=tmp / "c")
    >>> again = load_cached_range(tmp / "a.txt", 14, 26, ParseOptions(), parse, cache_dir=tmp / "c")
    >>> [json.loads((e / "manifest.json").read_text())["range"] for e in (tmp / "c").iterdir()]
    [[14, 26]]
    >>> again.qid.tolist(), again.fingerprint() == d.fingerprint()
    ([2], True)
    """
    path = Path(path)
    key, desc = cache_key(path, opts, full_hash=full_hash, byte_range=(start, stop))
    label = name or f"{path} (bytes {start}-{stop})"

    def build() -> RankingData:
        return build_dataset(path, parse(), opts, None, None, False, label)

    return _through_cache(path, key, desc, Path(cache_dir), build, label)


def _through_cache(
    path: Path, key: str, desc: dict, cache_dir: Path, build: Callable[[], RankingData], name: str
) -> RankingData:
    """The verified entry ``key`` of ``path`` from ``cache_dir`` or the per-user cache, or ``build()``
    written as that entry (the first folder that accepts it)."""
    byte_range = desc.get("range")
    folders = [cache_dir]
    if user_cache_dir().absolute() != cache_dir.absolute():
        folders.append(user_cache_dir())
    for folder in folders:
        clean_leftovers(folder)
        entry = entry_dir(folder, path, key)
        if entry.exists():
            try:
                found = read_entry(entry, key, name=name)
            except CacheInvalid as why:
                _warn_once(entry, "cache entry %s is not usable (%s); rebuilding it", entry, why)
                continue
            if folder != cache_dir:  # the per-user stopgap: cache_dir takes it over once writable
                found = promote_entry(entry, found, cache_dir, key, name=name)
            return found
    data = build()
    failures: list[tuple[Path, str]] = []
    for folder in folders:
        try:
            write_entry(entry_dir(folder, path, key), data, key, desc, path)
        except OSError as e:
            failures.append((folder, e.strerror or str(e)))
            continue
        if folder != cache_dir:
            _warn_once(cache_dir, "cannot write the cache in %s (%s); caching in %s instead (set LTR_CACHE_DIR "
                       "to choose another place)", cache_dir, failures[0][1], folder)  # fmt: skip
        elif len(folders) > 1:
            drop_entries_of(folders[1], path, byte_range)  # per-user entries of this shard: other versions
        return data
    reasons = "; ".join(f"{folder}: {reason}" for folder, reason in failures)
    _warn_once(cache_dir, "cannot write the cache (%s); using the data without a cache", reasons)
    return data

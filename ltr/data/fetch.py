"""Download public LETOR datasets: progress bar, sha256 checks, bomb-safe extraction, all or nothing.

``fetch(name)`` installs a registry entry's archive into ``<dir>`` in one step that either happens
completely or not at all:

1. download into ``<parent>/.<dir name>.fetch-<pid>-*.part`` beside ``<dir>`` and check its sha256;
2. extract into a private ``<parent>/.<dir name>.fetch-<pid>-*`` folder, refusing any member that is
   absolute, climbs out with ``..``, or is a link or device, and any member or total that exceeds the
   :class:`ExtractLimits` (decompressed bytes, compression ratio: archive bombs) before its bytes are
   written;
3. check every extracted file against the registry's published sha256 (also for a mirror ``url``);
4. build the new ``<dir>`` beside it (hard links to the files already there, plus the archive's), and
   put it in place with one atomic rename (an atomic exchange when ``<dir>`` exists, on Linux), holding
   an ``flock`` on the parent folder (:func:`ltr.data.locking.flocked`) from the moment ``<dir>`` is
   looked at: two fetches into one folder at once both succeed, the second installing over the first.

Any failure (checksum, bad archive, disk full, limit, Ctrl-C) removes the temporary files and leaves
``<dir>`` exactly as it was; a process killed outright leaves only its ``.fetch-<pid>-*`` entries,
which the next fetch of the same folder removes (and, after a kill between the two renames of the
non-Linux fallback, uses to restore ``<dir>``). Licence-gated data (Yahoo!, LETOR 4.0) is not
downloaded: :class:`ManualDownload` carries the instructions (where to get it, where to put it).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
import stat
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from ltr.core.errors import DataError
from ltr.data.locking import flocked
from ltr.data.registry import Download, default_dir, download_for, get_spec, placement_hint


class ManualDownload(Exception):
    """The dataset cannot be downloaded automatically; the message says where to get it and put it."""


def _progress(
    out: IO[str] | None | str, label: str, done: int, total: int | None, final: bool = False
) -> None:
    """A one-line progress bar (``out="stderr"`` means the current ``sys.stderr``; None: silent)."""
    if out is None:
        return
    if isinstance(out, str):
        out = sys.stderr
    mb = done / 1e6
    if total:
        width = 30
        filled = int(width * done / total)
        text = f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {mb:,.1f}/{total / 1e6:,.1f} MB ({100 * done / total:.0f}%)"
    else:
        text = f"\r{label} {mb:,.1f} MB"
    out.write(text + ("\n" if final else ""))
    out.flush()


def download(
    url: str, directory: Path, *, sha256: str, label: str = "download", out: IO[str] | None | str = "stderr",
    timeout: float = 60.0, prefix: str = ".download-",
) -> Path:  # fmt: skip
    """Stream ``url`` into a temporary file ``directory/<prefix>*.part``, check its sha256; return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=".part")
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as f, urllib.request.urlopen(url, timeout=timeout) as resp:
            total = resp.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            done, last = 0, 0.0
            while True:
                block = resp.read(1 << 20)
                if not block:
                    break
                f.write(block)
                h.update(block)
                done += len(block)
                now = time.monotonic()
                if now - last > 0.2:
                    _progress(out, label, done, total)
                    last = now
            _progress(out, label, done, total, final=True)
        if total is not None and done != total:
            raise DataError(f"{url}: connection closed after {done} of {total} bytes")
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        tmp.unlink(missing_ok=True)
        raise DataError(f"{url}: download failed ({e})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    got = h.hexdigest()
    if got != sha256:
        tmp.unlink(missing_ok=True)
        raise DataError(f"{url}: sha256 mismatch: expected {sha256}, got {got}; the download was deleted")
    return tmp


GIB = 1 << 30
_RATIO_FLOOR = 1 << 20  # the ratio guard applies to members (and totals) above 1 MiB only


def _size(n: float) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


@dataclass(frozen=True)
class ExtractLimits:
    """Archive-bomb guard, checked from the archive's headers before a member's bytes are written.

    ``max_total``: decompressed bytes of the whole archive; ``max_member``: of one member;
    ``max_ratio``: decompressed / compressed size, per zip member and for the whole archive (only above
    1 MiB, so small text files never trip it). ``None`` switches a limit off. LETOR text compresses a
    few times, far below the default ratio.

    >>> ExtractLimits().max_ratio, ExtractLimits().max_total // GIB
    (100.0, 200)
    """

    max_total: float | None = 200 * GIB
    max_member: float | None = 100 * GIB
    max_ratio: float | None = 100.0

    def check(
        self, where: str, name: str, size: int, total: int, compressed: int | None, archive_size: int
    ) -> None:
        """Raise DataError when member ``name`` (``size`` bytes; ``total`` so far) breaks a limit."""
        if self.max_member is not None and size > self.max_member:
            _refuse(where, f"member {name!r} unpacks to {_size(size)}, over the per-member limit of "
                           f"{_size(self.max_member)}", "--max-member-size", "max_member")  # fmt: skip
        if self.max_total is not None and total > self.max_total:
            _refuse(where, f"the archive unpacks to more than {_size(self.max_total)} (at member {name!r}: "
                           f"{_size(total)})", "--max-size", "max_total")  # fmt: skip
        if self.max_ratio is None:
            return
        bomb = f"(limit {self.max_ratio:g}x): refused as a possible archive bomb"
        if compressed is not None and size > _RATIO_FLOOR and size > self.max_ratio * max(compressed, 1):
            _refuse(where, f"member {name!r} unpacks to {_size(size)}, {size / max(compressed, 1):,.0f}x its "
                           f"compressed size {bomb}", "--max-ratio", "max_ratio")  # fmt: skip
        if total > _RATIO_FLOOR and total > self.max_ratio * max(archive_size, 1):
            _refuse(where, f"the archive unpacks to {_size(total)} or more, {total / max(archive_size, 1):,.0f}x "
                           f"its size of {_size(archive_size)} {bomb}", "--max-ratio", "max_ratio")  # fmt: skip


def _refuse(where: str, what: str, flag: str, keyword: str) -> None:
    raise DataError(
        f"{where}: {what}; nothing was installed; if the archive is trusted, raise the limit with "
        f"{flag} (Python: limits=ExtractLimits({keyword}=...))"
    )


def _check_member_name(archive: Path, name: str) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise DataError(f"{archive}: unsafe member {name!r} (absolute path); nothing was extracted")
    if ".." in p.parts:
        raise DataError(
            f"{archive}: unsafe member {name!r} (path traversal with '..'); nothing was extracted"
        )
    return p


def _copy_member(src: IO[bytes], target: Path, expected: int, archive: Path, name: str) -> None:
    """Copy one member, never writing more than the ``expected`` bytes its header declared."""
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with open(target, "wb") as dst:
        while block := src.read(1 << 20):
            written += len(block)
            if written > expected:
                raise DataError(
                    f"{archive}: member {name!r} holds more than the {expected} bytes its header declares"
                )
            dst.write(block)
    if written != expected:
        raise DataError(f"{archive}: member {name!r} holds {written} bytes, its header declares {expected}")


def _extract_zip(archive: Path, into: Path, limits: ExtractLimits) -> None:
    archive_size = archive.stat().st_size
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        total = 0
        for info in infos:  # the central directory declares every size: check all before writing any
            _check_member_name(archive, info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise DataError(
                    f"{archive}: unsafe member {info.filename!r} (symbolic link); nothing was extracted"
                )
            if not info.is_dir():
                total += info.file_size
                limits.check(
                    str(archive), info.filename, info.file_size, total, info.compress_size, archive_size
                )
        for info in infos:
            rel = _check_member_name(archive, info.filename)
            target = into.joinpath(*rel.parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            with zf.open(info) as src:
                _copy_member(src, target, info.file_size, archive, info.filename)


def _extract_tar(archive: Path, into: Path, limits: ExtractLimits) -> None:
    archive_size = archive.stat().st_size
    total = 0
    with tarfile.open(archive, "r:*") as tf:
        for m in tf:  # headers are read one at a time: a member is vetted before its data is decompressed
            rel = _check_member_name(archive, m.name)
            target = into.joinpath(*rel.parts)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if not m.isfile():
                kind = "link" if (m.issym() or m.islnk()) else "special file"
                raise DataError(f"{archive}: unsafe member {m.name!r} ({kind}); nothing was extracted")
            total += m.size
            limits.check(str(archive), m.name, m.size, total, None, archive_size)
            src = tf.extractfile(m)
            if src is None:  # unreachable for a regular file; keeps type checkers informed
                raise DataError(f"{archive}: member {m.name!r} has no data")
            with src:
                _copy_member(src, target, m.size, archive, m.name)


def safe_extract(archive: Path, kind: str, into: Path, limits: ExtractLimits | None = None) -> list[Path]:
    """Extract a zip / tar.gz into ``into`` after vetting every member; return the files (relative).

    A damaged archive (bad zip, truncated or corrupt gzip, CRC mismatch) or a write error (disk full)
    raises :class:`~ltr.core.errors.DataError`; what was written to ``into`` is left for the caller to remove.
    """
    limits = limits or ExtractLimits()
    if zipfile.is_zipfile(archive):  # what the file is, not what its name or the registry says
        kind = "zip"
    elif kind == "zip" and tarfile.is_tarfile(archive):
        kind = "tar"
    try:
        if kind == "zip":
            _extract_zip(archive, into, limits)
        elif kind in ("tar.gz", "tar"):
            _extract_tar(archive, into, limits)
        else:
            raise DataError(f"{archive}: unknown archive kind {kind!r}")
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError) as e:
        why = str(e).splitlines()[0].rstrip(":")
        raise DataError(f"{archive}: not a valid {kind} archive ({why}); nothing was installed") from None
    except OSError as e:  # disk full, quota, a member whose path collides with another's, bad gzip data
        raise DataError(f"{archive}: extraction failed ({e}); nothing was installed") from None
    return sorted(p.relative_to(into) for p in into.rglob("*") if p.is_file())


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _verify_files(url: str, root: Path, files: Mapping[str, str]) -> None:
    """Check each ``files`` entry (relative path -> sha256) under ``root``; one error lists every problem."""
    wrong, missing = [], []
    for rel, want in files.items():
        p = root / rel
        if not p.is_file():
            missing.append(rel)
        elif (got := _sha256_file(p)) != want:
            wrong.append(f"{rel} has sha256 {got}, expected {want}")
    if missing:
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        wrong.append(f"the archive has no {shown}")
    if wrong:
        raise DataError(f"{url}: {'; '.join(wrong)}; nothing was installed")


def _link_tree(src: Path, dst: Path) -> None:
    """Recreate folder ``src`` at ``dst`` with hard links to its files (a copy where links fail).

    Folders keep their permissions and times (set after they are filled).
    """
    dst.mkdir()
    for entry in os.scandir(src):
        target = dst / entry.name
        if entry.is_dir(follow_symlinks=False):
            _link_tree(Path(entry.path), target)
            continue
        try:
            os.link(entry.path, target, follow_symlinks=False)
        except OSError:  # a file system without hard links
            shutil.copy2(entry.path, target, follow_symlinks=False)
    shutil.copystat(src, dst)


def _renameat2_exchange(a: Path, b: Path) -> bool:
    """Atomically swap paths ``a`` and ``b`` (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _put_in_place(new: Path, directory: Path, scratch: Path) -> None:
    """Make ``new`` become ``directory`` in one step; a previous ``directory`` ends up under ``scratch``."""
    if not directory.exists():
        os.rename(new, directory)
        return
    if _renameat2_exchange(new, directory):
        return
    old = scratch / "old"  # fallback: two renames; a kill between them is undone by _clean_leftovers
    os.rename(directory, old)
    try:
        os.rename(new, directory)
    except BaseException:
        os.rename(old, directory)
        raise


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _scratch_prefix(directory: Path) -> str:
    return f".{directory.name}.fetch-"


def _clean_leftovers(directory: Path) -> None:
    """Remove what a killed fetch of ``directory`` left beside it (restoring ``directory`` if needed)."""
    prefix = _scratch_prefix(directory)
    for entry in directory.parent.iterdir():  # not glob: the folder's name may hold [ or *
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or _pid_alive(int(pid)):
            continue
        old = entry / "old"
        if not directory.exists() and old.is_dir():
            os.rename(old, directory)
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def install_archive(
    url: str, sha256: str, kind: str, directory: Path, *, files: Mapping[str, str] | None = None,
    label: str = "download", out: IO[str] | None | str = "stderr", limits: ExtractLimits | None = None,
) -> list[Path]:  # fmt: skip
    """Download, verify, extract safely and install into ``directory`` all at once; returns the installed files.

    ``files`` maps paths inside the archive to their sha256; each must be present and match. Files
    already in ``directory`` that the archive does not hold are kept. On any error ``directory`` is
    left exactly as it was (not created if it did not exist) and no temporary file remains.
    """
    directory = Path(directory).absolute()
    if directory.exists() and not directory.is_dir():
        raise DataError(f"{directory}: exists and is not a folder; cannot install {url} there")
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        _clean_leftovers(directory)
        with tempfile.TemporaryFile(dir=directory.parent):  # the download and new folder go beside it
            pass
    except OSError as e:
        raise DataError(f"{directory}: cannot write beside it in {directory.parent} ({e})") from None
    prefix = f"{_scratch_prefix(directory)}{os.getpid()}-"
    archive = download(url, directory.parent, sha256=sha256, label=label, out=out, prefix=prefix)
    scratch = Path(tempfile.mkdtemp(dir=directory.parent, prefix=prefix))
    try:
        extracted = scratch / "extracted"
        extracted.mkdir()
        try:
            rel_files = safe_extract(archive, kind, extracted, limits)
        except DataError as e:  # name the URL, not the temporary file (which is deleted)
            raise DataError(str(e).replace(str(archive), url)) from None
        _verify_files(url, extracted, files or {})
        new = scratch / "new"
        try:
            # one install at a time per folder: a second fetch into the same folder waits here, then
            # builds on what the first one installed (both succeed, neither sees a half-built folder)
            with flocked(directory.parent):
                if directory.exists():
                    _link_tree(directory, new)
                else:
                    new.mkdir()
                for rel in rel_files:
                    dest = new / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(extracted / rel, dest)
                record = {"url": url, "sha256": sha256, "files": [r.as_posix() for r in rel_files],
                          "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
                (new / ".ltr-fetch.json").write_text(json.dumps(record, indent=1))
                _put_in_place(new, directory, scratch)
        except OSError as e:
            raise DataError(f"{url}: cannot install into {directory} ({e}); nothing was installed") from None
        return [directory / rel for rel in rel_files]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        archive.unlink(missing_ok=True)


def checked_files(name: str, published: Mapping[str, str], given: Mapping[str, str] | None) -> dict[str, str]:
    """The per-file sha256 to check: the registry's published ones plus ``given`` (which may not contradict them).

    >>> checked_files("x", {"a.txt": "1" * 64}, {"b.txt": "2" * 64}) == {"a.txt": "1" * 64, "b.txt": "2" * 64}
    True
    """
    out = dict(published)
    for rel, want in (given or {}).items():
        if rel in published and published[rel] != want:
            raise DataError(
                f"{name}: the sha256 given for {rel} ({want}) differs from the published {published[rel]}; "
                "files inside an archive are always checked against the published checksums"
            )
        out[rel] = want
    return out


def fetch(
    name: str,
    directory: str | Path | None = None,
    *,
    data_dir: str | Path = "data",
    variant: str | None = None,
    url: str | None = None,
    sha256: str | None = None,
    files: Mapping[str, str] | None = None,
    out: IO[str] | None | str = "stderr",
    limits: ExtractLimits | None = None,
) -> list[Path]:
    """Fetch registry entry ``name`` into ``directory`` (default ``<data_dir>/<folder>``).

    ``url`` / ``sha256`` name a mirror of the archive; its files are still checked against the
    registry's published per-file sha256, plus ``files`` (relative path -> sha256) for any others.
    ``limits`` bounds the decompressed size (:class:`ExtractLimits`). Raises :class:`ManualDownload`
    for licence-gated data.
    """
    spec = get_spec(name)
    directory = Path(directory) if directory is not None else default_dir(name, data_dir)
    cfg = {"variant": variant} if variant is not None else {}
    dl: Download | None = download_for(name, cfg)
    if dl is None and url is None:
        raise ManualDownload(placement_hint(spec, directory))
    published = dl.files if dl is not None else {}
    if url is not None:
        if not sha256:
            raise DataError(f"{name}: a download URL needs its sha256 (--sha256) so the file can be verified")
        kind = dl.archive if dl is not None else ("zip" if url.endswith(".zip") else "tar.gz")
        dl = Download(url=url, sha256=sha256, archive=kind)
    if dl is None:  # unreachable: the two branches above cover it; keeps type checkers informed
        raise ManualDownload(placement_hint(spec, directory))
    return install_archive(dl.url, dl.sha256, dl.archive, directory, files=checked_files(name, published, files),
                           label=name, out=out, limits=limits)  # fmt: skip

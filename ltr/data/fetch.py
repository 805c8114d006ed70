"""Download public LETOR datasets: progress bar, sha256 check, safe extraction, nothing partial left.

``fetch(name)`` downloads the registry entry's archive into ``<dir>/.download-*.part``, checks its
sha256 (a mismatch deletes it), extracts it into a private ``<dir>/.extract-*`` folder while
refusing any member that is absolute, climbs out with ``..``, or is a link or device, checks the
published sha256 of the extracted files, and only then moves the files into ``<dir>`` (one atomic
rename each). On any failure the temporary files are removed, so ``<dir>`` never holds a partial
file. Licence-gated data (Yahoo!, LETOR 4.0) is not downloaded: :class:`ManualDownload` carries the
instructions (where to get it, where to put it).
"""

from __future__ import annotations

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
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import IO

from ltr.data.registry import Download, default_dir, download_for, get_spec, placement_hint
from ltr.errors import DataError


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
    timeout: float = 60.0,
) -> Path:  # fmt: skip
    """Stream ``url`` into a temporary file in ``directory``, check its sha256; return the temp path."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=".download-", suffix=".part")
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


def _check_member_name(archive: Path, name: str) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise DataError(f"{archive}: unsafe member {name!r} (absolute path); nothing was extracted")
    if ".." in p.parts:
        raise DataError(
            f"{archive}: unsafe member {name!r} (path traversal with '..'); nothing was extracted"
        )
    return p


def _extract_zip(archive: Path, into: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        for info in infos:
            _check_member_name(archive, info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise DataError(
                    f"{archive}: unsafe member {info.filename!r} (symbolic link); nothing was extracted"
                )
        for info in infos:
            rel = _check_member_name(archive, info.filename)
            target = into.joinpath(*rel.parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)


def _extract_tar(archive: Path, into: Path) -> None:
    with tarfile.open(archive, "r:*") as tf:
        members = tf.getmembers()
        for m in members:
            _check_member_name(archive, m.name)
            if not (m.isfile() or m.isdir()):
                kind = "link" if (m.issym() or m.islnk()) else "special file"
                raise DataError(f"{archive}: unsafe member {m.name!r} ({kind}); nothing was extracted")
        tf.extractall(into, members=members, filter="data")


def safe_extract(archive: Path, kind: str, into: Path) -> list[Path]:
    """Extract a zip / tar.gz into ``into`` after vetting every member; return the files (relative)."""
    if kind == "zip":
        _extract_zip(archive, into)
    elif kind in ("tar.gz", "tar"):
        _extract_tar(archive, into)
    else:
        raise DataError(f"{archive}: unknown archive kind {kind!r}")
    return sorted(p.relative_to(into) for p in into.rglob("*") if p.is_file())


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def install_archive(
    url: str, sha256: str, kind: str, directory: Path, *, files: Mapping[str, str] | None = None,
    label: str = "download", out: IO[str] | None | str = "stderr",
) -> list[Path]:  # fmt: skip
    """Download, verify, extract safely and move into ``directory``; returns the installed files."""
    directory = Path(directory)
    archive = download(url, directory, sha256=sha256, label=label, out=out)
    staging = Path(tempfile.mkdtemp(dir=directory, prefix=".extract-"))
    try:
        try:
            rel_files = safe_extract(archive, kind, staging)
        except DataError as e:  # name the URL, not the temporary file (which is deleted)
            raise DataError(str(e).replace(str(archive), url)) from None
        for rel, want in (files or {}).items():
            p = staging / rel
            if not p.is_file():
                raise DataError(f"{url}: the archive has no {rel}")
            got = _sha256_file(p)
            if got != want:
                raise DataError(f"{url}: {rel} has sha256 {got}, expected {want}")
        installed = []
        for rel in rel_files:
            dest = directory / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, dest)
            installed.append(dest)
        record = {"url": url, "sha256": sha256, "files": [str(r) for r in rel_files],
                  "fetched": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
        (directory / ".ltr-fetch.json").write_text(json.dumps(record, indent=1))
        return installed
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        archive.unlink(missing_ok=True)


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
) -> list[Path]:
    """Fetch registry entry ``name`` into ``directory`` (default ``<data_dir>/<folder>``).

    ``url`` / ``sha256`` / ``files`` override the registry (a mirror); ``files`` maps relative paths
    to their expected sha256. Raises :class:`ManualDownload` for licence-gated data.
    """
    spec = get_spec(name)
    directory = Path(directory) if directory is not None else default_dir(name, data_dir)
    cfg = {"variant": variant} if variant is not None else {}
    dl: Download | None = download_for(name, cfg)
    if dl is None and url is None:
        raise ManualDownload(placement_hint(spec, directory))
    if url is not None:
        if not sha256:
            raise DataError(f"{name}: a download URL needs its sha256 (--sha256) so the file can be verified")
        kind = dl.archive if dl is not None else ("zip" if url.endswith(".zip") else "tar.gz")
        dl = Download(url=url, sha256=sha256, archive=kind, files=dict(files or {}))
    if dl is None:  # unreachable: the two branches above cover it; keeps type checkers informed
        raise ManualDownload(placement_hint(spec, directory))
    return install_archive(dl.url, dl.sha256, dl.archive, directory,
                           files=dl.files if files is None else files, label=name, out=out)  # fmt: skip

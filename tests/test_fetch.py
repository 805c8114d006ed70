"""Downloading and safe extraction, against a local HTTP server on 127.0.0.1 started by the test.

No other host is contacted: every URL below points at the local server.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData, write_svmlight
from ltr.data import fetch as fetch_module
from ltr.data.__main__ import main, parse_limit
from ltr.data.fetch import ManualDownload, fetch, install_archive
from ltr.data.registry import ISTELLA_DOWNLOADS, REGISTRY, download_for, load_dataset


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _letor_bytes(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    d = RankingData(
        X=rng.random((8, 136)).astype(np.float32), y=rng.integers(0, 5, 8), qid=np.repeat([1, 2], 4)
    )
    with tempfile.TemporaryDirectory() as t:
        return write_svmlight(d, Path(t) / "x.txt").read_bytes()


def _zip(members: dict[str, bytes], symlink: str | None = None, deflate: bool = False) -> bytes:
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = 0o120777 << 16
            zf.writestr(info, "/etc/passwd")
    return bio.getvalue()


def _tar(members: dict[str, bytes], link: tuple[str, str] | None = None) -> bytes:
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link[0])
            info.type = tarfile.SYMTYPE
            info.linkname = link[1]
            tf.addfile(info)
    return bio.getvalue()


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*")) if directory.exists() else []


def _publish(monkeypatch, name: str, files: dict[str, bytes], variant: str | None = None) -> None:
    """Make the registry publish ``files``' sha256 for ``name`` (the real ones describe the real data)."""
    if variant is not None:
        dl = ISTELLA_DOWNLOADS[variant]
        monkeypatch.setitem(
            ISTELLA_DOWNLOADS, variant, replace(dl, files={k: _sha(v) for k, v in files.items()})
        )
        return
    spec = REGISTRY[name]
    assert spec.download is not None
    published = replace(spec.download, files={k: _sha(v) for k, v in files.items()})
    monkeypatch.setitem(REGISTRY, name, replace(spec, download=published))


def test_fetch_zip_end_to_end(server, tmp_path, capsys, monkeypatch):
    root, base = server
    files = {f"Fold1/{n}.txt": _letor_bytes(i) for i, n in enumerate(["train", "vali", "test"])}
    _publish(monkeypatch, "mslr_web10k", files)
    blob = _zip(files)
    (root / "mslr.zip").write_bytes(blob)
    dest = tmp_path / "MSLR-WEB10K"
    got = fetch("mslr_web10k", dest, url=f"{base}/mslr.zip", sha256=_sha(blob))
    assert sorted(p.relative_to(dest).as_posix() for p in got) == sorted(files)
    assert (dest / "Fold1" / "vali.txt").read_bytes() == files["Fold1/vali.txt"]
    assert "%" in capsys.readouterr().err  # progress bar
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MSLR-WEB10K", "served"]  # no temporary left
    out = load_dataset({"kind": "mslr_web10k", "dir": str(dest), "fold": 1})
    assert out["train"].n_features == 136 and out["test"].n_queries == 2


def test_fetch_tar_for_istella_variant(server, tmp_path, monkeypatch):
    root, base = server
    files = {
        "sample/train.txt": _letor_bytes(1),
        "sample/vali.txt": _letor_bytes(2),
        "sample/test.txt": _letor_bytes(3),
    }
    _publish(monkeypatch, "istella", files, variant="s")
    blob = _tar(files)
    (root / "ist.tar.gz").write_bytes(blob)
    dest = tmp_path / "istella"
    fetch("istella", dest, variant="s", url=f"{base}/ist.tar.gz", sha256=_sha(blob), out=None)
    assert (dest / "sample" / "test.txt").read_bytes() == files["sample/test.txt"]


def test_bad_checksum_leaves_nothing(server, tmp_path):
    root, base = server
    blob = _zip({"Fold1/train.txt": b"1 qid:1 1:1\n"})
    (root / "a.zip").write_bytes(blob)
    dest = tmp_path / "d"
    with pytest.raises(
        DataError, match=r"sha256 mismatch: expected 0+, got [0-9a-f]{64}; the download was deleted"
    ):
        install_archive(f"{base}/a.zip", "0" * 64, "zip", dest, out=None)
    assert _leftovers(dest) == []


def test_bad_file_checksum_inside_archive_leaves_nothing(server, tmp_path):
    root, base = server
    blob = _zip({"Fold1/train.txt": b"1 qid:1 1:1\n"})
    (root / "a.zip").write_bytes(blob)
    dest = tmp_path / "d"
    with pytest.raises(DataError, match=r"Fold1/train\.txt has sha256 .*, expected f+"):
        install_archive(
            f"{base}/a.zip", _sha(blob), "zip", dest, files={"Fold1/train.txt": "f" * 64}, out=None
        )
    assert _leftovers(dest) == []


@pytest.mark.parametrize(
    ("kind", "blob", "why"),
    [
        ("zip", _zip({"ok.txt": b"x", "../evil.txt": b"pwned"}), r"'\.\./evil\.txt' \(path traversal"),
        ("zip", _zip({"Fold1/../../evil.txt": b"pwned"}), r"path traversal"),
        ("zip", _zip({"/tmp/evil.txt": b"pwned"}), r"absolute path"),
        ("zip", _zip({"ok.txt": b"x"}, symlink="link"), r"'link' \(symbolic link\)"),
        ("tar.gz", _tar({"ok.txt": b"x", "../evil.txt": b"pwned"}), r"path traversal"),
        ("tar.gz", _tar({"/abs/evil.txt": b"pwned"}), r"absolute path"),
        ("tar.gz", _tar({"ok.txt": b"x"}, link=("lnk", "/etc/passwd")), r"'lnk' \(link\)"),
    ],
)
def test_malicious_archives_are_refused(server, tmp_path, kind, blob, why):
    root, base = server
    (root / "m.bin").write_bytes(blob)
    dest = tmp_path / "inner" / "dest"
    with pytest.raises(DataError, match=rf"^{base}/m\.bin: unsafe member .*{why}"):
        install_archive(f"{base}/m.bin", _sha(blob), kind, dest, out=None)
    assert _leftovers(dest) == []  # nothing extracted, no partial download
    assert not (tmp_path / "inner" / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()


def test_http_errors_leave_nothing(server, tmp_path):
    _, base = server
    dest = tmp_path / "d"
    with pytest.raises(DataError, match=r"missing\.zip: download failed \(HTTP Error 404"):
        install_archive(f"{base}/missing.zip", "0" * 64, "zip", dest, out=None)
    assert _leftovers(dest) == []


def test_gated_and_url_without_checksum(tmp_path, capsys):
    with pytest.raises(ManualDownload, match=r"Webscope.*into " + str(tmp_path)):
        fetch("yahoo_set2", tmp_path)
    assert main(["fetch", "mq2008", "--dir", str(tmp_path)]) == 2
    assert "click-through licence" in capsys.readouterr().out
    with pytest.raises(DataError, match="needs its sha256"):
        fetch("mslr_web10k", tmp_path, url="http://127.0.0.1:9/x.zip")


def test_cli_fetch_from_mirror(server, tmp_path, capsys, monkeypatch):
    root, base = server
    files = {"Fold1/train.txt": _letor_bytes(4)}
    _publish(monkeypatch, "mslr_web30k", files)
    blob = _zip(files)
    (root / "m.zip").write_bytes(blob)
    rc = main(
        [
            "fetch",
            "mslr_web30k",
            "--dir",
            str(tmp_path / "m"),
            "--url",
            f"{base}/m.zip",
            "--sha256",
            _sha(blob),
        ]
    )
    assert rc == 0
    assert "Fold1/train.txt" in capsys.readouterr().out


# --- all or nothing -------------------------------------------------------------------------------


def _snapshot(directory: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every entry under ``directory``: content (None for folders) and mtime in ns."""
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
    }


def _existing_dest(tmp_path: Path) -> Path:
    dest = tmp_path / "data" / "MSLR-WEB10K"
    (dest / "Fold1").mkdir(parents=True)
    (dest / "Fold1" / "train.txt").write_bytes(b"old train\n")
    (dest / "mine.txt").write_bytes(b"a user's own file\n")
    (dest / "zz" / "c.txt").mkdir(parents=True)  # a folder where the archive has a file
    (dest / "zz" / "c.txt" / "keep").write_bytes(b"k")
    return dest


def _corrupt_member_zip(members: dict[str, bytes]) -> bytes:
    """A zip whose last member's stored bytes are altered (a CRC error part-way through extraction)."""
    blob = bytearray(_zip(members))
    last = list(members.values())[-1]
    at = bytes(blob).rindex(last)
    blob[at] ^= 0xFF
    return bytes(blob)


_GOOD = {"Fold1/train.txt": b"new train\n" * 1000, "Fold1/vali.txt": b"new vali\n" * 1000}


@pytest.mark.parametrize(
    ("blob", "files", "why"),
    [
        (_zip(_GOOD), {"Fold1/vali.txt": "f" * 64}, r"Fold1/vali\.txt has sha256 .*, expected f+"),
        (_zip(_GOOD), {"Fold9/test.txt": "f" * 64}, r"the archive has no Fold9/test\.txt"),
        (_corrupt_member_zip({**_GOOD, "Fold1/test.txt": b"t" * 5000}), None, r"not a valid zip archive"),
        (_zip(_GOOD)[:-30], None, r"not a valid zip archive"),
        (b"<html>a login page, not an archive</html>", None, r"not a valid zip archive"),
        (_tar(_GOOD)[:-200], None, r"not a valid tar\.gz archive"),
        # the archive's zz/c.txt collides with the folder zz/c.txt/ already there: fails after other
        # files were ready to move (today: those are moved, then a bare IsADirectoryError)
        (_zip({**_GOOD, "zz/c.txt": b"c"}), None, r"cannot install into .*MSLR-WEB10K"),
    ],
    ids=[
        "member-checksum",
        "member-missing",
        "crc-error",
        "truncated-zip",
        "not-an-archive",
        "truncated-tgz",
        "collision",
    ],
)
def test_failed_install_leaves_destination_exactly_as_it_was(server, tmp_path, blob, files, why):
    root, base = server
    kind = "tar.gz" if blob[:2] == b"\x1f\x8b" else "zip"
    (root / "a.bin").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    before = _snapshot(dest)
    with pytest.raises(DataError, match=why):
        install_archive(f"{base}/a.bin", _sha(blob), kind, dest, files=files, out=None)
    assert _snapshot(dest) == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["MSLR-WEB10K"]  # no temporary beside it
    if "cannot install" in why:
        return
    fresh = tmp_path / "fresh" / "dest"
    with pytest.raises(DataError, match=why):
        install_archive(f"{base}/a.bin", _sha(blob), kind, fresh, files=files, out=None)
    assert not fresh.exists() and list(fresh.parent.iterdir()) == []  # not even created


def test_install_over_existing_keeps_other_files_and_replaces_named_ones(server, tmp_path):
    root, base = server
    blob = _zip(_GOOD)
    (root / "a.zip").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    mine = (dest / "mine.txt").stat()
    install_archive(
        f"{base}/a.zip", _sha(blob), "zip", dest, files={k: _sha(v) for k, v in _GOOD.items()}, out=None
    )
    assert (dest / "Fold1" / "train.txt").read_bytes() == _GOOD["Fold1/train.txt"]
    assert (dest / "Fold1" / "vali.txt").read_bytes() == _GOOD["Fold1/vali.txt"]
    assert (dest / "mine.txt").read_bytes() == b"a user's own file\n"
    assert (dest / "mine.txt").stat().st_mtime_ns == mine.st_mtime_ns  # linked, not rewritten
    assert (dest / "zz" / "c.txt" / "keep").read_bytes() == b"k"
    assert json.loads((dest / ".ltr-fetch.json").read_text())["files"] == sorted(_GOOD)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["MSLR-WEB10K"]


_CHILD = """
import json, os, sys, zipfile
from pathlib import Path
from ltr.data import fetch
from ltr.core.errors import DataError
url, sha, kind, dest, marker, limits = sys.argv[1:7]
if marker != "-":  # pause part-way through extracting (after some bytes are written) so the test can kill us
    real_read, reads = zipfile.ZipExtFile.read, [0]
    def read(self, n=-1):
        reads[0] += 1
        if reads[0] == 3:
            Path(marker).write_text("extracting")
            import time; time.sleep(60)
        return real_read(self, n)
    zipfile.ZipExtFile.read = read
try:
    kw = {"limits": fetch.ExtractLimits(**json.loads(limits))} if hasattr(fetch, "ExtractLimits") else {}
    fetch.install_archive(url, sha, kind, Path(dest), out=None, **kw)
    error = None
except DataError as e:
    error = str(e)
wchar = int(dict(l.split(": ") for l in Path("/proc/self/io").read_text().splitlines())["wchar"])
print(json.dumps({"error": error, "wchar": wchar}))
"""


def _child(url, sha, kind, dest, marker="-", limits="{}", **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, url, sha, kind, str(dest), str(marker), limits],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc")
def test_killed_mid_extraction_leaves_destination_untouched_and_next_fetch_cleans_up(server, tmp_path):
    root, base = server
    members = {f"Fold1/{n}.txt": os.urandom(3 << 20) for n in ("train", "vali", "test")}
    blob = _zip(members)
    (root / "a.zip").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    before = _snapshot(dest)
    marker = tmp_path / "marker"
    proc = _child(f"{base}/a.zip", _sha(blob), "zip", dest, marker)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the child never started extracting"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _snapshot(dest) == before  # killed while writing: the destination was never touched
    leftovers = [p.name for p in dest.parent.iterdir() if p.name != "MSLR-WEB10K"]
    assert leftovers and all(n.startswith(f".MSLR-WEB10K.fetch-{proc.pid}-") for n in leftovers)
    install_archive(f"{base}/a.zip", _sha(blob), "zip", dest, out=None)  # the next fetch cleans them
    assert sorted(p.name for p in dest.parent.iterdir()) == ["MSLR-WEB10K"]
    assert (dest / "Fold1" / "test.txt").read_bytes() == members["Fold1/test.txt"]
    assert (dest / "mine.txt").read_bytes() == b"a user's own file\n"


# --- archive bombs --------------------------------------------------------------------------------

_BOMB = 24 << 20  # 24 MiB of zeros: ~24 KB compressed (~1000x, the limit is 100x); 24x the write bound


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    zeros = bytes(_BOMB)
    many = {f"part{i:03d}.txt": bytes(2 << 20) for i in range(20)}  # 20 x 2 MiB: each and all > 100x
    return {"zip": _zip({"Fold1/train.txt": zeros}, deflate=True), "tar.gz": _tar({"Fold1/train.txt": zeros}),
            "zip-many": _zip(many, deflate=True), "tar.gz-many": _tar(many)}  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("which", ["zip", "tar.gz", "zip-many", "tar.gz-many"])
def test_archive_bomb_is_refused_before_writing_much(server, tmp_path, bombs, which):
    root, base = server
    blob = bombs[which]
    (root / "bomb.bin").write_bytes(blob)
    dest = tmp_path / "d"
    kind = which.removesuffix("-many")
    out, err = _child(f"{base}/bomb.bin", _sha(blob), kind, dest).communicate(timeout=300)
    got = json.loads(out.splitlines()[-1]) if out.strip() else {"error": err, "wchar": None}
    assert got["error"] and "archive bomb" in got["error"] and "--max-ratio" in got["error"], got
    # bytes written by the process (write() calls): the download, not the 24 MiB it unpacks to; a tar
    # stream is vetted one member at a time, so at most max_ratio x its size before the total trips
    assert got["wchar"] < len(blob) + 100 * len(blob) * ("tar" in which and "many" in which) + (1 << 20)
    assert not dest.exists() and list(tmp_path.iterdir()) == [root]


def test_size_limits_and_their_overrides_on_the_command_line(server, tmp_path, capsys, monkeypatch):
    root, base = server
    files = {"Fold1/train.txt": os.urandom(3 << 20), "Fold1/vali.txt": os.urandom(3 << 20)}
    zeros = {"Fold1/test.txt": bytes(5 << 20)}
    _publish(monkeypatch, "mslr_web30k", {**files, **zeros})
    blob = _zip({**files, **zeros}, deflate=True)
    (root / "m.zip").write_bytes(blob)
    dest = tmp_path / "m"
    args = ["fetch", "mslr_web30k", "--dir", str(dest), "--url", f"{base}/m.zip", "--sha256", _sha(blob)]
    for extra, why in [
        (["--max-size", "10M"], r"unpacks to more than 10\.5 MB .*raise the limit with --max-size"),
        (["--max-member-size", "4M", "--max-ratio", "none"], r"'Fold1/(train|vali|test)\.txt' unpacks to .* --max-member-size"),
        ([], r"'Fold1/test\.txt' unpacks to 5\.2 MB, [\d,]+x its compressed size \(limit 100x\).*--max-ratio"),
        (["--max-ratio", "abc"], r"--max-ratio abc: expected a positive number"),
    ]:  # fmt: skip
        assert main(args + extra) == 2
        assert re.search(why, capsys.readouterr().err), extra
        assert not dest.exists()
    assert main(args + ["--max-ratio", "none", "--max-size", "12M"]) == 0
    assert (dest / "Fold1" / "test.txt").read_bytes() == zeros["Fold1/test.txt"]


# --- mirrors are checked against the published per-file checksums ----------------------------------


def test_mirror_with_a_tampered_member_is_refused(server, tmp_path, capsys, monkeypatch):
    root, base = server
    genuine = {f"Fold1/{n}.txt": _letor_bytes(i) for i, n in enumerate(["train", "vali", "test"])}
    _publish(monkeypatch, "mslr_web10k", genuine)
    tampered = {**genuine, "Fold1/test.txt": genuine["Fold1/test.txt"].replace(b"qid:2", b"qid:7")}
    blob = _zip(tampered)  # the mirror's own archive checksum matches: only the member check catches it
    (root / "mirror.zip").write_bytes(blob)
    dest = tmp_path / "MSLR-WEB10K"
    args = ["fetch", "mslr_web10k", "--dir", str(dest), "--url", f"{base}/mirror.zip", "--sha256", _sha(blob)]
    assert main(args) == 2
    want = _sha(genuine["Fold1/test.txt"])
    assert re.search(rf"Fold1/test\.txt has sha256 [0-9a-f]{{64}}, expected {want}", capsys.readouterr().err)
    assert not dest.exists()
    with pytest.raises(DataError, match=r"the archive has no Fold1/vali\.txt"):  # a member left out
        (root / "short.zip").write_bytes(short := _zip({"Fold1/train.txt": genuine["Fold1/train.txt"]}))
        fetch("mslr_web10k", dest, url=f"{base}/short.zip", sha256=_sha(short), out=None)
    with pytest.raises(DataError, match=r"differs from the published"):  # a caller cannot override them
        fetch("mslr_web10k", dest, url=f"{base}/mirror.zip", sha256=_sha(blob), out=None,
              files={"Fold1/test.txt": _sha(tampered["Fold1/test.txt"])})  # fmt: skip
    assert not dest.exists()


def test_mirror_is_checked_against_the_real_registry_checksums(server, tmp_path, capsys):
    root, base = server
    dest = tmp_path / "d"
    for name, variant, member, pack in [
        ("mslr_web30k", [], "Fold1/test.txt", _zip),
        ("istella", ["--variant", "s"], "sample/test.txt", _tar),
    ]:
        blob = pack({member: b"1 qid:1 1:1\n"})  # a mirror that serves something else under the name
        (root / "fake").write_bytes(blob)
        published = download_for(name, {"variant": "s"}).files[member]
        args = ["fetch", name, "--dir", str(dest), "--url", f"{base}/fake", "--sha256", _sha(blob)]
        assert main(args + variant) == 2
        err = capsys.readouterr().err
        assert f"{member} has sha256 {_sha(b'1 qid:1 1:1' + bytes([10]))}, expected {published}" in err, err
        assert not dest.exists()


@pytest.mark.parametrize(
    ("text", "value"),
    [("2G", 2 << 30), ("500M", 500 << 20), ("1.5K", 1536), ("1024", 1024), ("3GiB", 3 << 30), ("none", None),
     ("50", 50), ("2.5", 2.5)],
)  # fmt: skip
def test_parse_limit(text, value):
    assert parse_limit(text, "--max-size") == value


@pytest.mark.parametrize("text", ["0", "-1G", "abc", "", "G", "5X", "inf", "nan"])
def test_parse_limit_rejects(text):
    with pytest.raises(ConfigError, match=rf"^--max-size {re.escape(text)}: expected a positive number"):
        parse_limit(text, "--max-size")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX resource limits")
def test_disk_error_mid_extraction_is_one_clear_error_and_leaves_nothing(server, tmp_path):
    root, base = server
    blob = _zip({"Fold1/train.txt": b"1 qid:1 1:1\n" * 1000, "Fold1/test.txt": bytes(4 << 20)}, deflate=True)
    (root / "a.zip").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    before = _snapshot(dest)

    def small_files() -> None:  # files over 1 MiB fail with EFBIG, as on a full disk or quota
        import resource  # deferred: POSIX only

        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))

    proc = _child(
        f"{base}/a.zip", _sha(blob), "zip", dest, limits='{"max_ratio": null}', preexec_fn=small_files
    )
    out, err = proc.communicate(timeout=120)
    assert out.strip(), err  # no traceback: a DataError, reported
    got = json.loads(out.splitlines()[-1])
    assert re.search(
        r"a\.zip: extraction failed \(\[Errno 27\] File too large.*nothing was installed", got["error"]
    )
    assert _snapshot(dest) == before and sorted(p.name for p in dest.parent.iterdir()) == ["MSLR-WEB10K"]


def test_ctrl_c_mid_extraction_leaves_destination_untouched(server, tmp_path, monkeypatch):
    root, base = server
    blob = _zip({**_GOOD, "Fold1/test.txt": os.urandom(3 << 20)})
    (root / "a.zip").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    before = _snapshot(dest)
    real_read, reads = zipfile.ZipExtFile.read, [0]

    def read(self, n=-1):
        reads[0] += 1
        if reads[0] == 4:
            raise KeyboardInterrupt
        return real_read(self, n)

    monkeypatch.setattr(zipfile.ZipExtFile, "read", read)
    with pytest.raises(KeyboardInterrupt):
        install_archive(f"{base}/a.zip", _sha(blob), "zip", dest, out=None)
    assert reads[0] == 4  # interrupted part-way, after the first member was written
    assert _snapshot(dest) == before and sorted(p.name for p in dest.parent.iterdir()) == ["MSLR-WEB10K"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_kill_between_the_two_renames_is_undone_by_the_next_fetch(server, tmp_path, monkeypatch):
    root, base = server
    blob = _zip(_GOOD)
    (root / "a.zip").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    before = _snapshot(dest)
    # what the two-rename fallback leaves when killed between its renames: the old folder moved aside
    scratch = dest.parent / f".MSLR-WEB10K.fetch-{_dead_pid()}-abc"
    scratch.mkdir()
    dest.rename(scratch / "old")
    other = dest.parent / f".MSLR-WEB1.fetch-{_dead_pid()}-abc"  # another folder's leftovers: not ours
    other.mkdir()
    # a fetch of the same folder still running in another process: its files must stay
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        running = dest.parent / f".MSLR-WEB10K.fetch-{sleeper.pid}-xyz.part"
        running.write_bytes(b"partial download")
        monkeypatch.setattr("ltr.data.fetch._renameat2_exchange", lambda a, b: False)  # the fallback path
        install_archive(f"{base}/a.zip", _sha(blob), "zip", dest, out=None)
        assert running.exists() and not scratch.exists() and other.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    after = _snapshot(dest)
    assert (dest / "Fold1" / "vali.txt").read_bytes() == _GOOD["Fold1/vali.txt"]
    assert {k: v for k, v in after.items() if k in before and "Fold1" not in k} == {
        k: v for k, v in before.items() if "Fold1" not in k
    }  # the restored folder's own files are all there, untouched


def test_install_replaces_the_folder_in_one_step(server, tmp_path, monkeypatch):
    """An existing destination is exchanged atomically on Linux (a new folder inode appears at once)."""
    root, base = server
    blob = _zip(_GOOD)
    (root / "a.zip").write_bytes(blob)
    dest = _existing_dest(tmp_path)
    inode = dest.stat().st_ino
    swaps = []
    real = fetch_module._renameat2_exchange
    monkeypatch.setattr(
        fetch_module, "_renameat2_exchange", lambda a, b: swaps.append(real(a, b)) or swaps[-1]
    )
    install_archive(f"{base}/a.zip", _sha(blob), "zip", dest, out=None)
    assert dest.stat().st_ino != inode and (dest / "mine.txt").exists()
    assert swaps == ([True] if sys.platform.startswith("linux") else [False])


def test_unwritable_place_is_one_clear_error(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(DataError, match=r"a-file/dest: cannot write beside it in .*a-file \("):
        install_archive("http://127.0.0.1:9/a.zip", "0" * 64, "zip", tmp_path / "a-file" / "dest", out=None)
    with pytest.raises(DataError, match=r"a-file: exists and is not a folder"):
        install_archive("http://127.0.0.1:9/a.zip", "0" * 64, "zip", tmp_path / "a-file", out=None)


# --- two fetches into one folder at the same time -------------------------------------------------

_RACE_CHILD = r"""
import json, sys, time
from dataclasses import replace
from ltr.data import fetch
from ltr.data.__main__ import main
from ltr.data.registry import REGISTRY

url, sha, dest, published, pause = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), float(sys.argv[5])
spec = REGISTRY["mslr_web10k"]  # the mirror's files stand in for the published ones (as _publish does)
REGISTRY["mslr_web10k"] = replace(spec, download=replace(spec.download, files=published))
real_rename = fetch.os.rename
def slow_rename(src, dst, *args, **kwargs):  # widens the window between "is the folder there?" and
    if str(src).endswith("/new"):             # the rename that puts the new folder in its place
        time.sleep(pause)
    return real_rename(src, dst, *args, **kwargs)
fetch.os.rename = slow_rename
sys.exit(main(["fetch", "mslr_web10k", "--dir", dest, "--url", url, "--sha256", sha]))
"""


@pytest.mark.slow  # two real fetch processes racing: CI only
def test_two_fetches_into_one_folder_at_once_both_succeed(server, tmp_path):
    """Two real ``python -m ltr.data fetch`` processes (the command's ``main``) install the same mirror
    into one fresh folder at the same moment: both exit 0 and the folder holds the archive, whole.
    Without the install lock the second one's rename meets the first one's folder (Directory not empty)."""
    root, base = server
    files = {f"Fold1/{n}.txt": _letor_bytes(i) for i, n in enumerate(["train", "vali", "test"])}
    blob = _zip(files)
    (root / "race.zip").write_bytes(blob)
    dest = tmp_path / "data" / "MSLR-WEB10K"
    published = json.dumps({k: _sha(v) for k, v in files.items()})
    args = [f"{base}/race.zip", _sha(blob), str(dest), published, "3"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACE_CHILD, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(2)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert "Traceback" not in err
    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data
    assert sorted(p.name for p in dest.parent.iterdir()) == ["MSLR-WEB10K"]  # no temporary left

"""Downloading and safe extraction, against a local HTTP server on 127.0.0.1 started by the test.

No other host is contacted: every URL below points at the local server.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import tarfile
import tempfile
import threading
import zipfile
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from ltr.data import RankingData, write_svmlight
from ltr.data.__main__ import main
from ltr.data.fetch import ManualDownload, fetch, install_archive
from ltr.data.registry import ISTELLA_DOWNLOADS, REGISTRY, load_dataset
from ltr.errors import DataError


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


def _zip(members: dict[str, bytes], symlink: str | None = None) -> bytes:
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w") as zf:
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

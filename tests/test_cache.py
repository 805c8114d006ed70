"""Binary cache: reuse, keys, memory-mapped reload, corruption detection and rebuild, atomic parallel writes."""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import command_in_process

from ltr.data import RankingData
from ltr.data._syntax import ParseOptions
from ltr.data.cache import cache_key, entry_dir, file_identity, load_cached, read_entry
from ltr.data.svmlight import load_svmlight, write_svmlight


def _data(n=60, f=7, seed=0, sparse_frac=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < sparse_frac] = 0
    return RankingData(X=X, y=rng.integers(0, 5, n), qid=np.repeat(np.arange(n // 6), 6))


@pytest.fixture
def src(tmp_path):
    return write_svmlight(_data(), tmp_path / "train.txt")


def _entries(cache: Path):
    return sorted(p for p in cache.iterdir()) if cache.exists() else []


def test_first_load_writes_then_reload_is_memory_mapped(src, tmp_path):
    cache = tmp_path / "cache"
    d1 = load_svmlight(src, cache_dir=cache, engine="python")
    [entry] = _entries(cache)
    manifest = json.loads((entry / "manifest.json").read_text())
    assert set(manifest["files"]) == {"X.npy", "y.npy", "qid.npy"}
    assert manifest["source"]["size"] == src.stat().st_size
    d2 = load_svmlight(src, cache_dir=cache, engine="python")
    assert d2.fingerprint() == d1.fingerprint() == load_svmlight(src, engine="python").fingerprint()
    assert not d2.X.flags.writeable  # read-only memory map of X.npy
    assert isinstance(d2.X.base, np.memmap) or d2.X.base is not None


def test_sparse_docid_weight_round_trip(tmp_path):
    d = _data(sparse_frac=0.9)
    p = write_svmlight(d, tmp_path / "s.txt", comments=[f"docid = d{i}" for i in range(d.n_docs)])
    kw = {"cache_dir": tmp_path / "c", "docid": True, "output": "csr", "engine": "python"}
    first = load_svmlight(p, **kw)
    again = load_svmlight(p, **kw)
    assert again.is_sparse and again.fingerprint() == first.fingerprint()
    assert again.docid.tolist() == [f"d{i}" for i in range(d.n_docs)]


def test_key_depends_on_options_and_file(src, tmp_path):
    k1, _ = cache_key(src, ParseOptions())
    assert cache_key(src, ParseOptions())[0] == k1
    assert cache_key(src, ParseOptions(n_features=9))[0] != k1
    assert cache_key(src, ParseOptions(), docid=True)[0] != k1
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache_key(src, ParseOptions())[0] != k1
    cache = tmp_path / "cache"
    load_svmlight(src, cache_dir=cache, engine="python")
    load_svmlight(src, cache_dir=cache, engine="python", n_features=9)
    assert len(_entries(cache)) == 2


def test_sampled_identity_of_large_files(tmp_path):
    p = tmp_path / "big.bin"
    p.write_bytes(bytes(8 << 20))
    st = p.stat()
    base = file_identity(p)
    base_full = file_identity(p, full_hash=True)

    def edit(offset):
        with open(p, "r+b") as f:
            f.seek(offset)
            f.write(b"\x01")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only content differs

    edit(10)  # inside the first MiB: always sampled
    assert file_identity(p)["digest"] != base["digest"]
    p.write_bytes(bytes(8 << 20))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_identity(p) == base
    edit(2_100_000)  # between sampled blocks 5 and 6: only the full hash sees it
    assert file_identity(p)["digest"] == base["digest"]
    assert file_identity(p, full_hash=True)["digest"] != base_full["digest"]


def _corrupt(entry: Path, how: str) -> None:
    if how == "truncate":
        x = entry / "X.npy"
        x.write_bytes(x.read_bytes()[:-17])
    elif how == "flip":
        x = entry / "X.npy"
        raw = bytearray(x.read_bytes())
        raw[-5] ^= 0x10
        x.write_bytes(bytes(raw))
    elif how == "manifest":
        (entry / "manifest.json").write_text("{not json")
    elif how == "missing":
        (entry / "y.npy").unlink()
    elif how == "header":
        x = entry / "X.npy"
        raw = bytearray(x.read_bytes())
        raw[:6] = b"garbag"
        x.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["truncate", "flip", "manifest", "missing", "header"])
def test_corrupted_entry_is_detected_and_rebuilt(src, tmp_path, caplog, how):
    cache = tmp_path / "cache"
    want = load_svmlight(src, cache_dir=cache, engine="python").fingerprint()
    [entry] = _entries(cache)
    _corrupt(entry, how)
    with caplog.at_level(logging.WARNING, logger="ltr.data.cache"):
        got = load_svmlight(src, cache_dir=cache, engine="python")
    assert got.fingerprint() == want
    assert "not usable" in caplog.text and "rebuilding" in caplog.text
    [entry2] = _entries(cache)
    assert read_entry(entry2).fingerprint() == want  # the rebuilt entry is good again
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]


def _worker(args):
    path, cache, barrier = args
    barrier.wait()
    d = load_cached(Path(path), ParseOptions(), cache_dir=cache, engine="python")
    return d.fingerprint()


@pytest.mark.slow  # ~5 s: 3 spawned interpreters racing on one cache entry, twice; a race test, CI
def test_parallel_processes_share_one_entry(tmp_path):
    """Several processes load the same file at once (empty cache, then a corrupted entry): all get the
    same data, exactly one good entry remains, no temporary folders are left behind."""
    src = write_svmlight(_data(n=3000, f=20, seed=5), tmp_path / "par.txt")
    cache = tmp_path / "cache"
    want = load_svmlight(src, engine="python").fingerprint()
    key, _ = cache_key(src, ParseOptions())
    n = 3
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(n) as pool:
        barrier = manager.Barrier(n)
        for round_ in ("empty cache", "corrupted entry"):
            if round_ == "corrupted entry":
                _corrupt(entry_dir(cache, src, key), "flip")
            prints = pool.map(_worker, [(str(src), str(cache), barrier)] * n)
            assert prints == [want] * n, round_
            entries = _entries(cache)
            assert entries == [entry_dir(cache, src, key)], round_
            assert read_entry(entries[0], key).fingerprint() == want


# --- every byte of an entry is covered (issue 11, item 1) ------------------------------------------
def _edit_header(entry: Path, file: str, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in the ``.npy`` header of ``file`` (the data bytes stay)."""
    assert len(old) == len(new)
    raw = (entry / file).read_bytes()
    header_end = raw.index(b"\n") + 1
    assert old in raw[:header_end], raw[:header_end]
    (entry / file).write_bytes(raw[:header_end].replace(old, new) + raw[header_end:])


HEADER_EDITS = {
    "X byte order <f4 -> >f4": ("X.npy", b"'<f4'", b"'>f4'"),
    "X dtype float -> int": ("X.npy", b"'<f4'", b"'<i4'"),
    "X shape (60, 7) -> (42, 10)": ("X.npy", b"(60, 7)", b"(42,10)"),
    "X fortran order": ("X.npy", b"'fortran_order': False,", b"'fortran_order': True, "),
    "y byte order <f8 -> >f8": ("y.npy", b"'<f8'", b"'>f8'"),
    "qid signed -> unsigned": ("qid.npy", b"'<i8'", b"'<u8'"),
}


@pytest.mark.parametrize("edit", list(HEADER_EDITS))
def test_an_edited_npy_header_is_detected_and_rebuilt(src, tmp_path, caplog, edit):
    """Before: the array checksums covered the data bytes only, so a header edit (dtype, byte order, shape,
    memory order) loaded garbage without a word. Now the checksum covers the whole file."""
    cache = tmp_path / "cache"
    want = load_svmlight(src, engine="python")
    load_svmlight(src, cache_dir=cache, engine="python")
    [entry] = _entries(cache)
    _edit_header(entry, *HEADER_EDITS[edit])
    with caplog.at_level(logging.WARNING, logger="ltr.data.cache"):
        got = load_svmlight(src, cache_dir=cache, engine="python")
    assert "not usable" in caplog.text and "checksum" in caplog.text
    np.testing.assert_array_equal(got.X, want.X)
    np.testing.assert_array_equal(got.y, want.y)
    np.testing.assert_array_equal(got.qid, want.qid)
    assert read_entry(_entries(cache)[0]).fingerprint() == want.fingerprint()


def _rewrite_manifest(entry: Path, change) -> None:
    path = entry / "manifest.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


MANIFEST_SHAPES = {
    "a JSON list": lambda m: [m],
    "a JSON string": lambda m: "manifest",
    "null": lambda m: None,
    "files is a list": lambda m: m | {"files": list(m["files"])},
    "a file entry is a string": lambda m: m | {"files": m["files"] | {"y.npy": "ok"}},
    "bytes is a string": lambda m: (
        m | {"files": m["files"] | {"y.npy": m["files"]["y.npy"] | {"bytes": "9"}}}
    ),
    "checksum is a number": lambda m: (
        m | {"files": m["files"] | {"y.npy": m["files"]["y.npy"] | {"checksum": 1}}}
    ),
    "a path outside the entry": lambda m: m | {"files": m["files"] | {"../x.npy": m["files"]["y.npy"]}},
    "y.npy not listed": lambda m: m | {"files": {k: v for k, v in m["files"].items() if k != "y.npy"}},
    "shape is a string": lambda m: m | {"shape": "60x7"},
    "shape has three numbers": lambda m: m | {"shape": [60, 7, 1]},
    "shape disagrees with X": lambda m: m | {"shape": [59, 7]},
    "sparse is missing": lambda m: {k: v for k, v in m.items() if k != "sparse"},
    "sparse claims CSR": lambda m: m | {"sparse": True},
    "source_path is a number": lambda m: m | {"source_path": 3},
}


@pytest.mark.parametrize("shape", list(MANIFEST_SHAPES))
def test_a_manifest_of_the_wrong_shape_is_rebuilt_not_a_crash(src, tmp_path, caplog, shape):
    """Before: a manifest that parsed as JSON but was not the expected object crashed the load with an
    AttributeError/TypeError (or, for a stray file name, read a file outside the entry)."""
    cache = tmp_path / "cache"
    want = load_svmlight(src, cache_dir=cache, engine="python").fingerprint()
    [entry] = _entries(cache)
    _rewrite_manifest(entry, MANIFEST_SHAPES[shape])
    with caplog.at_level(logging.WARNING, logger="ltr.data.cache"):
        got = load_svmlight(src, cache_dir=cache, engine="python")
    assert got.fingerprint() == want
    assert "not usable" in caplog.text
    assert read_entry(_entries(cache)[0]).fingerprint() == want


def _dead_pid() -> int:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(proc.stdout)


def test_a_writer_killed_mid_write_leaves_nothing_used_and_its_folder_is_cleaned(src, tmp_path):
    """A real process is killed (SIGKILL) after writing its arrays, before the rename: the next load ignores
    its temporary folder, removes it, and builds the entry. Before: the folder stayed forever."""
    cache = tmp_path / "cache"
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "import ltr.data.cache as c\n"
        "from ltr.data._syntax import ParseOptions\n"
        "c._install = lambda *args: os.kill(os.getpid(), 9)\n"
        "c.load_cached(Path(sys.argv[1]), ParseOptions(), cache_dir=sys.argv[2], engine='python')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(src), str(cache)], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    [leftover] = _entries(cache)
    assert leftover.name.startswith(".tmp-") and (leftover / "manifest.json").is_file()
    got = load_svmlight(src, cache_dir=cache, engine="python")
    assert got.fingerprint() == load_svmlight(src, engine="python").fingerprint()
    [entry] = _entries(cache)
    assert not entry.name.startswith(".") and read_entry(entry).fingerprint() == got.fingerprint()


def test_only_abandoned_temporary_folders_are_removed(tmp_path):
    from ltr.data.cache import _host, clean_leftovers

    cache = tmp_path / "cache"
    dead = cache / f".tmp-0123abcd.{_host()}.{_dead_pid()}.x1"
    alive = cache / f".tmp-0123abcd.{_host()}.{os.getpid()}.x2"  # a writer at work: ours
    other_host = cache / f".tmp-0123abcd.otherhost.{_dead_pid()}.x3"  # its pid means nothing here
    old = cache / ".tmp-0123abcd-oldformat"  # version-1 name, two days old
    old_trash = cache / ".trash-x4"
    for d in (dead, alive, other_host, old, old_trash):
        d.mkdir(parents=True)
        (d / "X.npy").write_bytes(b"partial")
    two_days = time.time() - 2 * 24 * 3600
    for d in (old, old_trash):
        os.utime(d, (two_days, two_days))
    assert sorted(clean_leftovers(cache)) == sorted([dead, old, old_trash])
    assert alive.is_dir() and other_host.is_dir()


# --- full-content verification (issue 11, item 1) --------------------------------------------------
def _in_place_edit(tmp_path: Path):
    """A file over 4 MiB, the data it holds, the data after the edit, and the edit: a same-size,
    same-mtime rewrite that changes one label where the sampled identity does not look."""
    from ltr.data.cache import _BLOCK, _EDGE, _SAMPLE_BLOCKS

    rng = np.random.default_rng(3)
    n = 60_000
    X = np.round(rng.random((n, 6)), 3).astype(np.float32)
    before = RankingData(X=X, y=rng.integers(0, 3, n), qid=np.repeat(np.arange(n // 10), 10))
    path = write_svmlight(before, tmp_path / "big.txt")
    raw = bytearray(path.read_bytes())
    size = len(raw)
    assert size > 2 * _EDGE + _SAMPLE_BLOCKS * _BLOCK
    starts = [_EDGE + (size - 2 * _EDGE - _BLOCK) * k // (_SAMPLE_BLOCKS - 1) for k in range(_SAMPLE_BLOCKS)]
    gap = starts[10] + _BLOCK + 100  # after sampled block 10 ends, well before block 11
    line_start = raw.index(b"\n", gap) + 1
    assert line_start + 10 < starts[11]
    row = raw[:line_start].count(b"\n")
    new_label = (int(chr(raw[line_start])) + 1) % 3
    raw[line_start] = ord(str(new_label))
    y = before.y.copy()
    y[row] = new_label

    def edit() -> None:
        st = path.stat()
        with open(path, "r+b") as f:  # in place, like an editor that keeps the inode
            f.write(bytes(raw))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    return path, before, RankingData(X=X, y=y, qid=before.qid), edit


def test_verify_cache_sees_an_in_place_rewrite_from_python_config_and_cli(tmp_path, capsys):
    """Before: no way to ask for the full-content check outside the private load_cached(full_hash=)."""
    from ltr.data.registry import load_dataset

    path, before, after, edit = _in_place_edit(tmp_path)
    cache = tmp_path / "cache"
    cfg = {"kind": "svmlight", "train": str(path), "cache_dir": str(cache)}
    for verify in (False, True):  # cache both kinds of entry while the file has its old contents
        assert load_svmlight(path, cache_dir=cache, verify_cache=verify).fingerprint() == before.fingerprint()
    mtime = path.stat().st_mtime_ns
    edit()
    assert path.stat().st_mtime_ns == mtime

    stale = load_svmlight(path, cache_dir=cache)  # the sampled identity cannot see this edit (documented)
    assert stale.fingerprint() == before.fingerprint()
    assert load_svmlight(path, cache_dir=cache, verify_cache=True).fingerprint() == after.fingerprint()
    assert load_dataset(cfg)["train"].fingerprint() == before.fingerprint()
    assert load_dataset(cfg | {"verify_cache": True})["train"].fingerprint() == after.fingerprint()

    def labels(*flags: str) -> dict:
        """``python -m ltr.data info PATH --json FLAGS``'s label histogram (its main in-process)."""
        code = command_in_process(
            "ltr.data", ["info", str(path), "--cache-dir", str(cache), "--json", *flags]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        return json.loads(out)["file"]["label_histogram"]

    hist = {str(int(k)): int(v) for k, v in zip(*np.unique(after.y, return_counts=True), strict=True)}
    assert labels("--verify-cache") == hist
    assert labels() != hist


# --- read-only storage (issue 11, item 2) ----------------------------------------------------------
READ_ONLY = Path("/sys/ltr-cache")  # sysfs: not writable even by root


@pytest.fixture
def fresh_warnings(monkeypatch):
    import ltr.data.cache as cache_module

    monkeypatch.setattr(cache_module, "_warned", set())


#: Linux capabilities that let root ignore permission bits (linux/capability.h)
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


@contextlib.contextmanager
def permission_bits_apply_to_root():
    """Make permission bits apply to this thread even as root; a no-op for any other user.

    Root ignores them through the capability CAP_DAC_OVERRIDE (and CAP_DAC_READ_SEARCH): both are
    dropped from the calling thread's *effective* set for the block (they stay *permitted*, so they are
    raised again afterwards), the way CI runs the tests as root. A 0o555 folder then refuses root's
    writes with EACCES, exactly as it refuses everyone else's.
    """
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "capget"):
        pytest.skip("root without Linux capabilities: permission bits cannot be made to apply")
    version_3 = 0x20080522  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(_CapHeader(version_3, 0)), data) != 0:
        pytest.skip(
            f"capget failed ({os.strerror(ctypes.get_errno())}): cannot drop root's permission override"
        )
    saved = [word.effective for word in data]
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        data[cap // 32].effective &= ~(1 << cap % 32)
    if libc.capset(ctypes.byref(_CapHeader(version_3, 0)), data) != 0:
        pytest.skip(
            f"capset failed ({os.strerror(ctypes.get_errno())}): cannot drop root's permission override"
        )
    try:
        yield
    finally:
        for word, effective in zip(data, saved, strict=True):
            word.effective = effective
        assert libc.capset(ctypes.byref(_CapHeader(version_3, 0)), data) == 0, os.strerror(ctypes.get_errno())


def _unwritable(tmp_path: Path, how: str) -> Path:
    if how == "read-only file system":
        try:
            READ_ONLY.mkdir()
        except OSError:
            return READ_ONLY
        READ_ONLY.rmdir()
        pytest.skip("/sys is writable here")
    if how == "a file where the folder should be":
        (tmp_path / "blocker").write_text("")
        return tmp_path / "blocker" / "cache"
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    if how == "no permission in the folder":  # the folder exists: its entry's temporary folder is refused
        return ro
    return ro / "cache"  # "no permission": the folder cannot be created


@pytest.mark.parametrize(
    "how",
    [
        "read-only file system",
        "a file where the folder should be",
        "no permission",
        "no permission in the folder",
    ],
)
def test_unwritable_cache_dir_falls_back_to_the_user_cache_with_one_warning(
    src, tmp_path, monkeypatch, caplog, fresh_warnings, how
):
    """Before: PermissionError/OSError traceback although the file parsed fine.

    The "no permission" cases run as root too (CI runs as root): :func:`permission_bits_apply_to_root`.
    Kills (ltr/data/cache.py ``_through_cache``): a write failure with EACCES not caught (e.g. only
    read-only file systems and non-folders handled) — the load then fails instead of falling back.
    """
    cache = _unwritable(tmp_path, how)
    user = tmp_path / "user-cache"
    monkeypatch.setenv("LTR_CACHE_DIR", str(user))
    want = load_svmlight(src, engine="python").fingerprint()
    permission = how.startswith("no permission")
    as_user = permission_bits_apply_to_root() if permission else contextlib.nullcontext()
    with caplog.at_level(logging.WARNING, logger="ltr.data.cache"), as_user:
        if permission:  # the premise: this process cannot write there now
            with pytest.raises(PermissionError):
                (cache / "probe").mkdir(parents=True)
        got = [load_svmlight(src, cache_dir=cache, engine="python") for _ in range(3)]
    assert [d.fingerprint() for d in got] == [want] * 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text
    assert str(cache) in warnings[0].getMessage() and str(user) in warnings[0].getMessage()
    if permission:
        assert "Permission denied" in warnings[0].getMessage()
        assert list(tmp_path.joinpath("ro").iterdir()) == []  # nothing left in the refused folder
    [entry] = _entries(user)
    assert read_entry(entry).fingerprint() == want
    assert not got[2].X.flags.writeable  # the reloads came from the user cache's memory map


def test_no_writable_cache_at_all_loads_uncached_with_one_warning(
    src, tmp_path, monkeypatch, caplog, fresh_warnings
):
    (tmp_path / "blocker").write_text("")
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "blocker" / "user"))
    want = load_svmlight(src, engine="python").fingerprint()
    with caplog.at_level(logging.WARNING, logger="ltr.data.cache"):
        got = [load_svmlight(src, cache_dir=tmp_path / "blocker" / "c", engine="python") for _ in range(2)]
    assert [d.fingerprint() for d in got] == [want] * 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "without a cache" in warnings[0], warnings


def test_user_cache_dir_is_overridable(monkeypatch, tmp_path):
    from ltr.data.cache import user_cache_dir

    monkeypatch.delenv("LTR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "ltr"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "ltr"
    monkeypatch.setenv("LTR_CACHE_DIR", str(tmp_path / "mine"))
    assert user_cache_dir() == tmp_path / "mine"


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.exists() else []


def test_the_data_folders_cache_takes_over_once_writable_and_the_user_entry_goes(
    src, tmp_path, monkeypatch, caplog, fresh_warnings
):
    """Before: once ``cache_dir`` was writable again, every load kept serving the per-user entry and
    ``cache_dir`` stayed empty for good (other users of the data folder never got the cache)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")  # a file where the cache's parent folder should be: unwritable, even for root
    cache = blocker / "cache"
    user = tmp_path / "user-cache"
    monkeypatch.setenv("LTR_CACHE_DIR", str(user))
    want = load_svmlight(src, engine="python").fingerprint()
    assert load_svmlight(src, cache_dir=cache, engine="python").fingerprint() == want
    [stopgap] = _entries(user)
    assert load_svmlight(src, cache_dir=cache, engine="python").fingerprint() == want  # still read-only
    assert _entries(user) == [stopgap]  # kept and used while cache_dir refuses writes

    blocker.unlink()
    blocker.mkdir()  # the data folder's cache is writable now
    with caplog.at_level(logging.INFO, logger="ltr.data.cache"):
        moved = load_svmlight(src, cache_dir=cache, engine="python")
    assert moved.fingerprint() == want and not moved.X.flags.writeable  # served from cache_dir's memory map
    assert _visible(cache) == [stopgap.name] and _visible(user) == []
    assert read_entry(cache / stopgap.name).fingerprint() == want
    assert "moved from the per-user cache" in caplog.text
    assert load_svmlight(src, cache_dir=cache, engine="python").fingerprint() == want
    assert _visible(cache) == [stopgap.name] and _visible(user) == []


def test_a_user_entry_of_an_older_version_of_the_file_is_never_served_and_goes(
    src, tmp_path, monkeypatch, fresh_warnings
):
    """The key still guards correctness: the file changed while the data folder was read-only; the
    next load (cache_dir writable) parses the new file into cache_dir and drops the old per-user entry."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    cache = blocker / "cache"
    user = tmp_path / "user-cache"
    monkeypatch.setenv("LTR_CACHE_DIR", str(user))
    old = load_svmlight(src, cache_dir=cache, engine="python")
    assert len(_entries(user)) == 1
    changed = _data()
    changed.y[:] = changed.y[::-1]
    write_svmlight(changed, src)
    want = load_svmlight(src, engine="python").fingerprint()
    assert want != old.fingerprint()
    blocker.unlink()
    blocker.mkdir()
    got = load_svmlight(src, cache_dir=cache, engine="python")
    assert got.fingerprint() == want
    assert len(_visible(cache)) == 1 and _visible(user) == []
    assert read_entry(_entries(cache)[0]).fingerprint() == want

"""``ltr.export`` never destroys an input or an old result (``ltr.export.staging``; issue 25, case 2).

* a write that fails mid-way (a real file-size limit in a subprocess, a writer that raises after part of
  the file) or a failed parity check leaves the previously deployed ``--out`` byte for byte, and no
  staging folder behind;
* an ``--out`` that is the same file as an input (a file of the model folder, ``--check``, the feature
  map; by symlink, hard link or ``./x``) or whose side file is ``--out`` itself (Vespa's ``.sd``) is
  refused before any work, the input untouched.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import completed_in_process

from ltr.data import RankingData
from ltr.data.svmlight import write_svmlight
from ltr.data.synthetic import generate
from ltr.export import formats
from ltr.export.staging import STAGING_PREFIX
from ltr.models import build_ranker

OLD = b"the model deployed yesterday\n" * 40


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    train, valid = generate(30, seed=1, max_docs=15), generate(10, seed=2, max_docs=15, qid_start=500)
    out = {}
    for name, cfg in {
        "lambdamart": {"name": "lambdamart", "params": {"n_trees": 20}, "early_stopping": {"patience": None}},
        "linear": {"name": "linear"},
    }.items():
        folder = tmp_path_factory.mktemp(name)
        build_ranker(cfg, seed=0, num_threads=1).fit(train, valid).save(folder)
        out[name] = folder
    data = tmp_path_factory.mktemp("data") / "test.txt"
    write_svmlight(RankingData(X=np.nan_to_num(valid.X), y=valid.y, qid=valid.qid), data)
    out["data"] = data
    return out


def no_staging_left(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(STAGING_PREFIX)]


def _limit_file_size() -> None:  # runs in the child before exec: a 4 KB file-size limit, EFBIG not SIGXFSZ
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


@pytest.mark.slow  # a real process under a file-size limit: ~3.5 s
def test_a_write_cut_by_a_file_size_limit_leaves_the_old_out_intact(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """A real process under RLIMIT_FSIZE: the ONNX file (tens of KB) cannot be written whole."""
    out = tmp_path / "model.onnx"
    out.write_bytes(OLD)
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.export", str(folders["lambdamart"]), "--format", "onnx", "--out", str(out)],
        capture_output=True, text=True, timeout=300, preexec_fn=_limit_file_size,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith(f"error: --out {out}: File too large") and proc.stderr.count("\n") == 1
    assert "left unchanged" in proc.stderr and "wrote" not in proc.stdout
    assert out.read_bytes() == OLD and no_staging_left(tmp_path)


@pytest.mark.parametrize("fmt", ["solr", "vespa", "onnx", "lightgbm"])
def test_a_writer_that_fails_mid_way_leaves_the_old_files_intact(
    fmt: str, folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The target's writer writes part of the file (and Vespa's profile) and then fails like a full disk."""
    out = tmp_path / "model.json"
    out.write_bytes(OLD)
    profile = out.with_suffix(".sd")
    profile.write_bytes(OLD)

    def half_then_full(model: Any, path: Path, names: list[str], **_: Any) -> Any:
        path.write_bytes(b'{"model": ')
        path.with_suffix(".sd").write_bytes(b"rank-profile")
        raise OSError(28, "No space left on device")

    broken = dataclasses.replace(formats.FORMATS[fmt], write=half_then_full)
    monkeypatch.setitem(formats.FORMATS, fmt, broken)
    proc = completed_in_process(
        "ltr.export", [str(folders["lambdamart"]), "--format", fmt, "--out", str(out)], capsys
    )
    assert (
        proc.returncode == 2
        and proc.stderr == f"error: --out {out}: No space left on device; {out} left unchanged\n"
    )
    assert out.read_bytes() == OLD and profile.read_bytes() == OLD and no_staging_left(tmp_path)


def test_a_failed_parity_check_leaves_the_old_out_intact(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    out = tmp_path / "model.json"
    out.write_bytes(OLD)
    target = formats.FORMATS["solr"]
    off = dataclasses.replace(target, score=lambda path, X, names: target.score(path, X, names) + 1.0)
    monkeypatch.setitem(formats.FORMATS, "solr", off)
    proc = completed_in_process(
        "ltr.export", [str(folders["lambdamart"]), "--format", "solr", "--out", str(out)], capsys
    )
    assert proc.returncode == 1 and "FAILED" in proc.stdout
    assert f"{out} is left unchanged" in proc.stderr
    assert out.read_bytes() == OLD and no_staging_left(tmp_path)


def test_a_good_export_replaces_the_old_out(folders: dict[str, Path], tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "model.json"
    out.write_bytes(OLD)
    proc = completed_in_process(
        "ltr.export", [str(folders["lambdamart"]), "--format", "vespa", "--out", str(out)], capsys
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() != OLD and out.with_suffix(".sd").is_file() and no_staging_left(tmp_path)
    assert f"wrote {out}, {out.with_suffix('.sd')} (vespa" in proc.stdout
    assert STAGING_PREFIX not in proc.stdout  # the messages name the final files


def _cases(folders: dict[str, Path], tmp_path: Path) -> list[tuple[str, list[str], Path, str]]:
    """(label, argv, the input that must stay intact, what the error names)."""
    model = tmp_path / "ranker"
    import shutil

    shutil.copytree(folders["lambdamart"], model)
    data = tmp_path / "test.txt"
    shutil.copy(folders["data"], data)
    fmap = tmp_path / "features.txt"
    fmap.write_text("".join(f"f{j}\n" for j in range(1, 47)))
    link = tmp_path / "link.txt"
    link.symlink_to(data)
    hard = tmp_path / "hard.txt"
    os.link(data, hard)
    sd = tmp_path / "model.sd"
    sd.write_bytes(OLD)
    m = str(model)
    return [
        ("the native file over the model's own", [m, "--format", "lightgbm", "--out", str(model / "model.txt")], model / "model.txt", "MODEL"),
        ("over the manifest", [m, "--format", "solr", "--out", str(model / "manifest.json")], model / "manifest.json", "MODEL"),
        ("over --check", [m, "--format", "onnx", "--out", str(data), "--check", str(data)], data, "--check"),
        ("./x against x", [m, "--format", "onnx", "--out", f"{tmp_path}/./test.txt", "--check", str(data)], data, "--check"),
        ("a symlink to --check", [m, "--format", "onnx", "--out", str(link), "--check", str(data)], data, "--check"),
        ("a hard link to --check", [m, "--format", "onnx", "--out", str(hard), "--check", str(data)], data, "--check"),
        ("over the feature map", [m, "--format", "solr", "--out", str(fmap), "--feature-names", str(fmap)], fmap, "--feature-names"),
        ("Vespa's profile over --out", [m, "--format", "vespa", "--out", str(sd)], sd, "rank profile"),
    ]  # fmt: skip


def test_an_out_that_is_an_input_is_refused_before_any_work(
    folders: dict[str, Path], tmp_path: Path, capsys: Any
) -> None:
    cases = _cases(folders, tmp_path)
    for label, argv, kept, names in cases:
        before = kept.read_bytes()
        proc = completed_in_process("ltr.export", argv, capsys)
        assert proc.returncode == 2, (label, proc.stderr)
        assert proc.stderr.startswith("error: --out ") and proc.stderr.count("\n") == 1, (label, proc.stderr)
        assert names in proc.stderr, (label, proc.stderr)
        assert kept.read_bytes() == before, label
        assert no_staging_left(kept.parent), label
    assert len(cases) == 8


def test_a_linear_vespa_export_may_be_named_sd(folders: dict[str, Path], tmp_path: Path, capsys: Any) -> None:
    """For a linear model --out is the rank profile itself: a .sd name is right there."""
    out = tmp_path / "ranker.sd"
    proc = completed_in_process(
        "ltr.export", [str(folders["linear"]), "--format", "vespa", "--out", str(out)], capsys
    )
    assert proc.returncode == 0, proc.stderr
    assert "rank-profile" in out.read_text()

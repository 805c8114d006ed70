"""Damaged engine model files (``model.txt``, ``model.ubj``, ``.json``, ``model.cbm``) are one error naming the
file, never an abort, a hang or a memory blow-up (``ltr.models.engines.files``; issue 25, case 1).

The models are real, trained here; the files are cut at every byte (the checks in-process: they never
call the engine) and the loader and the commands run in subprocesses, because on a loader without the
checks LightGBM aborts (exit 134, SIGSEGV) and XGBoost crashes or allocates gigabytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ltr.core.errors import DataError
from ltr.data.synthetic import generate
from ltr.models import build_ranker
from ltr.models.engines.files import check_catboost_model, check_lightgbm_text, check_xgboost_model

TRAIN = generate(30, seed=1, max_docs=15)
VALID = generate(10, seed=2, max_docs=15, qid_start=500)

#: family → the engine file inside its saved folder and the check that reads it
ENGINES = {
    "lambdamart": ("model.txt", check_lightgbm_text),
    "lambdamart_xgb": ("model.ubj", check_xgboost_model),
    "catboost": ("model.cbm", check_catboost_model),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Path]:
    """A saved folder of each engine's small real model (and the data file to evaluate on)."""
    folders = {}
    for family in ENGINES:
        if family == "catboost":
            pytest.importorskip("catboost")
        cfg = {"name": family, "params": {"n_trees": 4}, "early_stopping": {"patience": None}}
        ranker = build_ranker(cfg, seed=0, num_threads=1).fit(TRAIN, VALID)
        folder = tmp_path_factory.mktemp(family)
        ranker.save(folder)
        folders[family] = folder
    return folders


def whole_lightgbm_prefixes(data: bytes) -> set[int]:
    """Cuts of a LightGBM file that are whole LightGBM files: the Python wrapper's last line
    (``pandas_categorical:``) dropped, which the C API never writes (so LightGBM reads them as whole)."""
    end = data.index(b"end of parameters\n") + len(b"end of parameters\n")
    return {end, end + 1} if data[end : end + 1] == b"\n" else {end}


def refuse_cuts(family: str, folder: Path, tmp_path: Path, step: int) -> int:
    """Cut the engine file of ``folder`` at every ``step``-th byte: each cut is one DataError naming it."""
    name, check = ENGINES[family]
    data = (folder / name).read_bytes()
    check(folder / name)  # the whole file passes
    cut = tmp_path / name
    allowed = whole_lightgbm_prefixes(data) if family == "lambdamart" else set()
    refused = 0
    for n in [*range(0, len(data), step), *range(len(data) - 64, len(data))]:
        cut.write_bytes(data[:n])
        if n in allowed:
            check(cut)
            continue
        with pytest.raises(DataError) as caught:
            check(cut)
        assert str(caught.value).startswith(f"{cut}") and "\n" not in str(caught.value)
        refused += 1
    return refused


@pytest.mark.parametrize("family", list(ENGINES))
def test_a_file_cut_anywhere_is_one_error_naming_it(
    family: str, saved: dict[str, Path], tmp_path: Path
) -> None:
    """About 400 cuts spread over the file, and the last 64 bytes one by one."""
    size = (saved[family] / ENGINES[family][0]).stat().st_size
    assert refuse_cuts(family, saved[family], tmp_path, max(1, size // 400)) > 400


@pytest.mark.slow
@pytest.mark.parametrize("family", list(ENGINES))
def test_a_file_cut_at_every_byte_is_one_error_naming_it(
    family: str, saved: dict[str, Path], tmp_path: Path
) -> None:
    size = (saved[family] / ENGINES[family][0]).stat().st_size
    assert refuse_cuts(family, saved[family], tmp_path, 1) >= size - 2


@pytest.mark.parametrize("family", list(ENGINES))
@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: b"", "empty file"),
        (lambda d: bytes(len(d)), "all zero bytes"),
        (lambda d: d[: len(d) // 2] + bytes(len(d) - len(d) // 2), None),  # the second half zeroed
        (lambda d: b"\x89PNG\r\n\x1a\n" + d[8:], "not a"),  # another format's header
        (lambda d: d[:12] + b"\xff" * 8 + d[20:], None),  # bytes overwritten near the start
        (lambda d: d[:4] + b"\xff\xff\xff\x7f" + d[8:], None),  # a huge length / a broken header
    ],
)
def test_zeroed_empty_and_foreign_files_are_refused(
    family: str, damage: Any, message: str | None, saved: dict[str, Path], tmp_path: Path
) -> None:
    """LightGBM and XGBoost files by ltr's checks alone; CatBoost's through the loader (CatBoost verifies
    its own flatbuffers and raises, which the loader turns into the same one line)."""
    import shutil

    from ltr.core.errors import ConfigError
    from ltr.tracking.loading import load_model

    name, check = ENGINES[family]
    folder = tmp_path / "ranker"
    shutil.copytree(saved[family], folder)
    bad = folder / name
    bad.write_bytes(damage((saved[family] / name).read_bytes()))
    if family == "catboost":
        with pytest.raises(ConfigError, match=message) as caught:
            load_model(str(folder), tracking_uri="", option="MODEL")
    else:
        with pytest.raises(DataError, match=message) as caught:
            check(bad)
    assert str(bad) in str(caught.value) and "\n" not in str(caught.value)


def test_one_engine_file_in_place_of_another_is_refused(saved: dict[str, Path], tmp_path: Path) -> None:
    for family, (name, check) in ENGINES.items():
        for other, (other_name, _) in ENGINES.items():
            if other != family:
                bad = tmp_path / name
                bad.write_bytes((saved[other] / other_name).read_bytes())
                with pytest.raises(DataError, match="not a"):
                    check(bad)


def test_an_xgboost_length_of_terabytes_is_refused_before_any_allocation(tmp_path: Path) -> None:
    bad = tmp_path / "model.ubj"
    bad.write_bytes(
        b"{L\x00\x00\x00\x00\x00\x00\x00\x07learner{L\x00\x00\x00\x00\x00\x00\x00\x05trees[$d#L" + b"\x7f" * 8
    )
    with pytest.raises(DataError, match="runs past the end of the file"):
        check_xgboost_model(bad)


def test_a_json_xgboost_model_is_checked_too(saved: dict[str, Path], tmp_path: Path) -> None:
    import xgboost as xgb

    booster = xgb.Booster(model_file=str(saved["lambdamart_xgb"] / "model.ubj"))
    whole = tmp_path / "model.json"
    booster.save_model(str(whole))
    check_xgboost_model(whole)
    data = whole.read_bytes()
    cut = tmp_path / "cut.json"
    for n in range(0, len(data), 7):
        cut.write_bytes(data[:n])
        with pytest.raises(DataError):
            check_xgboost_model(cut)


#: loads every cut of one engine file through ltr's one model loader in ONE process, one line per cut
LOADER_LOOP = textwrap.dedent(
    """
    import shutil, sys
    from pathlib import Path
    from ltr.core.errors import LtrError
    from ltr.tracking.loading import load_model
    import random
    folder, name, step = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    flips = len(sys.argv) > 5  # overwrite 1-4 random bytes instead of cutting
    data, rng = (folder / name).read_bytes(), random.Random(0)
    for n in range(0, len(data), step):
        copy = Path(sys.argv[4]) / f"cut{n}"
        shutil.copytree(folder, copy)
        damaged = bytearray(data[:n] if not flips else data)
        for _ in range(rng.choice([1, 2, 4]) if flips else 0):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        (copy / name).write_bytes(bytes(damaged))
        try:
            load_model(str(copy), tracking_uri="", option="MODEL")
            print(n, "LOADED", flush=True)
        except LtrError as exc:
            print(n, "ERROR", str(exc).replace(chr(10), " | "), flush=True)
        shutil.rmtree(copy)
    """
)


@pytest.mark.parametrize("family", list(ENGINES))
def test_the_loader_refuses_every_cut_in_one_line_without_crashing(
    family: str, saved: dict[str, Path], tmp_path: Path
) -> None:
    """A subprocess: on a loader without the checks LightGBM aborts and XGBoost crashes mid-loop."""
    name, _ = ENGINES[family]
    size = (saved[family] / name).stat().st_size
    step = max(1, size // 60)  # about 60 cuts spread over the file
    proc = subprocess.run(
        [sys.executable, "-c", LOADER_LOOP, str(saved[family]), name, str(step), str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(range(0, size, step)) >= 50
    for line in lines:
        n, verdict, *message = line.split(" ", 2)
        assert verdict == "ERROR", line
        assert message[0].startswith(f"MODEL {tmp_path / f'cut{n}'}:") and name in message[0], line


@pytest.mark.slow
@pytest.mark.parametrize("family", ["lambdamart", "lambdamart_xgb"])
def test_random_overwritten_bytes_never_crash_the_loader(
    family: str, saved: dict[str, Path], tmp_path: Path
) -> None:
    """About 300 copies with 1–4 random bytes overwritten, loaded in one process: each loads (a byte that
    changes a value only, e.g. a leaf) or is one error; none aborts or crashes the engine (on main: SIGSEGV
    on a damaged parameter line of LightGBM or a parent index of XGBoost)."""
    name, _ = ENGINES[family]
    size = (saved[family] / name).stat().st_size
    proc = subprocess.run(
        [sys.executable, "-c", LOADER_LOOP, str(saved[family]), name, str(max(1, size // 300)), str(tmp_path), "flip"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdicts = [line.split(" ", 2)[1] for line in proc.stdout.splitlines()]
    assert len(verdicts) >= 290 and verdicts.count("ERROR") > len(verdicts) // 2


@pytest.mark.parametrize(
    ("command", "args"), [("ltr.export", ["--format", "onnx", "--out", "{out}"]), ("ltr.evaluate", [])]
)
def test_the_commands_end_in_one_error_line_on_a_cut_lightgbm_model(
    command: str, args: list[str], saved: dict[str, Path], tmp_path: Path
) -> None:
    """Real processes (on main: exit 134, LightGBM's abort, in both)."""
    folder = tmp_path / "ranker"
    import shutil

    shutil.copytree(saved["lambdamart"], folder)
    data = (folder / "model.txt").read_bytes()
    (folder / "model.txt").write_bytes(data[: data.index(b"Tree=0") + 60])
    out = tmp_path / "m.onnx"
    if command == "ltr.export":
        argv = [str(folder), *(a.format(out=out) for a in args)]
    else:
        test_file = tmp_path / "test.txt"
        from ltr.data.svmlight import write_svmlight

        write_svmlight(VALID, test_file)
        argv = ["--data", str(test_file), "--model", str(folder)]
    proc = subprocess.run([sys.executable, "-m", command, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert str(folder / "model.txt") in proc.stderr and "cut short" in proc.stderr
    assert not out.exists()


def test_a_damaged_manifest_or_history_is_one_error(saved: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    from ltr.core.errors import ConfigError
    from ltr.models.base import HISTORY
    from ltr.tracking.loading import load_model

    cases = {
        "manifest.json": [b"", b"\x00" * 50, b'{"format": "ltr-ranker"', b"\xff\xfe{}"],
        HISTORY: [b"{", b"\xff"],
    }
    tried = 0
    for file, contents in cases.items():
        for content in contents:
            folder = tmp_path / f"f{tried}"
            shutil.copytree(saved["lambdamart"], folder)
            (folder / file).write_bytes(content)
            with pytest.raises(ConfigError) as caught:
                load_model(str(folder), tracking_uri="", option="MODEL")
            assert f"MODEL {folder}" in str(caught.value) and "\n" not in str(caught.value)
            tried += 1
    manifest = json.loads((saved["lambdamart"] / "manifest.json").read_text())
    del manifest["files"]
    folder = tmp_path / "nofiles"
    shutil.copytree(saved["lambdamart"], folder)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match="damaged"):
        load_model(str(folder), tracking_uri="", option="MODEL")

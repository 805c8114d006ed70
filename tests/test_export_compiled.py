"""``ltr.export --format c``: C source plus a shared library built with the system compiler.

Parity with the engines' own predictions for every model family is in tests/test_export.py (the
source compiled there by the test itself); here: the library reproduces the canonical model to the
bit on the rows that sit exactly on, just above and just below every threshold (so every literal
is exact), the command line, and its refusals.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import completed_in_process

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.svmlight import write_svmlight
from ltr.data.synthetic import generate
from ltr.export.features import default_names
from ltr.export.formats import FORMATS, export
from ltr.export.parity import probe_rows
from ltr.export.reading import raw_feature_model
from ltr.export.targets import compiled
from ltr.models import build_ranker


@pytest.fixture(scope="module")
def data() -> RankingData:
    raw = generate(60, seed=4, max_docs=30)
    X = np.array(raw.X, dtype=np.float32)
    X[np.random.default_rng(0).random(X.shape) < 0.05] = np.nan  # missing values: default directions
    return RankingData(X=X, y=raw.y, qid=raw.qid)


@pytest.fixture(scope="module", params=["lambdamart", "lambdamart_xgb"])
def ranker(request, data):
    cfg = {"name": request.param, "params": {"n_trees": 40, "num_leaves": 15}}
    return build_ranker(cfg, seed=1, num_threads=1).fit(data)


def test_the_library_gives_the_canonical_models_scores_to_the_bit(ranker, data, tmp_path: Path) -> None:
    model = raw_feature_model(ranker)
    out = tmp_path / "model.c"
    export(ranker, FORMATS["c"], out, default_names(data.n_features))
    X = np.vstack([np.asarray(data.X, np.float32), probe_rows(model, np.asarray(data.X, np.float32))])
    X = np.vstack([X, np.full((1, data.n_features), np.inf, np.float32), -np.ones((1, data.n_features))])
    np.testing.assert_array_equal(compiled.score(out, X, []), model.predict(X))


def test_the_command_writes_source_and_library_and_checks_them(ranker, data, tmp_path: Path, capsys) -> None:
    ranker.save(tmp_path / "model")
    write_svmlight(RankingData(X=np.nan_to_num(data.X), y=data.y, qid=data.qid), tmp_path / "test.txt")
    out = tmp_path / "export" / "ranker.c"
    args = [
        str(tmp_path / "model"),
        "--format",
        "c",
        "--out",
        str(out),
        "--check",
        str(tmp_path / "test.txt"),
    ]
    done = completed_in_process("ltr.export", args, capsys, run_cli=False)
    assert done.returncode == 0, done.stderr
    assert out.is_file() and out.with_suffix(".so").is_file()
    assert "ltr_predict" in out.read_text()
    assert any(line.strip().startswith("compiled ranker.so in ") for line in done.stdout.splitlines())
    assert "0 ranking inversions: OK" in done.stdout


def test_scoring_leaves_no_temporary_copy_behind(ranker, data, tmp_path: Path) -> None:
    import tempfile

    out = tmp_path / "model.c"
    export(ranker, FORMATS["c"], out, default_names(data.n_features))
    before = set(Path(tempfile.gettempdir()).glob("ltr-c-*"))
    for _ in range(3):
        compiled.score(out, np.asarray(data.X, np.float32), [])
    assert set(Path(tempfile.gettempdir()).glob("ltr-c-*")) == before


def test_an_out_path_that_is_the_library_itself_is_refused(ranker, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--out .*model\.so: the shared library is written to --out"):
        FORMATS["c"].outputs(tmp_path / "model.so", raw_feature_model(ranker))


def test_no_compiler_is_one_error_line_and_nothing_written(
    ranker, tmp_path: Path, capsys, monkeypatch
) -> None:
    ranker.save(tmp_path / "model")
    monkeypatch.setenv("CC", "no-such-compiler-ltr")
    out = tmp_path / "ranker.c"
    done = completed_in_process(
        "ltr.export", [str(tmp_path / "model"), "--format", "c", "--out", str(out)], capsys, run_cli=False
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: --format c: no C compiler 'no-such-compiler-ltr' on PATH (set CC, or install one: "
        "apt-get install gcc / xcode-select --install); the source alone needs none"
    ]
    assert not out.exists() and not out.with_suffix(".so").exists()


@pytest.mark.parametrize("value", [0.1, 1e-40, -0.0, 3.4028235e38, -2.5, 16777217.0])
def test_float_literals_are_exact(value: float) -> None:
    literal = compiled.c_float(np.float32(value))
    assert literal.endswith("f")
    assert np.float32(float.fromhex(literal[:-1])) == np.float32(value)
    assert str(np.float32(float.fromhex(literal[:-1]))) == str(np.float32(value))  # the sign of -0.0 too

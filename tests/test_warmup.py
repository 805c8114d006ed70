"""``python -m ltr.warmup``: the kernels ltr's commands run come out of numba's cache, not a compilation."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import PROJECT_ROOT

from ltr.warmup import DEFAULT_GROUPS, GROUPS, main


def test_each_group_compiles_the_parser_for_its_dtype(capsys):
    from ltr.data import _fastparse

    assert main(["parse", "float64"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["numba kernels, parse", "numba kernels, float64"]
    # the feature-value arrays of the chunked parser's signatures: one per dtype
    floats = [
        [str(a.dtype) for a in sig if str(getattr(a, "dtype", "")).startswith("float")]
        for sig in _fastparse._fill_chunk.signatures
    ]
    dtypes = {arrays[-1] for arrays in floats}
    assert dtypes == {"float32", "float64"}, _fastparse._fill_chunk.signatures


def test_the_default_groups_include_float64_which_lightgbm_runs_parse_into():
    from ltr.models import build_ranker

    assert build_ranker({"name": "lambdamart"}).input_dtype == "float64"
    assert DEFAULT_GROUPS == ("parse", "metrics", "float64") and set(GROUPS) == set(DEFAULT_GROUPS)


@pytest.mark.parametrize("args", [["--jobs", "0"], ["--jobs", "two"], ["nope"]])
def test_bad_arguments_exit_2_naming_the_argument(args, capsys):
    with pytest.raises(SystemExit) as ended:
        main(args)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "--jobs" in err or "GROUP" in err


@pytest.mark.slow
def test_a_command_after_the_warm_up_compiles_nothing(tmp_path):
    """In an empty numba cache: ``python -m ltr.warmup --jobs 2`` (real processes), then a process that
    parses a file, fingerprints it and computes metrics and a bootstrap as the commands do saves no new
    compiled code."""
    env = {
        "PATH": "/usr/bin:/bin",
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    warm = subprocess.run(
        [sys.executable, "-m", "ltr.warmup", "--jobs", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert warm.returncode == 0, warm.stderr[-3000:]
    assert sorted(line.split(":")[0] for line in warm.stdout.splitlines()) == [
        "numba kernels, float64",
        "numba kernels, metrics",
        "numba kernels, parse",
    ]
    data = tmp_path / "train.txt"
    rng = np.random.default_rng(1)
    data.write_text(
        "".join(
            f"{rng.integers(0, 5)} qid:{q} 1:{rng.random():.4f} 2:{rng.random():.4f}\n"
            for q in range(9)
            for _ in range(5)
        )
    )
    use = (
        "import numpy as np\n"
        "from ltr.data.svmlight import load_svmlight\n"
        "from ltr.metrics import evaluate\n"
        "from ltr.stats import bootstrap_ci\n"
        f"d = load_svmlight({str(data)!r}, engine='numba')\n"
        "d.fingerprint()\n"
        f"load_svmlight({str(data)!r}, engine='numba', dtype='float64').fingerprint()  # LightGBM runs' dtype\n"
        "evaluate(['ndcg@10', 'err@10', 'map'], d.y, np.random.default_rng(0).random(len(d.y)), d.offsets)\n"
        "bootstrap_ci(np.linspace(0, 1, 9), B=50, seed=0, method='bca')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", use],
        env={**env, "NUMBA_DEBUG_CACHE": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "data loaded" in run.stdout + run.stderr
    assert "data saved" not in run.stdout + run.stderr, [
        line for line in (run.stdout + run.stderr).splitlines() if "data saved" in line
    ]


def test_kernels_compiled_reads_numbas_cache_index(tmp_path):
    """True once the warm-up filled the cache (this session's); False in an empty cache (a new install)."""
    from ltr.data._fastparse import kernels_compiled

    main(["parse"])
    assert kernels_compiled() is True
    code = "from ltr.data._fastparse import kernels_compiled; print(kernels_compiled())"
    env = {"PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_training_says_once_that_it_compiles_before_the_silent_minute(tmp_path, monkeypatch):
    import io

    from helpers import TINY_DATA, compose_config
    from rich.console import Console

    from ltr.experiment import record

    console = Console(width=200, file=io.StringIO(), record=True)
    cfg = compose_config(["+model=lambdamart", *TINY_DATA, f"paths.root={tmp_path}", "tracking=none"])
    for compiled, said in ((False, True), (True, False)):
        monkeypatch.setattr(record, "kernels_compiled", lambda compiled=compiled: compiled)
        record.connect_and_load(cfg, console)
        text = console.export_text(clear=True)
        assert ("numba: compiling ltr's parser and metric kernels for this install (once" in text) is said
        assert text.index("Data") >= 0

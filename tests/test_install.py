"""The wheel installs like any Python package and ltr works from an empty folder (slow: builds and installs).

Build ``uv build`` (the sdist, then the wheel from the sdist, so a file missing from the sdist is
missing from the wheel too) → a fresh virtual environment in a temp folder, outside the checkout →
``pip install <wheel>`` with plain resolution: no constraints, no overrides, no ``--no-deps``, the
newest releases the declared ranges allow (that is what a user gets; a lock-pinned constraints file
would hide a range that no longer resolves) → every entry point from an empty folder, with
``PYTHONPATH`` and ``LTR_ROOT`` removed so nothing points back at the checkout.

Needs uv (``make env`` bootstraps ``.tools/bin/uv``; or set ``UV=/path/to/uv``) and PyPI. Measured on
2 cores: both builds 2-5 s, venv + ``pip install`` (downloads included) 50-110 s, the runs 45-90 s;
1.7 minutes in all on a quiet machine, 3.5 on a busy one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from helpers import PROJECT_ROOT, TINY_DATA, quick_model, store_client, write_user_data

pytestmark = pytest.mark.slow

TIMINGS: dict[str, float] = {}


def find_uv() -> str:
    for candidate in (os.environ.get("UV"), PROJECT_ROOT / ".tools" / "bin" / "uv", shutil.which("uv")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail(
        "tests/test_install.py needs uv: run `make env` (bootstraps .tools/bin/uv) or set UV=/path/to/uv"
    )


def timed(label: str, args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    TIMINGS[label] = time.perf_counter() - start
    print(f"{label}: {TIMINGS[label]:.1f} s")
    return done


def user_env() -> dict[str, str]:
    """A user's shell: no PYTHONPATH/LTR_ROOT/VIRTUAL_ENV pointing at the checkout; quiet, passive threads."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "LTR_ROOT", "VIRTUAL_ENV"}}
    env.update({"MLFLOW_DISABLE_TELEMETRY": "true", "CI": "true", "OMP_WAIT_POLICY": "PASSIVE"})
    return env


def project_version() -> str:
    return tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["version"]


def repo_files(folder: str) -> set[str]:
    root = PROJECT_ROOT / folder
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    args = [find_uv(), "build", "--out-dir", str(out), "--python", sys.executable, str(PROJECT_ROOT)]
    done = timed("uv build (sdist, then wheel from it)", args, timeout=900, env=user_env())
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("ltr_workbench-*.whl")
    (sdist,) = out.glob("ltr_workbench-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.fixture(scope="module")
def python(dist, tmp_path_factory) -> Path:
    """The interpreter of a fresh venv outside the checkout with the wheel pip-installed.

    The venv lives inside an unrelated git repository (one empty commit), as a user's might: a run
    must not record that repository's commit as ltr's provenance.
    """
    repo = tmp_path_factory.mktemp("other_repo")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "unrelated"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
    venv = repo / "venv"
    done = timed("python -m venv", [sys.executable, "-m", "venv", str(venv)], timeout=300, env=user_env())
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    # the README's install: the wheel with the `export` extra (ONNX), plain pip
    install = [str(python), "-m", "pip", "install", "--disable-pip-version-check", f"{dist['wheel']}[export]"]
    done = timed("pip install <wheel>", install, timeout=1800, env=user_env())
    assert done.returncode == 0, (
        f"plain `pip install` of the wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return python


def ltr_in(python: Path, folder: Path, label: str, *args: str) -> subprocess.CompletedProcess[str]:
    done = timed(label, [str(python), "-m", *args], cwd=folder, env=user_env(), timeout=900)
    assert done.returncode == 0, (
        f"{' '.join(args)} failed in {folder}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def test_wheel_and_sdist_carry_the_config_tree_and_experiments(dist, tmp_path):
    names = set(zipfile.ZipFile(dist["wheel"]).namelist())
    # a wheel built straight from the checkout (as `pip install /path/to/ltr` does) holds the same files
    direct = [
        find_uv(),
        "build",
        "--wheel",
        "--out-dir",
        str(tmp_path),
        "--python",
        sys.executable,
        str(PROJECT_ROOT),
    ]
    done = timed("uv build --wheel (from the checkout)", direct, timeout=900, env=user_env())
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("ltr_workbench-*.whl")
    assert set(zipfile.ZipFile(wheel).namelist()) == names
    for folder in ("conf", "experiments"):
        shipped = {n.removeprefix(f"ltr/{folder}/") for n in names if n.startswith(f"ltr/{folder}/")}
        assert shipped == repo_files(folder), f"wheel's ltr/{folder}/ differs from the repository's {folder}/"
    assert "ltr/core/resources.py" in names and "ltr/train.py" in names
    with tarfile.open(dist["sdist"]) as sdist:
        members = {m.split("/", 1)[1] for m in sdist.getnames() if "/" in m}
    for folder in ("conf", "experiments"):
        assert {f"{folder}/{f}" for f in repo_files(folder)} <= members


def test_installed_package_is_the_wheel_not_the_checkout(python, tmp_path):
    code = "import ltr, ltr.core.resources as r; print(ltr.__file__); print(r.config_dir()); print(r.source_checkout())"
    done = timed("import ltr", [str(python), "-c", code], cwd=tmp_path, env=user_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    package_file, conf, checkout = done.stdout.split()
    venv = python.parents[1]
    assert Path(package_file).is_relative_to(venv) and Path(conf).is_relative_to(venv)
    assert (Path(conf) / "model" / "lambdamart.yaml").is_file() and not Path(conf).is_symlink()
    assert checkout == "None"


def test_train_from_an_empty_folder(python, tmp_path):
    ltr_in(
        python,
        tmp_path,
        "train lambdamart (tiny)",
        "ltr.train",
        "+model=lambdamart",
        *TINY_DATA,
        *quick_model(20),
    )
    # everything lands in the working directory: data, Hydra outputs, the MLflow store
    assert (tmp_path / "data" / "synthetic" / "train.txt").is_file()
    assert (tmp_path / "mlflow.db").is_file() and any((tmp_path / "outputs").iterdir())
    client = store_client(tmp_path)
    (run,) = client.search_runs([client.get_experiment_by_name("ltr").experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.tags["version.ltr"] == project_version()
    assert "git.commit" not in run.data.tags  # not a checkout: the installed version is the provenance
    assert run.data.tags["ltr.cwd"] == str(tmp_path)
    assert 0 < run.data.metrics["test/ndcg_at_10"] <= 1
    # the README's export, from the same folder: ONNX (the `export` extra), checked by onnxruntime
    done = ltr_in(
        python, tmp_path, "export onnx", "ltr.export", f"runs:/{run.info.run_id}/model", "--format", "onnx",
        "--out", "model.onnx", "--check", "data/synthetic/test.txt",
    )  # fmt: skip
    assert (tmp_path / "model.onnx").is_file() and "wrote model.onnx (onnx" in done.stdout


def test_packaged_experiment_with_an_ensemble(python, tmp_path):
    # experiments/synthetic_challenge.yaml from the package; its `blend` system reads its members'
    # model configs from the package too
    ltr_in(
        python, tmp_path, "compare experiment=synthetic_challenge (tiny)",
        "ltr.compare", "experiment=synthetic_challenge", "tracking=none", *TINY_DATA,
    )  # fmt: skip
    rows = (tmp_path / "reports" / "synthetic_challenge" / "leaderboard.csv").read_text().splitlines()[1:]
    assert {row.split(",")[0] for row in rows} == {
        "regression", "classification", "lambdamart", "lambdamart_xgb", "blend"
    }  # fmt: skip
    assert not (tmp_path / "mlflow.db").exists()


def test_users_own_data_config_and_experiment_file(python, tmp_path):
    write_user_data(tmp_path)
    done = ltr_in(
        python, tmp_path, "train with --config-dir (tiny)",
        "ltr.train", "--config-dir", "myconf", "+model=lambdamart", "data=mydata", "tracking=none", *quick_model(10),
    )  # fmt: skip
    assert "Data mydata" in done.stdout
    (tmp_path / "mine.yaml").write_text(
        "title: my data, two systems\n"
        "overrides: ['hydra.searchpath=[file://myconf]', data=mydata]\n"
        "baseline: regression\nprimary: ndcg@10\nmetrics: [ndcg@10, err@10]\nstats: {B: 200}\n"
        "systems:\n  regression: {model: regression}\n  mart: {model: lambdamart, overrides: [model.params.n_trees=10]}\n"
    )
    ltr_in(
        python,
        tmp_path,
        "compare a user's experiment file",
        "ltr.compare",
        "experiment=mine.yaml",
        "tracking=none",
    )
    leaderboard = (tmp_path / "reports" / "mine" / "leaderboard.md").read_text()
    assert "regression (baseline)" in leaderboard and "mart" in leaderboard


def test_optuna_sweep_finds_ltrs_sweeper_plugin(python, tmp_path):
    # Hydra discovers the sweeper through the hydra_plugins package the wheel ships
    ltr_in(
        python, tmp_path, "optuna sweep, 2 trials (tiny)",
        "ltr.train", "-m", "+model=lambdamart", "hparams_search=lambdamart_optuna", "hydra.sweeper.n_trials=2",
        "tracking=none", *TINY_DATA, *quick_model(10),
    )  # fmt: skip
    (results,) = (tmp_path / "multirun").glob("*/*/optimization_results.yaml")
    assert "COMPLETE: 2" in results.read_text()


def test_every_entry_point_answers(python, tmp_path):
    assert "synthetic_challenge" in ltr_in(python, tmp_path, "compare --help", "ltr.compare", "--help").stdout
    assert "mslr_web30k" in ltr_in(python, tmp_path, "data list", "ltr.data", "list").stdout
    assert "--qrels" in ltr_in(python, tmp_path, "evaluate --help", "ltr.evaluate", "--help").stdout
    assert list(tmp_path.iterdir()) == []  # listings and help write nothing
    no_model = timed(
        "train without a model", [str(python), "-m", "ltr.train"], cwd=tmp_path, env=user_env(), timeout=300
    )
    assert no_model.returncode == 2 and "python -m ltr.train +model=lambdamart" in no_model.stderr
    print("timings:", ", ".join(f"{k} {v:.0f} s" for k, v in TIMINGS.items()))

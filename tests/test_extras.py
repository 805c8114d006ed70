"""The distribution name and the optional extras: one error line naming the missing module and its install."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest
from helpers import PROJECT_ROOT

from ltr.core.errors import ConfigError
from ltr.core.extras import DISTRIBUTION, EXTRAS, install_hint

PYPROJECT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())


def test_the_distribution_name_is_ours_and_the_extras_are_pyprojects():
    assert PYPROJECT["project"]["name"] == DISTRIBUTION == "ltr-workbench"  # `ltr` on PyPI is another project
    declared = PYPROJECT["project"]["optional-dependencies"]
    for extra, modules in EXTRAS.items():
        names = {req.split(">")[0].split("=")[0].split("[")[0].strip().lower() for req in declared[extra]}
        assert set(modules) <= names, (extra, modules, names)


def test_the_readme_install_section_names_the_distribution_and_every_extra():
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = readme[readme.index("## Install as a package") :]
    section = section[: section.index("\n## ", 3)]
    for extra in EXTRAS:
        assert install_hint(extra) in section, extra


def _blocking(tmp_path, module: str) -> dict[str, str]:
    """An environment whose Python cannot import ``module`` (as if the extra were not installed)."""
    (tmp_path / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{tmp_path}:{PROJECT_ROOT}",
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }
    return env


@pytest.mark.parametrize("module", ["onnx", "onnxruntime"])
def test_export_to_onnx_without_the_extra_is_one_line_before_any_model_is_read(module, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.export", str(tmp_path / "no-such-model"), "--format", "onnx",
         "--out", str(tmp_path / "m.onnx")],
        env=_blocking(tmp_path, module), cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: --format onnx needs the optional package {module} (extra 'export'): "
        "pip install 'ltr-workbench[export]' (in this checkout: uv sync --extra export)"
    ]
    assert not (tmp_path / "m.onnx").exists()


def test_export_help_names_the_extra():
    proc = subprocess.run(
        [sys.executable, "-m", "ltr.export", "--help"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "pip install 'ltr-workbench[export]'" in " ".join(proc.stdout.split())


@pytest.mark.parametrize("engine_params", [{}, {"l2_leaf_reg": 1.0}])
def test_catboost_without_the_extra_names_the_install(monkeypatch, engine_params):
    """Also with ``engine_params``, whose check needs CatBoost's parameter list: the missing extra is the error."""
    from ltr.models import build_ranker
    from ltr.models.engines.cat import catboost_parameter_names

    catboost_parameter_names.cache_clear()  # as in a process that never had catboost
    monkeypatch.setitem(sys.modules, "catboost", None)
    with pytest.raises(ConfigError) as raised:
        build_ranker(
            {"name": "catboost", "params": {}, "engine_params": engine_params}, seed=0, num_threads=1
        )
    assert str(raised.value) == (
        "model catboost needs the optional package catboost (extra 'catboost'): "
        "pip install 'ltr-workbench[catboost]' (in this checkout: uv sync --extra catboost)"
    )


def test_every_run_records_ltrs_version_as_the_distribution_declares_it():
    """The tag stays ``version.ltr`` (the import name) after the distribution became ``ltr-workbench``:
    it read the version of a distribution called ``ltr`` and vanished from installed runs."""
    from ltr.experiment.provenance import package_versions

    assert package_versions()["version.ltr"] == PYPROJECT["project"]["version"]


def test_constraints_txt_is_the_lock_for_plain_pip():
    """``pip install . -c constraints.txt`` gets the versions the lock tests: the file is exactly what
    ``make constraints`` (``uv export`` of uv.lock) writes now, and pip can read every line of it."""
    import os
    import shutil
    from pathlib import Path

    from packaging.requirements import Requirement

    uv = next(
        (
            str(c)
            for c in (os.environ.get("UV"), PROJECT_ROOT / ".tools" / "bin" / "uv", shutil.which("uv"))
            if c and Path(c).is_file()
        ),
        None,
    )
    if uv is None:
        pytest.skip("needs uv (make env bootstraps .tools/bin/uv)")
    flags = ["--frozen", "--no-hashes", "--no-dev", "--all-extras", "--no-emit-project"]
    fresh = subprocess.run(
        [uv, "export", *flags],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    on_disk = (PROJECT_ROOT / "constraints.txt").read_text()

    def body(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]

    assert body(on_disk) == body(fresh), "constraints.txt is stale: run `make constraints`"
    pins = {Requirement(line.split(" #")[0]).name: line for line in body(on_disk) if not line.startswith(" ")}
    lock = tomllib.loads((PROJECT_ROOT / "uv.lock").read_text())
    locked = {p["name"]: p["version"] for p in lock["package"] if "version" in p}
    for name in ("optuna", "mlflow", "lightgbm", "onnxruntime", "catboost"):
        assert f"{name}=={locked[name]}" in pins[name]

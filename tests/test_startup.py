"""The fixed costs of ``python -m ltr.train`` before any work: ``--help`` answers before Hydra or numpy
load, and a config error is reported before pandas, MLflow, scipy.stats or an engine load.

Both are checked on real command lines run under ``python -X importtime``, whose report names every
module the process imported; the page's groups and defaults are checked against Hydra's own view.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import PROJECT_ROOT, cli_env

#: what a config check must not load: the analysis, tracking and engine packages, and scipy.stats
NOT_FOR_A_CONFIG_ERROR = frozenset(
    {"pandas", "pyarrow", "mlflow", "scipy.stats", "lightgbm", "xgboost", "catboost", "sklearn", "dask",
     "distributed", "jax", "optuna", "onnx", "onnxruntime", "matplotlib"}
)  # fmt: skip


def imported_modules(args: list[str], tmp_path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m ltr.train ARGS``: the finished process and every module it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ltr.train", *args],
        cwd=PROJECT_ROOT,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    modules = {
        line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    }
    return proc, modules - {"package"}  # the header line's last column


def test_train_help_is_ltrs_page_and_loads_neither_hydra_nor_numpy(tmp_path) -> None:
    proc, modules = imported_modules(["--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: python -m ltr.train +model=NAME")
    words = " ".join(proc.stdout.split())  # wrapped to the terminal's width
    assert "lambdamart_xgb," in words and "(default: data=synthetic)" in words
    heavy = {
        m for m in modules if m.split(".")[0] in {"hydra", "omegaconf", "numpy", "rich", "scipy", "ltr.data"}
    }
    assert not heavy, f"--help loaded {sorted(heavy)[:10]}"


def test_a_config_error_is_reported_before_analysis_tracking_or_engines_load(tmp_path) -> None:
    proc, modules = imported_modules(["+model=lambdamart", "model.params.learning_rate=-1"], tmp_path)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert errors == ["error: model.params.learning_rate: must be in (0.0, inf], got -1.0"], errors
    loaded = {m for m in modules if m in NOT_FOR_A_CONFIG_ERROR or m.split(".")[0] in NOT_FOR_A_CONFIG_ERROR}
    assert not loaded, f"a config error loaded {sorted(loaded)[:10]}"


def test_the_help_page_lists_every_group_option_and_default_hydra_composes() -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from ltr.cli.train_help import config_groups, default_options
    from ltr.core.resources import config_dir
    from ltr.experiment.schemas import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        cfg = compose(config_name="config", return_hydra_config=True)

        def hydra_groups(parent: str = "") -> dict[str, list[str]]:
            found: dict[str, list[str]] = {}
            for name in loader.list_groups(parent):
                group = f"{parent}/{name}" if parent else name
                # the typed nodes ltr registers (ConfigStore) are not options a user picks
                options = [o for o in loader.get_group_options(group) if not o.endswith("schema")]
                if options and group != "model_base":
                    found[group] = options
                found |= hydra_groups(group)
            return found

        expected = {g: o for g, o in hydra_groups().items() if not g.startswith("hydra")}
    assert config_groups() == expected
    choices = dict(cfg.hydra.runtime.choices)
    assert default_options() == {g: choices[g] for g in default_options()}
    assert {g for g, o in choices.items() if o is not None and not g.startswith("hydra")} == set(
        default_options()
    )


@pytest.mark.parametrize("argv", [["--help"], ["+model=lambdamart", "-h"], ["--hydra-help"]])
def test_help_requested_reads_the_flags_as_hydra_does(argv: list[str]) -> None:
    from ltr.cli.train_help import help_requested

    assert help_requested(argv) is (argv != ["--hydra-help"])

"""ltr finds its own configs through the package (ltr.core.resources), and users extend them from their folder.

The wheel side (the same lookup in an installed package, from an empty folder) is tests/test_install.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import PROJECT_ROOT, compose_config, train_main_in_process, write_user_data

from ltr.core.errors import LtrError
from ltr.core.resources import config_dir, experiments_dir, package_folder, source_checkout, work_root


def relative_files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_package_folders_are_the_repository_folders():
    # in a checkout the one lookup reads the top-level conf/ and experiments/ that people edit
    assert config_dir().resolve() == PROJECT_ROOT / "conf"
    assert experiments_dir().resolve() == PROJECT_ROOT / "experiments"
    assert relative_files(config_dir()) == relative_files(PROJECT_ROOT / "conf")
    assert "model/lambdamart.yaml" in relative_files(config_dir())


def test_entry_points_use_the_package_lookup():
    from ltr import train
    from ltr.experiment import experiments
    from ltr.models.ensembles import members

    assert train.CONF_DIR == experiments.CONF_DIR == members.CONF_DIR == config_dir()
    assert experiments_dir() == experiments.EXPERIMENTS_DIR
    assert train.available_models() == sorted(
        p.stem for p in (PROJECT_ROOT / "conf" / "model").glob("*.yaml")
    )
    assert experiments.available_experiments() == sorted(
        p.stem for p in (PROJECT_ROOT / "experiments").glob("*.yaml")
    )


def test_missing_package_folder_is_a_clear_error():
    with pytest.raises(LtrError, match=r"ltr's nothing_here/ folder is missing at .*ltr/nothing_here"):
        package_folder("nothing_here")


def test_source_checkout_needs_git_and_pyproject(tmp_path):
    assert source_checkout() == PROJECT_ROOT  # the tests run from a checkout
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    assert source_checkout(tmp_path) is None  # e.g. site-packages of a venv: no .git
    (tmp_path / ".git").write_text("gitdir: elsewhere\n")  # a git worktree's .git is a file
    assert source_checkout(tmp_path) == tmp_path
    (tmp_path / "pyproject.toml").unlink()
    assert source_checkout(tmp_path) is None  # a repository, but not ltr's


def test_work_root_follows_ltr_root(monkeypatch, tmp_path):
    from ltr.data.__main__ import build_parser

    monkeypatch.delenv("LTR_ROOT", raising=False)
    assert work_root() == Path(".")
    assert build_parser().parse_args(["fetch", "mq2007"]).data_dir == "data"
    monkeypatch.setenv("LTR_ROOT", str(tmp_path))
    assert work_root() == tmp_path
    assert build_parser().parse_args(["fetch", "mq2007"]).data_dir == str(tmp_path / "data")
    assert build_parser().parse_args(["convert", "x.txt"]).cache_dir == str(tmp_path / "data" / "cache")


@pytest.fixture
def user_folder(tmp_path, monkeypatch) -> Path:
    """A user's folder: myconf/data/mydata.yaml and its LETOR files under data/mydata/; cwd and LTR_ROOT."""
    write_user_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LTR_ROOT", str(tmp_path))
    return tmp_path


def test_user_data_config_through_hydra_searchpath(user_folder):
    from ltr.data.registry import load_dataset

    cfg = compose_config(["+model=lambdamart", "data=mydata", "hydra.searchpath=[file://myconf]"])
    assert cfg.data.name == "mydata"
    assert cfg.data.kind == "svmlight" and cfg.data.nonfinite == "error"  # inherited from ltr's svmlight.yaml
    assert cfg.data.train == f"{user_folder}/data/mydata/train.txt"
    splits = load_dataset(cfg.data)
    assert {s: d.n_queries for s, d in splits.items()} == {"train": 12, "valid": 4, "test": 3}
    assert splits["test"].X.shape == (15, 10)


def test_user_experiment_file_with_user_data(user_folder):
    from ltr.experiment.experiments import compose_system, load_experiment

    (user_folder / "mine.yaml").write_text(
        "overrides: ['hydra.searchpath=[file://myconf]', data=mydata]\n"
        "baseline: regression\n"
        "systems:\n  regression: {model: regression}\n  mart: {model: lambdamart}\n"
    )
    exp = load_experiment("mine.yaml")  # a path relative to the working directory, not a packaged name
    assert exp.name == "mine" and list(exp.systems) == ["regression", "mart"]
    cfg = compose_system(exp, "mart", ["seed=7"])
    assert (cfg.data.name, cfg.model.name, cfg.seed) == ("mydata", "lambdamart", 7)


def test_train_cli_config_dir_adds_user_groups(user_folder, monkeypatch, capsys):
    # Hydra's own flag; --cfg job --resolve prints the composed config without training
    # (python -m ltr.train's main in-process, run from the user's folder)
    monkeypatch.chdir(user_folder)
    args = ["--config-dir", "myconf", "+model=lambdamart", "data=mydata", "--cfg", "job", "--resolve"]
    code = train_main_in_process(args, user_folder, monkeypatch)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "name: mydata" in out
    assert f"train: {user_folder}/data/mydata/train.txt" in out


def _user_model(folder: Path) -> None:
    """myconf/model/my_linear.yaml: the user's own model config, built on ltr's linear.yaml."""
    (folder / "myconf" / "model").mkdir(parents=True)
    (folder / "myconf" / "model" / "my_linear.yaml").write_text(
        "defaults:\n  - linear\n  - _self_\nparams: {alpha: 3.0}\n"
    )


def test_user_model_as_ensemble_member_through_hydra_searchpath(user_folder, monkeypatch, capsys):
    # README: hydra.searchpath=[file://myconf] works like --config-dir; before, an ensemble member from it was
    # "no model config 'my_linear'" (members were composed from the app's search path, which lacks it)
    from ltr.train import run

    _user_model(user_folder)
    monkeypatch.chdir(user_folder)  # python -m ltr.train's main in-process, run from the user's folder
    args = ["+model=ensemble_mean", "model.members=[my_linear,linear]", "data=mydata", "tracking=none"]
    code = train_main_in_process([*args, "hydra.searchpath=[file://myconf]"], user_folder, monkeypatch)
    assert code == 0, capsys.readouterr().err[-3000:]
    overrides = ["+model=ensemble_mean", "model.members=[my_linear]", "data=mydata", "tracking=none"]
    cfg = compose_config([*overrides, "hydra.searchpath=[file://myconf]"])
    with pytest.raises(LtrError, match="model.members.0: no model config 'my_linear'"):
        run(cfg)  # outside a Hydra app no search path reaches the members: the test above is not vacuous


@pytest.mark.slow  # ~5 s: a whole user experiment; the search-path variant stays with the fast tests
def test_user_model_as_ensemble_member_in_a_user_experiment(user_folder):
    from ltr.experiment.experiments import load_experiment
    from ltr.experiment.systems import run_comparison

    _user_model(user_folder)
    (user_folder / "mine.yaml").write_text(
        "overrides: ['hydra.searchpath=[file://myconf]', data=mydata, tracking=none]\n"
        "baseline: linear\nmetrics: [ndcg@5]\nstats: {B: 50}\n"
        "systems:\n  linear: {model: linear}\n"
        "  blend: {model: ensemble_mean, overrides: ['model.members=[my_linear,linear]']}\n"
    )
    result = run_comparison(load_experiment("mine.yaml"), [], out_dir=user_folder / "report")
    assert set(result.report.systems) == {"linear", "blend"}

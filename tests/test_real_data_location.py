"""The real-data folder is one setting: ``LTR_TEST_DATA``, defaulting to ``shared/data`` beside the checkout."""

from __future__ import annotations

from pathlib import Path

from conftest import PROJECT_ROOT, REAL_DATA_ENV, real_data_dir


def test_the_environment_variable_names_the_folder(tmp_path: Path) -> None:
    assert REAL_DATA_ENV == "LTR_TEST_DATA"  # the name the docs and README tell users to set
    assert real_data_dir({REAL_DATA_ENV: str(tmp_path)}) == tmp_path


def test_unset_or_empty_falls_back_to_the_folder_beside_the_checkout() -> None:
    default = PROJECT_ROOT.parent / "shared" / "data"
    assert real_data_dir({}) == default
    assert real_data_dir({REAL_DATA_ENV: ""}) == default

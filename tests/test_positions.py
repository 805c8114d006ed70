"""Per-row display positions: RankingData.position, LightGBM's .position sidecar, the cache."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ltr.core.errors import DataError
from ltr.data.dataset import RankingData
from ltr.data.svmlight import load_svmlight, position_codes


def test_position_is_kept_by_subset_and_validated():
    d = RankingData(X=np.zeros((4, 1), np.float32), y=[1, 0, 2, 0], qid=[1, 1, 2, 2], position=[1, 2, 1, 2])
    assert d.subset(np.array([1])).position.tolist() == [1, 2]
    with pytest.raises(DataError, match="position must hold one integer per row"):
        RankingData(X=np.zeros((2, 1)), y=[1, 0], qid=[1, 1], position=[1])
    with pytest.raises(DataError, match="position must hold one integer per row"):
        RankingData(X=np.zeros((2, 1)), y=[1, 0], qid=[1, 1], position=[0.5, 1.5])


def test_position_codes():
    assert position_codes(np.array(["pos_1", "pos_27"], dtype=object)).tolist() == [1, 27]
    assert position_codes(np.array(["b", "a", "b"], dtype=object)).tolist() == [1, 0, 1]


@pytest.mark.parametrize("cached", [False, True])
def test_lightgbm_position_sidecar_is_attached(shared_data, tmp_path, cached):
    src = shared_data / "lightgbm_lambdarank"
    for name in ("rank.train", "rank.train.query"):
        shutil.copy(src / name, tmp_path / name)
    shutil.copy(src / "_rank.train.position", tmp_path / "rank.train.position")  # CRLF sidecar
    raw = [line.strip() for line in (src / "_rank.train.position").read_text().splitlines()]
    cache = tmp_path / "cache" if cached else None
    for _ in range(2 if cached else 1):  # the second load comes from the cache
        d = load_svmlight(tmp_path / "rank.train", cache_dir=cache)
        assert d.n_docs == 3005 and d.n_queries == 201
        assert d.position is not None and d.position.shape == (3005,)
        assert d.position.tolist() == [int(v.removeprefix("pos_")) for v in raw]
    without = load_svmlight(tmp_path / "rank.train", position_file=None)
    assert without.position is None


def test_position_sidecar_with_wrong_length_names_the_file(tmp_path):
    (tmp_path / "a.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    (tmp_path / "a.txt.position").write_text("1\n")
    with pytest.raises(DataError, match=r"a\.txt\.position: 1 positions but the data file has 2 rows"):
        load_svmlight(tmp_path / "a.txt")

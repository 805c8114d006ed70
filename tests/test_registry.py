"""Dataset registry and conf/data/*.yaml: every entry loads its layout (small generated stand-ins)
and rejects wrong layouts, feature counts and labels with clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData, write_svmlight
from ltr.data.registry import REGISTRY, default_dir, download_for, get_spec, load_dataset

CONF = Path(__file__).resolve().parents[1] / "conf"


def _standin(path: Path, n_features: int, max_label: int, seed: int, qid0: int = 1) -> None:
    rng = np.random.default_rng(seed)
    n = 24
    X = rng.random((n, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = 0
    X[0, n_features - 1] = 0.5  # the highest feature index is used
    y = rng.integers(0, max_label + 1, n)
    y[0] = max_label
    path.parent.mkdir(parents=True, exist_ok=True)
    write_svmlight(RankingData(X=X, y=y, qid=qid0 + np.repeat(np.arange(6), 4)), path)


def _make_layout(name: str, root: Path, cfg: dict) -> dict[str, Path]:
    spec = get_spec(name)
    files = spec.files(cfg)
    for i, rel in enumerate(files.values()):
        _standin(root / rel, spec.n_features, spec.label_range[1], seed=i, qid0=100 * i)
    return {s: root / r for s, r in files.items()}


CASES = [
    ("mslr_web10k", {"fold": 3}),
    ("mslr_web30k", {"fold": 1}),
    ("yahoo_set1", {}),
    ("yahoo_set2", {}),
    ("istella", {"variant": "full"}),
    ("istella", {"variant": "s"}),
    ("istella", {"variant": "x"}),
    ("mq2007", {"fold": 5}),
    ("mq2008", {"fold": 2}),
]


@pytest.mark.parametrize(("name", "extra"), CASES)
def test_every_entry_loads_its_layout(tmp_path, name, extra):
    files = _make_layout(name, tmp_path, extra)
    out = load_dataset({"kind": name, "dir": str(tmp_path), **extra})
    assert set(out) == set(files)
    spec = get_spec(name)
    for split, data in out.items():
        assert data.n_features == spec.n_features
        assert data.y.max() == spec.label_range[1]
        assert data.name == f"{name}/{split}"


def test_layout_facts():
    assert get_spec("mslr_web10k").files({"fold": 4})["valid"] == "Fold4/vali.txt"
    assert set(get_spec("istella").files({"variant": "full"})) == {"train", "test"}
    assert get_spec("yahoo_set2").files({}) == {s: f"set2.{s}.txt" for s in ("train", "valid", "test")}
    assert (get_spec("mq2008").n_features, get_spec("mq2008").label_range) == (46, (0, 2))
    assert (get_spec("istella").n_features, get_spec("yahoo_set1").n_features) == (220, 700)
    assert default_dir("mslr_web30k", "/d") == Path("/d/MSLR-WEB30K")
    # MSLR's folds rotate five parts: Fold1's test file is Fold2's validation file (same sha256)
    files = download_for("mslr_web30k").files
    assert files["Fold1/test.txt"] == files["Fold2/vali.txt"]
    assert download_for("mq2008") is None and download_for("yahoo_set1") is None
    assert download_for("istella", {"variant": "s"}).archive == "tar.gz"


def test_missing_files_say_how_to_get_them(tmp_path):
    with pytest.raises(
        DataError,
        match=r"mslr_web30k: expected file\(s\) not found: .*Fold1/train\.txt.*"
        r"python -m ltr\.data fetch mslr_web30k",
    ):
        load_dataset({"kind": "mslr_web30k", "dir": str(tmp_path)})
    with pytest.raises(DataError, match=r"Webscope.*set1\.train\.txt"):
        load_dataset({"kind": "yahoo_set1", "dir": str(tmp_path)})
    with pytest.raises(DataError, match=r"click-through licence.*MQ2007\.rar"):
        load_dataset({"kind": "mq2007", "dir": str(tmp_path)})


def test_wrong_feature_count_and_labels_are_caught(tmp_path):
    files = _make_layout("mq2008", tmp_path, {"fold": 1})
    _standin(files["valid"], 47, 2, seed=9)  # one feature too many
    with pytest.raises(DataError, match=r"Fold1/vali\.txt:1: feature index 47 is above n_features=46"):
        load_dataset({"kind": "mq2008", "dir": str(tmp_path), "fold": 1})
    _standin(files["valid"], 46, 3, seed=9)  # label 3 in a 0-2 dataset
    with pytest.raises(DataError, match=r"Fold1/vali\.txt:1: label 3 is outside label_range \[0, 2\]"):
        load_dataset({"kind": "mq2008", "dir": str(tmp_path), "fold": 1})


def test_config_errors(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"data.fold: expected a fold 1..5, all, or a list of folds such as \[1,3,5\]; got 6",
    ):
        load_dataset({"kind": "mslr_web10k", "dir": str(tmp_path), "fold": 6})
    with pytest.raises(ConfigError, match=r"data.variant: expected one of \['full', 's', 'x'\], got 'y'"):
        load_dataset({"kind": "istella", "dir": str(tmp_path), "variant": "y"})
    with pytest.raises(
        ConfigError, match=r"unknown dataset 'mslr'; known datasets: synthetic, svmlight, istella"
    ):
        load_dataset({"kind": "mslr"})
    _make_layout("mq2008", tmp_path, {"fold": 1})
    with pytest.raises(
        ConfigError, match=r"data\.parse: unknown key\(s\) color; accepted: n_features, zero_based"
    ):
        load_dataset({"kind": "mq2008", "dir": str(tmp_path), "parse": {"color": 1}})
    with pytest.raises(ConfigError, match="do not exist for istella"):
        load_dataset({"kind": "istella", "dir": str(tmp_path), "splits": ["valid"]})


def test_splits_subset_and_cache(tmp_path):
    _make_layout("mq2008", tmp_path / "d", {"fold": 1})
    cfg = {
        "kind": "mq2008",
        "dir": str(tmp_path / "d"),
        "splits": ["train"],
        "cache_dir": str(tmp_path / "c"),
    }
    first = load_dataset(cfg)
    assert list(first) == ["train"]
    again = load_dataset(cfg)
    assert again["train"].fingerprint() == first["train"].fingerprint()
    assert len(list((tmp_path / "c").iterdir())) == 1


def test_svmlight_kind(tmp_path):
    _standin(tmp_path / "a.txt", 5, 4, seed=1)
    _standin(tmp_path / "b.txt", 3, 4, seed=2)
    out = load_dataset(
        {
            "kind": "svmlight",
            "train": str(tmp_path / "a.txt"),
            "test": str(tmp_path / "b.txt"),
            "n_features": 5,
            "label_range": [0, 4],
        }
    )
    assert set(out) == {"train", "test"} and out["test"].n_features == 5
    with pytest.raises(DataError, match="splits have different feature counts"):
        load_dataset({"kind": "svmlight", "train": str(tmp_path / "a.txt"), "test": str(tmp_path / "b.txt")})
    with pytest.raises(ConfigError, match="data.train must name the training file"):
        load_dataset({"kind": "svmlight", "test": str(tmp_path / "b.txt")})


def test_parse_options_are_every_option_of_load_svmlight(tmp_path):
    import inspect

    from ltr.data.registry import PARSE_KEYS
    from ltr.data.svmlight import load_svmlight

    options = [
        p
        for p in inspect.signature(load_svmlight).parameters
        if p not in ("path", "cache_dir", "verify_cache", "name")
    ]
    assert sorted(PARSE_KEYS) == sorted(options)
    _standin(tmp_path / "a.txt", 5, 4, seed=1)
    positions = tmp_path / "a.pos"
    positions.write_text("".join(f"{i % 4}\n" for i in range(24)))
    common = {"kind": "svmlight", "train": str(tmp_path / "a.txt"), "n_features": 5}
    for cfg in (
        {**common, "position_file": str(positions)},
        {**common, "parse": {"position_file": str(positions)}},
    ):
        train = load_dataset(cfg)["train"]
        assert train.position is not None and train.position.shape == (24,)
    assert load_dataset({**common, "position_file": None})["train"].position is None


def test_synthetic_dispatch(tmp_path):
    cfg = {
        "kind": "synthetic",
        "name": "synthetic",
        "dir": str(tmp_path / "syn"),
        "seed": 1,
        "n_queries": {"train": 5, "valid": 3, "test": 3},
        "min_docs": 3,
        "max_docs": 6,
        "p_empty": 0.0,
    }
    out = load_dataset(cfg)
    assert set(out) == {"train", "valid", "test"} and out["train"].n_queries == 5


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "data").glob("*.yaml")))
def test_hydra_configs_compose_and_load(tmp_path, name):
    overrides = [f"data={name}", f"paths.data_dir={tmp_path}"]
    if name == "svmlight":
        _standin(tmp_path / "tr.txt", 4, 2, seed=3)
        overrides += [f"data.train={tmp_path / 'tr.txt'}", "data.n_features=4"]
    if name == "synthetic":
        overrides += ["data.n_queries.train=4", "data.n_queries.valid=2", "data.n_queries.test=2"]
    from ltr.experiment.schemas import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    if name in REGISTRY:
        spec = get_spec(name)
        _make_layout(name, Path(cfg.data.dir), cfg.data)
        assert Path(cfg.data.dir) == tmp_path / spec.folder
    out = load_dataset(cfg.data)
    assert "train" in out
    if name == "istella":
        assert cfg.data.parse.nonfinite == "missing"  # the explicit policy for 1.79e308 sentinels


def test_a_data_mapping_is_checked_against_its_kinds_schema(tmp_path):
    with pytest.raises(ConfigError, match=r"^data: unknown key\(s\) flod; accepted: .*, dir, fold$"):
        load_dataset({"kind": "mq2008", "dir": str(tmp_path), "flod": 2})
    with pytest.raises(
        ConfigError,
        match=r"^data\.fold: expected a fold 1..5, all, or a list of folds such as \[1,3,5\]; got 'two'$",
    ):
        load_dataset({"kind": "mslr_web30k", "dir": str(tmp_path), "fold": "two"})
    with pytest.raises(ConfigError, match=r"^data: unknown key\(s\) fold; accepted: .*, dir, variant$"):
        load_dataset({"kind": "istella", "dir": str(tmp_path), "fold": 1})
    with pytest.raises(ConfigError, match=r"^data\.zero_based: expected true or false, got 'no'$"):
        load_dataset({"kind": "svmlight", "train": str(tmp_path / "a.txt"), "zero_based": "no"})
    # paths may be os.PathLike, and a user's own kind is left to its loader
    _standin(tmp_path / "a.txt", 5, 4, seed=1)
    loaded = load_dataset({"kind": "svmlight", "train": tmp_path / "a.txt", "n_features": 5})
    assert loaded["train"].n_features == 5

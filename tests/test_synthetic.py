"""The built-in synthetic dataset: deterministic, LETOR-shaped, learnable, written once and reused."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.data.synthetic import N_FEATURES, N_INFORMATIVE, N_WEAK, ensure_synthetic, generate, load_synthetic
from ltr.errors import ConfigError


def test_same_seed_same_data_and_other_seed_other_data():
    a, b, c = generate(50, seed=7), generate(50, seed=7), generate(50, seed=8)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and np.array_equal(a.qid, b.qid)
    assert not np.array_equal(a.y, c.y)


def test_shape_labels_and_query_sizes():
    d = generate(400, seed=1, min_docs=5, max_docs=200)
    assert d.n_queries == 400 and d.n_features == N_FEATURES
    assert set(np.unique(d.y)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    sizes = d.group_sizes
    assert sizes.min() >= 5 and sizes.max() <= 200
    assert sizes.max() > 100 and sizes.min() < 10  # queries of very different sizes
    assert d.X.dtype == np.float32


def test_some_queries_have_no_relevant_document():
    d = generate(400, seed=2, p_empty=0.05)
    best = np.maximum.reduceat(d.y, d.offsets[:-1])
    share = float((best == 0).mean())
    assert 0.03 < share < 0.4


def test_feature_kinds_informative_weak_noise_sparse():
    d = generate(400, seed=3)
    X, y = d.X.astype(np.float64), d.y

    def corr(j: int) -> float:
        return abs(np.corrcoef(X[:, j], y)[0, 1])

    informative = [corr(j) for j in range(N_INFORMATIVE)]
    weak = [corr(j) for j in range(N_INFORMATIVE, N_INFORMATIVE + N_WEAK)]
    noise = [corr(j) for j in range(N_INFORMATIVE + N_WEAK, N_FEATURES - 4)]
    assert max(informative) > 0.4
    assert max(noise) < 0.05 < max(weak) < max(informative)
    zero_share = (X == 0).mean(axis=0)
    assert (zero_share > 0.6).sum() >= 6  # sparse features exist


def test_bad_settings_name_the_parameter():
    with pytest.raises(ConfigError, match="n_queries"):
        generate(0, seed=1)
    with pytest.raises(ConfigError, match="min_docs"):
        generate(10, seed=1, min_docs=10, max_docs=5)
    with pytest.raises(ConfigError, match="p_empty"):
        generate(10, seed=1, p_empty=1.0)


def test_files_written_once_then_reused(tmp_path):
    cfg = {"dir": str(tmp_path), "seed": 5, "n_queries": {"train": 20, "valid": 10, "test": 10}}
    paths = ensure_synthetic(tmp_path, cfg)
    assert sorted(p.name for p in paths.values()) == ["test.txt", "train.txt", "vali.txt"]
    first = paths["train"].read_text()
    assert " qid:" in first.splitlines()[0]
    mtimes = {s: p.stat().st_mtime_ns for s, p in paths.items()}
    ensure_synthetic(tmp_path, cfg)
    assert {s: p.stat().st_mtime_ns for s, p in paths.items()} == mtimes  # reused, not rewritten
    cfg2 = dict(cfg, seed=6)
    ensure_synthetic(tmp_path, cfg2)
    assert paths["train"].read_text() != first  # settings changed → regenerated
    assert not list(tmp_path.glob("*.tmp"))


def test_loaded_splits_match_generator_and_have_disjoint_queries(tmp_path):
    cfg = {"dir": str(tmp_path), "seed": 5, "n_queries": {"train": 30, "valid": 10, "test": 10}}
    splits = load_synthetic(cfg)
    assert {s: d.n_queries for s, d in splits.items()} == {"train": 30, "valid": 10, "test": 10}
    qids = [set(d.query_ids.tolist()) for d in splits.values()]
    assert not (qids[0] & qids[1]) and not (qids[0] & qids[2]) and not (qids[1] & qids[2])
    assert all(d.n_features == N_FEATURES for d in splits.values())

"""Issue 12 item 7: ERR's top grade follows the data's label scale under the ``ltr`` preset.

The data config declares ``label_range`` (registry entries, the synthetic generator; your own files:
optional, else the training labels); the ``ltr`` preset takes ``err_gmax`` from it and says so; the
presets of tools keep their fixed value; every convention is settable without ``+``.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from helpers import compose_config, store_client
from test_metrics import ref_err  # ERR written out: sum_r 1/r R_r prod_{i<r} (1 - R_i), R = (2^g - 1)/2^gmax

from ltr.core.errors import ConfigError
from ltr.data import load_svmlight
from ltr.data.registry import REGISTRY
from ltr.data.synthetic import generate
from ltr.experiment.conventions import EvalConventions, LabelScale, label_scale
from ltr.metrics.conventions import PRESETS, Conventions
from ltr.train import execute


@pytest.mark.parametrize("name", [*REGISTRY, "synthetic"])
def test_every_shipped_data_config_declares_its_label_scale(name):
    cfg = compose_config(["+model=linear", f"data={name}"])
    declared = tuple(cfg.data.label_range)
    expected = REGISTRY[name].label_range if name in REGISTRY else (0, 4)
    assert declared == tuple(expected)
    assert label_scale(cfg.data) == LabelScale(*map(float, expected), "data.label_range")


def test_synthetic_label_range_is_what_the_generator_draws():
    labels = generate(300, seed=3).y
    assert (labels.min(), labels.max()) == (0.0, 4.0)


def test_perfect_ranking_on_mq2008_gets_gmax_2_under_ltr_and_the_fixed_4_under_a_tool_preset(shared_data):
    """MQ2008 labels 0..2: with gmax 4 a perfect ranking's ERR@10 was ~0.19; gmax 2 from data.label_range."""
    data = load_svmlight(shared_data / "mq2008" / "vali.txt", n_features=46)
    perfect = data.y.astype(float)  # scores = labels: every query ranked perfectly (ties are equal labels)
    scale = label_scale({"kind": "mq2008"})
    ltr = EvalConventions.from_config({"preset": "ltr"}, scale)
    lightgbm = EvalConventions.from_config({"preset": "lightgbm"}, scale)
    assert (ltr.resolved.err_gmax, lightgbm.resolved.err_gmax) == (2, PRESETS["lightgbm"].err_gmax)
    assert ltr.gmax_note == "ERR: gmax=2 from data.label_range" and lightgbm.gmax_note is None
    got = {
        c: conv.evaluate(["err@10"], data, perfect)["err@10"] for c, conv in (("ltr", ltr), ("lgb", lightgbm))
    }
    for q in range(data.n_queries):
        ideal = sorted(data.y[data.offsets[q] : data.offsets[q + 1]].tolist(), reverse=True)
        if max(ideal) == 0:
            continue  # no relevant document: skipped by the ltr preset
        assert got["ltr"][q] == pytest.approx(ref_err(ideal, 10, gmax=2), abs=1e-12)
        assert got["lgb"][q] == pytest.approx(ref_err(ideal, 10, gmax=4), abs=1e-12)
    assert np.nanmean(got["ltr"]) > 0.5 > 0.25 > np.nanmean(got["lgb"])


def test_err_gmax_is_settable_without_plus_and_the_block_has_every_convention():
    cfg = compose_config(["+model=linear", "eval.conventions.err_gmax=3"])
    assert set(cfg.eval.conventions) == {f.name for f in fields(Conventions)}
    assert cfg.eval.conventions.err_gmax == 3 and cfg.eval.conventions.gain is None
    conv = EvalConventions.from_config(cfg.eval, label_scale(cfg.data))
    assert conv.resolved.err_gmax == 3 and conv.gmax_note is None  # an explicit value wins over the data
    assert dict(conv.overrides) == {"err_gmax": 3}  # null = the preset's value, not an override
    assert conv.describe()["preset"] == "ltr+overrides"


def test_a_misspelt_convention_fails_while_composing():
    with pytest.raises(Exception, match="err_gmx"):
        compose_config(["+model=linear", "eval.conventions.err_gmx=3"])


def write_labels(path: Path, labels: list[int], n_queries: int = 8) -> Path:
    path.write_text(
        "".join(
            f"{g} qid:{q + 1} 1:{(q + d) % 5 / 5:.2f} 2:{d / 7:.3f}\n"
            for q in range(n_queries)
            for d, g in enumerate(labels)
        )
    )
    return path


@pytest.mark.parametrize(
    ("extra", "gmax", "note"),
    [
        ([], 2, "ERR: gmax=2 from the training labels"),
        (["data.label_range=[0,3]"], 3, "ERR: gmax=3 from data.label_range"),
        (["eval.preset=lightgbm"], 4, None),  # a tool's preset keeps its value
        (["eval.conventions.err_gmax=5"], 5, None),
    ],
)
def test_a_run_on_your_own_files_logs_and_prints_where_gmax_came_from(tmp_path, capsys, extra, gmax, note):
    train = write_labels(tmp_path / "train.txt", [0, 1, 2, 0, 1])
    data = ["data=svmlight", f"data.train={train}", f"data.test={train}", "data.n_features=2"]
    cfg = compose_config(["+model=linear", "num_threads=1", f"paths.root={tmp_path}", *data, *extra])
    recorded = execute(cfg)
    out = capsys.readouterr().out
    assert recorded.outcome.conventions.resolved.err_gmax == gmax
    assert (note in out) if note else ("ERR: gmax" not in out)
    client = store_client(tmp_path)
    params = client.get_run(recorded.run_id).data.params
    assert params["metric_conventions.err_gmax"] == str(gmax)
    assert params["metric_conventions.preset"] == (
        "ltr+overrides" if "err_gmax" in str(extra) else cfg.eval.preset
    )


def test_a_declared_range_below_the_labels_fails_when_the_file_is_read(tmp_path):
    train = write_labels(tmp_path / "train.txt", [0, 1, 2, 6])
    data = ["data=svmlight", f"data.train={train}", "data.n_features=2", "data.label_range=[0,2]"]
    cfg = compose_config(["+model=linear", "tracking=none", f"paths.root={tmp_path}", *data])
    with pytest.raises(Exception, match=r"label 6 is outside label_range \[0, 2\]"):
        execute(cfg)


def test_a_bad_label_range_fails_while_checking_the_config(tmp_path):
    cfg = compose_config(
        ["+model=linear", "tracking=none", f"paths.root={tmp_path}", "data.label_range=[4,0]"]
    )
    with pytest.raises(ConfigError, match=r"data.label_range: must be \(low, high\) with low <= high"):
        execute(cfg)

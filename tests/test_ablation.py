"""``ltr.compare``'s ``ablation:`` block (ltr.experiment.ablation) and the recipe experiments/synthetic_ablation.yaml.

The recipe's leaderboard is checked against scipy: the paired t-test of each ablated system against the
baseline, recomputed with ``scipy.stats.ttest_rel`` on the per-query values read back from the written
``per_query.csv``, and Holm's step-down correction worked by hand.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from helpers import PROJECT_ROOT, cli_env
from scipy.stats import ttest_rel

from ltr.core.errors import ConfigError
from ltr.experiment.ablation import expand_ablation, rows_config
from ltr.experiment.experiments import check_experiment, load_experiment

GROUPS = ["informative", "weak", "noise", "query_level"]
SMALL = [
    "data.n_queries.train=150",
    "data.n_queries.valid=50",
    "data.n_queries.test=100",
    "data.max_docs=40",
    "model.params.n_trees=40",
    "num_threads=1",
    "tracking=none",
]


def _data_with(exclude=(), groups=None):
    return lambda overrides: {"features": {"exclude": list(exclude), "groups": groups or {}}}


def test_ablation_expands_into_the_baseline_and_one_system_per_group():
    exp = {"overrides": ["data=synthetic"], "ablation": {"model": "linear", "overrides": ["seed=3"],
           "groups": {"a": ["1-3"], "b": ["x"]}}}  # fmt: skip
    out = expand_ablation(exp, "x.yaml", _data_with(exclude=[7]))
    assert out["baseline"] == "all_features"
    assert out["systems"] == {
        "all_features": {"model": "linear", "overrides": ["seed=3"]},
        "without_a": {"model": "linear", "overrides": ["seed=3", "data.features.exclude=['7','a']"]},
        "without_b": {"model": "linear", "overrides": ["seed=3", "data.features.exclude=['7','b']"]},
    }
    assert out["overrides"] == [
        "data=synthetic",
        "++data.features.groups.a=['1-3']",
        "++data.features.groups.b=['x']",
    ]
    assert "ablation" not in out


def test_ablation_of_the_data_configs_own_groups():
    exp = {"ablation": {"model": "linear", "baseline": "full"}}
    out = expand_ablation(exp, "x.yaml", _data_with(groups={"g1": [1], "g2": [2]}))
    assert list(out["systems"]) == ["full", "without_g1", "without_g2"]
    out = expand_ablation(
        {"ablation": {"model": "linear", "groups": ["g2"]}},
        "x.yaml",
        _data_with(groups={"g1": [1], "g2": [2]}),
    )
    assert list(out["systems"]) == ["all_features", "without_g2"]


@pytest.mark.parametrize(
    ("exp", "message"),
    [
        (
            {"ablation": {"model": "linear"}, "systems": {"a": {"model": "linear"}}},
            "x.yaml: ablation: an experiment has either systems: or ablation:",
        ),
        (
            {"ablation": {"model": "linear", "groups": ["nope"]}},
            "x.yaml: ablation.groups: not in data.features.groups: 'nope'; defined: g1",
        ),
        (
            {"ablation": {"model": "linear", "groups": {"a": []}}},
            "x.yaml: ablation.groups.a: expected a non-empty list",
        ),
        ({"ablation": {"model": "linear", "groups": "g1"}}, "x.yaml: ablation.groups: expected a mapping"),
        (
            {"ablation": {"model": "linear", "baseline": "without_g1"}},
            "x.yaml: ablation.baseline: 'without_g1' is also an ablated system's name",
        ),
        (
            {"ablation": {"model": "linear"}, "baseline": "b"},
            "x.yaml: baseline: an ablation's baseline is ablation.baseline",
        ),
        ({"ablation": {"modle": "linear"}}, "x.yaml: ablation: unknown key(s) modle"),
    ],
)
def test_bad_ablation_blocks_fail_with_clear_errors(exp, message):
    with pytest.raises(ConfigError) as err:
        expand_ablation(exp, "x.yaml", _data_with(groups={"g1": [1]}))
    assert message in str(err.value)


def test_without_groups_anywhere_the_error_says_how_to_define_them():
    with pytest.raises(
        ConfigError, match=r"ablation.groups: no groups; defined: none \(give ablation.groups as a mapping"
    ):
        check_experiment({"overrides": ["data=synthetic"], "ablation": {"model": "linear"}}, "x.yaml")


def test_systems_differing_only_in_columns_share_their_rows():
    a = {"name": "synthetic", "features": {"exclude": ["noise"], "groups": {"noise": ["23-42"]}}}
    b = {"name": "synthetic", "features": {"exclude": [], "groups": {"noise": ["23-42"]}}}
    assert rows_config(a) == rows_config(b)
    assert rows_config(a) != rows_config({**b, "n_queries": {"test": 5}})


def test_the_recipe_composes_a_system_per_group():
    exp = load_experiment("synthetic_ablation")
    assert list(exp.systems) == ["all_features", *(f"without_{g}" for g in GROUPS)]
    assert exp.baseline == "all_features" and exp.stats.correction == "holm"


def _holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, by hand: sort ascending, p_(i)·(m − i), running max, cap at 1."""
    m = len(pvalues)
    order = np.argsort(pvalues)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted.tolist()


@pytest.mark.slow  # five LightGBM fits on 150 synthetic queries (~15 s)
def test_recipe_shows_the_informative_group_matters_and_noise_does_not(tmp_path):
    from rich.console import Console

    from ltr.experiment.systems import run_comparison

    exp = load_experiment("synthetic_ablation")
    exp.stats.B = 200  # the CIs only; the paired t-test needs no resamples
    result = run_comparison(exp, [*SMALL, f"paths.root={tmp_path}"], console=Console(quiet=True))
    per_query = pd.read_csv(result.out_dir / "per_query.csv")
    board = pd.read_csv(result.out_dir / "leaderboard.csv").query("metric == 'ndcg@10' and not is_baseline")
    assert set(per_query.system) == {"all_features", *(f"without_{g}" for g in GROUPS)}
    base = per_query[per_query.system == "all_features"].set_index("qid")["ndcg@10"]
    pvalues = []
    for group in GROUPS:
        other = (
            per_query[per_query.system == f"without_{group}"].set_index("qid")["ndcg@10"].reindex(base.index)
        )
        both = base.notna() & other.notna()  # queries the metric is defined for on both sides
        pvalues.append(float(ttest_rel(other[both], base[both]).pvalue))
    holm = dict(zip(GROUPS, _holm(pvalues), strict=True))
    row = board.set_index("system")
    for group in GROUPS:
        assert row.loc[f"without_{group}", "pvalue"] == pytest.approx(pvalues[GROUPS.index(group)], rel=1e-9)
        assert row.loc[f"without_{group}", "pvalue_adjusted"] == pytest.approx(holm[group], rel=1e-9)
    assert holm["informative"] < 0.05 and bool(row.loc["without_informative", "significant"])
    assert row.loc["without_informative", "diff"] < -0.1  # a large loss
    assert holm["noise"] > 0.05 and not bool(row.loc["without_noise", "significant"])


@pytest.mark.slow  # a real python -m ltr.compare run of the recipe (five small fits, ~20 s)
def test_recipe_from_the_command_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ltr.compare",
            "experiment=synthetic_ablation",
            *SMALL,
            "model.params.n_trees=20",
            f"paths.root={tmp_path}",
        ],  # fmt: skip
        cwd=PROJECT_ROOT,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Leaderboard: Feature-group ablation on synthetic LETOR data" in proc.stdout
    assert "all_features (baseline)" in proc.stdout and "without_informative" in proc.stdout
    assert (tmp_path / "reports" / "synthetic_ablation" / "per_query.csv").is_file()

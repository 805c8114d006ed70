"""Expected exposure (issue 27 item 5): ltr.metrics.exposure and ``ltr.evaluate --exposure``.

Truths: the worked example by hand, the exact Plackett-Luce expectation by enumerating every
permutation with its probability from the model's formula (not from the Gumbel sampler under test), the
identity EE-L = EE-D − EE-R + ‖ε*‖², and limits with known answers.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from ltr.core.errors import ConfigError
from ltr.evaluate import main as evaluate_main
from ltr.metrics.exposure import expected_exposure, feature_groups, sampled_exposure, target_exposure

D = 0.5 ** np.arange(4)  # RBP, patience 0.5


def test_the_worked_example():
    """Labels (1, 0, 1) ranked in that order, D(i) = 0.5^(i−1): ε = (1, 0.5, 0.25), ε* = (0.75, 0.25, 0.75)."""
    v = expected_exposure([1, 0, 1], [3.0, 2.0, 1.0], [0, 3], temperature=0.0)
    assert v["ee_l"][0] == pytest.approx(0.25**2 + 0.25**2 + 0.5**2)
    assert v["ee_d"][0] == pytest.approx(1 + 0.25 + 0.0625)
    assert v["ee_r"][0] == pytest.approx(2 * (0.75 + 0.125 + 0.1875))


def test_sampled_exposure_is_the_plackett_luce_expectation():
    """P(σ) = Π_i exp(s_σi/τ) / Σ_{j ≥ i} exp(s_σj/τ), summed over all 4! permutations."""
    scores, tau = np.array([1.0, 0.2, -0.5, 0.7]), 0.8
    exact = np.zeros(4)
    for perm in itertools.permutations(range(4)):
        w = np.exp(scores[list(perm)] / tau)
        p = np.prod([w[i] / w[i:].sum() for i in range(4)])
        for rank, doc in enumerate(perm):
            exact[doc] += p * D[rank]
    sampled = sampled_exposure(scores, D, temperature=tau, samples=200_000, rng=np.random.default_rng(0))
    assert sampled == pytest.approx(exact, abs=3e-3)


def test_the_identity_and_the_limits():
    rng = np.random.default_rng(1)
    labels, scores = rng.integers(0, 3, 40), rng.normal(size=40)
    offsets = np.array([0, 7, 19, 40])
    v = expected_exposure(labels, scores, offsets, samples=50)
    for q in range(3):
        a, b = offsets[q], offsets[q + 1]
        target = target_exposure(labels[a:b], 0.5 ** np.arange(b - a))
        assert v["ee_l"][q] == pytest.approx(v["ee_d"][q] - v["ee_r"][q] + np.sum(target**2))
    # the ideal deterministic ranking of distinct labels meets the target exactly
    ideal = expected_exposure([3, 2, 1, 0], [4.0, 3.0, 2.0, 1.0], [0, 4], temperature=0.0)
    assert ideal["ee_l"][0] == pytest.approx(0.0)
    # an infinitely hot ranker spreads the attention evenly: every ε is the mean discount
    hot = sampled_exposure(np.array([5.0, 0.0, -5.0, 1.0]), D, temperature=1e9, samples=100_000,
                           rng=np.random.default_rng(2))  # fmt: skip
    assert hot == pytest.approx(np.full(4, D.mean()), abs=5e-3)


def test_the_exposure_gap_between_groups():
    v = expected_exposure(
        [1, 0, 1, 0], [4.0, 3.0, 2.0, 1.0], [0, 4], temperature=0.0, groups=[True, True, False, False]
    )
    assert v["exposure_gap"][0] == pytest.approx((1 + 0.5) / 2 - (0.25 + 0.125) / 2)
    # a query whose documents are all in one group has no gap; a group with every document is refused
    one_sided = expected_exposure([1, 0, 1, 0], [1.0, 0.0, 1.0, 0.0], [0, 2, 4], temperature=0.0,
                                  groups=[True, True, True, False])  # fmt: skip
    assert math.isnan(one_sided["exposure_gap"][0]) and one_sided["exposure_gap"][1] == pytest.approx(0.5)
    with pytest.raises(ConfigError, match="holds every document"):
        expected_exposure([1, 0], [1.0, 0.0], [0, 2], temperature=0.0, groups=[True, True])
    assert feature_groups(np.array([[0.2], [0.9]]), "1>=0.5").tolist() == [False, True]
    with pytest.raises(ConfigError, match="expected FEATURE>VALUE"):
        feature_groups(np.array([[0.2]]), "one>0.5")


def _letor(tmp_path):
    rng = np.random.default_rng(3)
    lines, scores_a, scores_b = [], [], []
    for q in range(30):
        for _ in range(6):
            label = int(rng.integers(0, 3))
            lines.append(f"{label} qid:{q + 1} 1:{rng.random():.4f} 2:{label + rng.random():.4f}\n")
            scores_a.append(label + rng.normal(0, 0.5))
            scores_b.append(rng.normal())
    (tmp_path / "data.txt").write_text("".join(lines))
    np.savetxt(tmp_path / "a.txt", scores_a)
    np.savetxt(tmp_path / "b.txt", scores_b)
    return np.array(scores_a)


def test_evaluate_adds_the_exposure_measures_and_compares_them(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scores_a = _letor(tmp_path)
    argv = ["--data", "data.txt", "--scores", "a.txt", "--scores", "b.txt", "-m", "ndcg@5", "--exposure",
            "--exposure-group", "1>0.5", "--compare", "--json", "--B", "200"]  # fmt: skip
    assert evaluate_main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    from ltr.data.svmlight import load_svmlight

    data = load_svmlight(tmp_path / "data.txt")
    api = expected_exposure(data.y, scores_a, data.offsets, groups=feature_groups(data.X, "1>0.5"))
    per_query = out["systems"]["a.txt"]["per_query"]
    for measure in ("ee_l", "ee_d", "ee_r", "exposure_gap"):
        got = [per_query[t][measure] for t in per_query]
        assert got == pytest.approx([None if math.isnan(x) else x for x in api[measure]])
    rows = {(r["system"], r["metric"]): r for r in out["comparison"]}
    # the label-aware ranker is closer to the target exposure: lower EE-L, and EE-L is lower-is-better
    assert rows[("a.txt", "ee_l")]["mean"] < rows[("b.txt", "ee_l")]["mean"]
    assert rows[("b.txt", "ee_l")]["diff"] > 0 and rows[("b.txt", "ee_l")]["significant"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--exposure-samples", "10"], "--exposure-samples applies to --exposure"),
        (["--exposure", "--exposure-group", "x>1"], "expected FEATURE>VALUE"),
        (["--exposure", "--exposure-temperature", "-1"], "--exposure-temperature must be >= 0"),
    ],
)
def test_bad_exposure_options_get_one_error_line(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    _letor(tmp_path)
    assert evaluate_main(["--data", "data.txt", "--scores", "a.txt", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_a_sidecar_file_gives_the_groups(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scores_a = _letor(tmp_path)
    flags = [1 if i % 3 == 0 else 0 for i in range(scores_a.size)]
    (tmp_path / "groups.txt").write_text("".join(f"{f}\n" for f in flags))
    argv = ["--data", "data.txt", "--scores", "a.txt", "-m", "ndcg@5", "--exposure", "--json"]
    assert evaluate_main([*argv, "--exposure-group", "groups.txt"]) == 0
    got = json.loads(capsys.readouterr().out)["per_query"]
    from ltr.data.svmlight import load_svmlight

    data = load_svmlight(tmp_path / "data.txt")
    api = expected_exposure(data.y, scores_a, data.offsets, groups=np.array(flags, dtype=bool))[
        "exposure_gap"
    ]
    assert [got[t]["exposure_gap"] for t in got] == pytest.approx([None if math.isnan(x) else x for x in api])
    (tmp_path / "short.txt").write_text("1\n0\n")
    assert evaluate_main([*argv, "--exposure-group", "short.txt"]) == 2
    assert "short.txt: 2 lines for 180 documents" in capsys.readouterr().err


@pytest.mark.slow  # trains two small systems in a comparison (~15 s)
def test_a_comparison_reports_exposure_like_its_metrics(tmp_path, capsys):
    """The experiment's ``exposure:`` block: EE-L, EE-D, EE-R and the gap per query in per_query.csv, equal to
    expected_exposure() of the feature ranker's scores (its feature column) on the same test split; EE-L and
    EE-D lower-is-better in the leaderboard."""
    import pandas as pd
    import yaml
    from helpers import compose_config

    from ltr.compare import main
    from ltr.experiment.splits import load_splits

    data = [
        "data.n_queries.train=40",
        "data.n_queries.valid=20",
        "data.n_queries.test=30",
        "data.max_docs=20",
    ]
    spec = {
        "name": "tinyexp",
        "overrides": ["data=synthetic"],
        "baseline": "feature",
        "metrics": ["ndcg@10"],
        "stats": {"B": 300},
        "exposure": {"temperature": 0.5, "samples": 50, "group": "2>1"},
        "systems": {
            "feature": {
                "model": "feature",
                "overrides": ["model.params.feature=3", "model.params.direction=desc"],
            },
            "lambdamart": {"model": "lambdamart", "overrides": ["model.params.n_trees=10"]},
        },
    }
    (tmp_path / "tinyexp.yaml").write_text(yaml.safe_dump(spec))
    argv = [
        f"experiment={tmp_path / 'tinyexp.yaml'}",
        *data,
        "num_threads=1",
        "tracking=none",
        f"paths.root={tmp_path}",
    ]
    assert main(argv) == 0
    per_query = pd.read_csv(tmp_path / "reports" / "tinyexp" / "per_query.csv")
    test = load_splits(compose_config(["data=synthetic", *data]))["test"]
    column = np.asarray(test.X[:, 2], dtype=float)
    truth = expected_exposure(
        test.y, column, test.offsets, temperature=0.5, samples=50, seed=0, groups=np.asarray(test.X[:, 1]) > 1
    )
    mine = per_query[per_query["system"] == "feature"].set_index("qid").loc[test.query_ids]
    for measure in ("ee_l", "ee_d", "ee_r", "exposure_gap"):
        np.testing.assert_allclose(mine[measure].to_numpy(), truth[measure], rtol=1e-12)
    board = pd.read_csv(tmp_path / "reports" / "tinyexp" / "leaderboard.csv")
    assert {"ee_l", "ee_d", "ee_r", "exposure_gap"} <= set(board["metric"])


def test_a_group_with_no_or_every_document_is_refused_by_name():
    from ltr.data import RankingData
    from ltr.metrics.exposure import document_groups_checked

    data = RankingData(X=np.array([[0.2, 1.0], [0.9, 1.0]]), y=[1, 0], qid=[1, 1])
    assert document_groups_checked(data, "1>0.5").tolist() == [False, True]
    with pytest.raises(ConfigError, match="'2>0.5' holds every document of the 2"):
        document_groups_checked(data, "2>0.5")
    with pytest.raises(ConfigError, match="'1>5' holds no document"):
        document_groups_checked(data, "1>5")

"""Interleaving simulation (ltr.clicks.interleaving, ltr.analysis.interleaving, ltr.compare's block):
hand-worked lists and credit, fidelity, brute-force unbiasedness, scipy peers, sample size by simulation."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import store_client
from omegaconf import OmegaConf
from scipy import stats

from ltr.analysis.interleaving import all_pairs, interleaving_table
from ltr.clicks.interleaving import (
    Assignment,
    balanced,
    check_interleaving_config,
    outcome,
    probabilistic,
    simulate_interleaving,
    team_draft,
)
from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.synthetic import generate
from ltr.experiment.experiments import check_experiment


class Coins:
    """A scripted ``rng``: ``random()`` returns the given numbers in turn."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_team_draft_hand_worked():
    # A = d0 d1 d2 d3, B = d1 d2 d0 d3. Round 1: coin 0.2 → A first: A takes d0, B takes d1.
    # Round 2: coin 0.7 → B first: B's next unshown is d2, A's next unshown is d3.
    a, b = [0, 1, 2, 3], [1, 2, 0, 3]
    coins = Coins(0.2, 0.7)
    shown, credit = team_draft(a, b, coins)
    assert shown.tolist() == [0, 1, 2, 3] and credit.team.tolist() == [1, -1, -1, 1] and not coins.values
    assert outcome([False, True, True, False], credit) == -1.0  # both clicks on B's team
    assert outcome([True, False, True, False], credit) == 0.0  # one each
    assert outcome([False, False, False, True], credit) == 1.0
    assert outcome([False] * 4, credit) == 0.0
    shown, credit = team_draft(a, b, Coins(0.9, 0.1), k=3)  # B first, then A first; top 3 shown
    assert shown.tolist() == [1, 0, 2] and credit.team.tolist() == [-1, 1, 1]


def test_balanced_hand_worked():
    a, b = [0, 1, 2, 3], [1, 2, 0, 3]
    shown, credit = balanced(a, b, Coins(0.2))  # A leads: A0=d0, B0=d1, (A1=d1 shown), B1=d2, …, A3=d3
    assert shown.tolist() == [0, 1, 2, 3]
    assert credit.rank_a.tolist() == [1, 2, 3, 4] and credit.rank_b.tolist() == [3, 1, 2, 4]
    # a click on d2 only: k = min(rank_A 3, rank_B 2) = 2; A's top 2 {d0, d1} has no click, B's {d1, d2} has it
    assert outcome([False, False, True, False], credit) == -1.0
    # d0 and d2 clicked: k = 2 again; A's top 2 holds d0, B's top 2 holds d2: a tie
    assert outcome([True, False, True, False], credit) == 0.0
    # d0 alone: k = min(1, 3) = 1: A's top 1 holds it, B's does not
    assert outcome([True, False, False, False], credit) == 1.0
    shown, _ = balanced(a, b, Coins(0.7))  # B leads: B0=d1, A0=d0, B1=d2, (A1, B2, A2 shown), B3=d3
    assert shown.tolist() == [1, 0, 2, 3]


def test_rankings_of_different_documents_are_refused():
    with pytest.raises(DataError, match="same documents"):
        team_draft([0, 1, 2], [0, 1, 3], Coins(0.1))
    with pytest.raises(DataError, match="twice"):
        balanced([0, 0, 1], [0, 1, 0], Coins(0.1))


def _softmax_probs(order, tau, left):
    w = {d: (i + 1.0) ** -tau for i, d in enumerate(order)}
    total = sum(w[d] for d in left)
    return {d: w[d] / total for d in left}


def _enumerate_probabilistic(a, b, tau):
    """Every (list, assignment) of probabilistic interleaving with its probability, by the generative process."""
    out = {}
    docs = list(a)
    for assign in itertools.product((1, -1), repeat=len(docs)):
        for perm in itertools.permutations(docs):
            p, left = 1.0, set(docs)
            for side, d in zip(assign, perm, strict=True):
                p *= 0.5 * _softmax_probs(a if side == 1 else b, tau, left)[d]
                left.remove(d)
            out[(perm, assign)] = p
    return out


def test_probabilistic_credit_is_the_exact_posterior_and_unbiased_by_enumeration():
    a, b, tau = [0, 1, 2], [2, 0, 1], 3.0
    joint = _enumerate_probabilistic(a, b, tau)
    assert sum(joint.values()) == pytest.approx(1.0)
    lists = sorted({perm for perm, _ in joint})
    credits = {}  # the code's credit for each list (deterministic given the list)
    rng = np.random.default_rng(0)
    while len(credits) < len(lists):
        shown, credit = probabilistic(a, b, rng, tau=tau)
        credits.setdefault(tuple(shown.tolist()), credit)
    clicks = [np.array(c, dtype=bool) for c in itertools.product((False, True), repeat=3)]
    for perm in lists:
        p_list = sum(p for (pl, _), p in joint.items() if pl == perm)
        posterior = {assign: p / p_list for (pl, assign), p in joint.items() if pl == perm}
        for i in range(3):  # P(position i from A | list) by enumeration
            assert credits[perm].p_a[i] == pytest.approx(sum(q for s, q in posterior.items() if s[i] == 1))
        for c in clicks:  # the marginalised outcome: E[sign(#A − #B) | list, clicks]
            expected = sum(
                q * np.sign(np.dot(np.array(s)[c], np.ones(c.sum()))) for s, q in posterior.items()
            )
            assert outcome(c, credits[perm]) == pytest.approx(expected, abs=1e-12)
    # users who click by position only (not by document): the expected outcome is 0, marginalised or not
    by_position = np.array([0.6, 0.3, 0.2])
    for marginalize in (True, False):
        total = 0.0
        for (perm, assign), p in joint.items():
            credit = Assignment("probabilistic", np.array(assign), credits[perm].rank_a, credits[perm].rank_b,
                                credits[perm].p_a)  # fmt: skip
            for c in clicks:
                p_c = np.prod(np.where(c, by_position, 1.0 - by_position))
                total += p * p_c * outcome(c, credit, marginalize=marginalize)
        assert total == pytest.approx(0.0, abs=1e-12)


def _data(n_queries=40, seed=0, max_docs=40):
    return generate(n_queries, seed=seed, min_docs=5, max_docs=max_docs)


def test_identical_rankers_are_preferred_by_no_one():
    d = _data(20)
    s = np.random.default_rng(1).standard_normal(d.n_docs)
    for method in ("balanced", "probabilistic"):  # exactly 0: the same credit on both sides
        r = simulate_interleaving(d, s, s, method=method, impressions_per_query=30, seed=2, B=500)
        assert r.preference == 0.0 and r.pvalue == 1.0 and r.impressions_needed is None
    r = simulate_interleaving(d, s, s, method="team_draft", impressions_per_query=100, seed=2, B=500)
    assert r.low <= 0.0 <= r.high and abs(r.preference) < 0.03  # 0 in expectation: teams are coin flips


def test_tied_scores_are_shown_in_random_order_per_impression():
    """A constant ranker on data stored best-first is a random ranker (as ``ties=average`` scores it), not
    the ideal one that input order would make it; identical tied scores still give identical lists."""
    d = _data(30)
    order = np.concatenate([d.offsets[q] + np.argsort(-d.y[d.offsets[q] : d.offsets[q + 1]], kind="stable")
                            for q in range(d.n_queries)])  # fmt: skip
    d = RankingData(X=d.X[order], y=d.y[order], qid=d.qid[order])
    constant = np.zeros(d.n_docs)
    shuffled = np.random.default_rng(0).random(d.n_docs)  # a random ranking, no ties
    r = simulate_interleaving(d, constant, shuffled, impressions_per_query=100, seed=1, B=500)
    assert r.low <= 0.0 <= r.high and abs(r.preference) < 0.03
    ideal = -np.arange(d.n_docs, dtype=float)  # what input order would have shown
    assert simulate_interleaving(d, ideal, shuffled, impressions_per_query=20, seed=1, B=200).low > 0.1
    r = simulate_interleaving(
        d, constant, constant, method="balanced", impressions_per_query=20, seed=1, B=200
    )
    assert r.preference == 0.0


@pytest.mark.parametrize("method", ["team_draft", "balanced", "probabilistic"])
@pytest.mark.parametrize("model", ["pbm", "cascade"])
def test_the_ranker_with_relevant_documents_first_wins(method, model):
    d = _data(30)
    ideal = d.y + 1e-3 * np.random.default_rng(0).random(d.n_docs)  # every relevant document first
    noisy = d.y + 3.0 * np.random.default_rng(1).standard_normal(d.n_docs)
    r = simulate_interleaving(
        d, ideal, noisy, method=method, model=model, impressions_per_query=40, seed=3, B=500
    )
    assert r.low > 0 and r.pvalue < 1e-3 and r.pvalue_impressions < 1e-6  # 30 queries; 1,200 impressions
    r = simulate_interleaving(
        d, noisy, ideal, method=method, model=model, impressions_per_query=40, seed=3, B=500
    )
    assert r.high < 0  # and loses when it is B


def test_preference_ci_and_sign_test_match_numpy_and_scipy():
    d = _data(25)
    rng = np.random.default_rng(4)
    a, b = d.y + rng.standard_normal(d.n_docs), d.y + 2 * rng.standard_normal(d.n_docs)
    r = simulate_interleaving(d, a, b, method="team_draft", impressions_per_query=40, seed=5, B=4000)
    wins, losses, ties = r.wins.sum(), r.losses.sum(), r.ties.sum()
    assert wins + losses + ties == 25 * 40
    assert r.preference == pytest.approx((wins - losses) / (wins + losses + ties))
    assert r.pvalue_impressions == pytest.approx(stats.binomtest(int(wins), int(wins + losses)).pvalue)
    per_query = (r.wins - r.losses) / 40
    assert r.pvalue == pytest.approx(stats.ttest_1samp(per_query, 0.0).pvalue)  # queries: the CI's unit
    assert r.per_query()["preference"] == pytest.approx(per_query)
    assert r.per_query()["qid"].tolist() == d.query_ids.tolist()
    assert r.per_query()["wins"] == pytest.approx((r.outcomes > 0).sum(axis=1))  # team draft: ±1 or 0
    peer = stats.bootstrap((per_query,), np.mean, n_resamples=4000, method="BCa", random_state=0)
    assert r.low == pytest.approx(peer.confidence_interval.low, abs=0.01)
    assert r.high == pytest.approx(peer.confidence_interval.high, abs=0.01)


def test_impressions_needed_reach_80_percent_power_in_simulation():
    """n = σ²(z_.975 + z_.8)²/Δ² by hand; at that n, fresh experiments (a random query per impression,
    one-sample t-test at 0.05) detect the preference 80 % of the time: over 300 experiments the rate's
    sd is √(.8·.2/300) = 0.023, so [0.72, 0.88] is ±3.4 sd (the normal approximation's own error is
    well inside it at n ≈ 100+)."""
    d = _data(30, seed=1)
    rng = np.random.default_rng(6)
    a, b = d.y + 0.8 * rng.standard_normal(d.n_docs), d.y + 1.6 * rng.standard_normal(d.n_docs)
    r = simulate_interleaving(d, a, b, impressions_per_query=300, seed=7, B=200)
    o = r.outcomes.ravel()
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert r.impressions_needed == int(np.ceil(o.var() * z**2 / o.mean() ** 2))
    n = r.impressions_needed
    assert 60 <= n <= 2000
    fresh = simulate_interleaving(d, a, b, impressions_per_query=300, seed=8, B=200).outcomes
    pick = np.random.default_rng(9)
    detected = 0
    for _ in range(300):
        q, i = pick.integers(0, d.n_queries, n), pick.integers(0, 300, n)
        sample = fresh[q, i]
        detected += stats.ttest_1samp(sample, 0.0).pvalue < 0.05 and sample.mean() * r.preference > 0
    assert 0.72 <= detected / 300 <= 0.88

    # the A/B test on clicks@10 of the same pair: PBM clicks are independent Bernoulli(θ_r·c(y_r)), so per
    # arm the mean clicks per impression and their variance (within + between queries) are exact sums
    def clicks_moments(scores):
        means, within = [], []
        for q in range(d.n_queries):
            y, s = d.y[d.offsets[q] : d.offsets[q + 1]], scores[d.offsets[q] : d.offsets[q + 1]]
            top = y[np.argsort(-s, kind="stable")][:10]
            p = (1.0 / np.arange(1, top.size + 1)) * (0.1 + 0.9 * (2.0**top - 1) / (2.0 ** d.y.max() - 1))
            means.append(p.sum())
            within.append((p * (1 - p)).sum())
        return np.mean(means), np.var(means) + np.mean(within)

    (mean_a, var_a), (mean_b, var_b) = clicks_moments(a), clicks_moments(b)
    se = np.sqrt((var_a + var_b) / (30 * 300))
    assert abs(r.ab_clicks_delta - (mean_a - mean_b)) < 3 * se
    assert r.ab_sd == pytest.approx(np.sqrt((var_a + var_b) / 2), rel=0.03)
    assert r.ab_impressions_needed == 2 * int(np.ceil(2 * r.ab_sd**2 * z**2 / r.ab_clicks_delta**2))
    assert r.ab_ratio == pytest.approx(r.ab_impressions_needed / n) and r.ab_ratio > 1.0  # interleaving wins


def test_agreement_and_kendall_tau_over_pairs_match_numpy_and_scipy():
    d = _data(30, seed=2)
    rng = np.random.default_rng(10)
    systems = {f"noise{s}": d.y + s * rng.standard_normal(d.n_docs) for s in (0.5, 1.0, 2.0, 4.0)}
    t = interleaving_table(d, systems, all_pairs(list(systems)), {"impressions": 30, "seed": 1}, B=200)
    frame = t.to_frame()
    assert len(frame) == 6

    # ΔNDCG@10 by hand: gain 2^y − 1, discount 1/log2(r + 1), ideal over the query's labels
    def ndcg10(scores):
        vals = []
        for q in range(d.n_queries):
            y, s = d.y[d.offsets[q] : d.offsets[q + 1]], scores[d.offsets[q] : d.offsets[q + 1]]
            disc = 1.0 / np.log2(np.arange(2, 12))
            dcg = ((2.0 ** y[np.argsort(-s, kind="stable")][:10] - 1) * disc[: min(10, len(y))]).sum()
            ideal = ((2.0 ** np.sort(y)[::-1][:10] - 1) * disc[: min(10, len(y))]).sum()
            vals.append(dcg / ideal if ideal > 0 else np.nan)
        return np.nanmean(vals)

    for row in frame.itertuples():
        assert row.delta_metric == pytest.approx(
            ndcg10(systems[row.system_a]) - ndcg10(systems[row.system_b])
        )
    agree = np.sign(frame["preference"]) == np.sign(frame["delta_metric"])
    assert t.agreement == pytest.approx(agree.mean())
    assert t.kendall_tau == pytest.approx(
        stats.kendalltau(frame["preference"], frame["delta_metric"]).statistic
    )
    assert t.agreement >= 5 / 6  # less noise is better: offline and online agree
    # impressions for a given offline Δ: Δ_AB ≈ β·ΔM through 0 (numpy lstsq), n = σ̄²(z.975 + z.8)²/(β·ΔM)²
    beta = np.linalg.lstsq(frame[["delta_metric"]].to_numpy(), frame["preference"].to_numpy(), rcond=None)[0][
        0
    ]
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert t.slope == pytest.approx(beta)
    assert t.impressions_for(0.01) == int(np.ceil((frame["sd"] ** 2).mean() * z**2 / (beta * 0.01) ** 2))
    assert "Agreement with Δndcg@10" in t.to_markdown() and "Kendall's τ" in t.summary_line()


def test_lightgbm_checkpoints_agreement():
    import lightgbm as lgb

    train, test = _data(120, seed=3, max_docs=30), _data(40, seed=4, max_docs=30)
    booster = lgb.train(
        {"objective": "lambdarank", "verbose": -1, "num_threads": 1, "seed": 0, "learning_rate": 0.1},
        lgb.Dataset(train.X, train.y, group=train.group_sizes),
        num_boost_round=64,
    )
    scores = {f"it{i}": booster.predict(test.X, num_iteration=i) for i in (1, 4, 16, 64)}
    scores["random"] = np.random.default_rng(0).standard_normal(test.n_docs)
    t = interleaving_table(test, scores, all_pairs(list(scores)), {"impressions": 50}, B=200)
    frame = t.to_frame()
    assert t.kendall_tau == pytest.approx(
        stats.kendalltau(frame["preference"], frame["delta_metric"]).statistic
    )
    assert t.agreement >= 0.7


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match=r"interleaving.method: expected one of"):
        check_interleaving_config({"method": "team-draft"})
    with pytest.raises(ConfigError, match=r"interleaving.model: expected one of"):
        check_interleaving_config({"model": "dbn"})
    with pytest.raises(ConfigError, match=r"interleaving.impressions: must be in \[1, inf\]"):
        check_interleaving_config({"impressions": 0})
    with pytest.raises(ConfigError, match=r"interleaving.tau: must be in \(0.0, inf\]"):
        check_interleaving_config({"tau": 0})
    with pytest.raises(ConfigError, match=r"interleaving: unknown key\(s\) users"):
        check_interleaving_config({"users": "pbm"})
    base = {"systems": {"a": {"model": "lambdamart"}, "b": {"model": "regression"}}}
    with pytest.raises(ConfigError, match=r"x.yaml: interleaving.method: expected one of"):
        check_experiment(OmegaConf.create({**base, "interleaving": {"method": "x"}}), "x.yaml")
    with pytest.raises(ConfigError, match=r"x.yaml: interleaving.metric: "):
        check_experiment(OmegaConf.create({**base, "interleaving": {"metric": "ndgc@10"}}), "x.yaml")
    d = RankingData(X=np.zeros((3, 1), np.float32), y=[0, 1, 2], qid=[1, 1, 1])
    with pytest.raises(DataError, match="at least 2 queries"):
        simulate_interleaving(d, [1.0, 2, 3], [3.0, 2, 1])
    d = _data(3)
    with pytest.raises(DataError, match="scores_b must be"):
        simulate_interleaving(d, np.zeros(d.n_docs), np.zeros(d.n_docs - 1))


@pytest.mark.slow  # trains two systems and logs a comparison to MLflow (~15 s)
def test_compare_block_writes_files_logs_to_mlflow_and_prints_a_line(tmp_path, capsys):
    from ltr.compare import main

    spec = {
        "name": "tinyil",
        "overrides": ["data=synthetic"],
        "baseline": "feature",
        "metrics": ["ndcg@10", "err@10"],
        "stats": {"B": 500},
        "interleaving": {"method": "team_draft", "model": "pbm", "impressions": 20, "seed": 0},
        "systems": {
            "feature": {"model": "feature"},
            "lambdamart": {"model": "lambdamart", "overrides": ["model.params.n_trees=10"]},
        },
    }
    path = tmp_path / "tinyil.yaml"
    path.write_text(yaml.safe_dump(spec))
    data = [
        "data.n_queries.train=40",
        "data.n_queries.valid=20",
        "data.n_queries.test=30",
        "data.max_docs=20",
    ]
    code = main(
        [f"experiment={path}", *data, "num_threads=1", "eval.bootstrap.B=200", f"paths.root={tmp_path}"]
    )
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    out_dir = Path(tmp_path) / "reports" / "tinyil"
    frame = pd.read_csv(out_dir / "interleaving.csv")
    assert frame["system_a"].tolist() == ["lambdamart"] and frame["system_b"].tolist() == ["feature"]
    row = frame.iloc[0]
    assert row.wins + row.ties + row.losses == 30 * 20
    assert row.pvalue_impressions == pytest.approx(
        stats.binomtest(int(row.wins), int(row.wins + row.losses)).pvalue
    )
    assert f"Interleaving (team_draft, pbm): lambdamart vs feature {row.preference:+.3f}" in out
    assert "## Interleaving" in (out_dir / "interleaving.md").read_text()
    client = store_client(Path(tmp_path))
    parent = client.search_runs(
        [client.get_experiment_by_name("ltr").experiment_id], "tags.`ltr.compare.role` = 'parent'"
    )[0]
    assert parent.data.metrics["interleaving/lambdamart/preference"] == pytest.approx(row.preference)
    assert parent.data.params["interleaving.method"] == "team_draft"
    logged = {f.path for f in client.list_artifacts(parent.info.run_id, "leaderboard")}
    assert {"leaderboard/interleaving.md", "leaderboard/interleaving.csv"} <= logged


def test_compare_refuses_interleaving_with_a_fold_protocol_before_training(tmp_path):
    from ltr.data.svmlight import write_svmlight
    from ltr.experiment.systems import run_comparison

    data = _data(30, max_docs=10)
    write_svmlight(data, tmp_path / "rank.txt")
    spec = {
        "systems": {"a": {"model": "feature"}, "b": {"model": "linear"}},
        "interleaving": {"impressions": 5},
    }
    exp = check_experiment(OmegaConf.create(spec), str(tmp_path / "x.yaml"))
    overrides = ["data=svmlight", f"data.train={tmp_path / 'rank.txt'}", f"data.n_features={data.n_features}",
                 "data.cv.folds=2", "tracking=none", f"paths.root={tmp_path}"]  # fmt: skip
    with pytest.raises(ConfigError, match="interleaving: needs one test split, not a fold protocol"):
        run_comparison(exp, overrides, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()

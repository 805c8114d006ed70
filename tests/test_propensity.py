"""Propensity estimation from click logs: recovery of the simulator's known (1/r)^η within the
bootstrap CIs, the EM against a direct maximum-likelihood fit, log validation, CLI, IPS training."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from helpers import completed_in_process
from scipy.optimize import minimize
from scipy.stats import norm

from ltr.clicks import simulate_log_table
from ltr.clicks.logs import (
    ImpressionLog,
    impression_log,
    read_click_log,
    read_propensities,
    write_propensities,
)
from ltr.clicks.propensity import MAX_ITER, estimate_propensities
from ltr.clicks.simulation import examination_probabilities
from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.data.synthetic import generate
from ltr.models import build_ranker


@pytest.fixture(scope="module")
def data():
    return generate(150, seed=0)


#: every position within its CI jointly: 9 intervals (position 1 is fixed), Bonferroni-adjusted 95%
JOINT = 1 - 0.05 / 9


def naive_ctr_ratio(table):
    pos, click = table["position"], table["click"]
    ctr = np.bincount(pos, weights=click)[1:] / np.bincount(pos)[1:]
    return ctr / ctr[0]


@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_randomization_recovers_the_simulated_examination_within_its_ci(data, eta):
    table = simulate_log_table(data, rounds=20, rand_top=10, eta=eta, seed=0)
    p = estimate_propensities(
        impression_log(**table), method="randomization", n_bootstrap=300, confidence=JOINT, seed=0
    )
    true = (1.0 / p.position) ** eta
    assert p.position.tolist() == list(range(1, 11))
    assert p.examination[0] == 1.0 and p.ci_low[0] == p.ci_high[0] == 1.0
    assert np.all((p.ci_low <= true) & (true <= p.ci_high)), (p.examination, true)
    assert np.max(np.abs(p.examination - true)) < 0.06
    assert np.all(p.ci_high[1:] - p.ci_low[1:] > 0)  # a real interval, not the point


@pytest.mark.slow
def test_em_recovers_the_examination_on_an_ordinary_log_where_ctr_is_biased():
    # 20 production rankers (documents move between positions), 30 sessions each: enough clicks per
    # (query, document) that the per-pair relevance of the EM is not itself the noise
    table = simulate_log_table(generate(80, seed=0), rounds=20, sessions=30, rand_top=0, eta=1.0, seed=0)
    p = estimate_propensities(impression_log(**table), method="em", n_bootstrap=30, seed=0)
    true = 1.0 / p.position
    # measured: |error| <= 0.0104 at every position (the per-pair relevance of the EM leaves a small
    # finite-sample bias, mostly upward, of the size of the CI half-width: see docs/position_bias.md)
    assert np.max(np.abs(p.examination - true)) < 0.015, p.examination
    assert np.mean((p.ci_low <= true) & (true <= p.ci_high)) >= 0.5, (p.ci_low, p.ci_high)
    # without randomization the CTR ratio mixes relevance into θ (the production ranker puts the
    # relevant documents on top): the EM is not that ratio, and the ratio lies outside the CIs
    naive = naive_ctr_ratio(table)
    assert np.any((naive < p.ci_low) | (naive > p.ci_high)), naive


def test_em_is_the_maximum_likelihood_estimate():
    rng = np.random.default_rng(4)
    sessions, qids, docs, positions, clicks = [], [], [], [], []
    theta_true, gamma = np.array([1.0, 0.6, 0.3]), rng.uniform(0.2, 0.9, 4)
    for s in range(400):
        order = rng.permutation(4)[:3]  # 4 documents of one query, 3 shown in a random order
        for r, d in enumerate(order):
            sessions.append(s), qids.append("q"), docs.append(d), positions.append(r + 1)
            clicks.append(int(rng.random() < theta_true[r] * gamma[d]))
    p = estimate_propensities(
        impression_log(session=sessions, qid=qids, doc=docs, position=positions, click=clicks),
        method="em",
        n_bootstrap=1,
        tol=1e-12,
        max_iter=20000,
    )
    pos, doc, clk = np.array(positions) - 1, np.array(docs), np.array(clicks)

    def nll(x):  # θ_1 = 1; θ_2, θ_3 and γ_d through a logistic link
        t = np.r_[1.0, 1 / (1 + np.exp(-x[:2]))]
        g = 1 / (1 + np.exp(-x[2:]))
        prob = t[pos] * g[doc]
        return -np.sum(clk * np.log(prob) + (1 - clk) * np.log1p(-prob))

    best = minimize(nll, np.zeros(6), method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(p.examination[1:], 1 / (1 + np.exp(-best.x[:2])), atol=2e-4)


def test_bootstrap_is_seeded(data):
    log = impression_log(**simulate_log_table(data, rounds=5, rand_top=10, seed=1))
    a, b = (estimate_propensities(log, method="randomization", n_bootstrap=50, seed=s) for s in (3, 3))
    c = estimate_propensities(log, method="randomization", n_bootstrap=50, seed=4)
    assert a.as_json() == b.as_json()
    assert a.ci_low.tolist() != c.ci_low.tolist() and a.examination.tolist() == c.examination.tolist()


@pytest.fixture(scope="module")
def moving_log(data, tmp_path_factory):
    """A small ordinary log (documents move between positions: the EM applies), as a CSV file."""
    path = tmp_path_factory.mktemp("moving") / "log.csv"
    pd.DataFrame(simulate_log_table(data, rounds=4, sessions=3, seed=2)).to_csv(path, index=False)
    return path


def test_em_progress_hooks_see_each_iteration_and_replicate_and_change_nothing(moving_log):
    log = read_click_log(moving_log)
    iterations, replicates = [], []
    watched = estimate_propensities(
        log,
        method="em",
        n_bootstrap=6,
        seed=0,
        on_iteration=lambda i, values: iterations.append(i),
        on_replicate=replicates.append,
    )
    assert replicates == list(range(6))
    assert (
        iterations == list(range(len(iterations))) and 0 < len(iterations) <= MAX_ITER
    )  # the point estimate's
    assert watched.as_json() == estimate_propensities(log, method="em", n_bootstrap=6, seed=0).as_json()


@pytest.mark.slow  # ~4 s: EM and a bootstrap through the CLI; the progress hooks are fast tests
def test_cli_progress_names_the_bootstrap_count_on_a_terminal_only(moving_log, monkeypatch, capsys):
    args = ["propensity", str(moving_log), "--method", "em", "--bootstrap", "7"]
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("LTR_NO_PROGRESS", raising=False)
    quiet = completed_in_process("ltr.clicks", args, capsys)  # stderr is not a terminal here
    assert quiet.returncode == 0 and quiet.stderr == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal, for ltr.report.progress and rich
    shown = completed_in_process("ltr.clicks", args, capsys)
    assert shown.returncode == 0, shown.stderr
    assert "em: point estimate, EM iterations" in shown.stderr and f"/{MAX_ITER}" in shown.stderr
    assert "bootstrap over queries: 7 replicates" in shown.stderr and "7/7" in shown.stderr
    assert "ETA" in shown.stderr
    assert shown.stdout == quiet.stdout  # the same table: the bars only watch
    monkeypatch.setenv("CI", "true")  # a terminal in CI: quiet
    assert completed_in_process("ltr.clicks", args, capsys).stderr == ""


def test_em_refuses_a_log_where_documents_never_move(data):
    table = simulate_log_table(data, rounds=1, sessions=5, rand_top=0, seed=0)  # one fixed order per query
    with pytest.raises(DataError, match=r"method em cannot separate .* position\(s\) \[2, 3"):
        estimate_propensities(impression_log(**table), method="em", n_bootstrap=2)


GOOD = "session,qid,doc,position,click\ns1,q1,d1,1,1\ns1,q1,d2,2,0\ns2,q1,d2,1,1\ns2,q1,d1,2,1\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("session,qid,doc,click\ns1,q1,d1,1\n", r"missing column\(s\) position; a click log has the columns"),
        (
            GOOD.replace("s2,q1,d2,1,1", "s2,q1,d2,0,1"),
            r"log.csv:4: column 'position', data row 3: expected an integer in \[1, 1000000000\]",
        ),
        (GOOD.replace("s2,q1,d2,1,1", "s2,q1,d2,1.5,1"), r"column 'position', data row 3: .*got '1.5'"),
        (
            GOOD.replace("s1,q1,d2,2,0", "s1,q1,d2,2,yes"),
            r"column 'click', data row 2: expected 0 or 1, got 'yes'",
        ),
        (GOOD.replace("s1,q1,d2,2,0", "s1,q1,,2,0"), r"column 'doc', data row 2: empty value"),
        (GOOD.replace("s1,q1,d2,2,0", "s1,q2,d2,2,0"), r"column 'qid', data row 2: session 's1' already has"),
        (GOOD.replace("s1,q1,d2,2,0", "s1,q1,d2,1,0"), r"column 'position', data row 2: .* already shows"),
        ("session,qid,doc,position,click\n", r"no rows"),
    ],
)
def test_bad_logs_name_the_file_column_and_row(tmp_path, text, message):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message) as err:
        read_click_log(path)
    assert str(path) in str(err.value)


def test_parquet_log_reads_like_csv_and_names_rows(tmp_path):
    frame = pd.read_csv(__import__("io").StringIO(GOOD))
    frame.to_parquet(tmp_path / "log.parquet")
    (tmp_path / "log.csv").write_text(GOOD)
    a = estimate_propensities(read_click_log(tmp_path / "log.parquet"), method="randomization", n_bootstrap=5)
    b = estimate_propensities(read_click_log(tmp_path / "log.csv"), method="randomization", n_bootstrap=5)
    assert a.as_json() == b.as_json() and a.examination.tolist() == [1.0, 0.5]
    frame.loc[1, "click"] = 2
    frame.to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(DataError, match=r"bad.parquet: column 'click', row 2: expected 0 or 1, got 2"):
        read_click_log(tmp_path / "bad.parquet")


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "ltr.clicks", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_json_output_and_errors(tmp_path, capsys):
    """``python -m ltr.clicks``: the first command a real process, the rest its main in-process."""

    def in_process(*args: str):
        return completed_in_process("ltr.clicks", list(args), capsys)

    log = tmp_path / "log.csv"
    done = run_cli(
        "simulate", str(log), "--queries", "60", "--rounds", "10", "--rand-top", "5", "--top-k", "5"
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "p.json"
    done = in_process(
        "propensity",
        str(log),
        "--method",
        "randomization",
        "--json",
        "--bootstrap",
        "50",
        "--output",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == [
        "position",
        "examination",
        "ci_low",
        "ci_high",
        "confidence",
        "method",
        "n_bootstrap",
    ]
    assert (result["confidence"], result["method"], result["n_bootstrap"]) == (0.95, "randomization", 50)
    assert result["position"] == [1, 2, 3, 4, 5] and result["examination"][0] == 1.0
    assert json.loads(out.read_text()) == result
    api = estimate_propensities(read_click_log(log), method="randomization", n_bootstrap=50, seed=0)
    assert api.as_json() == result
    table = in_process("propensity", str(log), "--method", "randomization", "--bootstrap", "20")
    assert "bootstrap over queries" in table.stdout and "       5" in table.stdout
    bad = in_process("propensity", str(tmp_path / "missing.csv"), "--method", "em")
    assert bad.returncode == 2 and "missing.csv: no such click log file" in bad.stderr


def test_propensity_file_errors_name_the_config_key(tmp_path):
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"position": [1, 2], "examination": [1.0, 0.5]}))
    zero = tmp_path / "zero.json"
    zero.write_text(json.dumps({"position": [1, 2], "examination": [1.0, 0.0]}))
    cases = [
        (
            "lambdamart_clicks",
            short,
            r"model.clicks.propensities: .*short.json covers positions 1..2, but model.clicks.top_k shows 10",
        ),
        (
            "lambdamart_clicks",
            zero,
            r"model.clicks.propensities: .*every 'examination' value must be a finite number > 0",
        ),
        ("lambdamart_clicks", tmp_path / "none.json", r"model.clicks.propensities: no such propensity file"),
        (
            "lambdamart_unbiased",
            short,
            r"model.clicks.propensities: lambdamart_unbiased does not take propensities",
        ),
    ]
    for name, path, message in cases:
        with pytest.raises(ConfigError, match=message):
            build_ranker({"name": name, "clicks": {"propensities": str(path)}}).fit(generate(5, seed=0))


def test_written_estimate_reads_back_for_training(data, tmp_path):
    log = impression_log(**simulate_log_table(data, rounds=3, rand_top=10, seed=2))
    p = estimate_propensities(log, method="randomization", n_bootstrap=5)
    write_propensities(p, tmp_path / "p.json")
    np.testing.assert_array_equal(read_propensities(tmp_path / "p.json"), p.examination)


def test_swap_k_log_gives_the_ratio_at_k_and_only_the_positions_shown():
    rng = np.random.default_rng(7)
    theta_k, rows = 0.3, []
    for s in range(
        20000
    ):  # query s % 50: documents "top" (γ = 0.9) and "other" (γ = 0.2), swapped half the time
        gamma = {"top": 0.9, "other": 0.2}
        first, at_k = ("other", "top") if rng.random() < 0.5 else ("top", "other")
        rows.append((s, s % 50, first, 1, int(rng.random() < gamma[first])))
        rows.append((s, s % 50, at_k, 5, int(rng.random() < theta_k * gamma[at_k])))
    cols = dict(
        zip(("session", "qid", "doc", "position", "click"), map(list, zip(*rows, strict=True)), strict=True)
    )
    p = estimate_propensities(impression_log(**cols), method="randomization", n_bootstrap=200, seed=0)
    assert p.position.tolist() == [1, 5]
    assert p.ci_low[1] <= theta_k <= p.ci_high[1] and abs(p.examination[1] - theta_k) < 0.02
    without_top = {k: [v for v, r in zip(vals, rows, strict=True) if r[3] != 1] for k, vals in cols.items()}
    with pytest.raises(DataError, match="no impressions at position 1"):
        estimate_propensities(impression_log(**without_top), method="randomization")


# --- the CIs over many simulated logs: coverage and width -------------------------------------------
COVERAGE_SEEDS = 800
SHOWN = 5  # RandTop-5: positions 1-5, shuffled per query


def _randomized_log(seed: int) -> ImpressionLog:
    """A RandTop-5 PBM log with θ_r = 1/r: 60 fresh queries of 8 documents (grades 0-4), 20 sessions each."""
    rng = np.random.default_rng(seed)
    n_queries, n_docs = 60, 8
    data = RankingData(
        X=rng.normal(size=(n_queries * n_docs, 1)).astype(np.float32),
        y=rng.integers(0, 5, n_queries * n_docs),
        qid=np.repeat(np.arange(n_queries), n_docs),
    )
    table = simulate_log_table(data, rounds=1, rand_top=SHOWN, top_k=SHOWN, sessions=20, eta=1.0, seed=seed)
    # the integer codes impression_log() would build (one document id per row of `data`)
    return ImpressionLog(
        query=np.unique(table["qid"], return_inverse=True)[1],
        pair=np.unique(table["doc"], return_inverse=True)[1],
        position=table["position"],
        click=table["click"].astype(np.float64),
    )


@pytest.mark.slow  # 200 simulated logs with bootstrap CIs: ~5 s
def test_randomization_cis_cover_the_simulated_examination_at_the_nominal_rate_and_width():
    """Kills (ltr/clicks/propensity.py ``estimate_propensities``): a 90 % interval labelled 95 %
    (``alpha = 1 - confidence`` instead of half of it), or any interval whose width is not the one its
    level implies (e.g. resampling fewer queries than the log has).

    800 logs with known θ_r = 1/r (positions 2-5: 3,200 intervals). Coverage: a 95 % interval covers
    θ_r with probability 0.95 (percentile bootstrap intervals under-cover slightly with 60 queries: 0.944
    here, 0.939-0.942 on 2,000 other seeds); with 3,200 Bernoulli(0.95) trials the binomial sd is 0.004,
    0.0045 allowing for the positions of one log being correlated (design effect 1.2), so the band
    [0.925, 0.97] holds a true 95 % interval (> 4 sd inside) and rejects a 90 % one (coverage ≈ 0.89,
    > 7 sd outside). Width: the mean width over 2·Φ⁻¹(0.975)·sd of the point estimates across logs (the
    estimator's true spread) is 1 for a 95 % interval, Φ⁻¹(0.95)/Φ⁻¹(0.975) = 0.84 for a 90 % one and
    1.31 for a 99 % one; the sd over 800 logs is within ±2.5 % (one sd), so the band [0.92, 1.08]
    accepts the first (1.02 here) and rejects the others.
    """
    points, low, high = [], [], []
    for seed in range(COVERAGE_SEEDS):
        p = estimate_propensities(_randomized_log(seed), method="randomization", n_bootstrap=400, seed=seed)
        assert p.position.tolist() == list(range(1, SHOWN + 1)) and p.confidence == 0.95
        points.append(p.examination[1:])
        low.append(p.ci_low[1:])
        high.append(p.ci_high[1:])
    points, low, high = np.array(points), np.array(low), np.array(high)
    truth = examination_probabilities(np.arange(1, SHOWN), eta=1.0)  # the simulator's θ at positions 2-5
    assert np.abs(points.mean(axis=0) - truth).max() < 0.02  # the right truth (a ratio's O(1/n) bias: 0.007)
    coverage = float(((low <= truth) & (truth <= high)).mean())
    ratio = (high - low).mean(axis=0) / (2 * norm.ppf(0.975) * points.std(axis=0, ddof=1))
    assert 0.925 <= coverage <= 0.97, (coverage, ratio)
    assert 0.92 <= float(ratio.mean()) <= 1.08, (coverage, ratio)

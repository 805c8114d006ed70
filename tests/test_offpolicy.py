"""Off-policy evaluation of rankers from a click log (issue 27 item 1): ltr.clicks.offpolicy and
``python -m ltr.clicks evaluate``.

Truths: the exact expectation of an estimator over every click outcome of a tiny log (brute-force
enumeration, the issue's fallback when Open Bandit Pipeline is not installed), and simulated users whose
attractiveness and examination are known (the new ranker's value computed from them, not estimated).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from ltr.clicks.__main__ import main as clicks_main
from ltr.clicks.logs import impression_log
from ltr.clicks.offpolicy import estimate_offpolicy, new_ranks, true_value
from ltr.clicks.simulation import click_probabilities, examination_probabilities, simulate_log_table
from ltr.core.errors import ConfigError, DataError
from ltr.data.svmlight import load_svmlight
from ltr.data.synthetic import generate

THETA = np.array([1.0, 0.6, 0.3])
GAMMA = {"a": 0.7, "b": 0.4, "c": 0.2, "z": 0.5}  # z: a candidate the log never shows
SESSIONS = [["a", "b", "c"], ["c", "a", "b"]]  # two sessions of query q, documents in display order


def _expected(estimator: str, scores: dict[str, float], *, metric: str = "clicks", reward=None) -> float:
    """E[estimate] over all 2^6 click outcomes of the two sessions, each click independent with
    probability θ_position·γ(document) (PBM)."""
    docs = list(scores)
    cells = [(s, pos, d) for s, shown in enumerate(SESSIONS) for pos, d in enumerate(shown, start=1)]
    total = 0.0
    for clicks in itertools.product((0, 1), repeat=len(cells)):
        p = 1.0
        for (_, pos, d), c in zip(cells, clicks, strict=True):
            q = THETA[pos - 1] * GAMMA[d]
            p *= q if c else 1 - q
        log = impression_log(
            session=[s for s, _, _ in cells], qid=["q"] * len(cells), doc=[d for _, _, d in cells],
            position=[pos for _, pos, _ in cells], click=list(clicks),
        )  # fmt: skip
        est = estimate_offpolicy(
            log, THETA, qid=["q"] * len(docs), doc=docs, scores=[scores[d] for d in docs], k=3, metric=metric,
            estimators=(estimator,), reward=reward, n_bootstrap=0,
        )  # fmt: skip
        total += p * est.mean[estimator]
    return total


def _truth(scores: dict[str, float], metric: str = "clicks") -> float:
    docs = list(scores)
    ranks = new_ranks(np.array(["q"] * len(docs)), np.array([scores[d] for d in docs]))
    return true_value([GAMMA[d] for d in docs], ranks, ["q"] * len(docs), THETA, k=3, metric=metric)["q"]


@pytest.mark.parametrize("metric", ["clicks", "dcg"])
@pytest.mark.parametrize("order", [{"c": 3.0, "b": 2.0, "a": 1.0}, {"a": 3.0, "c": 2.0, "b": 1.0}])
def test_ips_and_dr_are_unbiased_when_the_log_shows_every_candidate(metric, order):
    truth = _truth(order, metric)
    assert _expected("ips", order, metric=metric) == pytest.approx(truth, abs=1e-12)
    wrong_model = np.array([0.9, 0.1, 0.5])  # any reward model: the correction removes its error
    assert _expected("dr", order, metric=metric, reward=wrong_model) == pytest.approx(truth, abs=1e-12)


def test_a_document_the_log_never_showed_is_invisible_to_ips_and_dr_falls_back_on_its_model():
    """The new ranker puts z, never shown, first: E[IPS] misses exactly θ_1·γ(z); DR with a reward model
    that knows γ is unbiased; the estimate says which share of the weight it could not see."""
    order = {"z": 4.0, "a": 3.0, "b": 2.0, "c": 1.0}
    truth = _truth(order)
    assert _expected("ips", order) == pytest.approx(truth - THETA[0] * GAMMA["z"], abs=1e-12)
    exact = np.array([GAMMA[d] for d in order])
    assert _expected("dr", order, reward=exact) == pytest.approx(truth, abs=1e-12)
    log = impression_log(
        session=[0, 0, 0], qid=["q"] * 3, doc=["a", "b", "c"], position=[1, 2, 3], click=[1, 0, 0]
    )
    est = estimate_offpolicy(log, THETA, qid=["q"] * 4, doc=list(order), scores=list(order.values()), k=3,
                             estimators=("ips",), n_bootstrap=0)  # fmt: skip
    assert est.unshown.tolist() == pytest.approx([THETA[0] / THETA.sum()])


def _simulated(seed: int, model: str = "pbm", top_k: int = 100):
    """A synthetic log (production ranker: a noisy feature), a better new ranker, the estimate, the truth."""
    data = generate(60, seed=seed, max_docs=12)
    table = simulate_log_table(data, rounds=20, model=model, top_k=top_k, seed=seed)
    log = impression_log(**{c: table[c] for c in ("session", "qid", "doc", "position", "click")})
    theta = examination_probabilities(np.arange(12), eta=1.0)
    qid, doc = data.qid.astype(str), np.arange(data.n_docs).astype(str)
    scores = data.y + np.random.default_rng(seed).normal(0, 1, data.n_docs)
    est = estimate_offpolicy(log, theta, qid=qid, doc=doc, scores=scores, k=10, estimators=("ips", "snips"),
                             n_bootstrap=300, seed=seed)  # fmt: skip
    gamma = click_probabilities(data.y, epsilon=0.1, max_label=max(float(data.y.max()), 1.0))
    truth = true_value(gamma, new_ranks(qid, scores), qid, theta[:10], k=10, metric="clicks", model=model)
    return est, float(np.mean([truth[q] for q in est.queries]))


def test_under_pbm_users_ips_is_unbiased_and_its_ci_covers_the_truth():
    errors, covered = [], 0
    for seed in range(25):
        est, truth = _simulated(seed)
        errors.append(est.mean["ips"] - truth)
        low, high = est.ci["ips"]
        covered += low <= truth <= high
    errors = np.array(errors)
    assert abs(errors.mean()) < 3 * errors.std(ddof=1) / np.sqrt(errors.size)
    assert covered >= 22  # 25 × 0.95 with a binomial margin (the CI over queries is conservative here)


def test_cascade_users_bias_the_position_based_estimators_upward():
    """Stated, not hidden: a cascade user stops at the first click, so one click at most per session;
    the PBM estimators count every attractive document (issue 27: the known failure)."""
    errors = [est.mean["ips"] - truth for est, truth in (_simulated(seed, "cascade") for seed in range(5))]
    assert min(errors) > 0.1


def _files(tmp_path):
    """A simulated log, its candidates' features with docids, known examination and a new ranker's scores."""
    log, features = tmp_path / "log.csv", tmp_path / "features.txt"
    assert clicks_main(["simulate", str(log), "--queries", "40", "--rounds", "10", "--features-out",
                        str(features)]) == 0  # fmt: skip
    (tmp_path / "theta.json").write_text(
        json.dumps({"position": list(range(1, 11)), "examination": [1 / r for r in range(1, 11)]})
    )
    data = load_svmlight(features, docid=True)
    scores = data.y + np.random.default_rng(1).normal(0, 1, data.n_docs)
    np.savetxt(tmp_path / "scores.txt", scores)
    return log, features, data, scores


def test_the_command_prints_every_estimator_and_what_the_log_cannot_see(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log, features, data, scores = _files(tmp_path)
    capsys.readouterr()
    argv = ["evaluate", "log.csv", "--propensities", "theta.json", "--features", "features.txt", "--scores",
            "scores.txt", "--bootstrap", "200"]  # fmt: skip
    assert clicks_main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["estimators"]) == {"ips", "clipped_ips", "snips", "dr"}
    assert out["metric"] == "expected clicks@10" and out["n_queries"] == 40
    # the same numbers as the API on the same inputs (qids as the file writes them)
    table = __import__("pandas").read_csv(log)
    api_log = impression_log(
        **{c: table[c].astype(str) for c in ("session", "qid", "doc", "position", "click")}
    )
    api = estimate_offpolicy(api_log, 1 / np.arange(1, 11), qid=data.qid.astype(int).astype(str),
                             doc=np.asarray(data.docid, dtype=str), scores=scores, estimators=("ips",),
                             n_bootstrap=200)  # fmt: skip
    assert out["estimators"]["ips"]["mean"] == pytest.approx(api.mean["ips"])
    assert out["queries_with_unshown"] > 0  # the log shows the top 10 of up to 200 documents
    assert clicks_main(argv) == 0
    text = capsys.readouterr().out
    assert "expected clicks@10 of scores.txt" in text and "dr's reward model speaks for them" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--k", "12"], "the propensities cover 1..10"),
        (["--estimators", "ips,magic"], "--estimators: unknown estimator 'magic'"),
        (["--clip", "0"], "--clip must be in (0, 1]"),
        (["--tracking-uri", "sqlite:///x.db"], "--tracking-uri is where --model finds"),
    ],
)
def test_bad_options_get_one_error_line(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    capsys.readouterr()
    argv = ["evaluate", "log.csv", "--propensities", "theta.json", "--features", "features.txt", "--scores",
            "scores.txt", "--bootstrap", "0", *extra]  # fmt: skip
    assert clicks_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_mismatched_inputs_name_the_document_or_the_position():
    log = impression_log(session=[0, 0], qid=["q", "q"], doc=["a", "x"], position=[1, 2], click=[1, 0])
    with pytest.raises(DataError, match="doc 'x' is not among the new ranker's candidates"):
        estimate_offpolicy(
            log, THETA, qid=["q"], doc=["a"], scores=[1.0], k=1, estimators=("ips",), n_bootstrap=0
        )
    deep = impression_log(session=[0], qid=["q"], doc=["a"], position=[5], click=[1])
    with pytest.raises(DataError, match="position 5, but the propensities cover positions 1..3"):
        estimate_offpolicy(
            deep, THETA, qid=["q"], doc=["a"], scores=[1.0], k=1, estimators=("ips",), n_bootstrap=0
        )
    with pytest.raises(ConfigError, match="the dr estimator needs a reward model"):
        estimate_offpolicy(log, THETA, qid=["q", "q"], doc=["a", "x"], scores=[1.0, 0.0], k=1, n_bootstrap=0)


def test_a_saved_model_is_the_new_ranker(tmp_path, capsys, monkeypatch):
    """``--model FOLDER``: the model's own predictions on the features file are the new ranker's scores."""
    from ltr.models.registry import get_ranker_class

    monkeypatch.chdir(tmp_path)
    _, _, data, _ = _files(tmp_path)
    ranker = get_ranker_class("lambdamart")({"n_trees": 5}, early_stopping={"patience": None}, num_threads=1)
    ranker.fit(data)
    ranker.save(tmp_path / "model")
    np.savetxt(tmp_path / "model_scores.txt", ranker.predict(data))
    capsys.readouterr()
    common = ["evaluate", "log.csv", "--propensities", "theta.json", "--features", "features.txt", "--json",
              "--bootstrap", "100", "--estimators", "ips,snips"]  # fmt: skip
    assert clicks_main([*common, "--model", "model"]) == 0
    by_model = json.loads(capsys.readouterr().out)
    assert clicks_main([*common, "--scores", "model_scores.txt"]) == 0
    by_scores = json.loads(capsys.readouterr().out)
    assert by_model["estimators"] == by_scores["estimators"]


def test_a_log_too_small_for_the_reward_model_and_ci_options_that_mean_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    (tmp_path / "one.csv").write_text("session,qid,doc,position,click\n1,1,0,1,0\n")
    capsys.readouterr()
    base = ["--propensities", "theta.json", "--features", "features.txt", "--scores", "scores.txt"]
    for argv, message in (
        (["evaluate", "one.csv", *base], "the dr estimator's reward model needs at least 20"),
        (["evaluate", "log.csv", *base, "--bootstrap", "5"], "--bootstrap must be 0 (no CI) or >= 100"),
        (
            ["evaluate", "log.csv", *base, "--estimators", "ips", "--clip", "0.5"],
            "--clip applies to the clipped_ips",
        ),
        (["evaluate", str(tmp_path), *base], "is a folder"),
    ):
        assert clicks_main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err

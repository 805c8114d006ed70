"""Which queries to label next: exact variance and expected change against brute-force enumeration,
Monte-Carlo within its standard error of the exact value, the orderings, the CLI."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import completed_in_process

from ltr.analysis.label_priorities import label_priorities
from ltr.core.errors import MetricError
from ltr.metrics import evaluate


def random_case(seed, sizes=(4, 3, 5), grades=3):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    probs = rng.dirichlet(np.full(grades, 0.7), size=n)
    offsets = np.r_[0, np.cumsum(sizes)]
    return probs, offsets, rng.normal(size=n), rng.normal(size=n)


def brute_force(probs, offsets, sa, sb, metric):
    """Per query: Var[m_A], and E[d] with the (d, weight) list, by listing every label assignment."""
    out = []
    for q in range(len(offsets) - 1):
        lo, hi = offsets[q], offsets[q + 1]
        ma, d, w = [], [], []
        for labels in itertools.product(range(probs.shape[1]), repeat=hi - lo):
            lab = np.array(labels, float)
            w.append(np.prod(probs[np.arange(lo, hi), list(labels)]))
            a = evaluate(metric, lab, sa[lo:hi], [0, hi - lo], no_relevant="zero")[metric][0]
            b = evaluate(metric, lab, sb[lo:hi], [0, hi - lo], no_relevant="zero")[metric][0]
            ma.append(a)
            d.append(a - b)
        ma, d, w = map(np.array, (ma, d, w))
        out.append((w @ (ma - w @ ma) ** 2, d, w))
    return out


@pytest.mark.parametrize("metric", ["ndcg@3", "dcg@3", "err@3", "ndcg"])
def test_exact_variance_and_change_equal_brute_force_enumeration(metric):
    probs, offsets, sa, sb = random_case(1)
    p = label_priorities(probs, offsets, sa, sb, metric=metric)
    truth = brute_force(probs, offsets, sa, sb, metric)
    np.testing.assert_allclose(p.variance, [t[0] for t in truth], rtol=1e-10, atol=1e-14)
    expected = np.array([w @ d for _, d, w in truth])
    delta = expected.mean()
    q = len(truth)
    change = [w @ np.abs((d - e) / q) for (_, d, w), e in zip(truth, expected, strict=True)]
    flip = [
        w @ (np.sign(delta + (d - e) / q) != np.sign(delta))
        for (_, d, w), e in zip(truth, expected, strict=True)
    ]
    np.testing.assert_allclose(p.expected_change, change, rtol=1e-10)
    np.testing.assert_allclose(p.flip_probability, flip, rtol=1e-10, atol=1e-14)
    assert p.delta == pytest.approx(delta)
    assert set(p.method) == ({"closed"} if metric.startswith("dcg") else {"enumeration"})
    assert np.all(p.variance_stderr == 0)


def test_dcg_closed_form_also_holds_beyond_enumeration():
    probs, offsets, sa, _ = random_case(2, sizes=(12,), grades=5)  # 5^12 assignments: no enumeration
    closed = label_priorities(probs, offsets, sa, metric="dcg@5", max_enumeration=10)
    mc = label_priorities(probs, offsets, sa, metric="dcg@5", max_enumeration=10, n_samples=20000, seed=3)
    assert closed.method == ["closed"]
    # the sampled variance of DCG, computed directly
    rng = np.random.default_rng(5)
    draws = np.array([[rng.choice(5, p=row) for row in probs] for _ in range(4000)], float)
    vals = [evaluate("dcg@5", lab, sa, offsets)["dcg@5"][0] for lab in draws]
    assert abs(np.var(vals, ddof=1) - closed.variance[0]) < 0.08 * closed.variance[0]
    assert mc.variance[0] == closed.variance[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_monte_carlo_agrees_with_exact_within_its_standard_error(seed):
    probs, offsets, sa, sb = random_case(10 + seed)
    exact = label_priorities(probs, offsets, sa, sb, metric="ndcg@3")
    mc = label_priorities(
        probs, offsets, sa, sb, metric="ndcg@3", max_enumeration=1, n_samples=4000, seed=seed
    )
    assert set(mc.method) == {"monte-carlo"} and np.all(mc.variance_stderr > 0)
    assert np.all(np.abs(mc.variance - exact.variance) < 4 * mc.variance_stderr), (
        mc.variance,
        exact.variance,
    )
    np.testing.assert_allclose(mc.expected_change, exact.expected_change, rtol=0.1)
    again = label_priorities(
        probs, offsets, sa, sb, metric="ndcg@3", max_enumeration=1, n_samples=4000, seed=seed
    )
    np.testing.assert_array_equal(again.variance, mc.variance)  # seeded


def test_monte_carlo_variance_is_the_unbiased_sample_variance_with_its_stderr(monkeypatch):
    """Monte Carlo by hand: one query of one document, grade 0 or 1, so ``ndcg@1`` (no relevant document
    counts 0) is the drawn grade. Five draws 1, 0, 0, 1, 1 give m̄ = 0.6, the unbiased sample variance
    Σ(m − m̄)²/(n − 1) = (3·0.16 + 2·0.36)/4 = 0.3, and the standard error of the variance estimate
    sd((m − m̄)², ddof 1)/√n: (m − m̄)² = 0.16, 0.36, 0.36, 0.16, 0.16 (mean 0.24), sd = √(0.048/4) = 0.10954,
    /√5 = 0.048990.

    Kills mutants #12 (the n/(n − 1) correction dropped: 0.24) and #14 (the stderr's ddof 0: 0.043818).
    """
    import ltr.analysis.label_priorities as lp

    draws = iter([1.0, 0.0, 0.0, 1.0, 1.0])
    monkeypatch.setattr(lp, "sample_labels", lambda p, rng: np.array([next(draws)]))
    p = label_priorities(
        np.array([[0.5, 0.5]]), [0, 1], [0.0], metric="ndcg@1", max_enumeration=1, n_samples=5
    )
    assert p.method == ["monte-carlo"]
    assert p.variance[0] == pytest.approx(0.3, rel=1e-12)
    assert p.variance_stderr[0] == pytest.approx(np.sqrt(0.048 / 4) / np.sqrt(5), rel=1e-12)


def test_ordering_puts_the_uncertain_and_the_decisive_queries_first():
    # q1: every label certain (variance 0); q2: one document a coin flip; q3: all coin flips
    certain, coin = [1.0, 0.0], [0.5, 0.5]
    probs = np.array([certain, [0.0, 1.0], certain, coin, [0.0, 1.0], coin, coin, coin])
    offsets = np.array([0, 2, 5, 8])
    sa = np.array([2.0, 1.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0])
    sb = -sa  # B reverses every list
    p = label_priorities(probs, offsets, sa, sb, metric="ndcg@2", qid=["a", "b", "c"])
    assert p.variance[0] == 0 and p.expected_change[0] == 0 and p.flip_probability[0] == 0
    assert [p.qid[i] for i in p.order("variance")][-1] == "a"
    assert [row["qid"] for row in p.table("expected_change")][-1] == "a"
    assert p.variance[2] > 0 and p.expected_change[2] > p.expected_change[0]
    with pytest.raises(MetricError, match="needs a second system"):
        label_priorities(probs, offsets, sa, metric="ndcg@2").order("expected_change")
    with pytest.raises(MetricError, match="rows must sum to 1"):
        label_priorities(probs * 2, offsets, sa)


def test_cli_label_next(tmp_path, capsys):
    probs, offsets, sa, sb = random_case(4)
    data = tmp_path / "d.txt"
    rows = []
    for q in range(len(offsets) - 1):
        for i in range(offsets[q], offsets[q + 1]):
            rows.append(f"0 qid:{q + 1} 1:{sa[i]:.6f}")
    data.write_text("\n".join(rows) + "\n")
    np.savetxt(tmp_path / "probs.csv", probs, delimiter=",")
    (tmp_path / "a.txt").write_text("\n".join(repr(float(v)) for v in sa) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(repr(float(v)) for v in sb) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "ltr.labelnext", "--data", str(data), "--probs", str(tmp_path / "probs.csv"),
         "--scores", str(tmp_path / "a.txt"), "--scores", str(tmp_path / "b.txt"), "-m", "ndcg@3",
         "--by", "expected_change", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    api = label_priorities(probs, offsets, sa, sb, metric="ndcg@3", qid=[1, 2, 3])
    assert [r["qid"] for r in out["queries"]] == [r["qid"] for r in api.table("expected_change")]
    assert [r["variance"] for r in out["queries"]] == pytest.approx(
        [r["variance"] for r in api.table("expected_change")]
    )
    bad = completed_in_process(  # the error: the command's main in-process (the real process above)
        "ltr.labelnext",
        ["--data", str(data), "--probs", str(tmp_path / "a.txt"), "--scores", str(tmp_path / "a.txt")],
        capsys,
    )
    assert bad.returncode == 2 and "a.txt" in bad.stderr


def test_classification_probabilities_feed_the_cli(tmp_path, capsys):
    from ltr.data.svmlight import load_svmlight
    from ltr.data.synthetic import generate
    from ltr.io.predictions import write_scores
    from ltr.labelnext import main
    from ltr.models import build_ranker

    train, test = generate(40, seed=1, max_docs=8), generate(6, seed=2, max_docs=6)
    model = build_ranker({"name": "classification", "params": {"n_trees": 5}}, seed=1, num_threads=1).fit(
        train
    )
    probs = model.predict_proba(test)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(probs @ np.arange(probs.shape[1]), model.predict(test))  # McRank's score
    model.save(tmp_path / "m")
    lines = [f"{int(y)} qid:{q} " + " ".join(f"{j + 1}:{v:.9g}" for j, v in enumerate(x))
             for y, q, x in zip(test.y, test.qid, np.asarray(test.X), strict=True)]  # fmt: skip
    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n")
    data = load_svmlight(tmp_path / "t.txt")
    write_scores(tmp_path / "a.txt", model.predict(data))
    write_scores(tmp_path / "b.txt", np.asarray(data.X)[:, 0])
    args = ["--data", str(tmp_path / "t.txt"), "--probs-model", str(tmp_path / "m"), "--scores", str(tmp_path / "a.txt"),
            "--scores", str(tmp_path / "b.txt"), "-m", "ndcg@5", "--json", "--samples", "300"]  # fmt: skip
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    api = label_priorities(
        model.predict_proba(data), data.offsets, model.predict(data), np.asarray(data.X)[:, 0],
        metric="ndcg@5", qid=data.query_ids, n_samples=300,
    )  # fmt: skip
    assert [r["variance"] for r in out["queries"]] == pytest.approx([r["variance"] for r in api.table()])
    assert main(["--data", str(tmp_path / "t.txt"), "--probs-model", str(tmp_path / "m"), "--scores",
                 str(tmp_path / "a.txt"), "--scores", str(tmp_path / "a.txt"), "--scores", str(tmp_path / "a.txt")]) == 2  # fmt: skip


def test_probs_model_without_class_probabilities_is_refused(tmp_path, capsys):
    from ltr.data.synthetic import generate
    from ltr.io.predictions import write_scores
    from ltr.labelnext import main
    from ltr.models import build_ranker

    train = generate(10, seed=1, max_docs=6)
    build_ranker({"name": "regression", "params": {"n_trees": 2}}, seed=1, num_threads=1).fit(train).save(
        tmp_path / "m"
    )
    lines = [f"0 qid:{q} 1:{x:.6g}" for q, x in zip(train.qid, np.asarray(train.X)[:, 0], strict=True)]
    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n")
    write_scores(tmp_path / "a.txt", np.zeros(train.n_docs))
    args = [
        "--data",
        str(tmp_path / "t.txt"),
        "--probs-model",
        str(tmp_path / "m"),
        "--scores",
        str(tmp_path / "a.txt"),
    ]
    assert main(args) == 2
    assert "gives no class probabilities; use a classification model" in capsys.readouterr().err


def test_a_rounded_probability_table_is_accepted_and_bad_rows_are_named_by_file_line(tmp_path, capsys):
    """Probabilities printed with 5 decimals sum to 0.99999: accepted (and scaled to 1); a row that does
    not sum to 1, a negative value or a word is named by its 1-based line in the file, comments and blank
    lines counted."""
    from ltr.io.label_probs import read_label_probs

    data = tmp_path / "d.txt"
    data.write_text("0 qid:1 1:0.5\n0 qid:1 1:0.2\n0 qid:2 1:0.9\n0 qid:2 1:0.1\n")
    (tmp_path / "a.txt").write_text("0.5\n0.2\n0.9\n0.1\n")
    rounded = "# P(0) P(1) P(2)\n0.33333,0.33333,0.33333\n0.5,0.25,0.25\n\n0.1,0.2,0.7\n0,0,1\n"
    (tmp_path / "p.csv").write_text(rounded)
    probs = read_label_probs(tmp_path / "p.csv", 4)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(probs[0], [1 / 3] * 3)
    args = ["--data", str(data), "--probs", str(tmp_path / "p.csv"), "--scores", str(tmp_path / "a.txt")]
    assert completed_in_process("ltr.labelnext", args, capsys).returncode == 0
    for line5, message in [
        ("0.1,0.2,0.8", "line 5: the probabilities sum to 1.1, not 1 (tolerance 0.001)"),
        ("0.1,-0.2,1.1", "line 5: probabilities must be finite and >= 0"),
        ("0.1,x,0.7", "line 5: not a number in '0.1,x,0.7'"),
        ("0.1,0.9", "line 5: 2 probabilities, but the first row has 3"),
    ]:
        (tmp_path / "p.csv").write_text(rounded.replace("0.1,0.2,0.7", line5))
        bad = completed_in_process("ltr.labelnext", args, capsys)
        assert bad.returncode == 2, bad.stderr
        (line,) = bad.stderr.strip().splitlines()
        assert line.startswith(f"error: {tmp_path / 'p.csv'} {message}"), line
    np.save(tmp_path / "p.npy", np.array([[0.5, 0.5], [0.2, 0.8], [0.6, 0.6], [1.0, 0.0]]))
    bad = completed_in_process(
        "ltr.labelnext", [*args[:2], "--probs", str(tmp_path / "p.npy"), *args[4:]], capsys
    )
    assert bad.returncode == 2 and f"{tmp_path / 'p.npy'} row 3: the probabilities sum to 1.2" in bad.stderr

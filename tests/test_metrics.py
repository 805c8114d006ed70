"""ltr.metrics core: the worked examples of docs/metrics.md, a naive per-query reference on random data,
``ties="average"`` against brute-force enumeration of tie orders, conventions and input errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltr.core.errors import MetricError
from ltr.metrics import (
    REGISTRY,
    describe_conventions,
    evaluate,
    mean,
    metric_key,
    parse_metric,
    resolve_conventions,
)

# ----------------------------------------------------------------------------- naive reference


def ref_gain(label, gain):
    if gain == "exp2":
        return 2.0**label - 1.0
    if gain == "linear":
        return float(label)
    return float(gain[int(label)])


def ref_disc(i, discount, base=2.0, offset=1.0):
    """D(i), i 1-based."""
    if discount == "log2":
        return 1.0 / math.log2(i + 1)
    if discount == "reciprocal":
        return 1.0 / i
    return 1.0 / math.log(i + offset, base)


def ref_dcg(ranked, k, gain="exp2", discount="log2", base=2.0, offset=1.0):
    k = len(ranked) if k is None else k
    return sum(ref_gain(g, gain) * ref_disc(i + 1, discount, base, offset) for i, g in enumerate(ranked[:k]))


def ref_err(ranked, k, gmax=4):
    k = len(ranked) if k is None else k
    total, p = 0.0, 1.0
    for r, g in enumerate(ranked[:k], start=1):
        stop = (2.0**g - 1) / 2.0**gmax
        total += p * stop / r
        p *= 1 - stop
    return total


def ref_ap(ranked, k, n_rel, thr=1, den="R"):
    k = len(ranked) if k is None else k
    hits, s = 0, 0.0
    for i, g in enumerate(ranked[:k], start=1):
        if g >= thr:
            hits += 1
            s += hits / i
    d = n_rel if den == "R" else min(n_rel, k)
    return s / d if d else None


def ref_rr(ranked, k, thr=1):
    k = len(ranked) if k is None else k
    for i, g in enumerate(ranked[:k], start=1):
        if g >= thr:
            return 1.0 / i
    return 0.0


def ref_metric(family, k, ranked, ideal, conv):
    """One metric for one query in ranked order; None when the query has no relevant document."""
    gain, thr = conv.get("gain", "exp2"), conv.get("rel_threshold", 1)
    d = (conv.get("discount", "log2"), conv.get("discount_base", 2.0), conv.get("discount_offset", 1.0))
    n_rel = sum(1 for g in ideal if g >= thr)
    if family in ("dcg", "ndcg"):
        ideal_sorted = sorted(ideal, key=lambda g: -ref_gain(g, gain))
        if ref_dcg(ideal_sorted, None, gain, *d) == 0:
            return None
        dcg = ref_dcg(ranked, k, gain, *d)
        return dcg if family == "dcg" else dcg / ref_dcg(ideal_sorted, k, gain, *d)
    if family == "err":
        return ref_err(ranked, k, conv.get("err_gmax", 4)) if max(ideal, default=0) > 0 else None
    if n_rel == 0:
        return None
    if family == "map":
        return ref_ap(ranked, k, n_rel, thr, conv.get("ap_denominator", "R"))
    if family == "mrr":
        return ref_rr(ranked, k, thr)
    kk = len(ranked) if k is None else k
    hits = sum(1 for g in ranked[:kk] if g >= thr)
    if family == "r":
        return hits / n_rel
    if k is None:
        return hits / len(ranked)
    return hits / (k if conv.get("p_denominator", "k") == "k" else min(k, len(ranked)))


NO_REL_VALUE = {"zero": 0.0, "skip": math.nan}


def _tie_key(ties, sc, lab, dn):
    """Sort key of row i: score descending, then the tie convention (docno desc via negated code points)."""
    keys = {
        "stable": lambda i: (-sc[i], i),
        "average": lambda i: (-sc[i], i),
        "pessimistic": lambda i: (-sc[i], lab[i], i),
        "optimistic": lambda i: (-sc[i], -lab[i], i),
        "docno_asc": lambda i: (-sc[i], dn[i]),
        "docno_desc": lambda i: (-sc[i], [-ord(ch) for ch in dn[i]] + [1]),
    }
    return keys[ties]


def ref_evaluate(name, labels, scores, offsets, docno=None, **conv):
    """Per-query loop reference of :func:`evaluate` (ties by explicit sort keys or enumeration)."""
    spec = parse_metric(name)
    ties, no_rel = conv.get("ties", "average"), conv.get("no_relevant", "skip")
    out = []
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        lab, sc = list(labels[a:b]), list(scores[a:b])
        dn = None if docno is None else list(docno[a:b])
        order = sorted(range(b - a), key=_tie_key(ties, sc, lab, dn))
        if ties == "average":
            groups = [list(g) for _, g in itertools.groupby(order, key=lambda i: sc[i])]
            vals = [
                ref_metric(spec.family, spec.k, [lab[i] for g in perm for i in g], lab, conv)
                for perm in itertools.product(*(itertools.permutations(g) for g in groups))
            ]
            v = None if vals[0] is None else sum(vals) / len(vals)
        else:
            v = ref_metric(spec.family, spec.k, [lab[i] for i in order], lab, conv)
        if v is None:
            v = (
                1.0
                if (no_rel == "one" and spec.family in ("ndcg", "map", "r"))
                else NO_REL_VALUE.get(no_rel, 0.0)
            )
        out.append(v)
    return np.array(out)


def random_queries(rng, n_queries, max_len, n_grades=5, n_scores=4):
    sizes = rng.integers(0, max_len + 1, n_queries)
    offsets = np.r_[0, np.cumsum(sizes)]
    n = offsets[-1]
    labels = rng.integers(0, n_grades, n)
    # few distinct scores -> many ties; some queries all-zero labels
    scores = rng.integers(0, n_scores, n).astype(float) / 2
    zero_q = rng.random(n_queries) < 0.15
    labels[np.repeat(zero_q, sizes)] = 0
    docno = np.array([f"d{rng.integers(0, 10**6):06d}" for _ in range(n)])
    return labels, scores, offsets, docno


ALL_NAMES = ["ndcg", "ndcg@1", "ndcg@3", "ndcg@10", "dcg@3", "dcg", "err", "err@2", "map", "map@3",
             "mrr", "mrr@2", "p@1", "p@3", "p@10", "p", "r@2", "r@10"]  # fmt: skip

# ----------------------------------------------------------------------------- worked examples

WORKED = [
    # labels, ndcg exp2, ndcg linear, err, ap, rr
    ([3, 2, 3, 0, 1], 0.957478, 0.972364, 0.560098, 0.95, 1.0),
    ([3, 2, 0, 1, 0, 0, 2, 1, 0, 0], 0.949030, 0.933427, 0.511572, 0.789286, 1.0),
    ([3, 0, 2, 1], 0.950801, 0.930451, 0.479797, 0.805556, 1.0),
    ([2, 3, 1, 0, 2], 0.838647, 0.907591, 0.390823, 0.95, 1.0),
]


@pytest.mark.parametrize(("labels", "ndcg_exp", "ndcg_lin", "err", "ap", "rr"), WORKED)
def test_worked_worked_examples(labels, ndcg_exp, ndcg_lin, err, ap, rr):
    n = len(labels)
    scores, offsets = -np.arange(n, dtype=float), [0, n]
    v = evaluate(["ndcg", "ndcg@10", "err", "map", "mrr"], labels, scores, offsets)
    assert v["ndcg"][0] == pytest.approx(ndcg_exp, abs=5e-7)
    assert v["ndcg@10"][0] == pytest.approx(ndcg_exp, abs=5e-7)
    assert v["err"][0] == pytest.approx(err, abs=5e-7)
    assert v["map"][0] == pytest.approx(ap, abs=5e-7)
    assert v["mrr"][0] == pytest.approx(rr, abs=5e-7)
    lin = evaluate("ndcg", labels, scores, offsets, gain="linear")["ndcg"][0]
    assert lin == pytest.approx(ndcg_lin, abs=5e-7)


def test_worked_dcg_and_idcg_figures():
    for labels, dcg, idcg in [
        ([3, 2, 3, 0, 1], 12.779642, 13.347185),
        ([3, 2, 0, 1, 0, 0, 2, 1, 0, 0], 10.638931, 11.210319),
    ]:
        n = len(labels)
        v = evaluate(["dcg", "dcg@10"], labels, -np.arange(n, dtype=float), [0, n])
        assert v["dcg"][0] == pytest.approx(dcg, abs=5e-7)
        ideal = evaluate("dcg", sorted(labels, reverse=True), -np.arange(n, dtype=float), [0, n])["dcg"][0]
        assert ideal == pytest.approx(idcg, abs=5e-7)
        # the IDCG that NDCG divides by (grade-count kernel, not a sort of the list)
        ndcg = evaluate("ndcg", labels, -np.arange(n, dtype=float), [0, n])["ndcg"][0]
        assert v["dcg"][0] / ndcg == pytest.approx(idcg, abs=5e-7)


TIE_CASE = dict(labels=[0, 3, 1, 2], scores=[1.0, 1.0, 1.0, 0.5], offsets=[0, 4], docno=["b", "c", "a", "d"])


@pytest.mark.parametrize(
    ("ties", "ndcg10", "err10"),
    [
        ("docno_desc", 0.936040, None),
        ("stable", 0.660990, 0.255188),
        ("pessimistic", 0.577353, None),
        ("optimistic", 0.949980, None),
        ("average", 0.742539, 0.319641),
    ],
)
def test_worked_tie_example(ties, ndcg10, err10):
    v = evaluate(["ndcg@10", "err@10"], **TIE_CASE, ties=ties)
    assert v["ndcg@10"][0] == pytest.approx(ndcg10, abs=5e-7)
    if err10 is not None:
        assert v["err@10"][0] == pytest.approx(err10, abs=5e-7)


def test_docno_asc_is_reverse_of_desc_within_ties():
    # docno ascending puts a (1), b (0), c (3) first: same as labels [1, 0, 3, 2]
    asc = evaluate("ndcg@10", **TIE_CASE, ties="docno_asc")["ndcg@10"][0]
    explicit = evaluate("ndcg@10", [1, 0, 3, 2], [4.0, 3, 2, 1], [0, 4])["ndcg@10"][0]
    assert asc == pytest.approx(explicit, abs=1e-15)


# ----------------------------------------------------------------------------- naive reference


@pytest.mark.parametrize("ties", ["stable", "pessimistic", "optimistic", "docno_desc", "docno_asc"])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_naive_loop_deterministic_ties(ties, seed):
    rng = np.random.default_rng(seed)
    labels, scores, offsets, docno = random_queries(rng, 150, 14)
    got = evaluate(ALL_NAMES, labels, scores, offsets, ties=ties, docno=docno)
    for name in ALL_NAMES:
        want = ref_evaluate(name, labels, scores, offsets, docno=docno, ties=ties)
        np.testing.assert_allclose(got[parse_metric(name).name], want, rtol=1e-12, atol=1e-14, err_msg=name)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_average_ties_match_brute_force_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    labels, scores, offsets, _ = random_queries(rng, 60, 7, n_scores=3)
    got = evaluate(ALL_NAMES, labels, scores, offsets, ties="average")
    for name in ALL_NAMES:
        want = ref_evaluate(name, labels, scores, offsets, ties="average")
        np.testing.assert_allclose(got[parse_metric(name).name], want, rtol=1e-12, atol=1e-14, err_msg=name)


CUT_NAMES = ["ndcg@3", "err@2", "map@3", "mrr@2", "p@3", "r@2", "dcg@1"]


@pytest.mark.parametrize("ties", ["stable", "pessimistic", "optimistic", "docno_desc", "average"])
def test_truncated_ranking_for_cutoff_only_metrics(ties):
    # only cutoff metrics -> each query ranks just its top 3 plus rows tied with the 3rd (rank_lists depth)
    rng = np.random.default_rng(21)
    labels, scores, offsets, docno = random_queries(rng, 120, 7, n_scores=3)
    got = evaluate(CUT_NAMES, labels, scores, offsets, ties=ties, docno=docno)
    full = evaluate([*CUT_NAMES, "ndcg"], labels, scores, offsets, ties=ties, docno=docno)
    for name in CUT_NAMES:
        want = ref_evaluate(name, labels, scores, offsets, docno=docno, ties=ties)
        np.testing.assert_allclose(got[name], want, rtol=1e-12, atol=1e-14, err_msg=name)
        np.testing.assert_array_equal(got[name], full[name])


@pytest.mark.parametrize("pattern", ["ascending", "descending", "few_values", "random"])
def test_truncated_ranking_on_adversarial_score_orders(pattern):
    # long lists: the top-k candidate set can exceed the insertion-sort size (64) and fall back
    rng = np.random.default_rng(5)
    sizes = rng.integers(11, 300, 40)
    offsets = np.r_[0, np.cumsum(sizes)]
    n = offsets[-1]
    labels = rng.integers(0, 5, n)
    scores = {
        "ascending": np.concatenate([np.arange(s, dtype=float) for s in sizes]),
        "descending": np.concatenate([-np.arange(s, dtype=float) for s in sizes]),
        "few_values": rng.integers(0, 3, n).astype(float),
        "random": rng.normal(size=n),
    }[pattern]
    for ties in ("stable", "average", "pessimistic"):
        cut = evaluate(["ndcg@10", "err@5", "map@7"], labels, scores, offsets, ties=ties)
        full = evaluate(["ndcg@10", "err@5", "map@7", "ndcg"], labels, scores, offsets, ties=ties)
        for name in cut:
            np.testing.assert_array_equal(cut[name], full[name], err_msg=f"{name} {ties}")


def test_truncated_ranking_keeps_whole_boundary_tie_group():
    from ltr.metrics import rank_lists

    labels = np.array([0.0, 1, 2, 3, 4, 0])
    scores = np.array([5.0, 1, 1, 1, 0, 1])
    r = rank_lists(labels, scores, np.array([0, 6]), "average", depth=2)
    assert r.order.tolist() == [0, 1, 2, 3, 5] and r.bounds.tolist() == [0, 1, 5] and r.sizes.tolist() == [6]
    with pytest.raises(MetricError, match=r"^ties: expected one of \['stable', .*\], got 'random'$"):
        rank_lists(labels, scores, np.array([0, 6]), "random")
    v = evaluate("dcg@2", labels, scores, [0, 6])["dcg@2"][0]
    assert v == pytest.approx(0 + np.mean([1, 3, 7, 0]) / np.log2(3), rel=1e-14)


def test_average_ties_all_scores_equal_large_group():
    # one 7-document tie group: 5,040 orders, still enumerable; exercises the ESM recursion depth
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 5, 7)
    labels[0] = 4
    scores = np.zeros(7)
    names = ["err", "err@3", "ndcg@3", "map", "mrr", "map@5"]
    got = evaluate(names, labels, scores, [0, 7], ties="average")
    for name in names:
        want = ref_evaluate(name, labels, scores, [0, 7], ties="average")
        np.testing.assert_allclose(got[name], want, rtol=1e-12, err_msg=name)


@pytest.mark.parametrize(
    "conv",
    [
        dict(gain="linear"),
        dict(gain=(0.0, 0.5, 1.5, 4.0, 9.0)),
        dict(discount="reciprocal"),
        dict(discount="log", discount_base=10.0, discount_offset=2.0),
        dict(p_denominator="min_k_n", ap_denominator="min_R_k"),
        dict(rel_threshold=2),
        dict(no_relevant="zero"),
        dict(no_relevant="one"),
        dict(err_gmax=5),
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
def test_conventions_match_naive_loop(conv):
    rng = np.random.default_rng(3)
    labels, scores, offsets, _ = random_queries(rng, 80, 6, n_scores=3)
    for ties in ("stable", "average"):
        got = evaluate(ALL_NAMES, labels, scores, offsets, ties=ties, **conv)
        for name in ALL_NAMES:
            want = ref_evaluate(name, labels, scores, offsets, ties=ties, **conv)
            np.testing.assert_allclose(
                got[parse_metric(name).name], want, rtol=1e-12, atol=1e-14, err_msg=f"{name} {ties}"
            )


@pytest.mark.parametrize("k", [None, 1, 2])
def test_ideal_dcg_with_non_monotone_table_and_fractional_labels(k):
    name = "ndcg" if k is None else f"ndcg@{k}"
    # table gain (0, 5, 1): label 1 is the most valuable, so the ideal order is 1, 2, 0
    labels, scores = [2, 1, 0], [3.0, 2.0, 1.0]
    got = evaluate(name, labels, scores, [0, 3], gain=(0.0, 5.0, 1.0))[name][0]
    want = ref_evaluate(name, labels, scores, [0, 3], gain=(0.0, 5.0, 1.0))[0]
    assert got == pytest.approx(want, rel=1e-14) and got < 1
    for other in ([0.5, 2.25, 0.0], [2, 300, 0]):  # fractional, and too many grades to count: sorted
        got = evaluate(name, other, scores, [0, 3], gain="linear")[name][0]
        want = ref_evaluate(name, other, scores, [0, 3], gain="linear")[0]
        assert got == pytest.approx(want, rel=1e-14) and got < 1


def test_ideal_from_judged_labels():
    # ranked list retrieves 2 of the 3 relevant judged documents
    labels, scores, offsets = [2, 0, 1], [3.0, 2.0, 1.0], [0, 3]
    ideal, ideal_off = [2, 1, 2, 0], [0, 4]
    v = evaluate(["ndcg", "map", "r@3"], labels, scores, offsets, gain="linear",
                 ideal_labels=ideal, ideal_offsets=ideal_off)  # fmt: skip
    dcg = 2 + 1 / math.log2(4)
    idcg = 2 + 2 / math.log2(3) + 1 / math.log2(4)
    assert v["ndcg"][0] == pytest.approx(dcg / idcg, rel=1e-14)
    assert v["map"][0] == pytest.approx((1 + 2 / 3) / 3, rel=1e-14)
    assert v["r@3"][0] == pytest.approx(2 / 3, rel=1e-14)


def test_no_relevant_conventions_and_mean():
    labels, scores, offsets = [0, 0, 0, 1], [1.0, 0.5, 0.2, 0.1], [0, 2, 4]
    skip = evaluate(["ndcg", "err", "p@2"], labels, scores, offsets)
    assert np.isnan(skip["ndcg"][0]) and np.isnan(skip["err"][0]) and np.isnan(skip["p@2"][0])
    m = mean(skip["ndcg"])
    assert (m.n_queries, m.n_skipped) == (1, 1)
    assert m.value == pytest.approx(1 / math.log2(3), rel=1e-14)
    names = ["ndcg", "map", "r@1", "mrr", "p@1", "dcg", "err"]
    one = evaluate(names, labels, scores, offsets, no_relevant="one")
    assert [one[n][0] for n in names] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert [one[n][1] for n in names[:4]] == pytest.approx([1 / math.log2(3), 0.5, 0.0, 0.5], rel=1e-14)
    zero = evaluate("ndcg", labels, scores, offsets, no_relevant="zero")["ndcg"]
    assert zero[0] == 0.0


def test_per_metric_no_relevant_and_default_k():
    labels, scores, offsets = [0, 0, 0, 1, 1], [1.0, 0.5, 0.2, 0.1, 0.0], [0, 2, 5]
    v = evaluate(
        ["ndcg", "map"], labels, scores, offsets, no_relevant="one", no_relevant_by_metric={"map": "skip"}
    )
    assert v["ndcg"][0] == 1.0 and np.isnan(v["map"][0])
    whole = evaluate(["ndcg", "p"], labels, scores, offsets)
    cut = evaluate(["ndcg", "p"], labels, scores, offsets, default_k=1)
    assert cut["p"][1] == 0.0 and whole["p"][1] == pytest.approx(2 / 3)
    assert cut["ndcg"][1] == 0.0 and whole["ndcg"][1] > 0


def test_empty_query_and_k_beyond_list():
    v = evaluate(["ndcg@10", "p@10", "map@10"], [1, 0], [0.3, 0.1], [0, 0, 2], p_denominator="min_k_n")
    assert np.isnan(v["ndcg@10"][0]) and v["ndcg@10"][1] == 1.0
    assert v["p@10"][1] == 0.5
    assert evaluate("p@10", [1, 0], [0.3, 0.1], [0, 2])["p@10"][0] == 0.1


def test_mean_weighted_and_all_skipped():
    assert mean([0.2, 0.4, np.nan], weights=[1.0, 3.0, 5.0]).value == pytest.approx(0.35)
    m = mean([np.nan, np.nan])
    assert math.isnan(m.value) and m.n_skipped == 2
    with pytest.raises(MetricError, match="weights has shape"):
        mean([1.0], weights=[1.0, 2.0])
    with pytest.raises(MetricError, match="finite and >= 0"):
        mean([1.0, 0.5], weights=[-1.0, 2.0])
    with pytest.raises(MetricError, match=r"mean\(\) per-query values must be numeric"):
        mean(["a"])
    with pytest.raises(MetricError, match=r"shape \(n_queries,\)"):
        mean([[1.0]])


@pytest.mark.parametrize("names", [ALL_NAMES, CUT_NAMES])
def test_average_ties_do_not_depend_on_input_order(names):
    # invariant: with exact averaging over tie orders, shuffling rows inside a query changes nothing
    rng = np.random.default_rng(13)
    labels, scores, offsets, _ = random_queries(rng, 150, 25, n_scores=4)
    perm = np.concatenate([offsets[q] + rng.permutation(offsets[q + 1] - offsets[q]) for q in range(150)])
    a = evaluate(names, labels, scores, offsets)
    b = evaluate(names, labels[perm], scores[perm], offsets)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-15, err_msg=name)
        finite = a[name][~np.isnan(a[name])]
        if not name.startswith("dcg"):
            assert np.all((finite >= 0) & (finite <= 1 + 1e-12)), name
    stable = evaluate("ndcg@3", labels[perm], scores[perm], offsets, ties="stable")["ndcg@3"]
    assert (
        np.nanmax(np.abs(stable - evaluate("ndcg@3", labels, scores, offsets, ties="stable")["ndcg@3"]))
        > 1e-3
    )


def test_vectorised_results_do_not_depend_on_query_batching():
    rng = np.random.default_rng(11)
    labels, scores, offsets, _ = random_queries(rng, 200, 30)
    whole = evaluate(["ndcg@5", "err@10", "map"], labels, scores, offsets)
    for q in (0, 57, 199):
        a, b = offsets[q], offsets[q + 1]
        single = evaluate(["ndcg@5", "err@10", "map"], labels[a:b], scores[a:b], [0, b - a])
        for name in whole:
            np.testing.assert_array_equal(whole[name][q : q + 1], single[name])


# ----------------------------------------------------------------------------- names, conventions, errors


def test_names_may_be_any_iterable_of_names():
    import pandas as pd

    want = evaluate(["ndcg@2", "map"], [1, 0], [1.0, 0.0], [0, 2])
    for names in (("ndcg@2", "map"), pd.Index(["ndcg@2", "map"]), np.array(["ndcg@2", "map"])):
        assert evaluate(names, [1, 0], [1.0, 0.0], [0, 2]).keys() == want.keys()


def test_metric_key_and_registry():
    assert metric_key("ndcg@10") == "ndcg_at_10"
    assert metric_key("map@100") == "map_at_100"
    assert metric_key("mrr") == "mrr"
    assert parse_metric("P@5").name == "p@5"
    assert parse_metric("recall@10").name == "r@10"
    assert set(REGISTRY) == {"ndcg", "dcg", "meanndcg", "err", "map", "mrr", "p", "r"}


def test_unknown_metric_lists_registry():
    with pytest.raises(MetricError) as exc:
        evaluate("ndgc@10", [1], [1.0], [0, 1])
    for family in REGISTRY:
        assert f"\n{family}[@k]" in "\n" + str(exc.value).split("\n", 1)[1]
    with pytest.raises(MetricError, match="cutoff k must be >= 1"):
        parse_metric("ndcg@0")


def test_describe_conventions_is_flat_strings():
    d = describe_conventions("ltr")
    assert d == {
        "preset": "ltr", "gain": "exp2", "discount": "1/log2(i+1)", "ties": "average", "no_relevant": "skip",
        "p_denominator": "k", "ap_denominator": "R", "rel_threshold": "1", "err_gmax": "4",
        "no_relevant_by_metric": "-", "default_k": "all", "discount_flat_ranks": "0", "zero_beyond_list": "-",
    }  # fmt: skip
    assert describe_conventions("trec", ties="average")["preset"] == "trec+overrides"
    assert describe_conventions("ltr", gain=[0, 1, 3])["gain"] == "table(0,1,3)"
    assert describe_conventions("catboost")["no_relevant_by_metric"] == "map=zero"
    assert describe_conventions("xgboost")["default_k"] == "32"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(preset="nope"), "unknown metric preset 'nope'"),
        (dict(ties="random"), r"convention ties: expected one of \[.*\], got 'random'"),
        (dict(gain="square"), r"convention gain: expected one of \[.*\], got 'square'"),
        (dict(colour="red"), "unknown metric convention"),
        (dict(err_gmax=0), "err_gmax"),
        (dict(discount="log", discount_base=1.0), "discount_base"),
        (dict(no_relevant_by_metric={"mapp": "zero"}), "unknown metric family 'mapp'"),
        (
            dict(no_relevant_by_metric={"map": "nan"}),
            r"no_relevant_by_metric\[map\]: expected one of .*, got 'nan'",
        ),
        (dict(default_k=0), r"convention default_k: must be in \[1, inf\], got 0"),
        (dict(discount="log", discount_base="e"), "convention discount_base: expected a number, got 'e'"),
        (dict(discount_offset=None), r"convention discount_offset: must be set \(got null\)"),
        (dict(rel_threshold=float("nan")), "convention rel_threshold: expected a finite number, got nan"),
        (dict(err_gmax=4.5), "convention err_gmax: expected an integer, got 4.5"),
        (dict(p_denominator="n"), r"convention p_denominator: expected one of \[.*\], got 'n'"),
        (dict(ap_denominator="k"), r"convention ap_denominator: expected one of \[.*\], got 'k'"),
        (dict(no_relevant="nan"), r"convention no_relevant: expected one of \[.*\], got 'nan'"),
    ],
)
def test_bad_conventions(kwargs, match):
    with pytest.raises(MetricError, match=match):
        evaluate("ndcg", [1, 0], [1.0, 0.0], [0, 2], **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([1, 0], [1.0], [0, 2]), {}, "scores has 1 entries but labels has 2"),
        (([1, 0], [1.0, 0.0], [0, 3]), {}, "end at the number of documents 2"),
        (([1, 0], [1.0, 0.0], [0, 2, 1, 2]), {}, "non-decreasing; query 1"),
        (([1, 0], [1.0, np.nan], [0, 2]), {}, "scores must be finite; row 1"),
        (([1, -1], [1.0, 0.0], [0, 1, 2]), {}, "query 1 row 1 has label -1"),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(ties="docno_desc"), "needs docno"),
        (([1, 9], [1.0, 0.0], [0, 2]), dict(gain=[0, 1, 3]), "gain table has 3 entries"),
        (([1, 5], [1.0, 0.0], [0, 2]), {}, "exceeds err_gmax=4"),
        (([1, 0, 5], [2.0, 1.0, 0.0], [0, 3]), dict(names=["err@1"]), "label 5 exceeds err_gmax=4"),
        (
            ([1, 0], [1.0, 0.0], [0, 2]),
            dict(ideal_labels=[1, 0, 1], ideal_offsets=[0, 1, 3]),
            "describes 2 queries",
        ),
        (([1, np.nan], [1.0, 0.0], [0, 2]), {}, "labels must be finite; row 1 is nan"),
        (([1, 0], [1.0, -np.inf], [0, 2]), {}, "scores must be finite; row 1 is -inf"),
        (([[1, 0]], [1.0, 0.0], [0, 2]), {}, r"labels must be 1-d, got shape \(1, 2\)"),
        ((["a", "b"], [1.0, 0.0], [0, 2]), {}, "labels must be numeric"),
        (([1, 0], [1.0, 0.0], [0.0, 2.0]), {}, "offsets must be a 1-d integer array"),
        (([1, 0], [1.0, 0.0], []), {}, "offsets must be a 1-d integer array"),
        (([1, 0], [1.0, 0.0], [0, 1]), {}, "offsets must start at 0 and end at the number of documents 2"),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(ties="docno_asc", docno=["a"]), r"docno has shape \(1,\)"),
        (
            ([1, 0], [1.0, 0.0], [0, 2]),
            dict(ideal_labels=[1, np.nan], ideal_offsets=[0, 2]),
            "ideal_labels must be finite",
        ),
        (
            ([1, 0], [1.0, 0.0], [0, 2]),
            dict(ideal_labels=[1, -2], ideal_offsets=[0, 2]),
            "ideal_labels must be >= 0; query 0 row 1 has label -2",
        ),
        (
            ([1, 0, 2, -1], [1.0, 0.0, 0.5, 0.2], [0, 2, 2, 4]),
            {},
            "labels must be >= 0; query 2 row 3 has label -1",  # query 1 is empty
        ),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(ideal_labels=[1, 0]), "ideal_labels needs ideal_offsets"),
        (
            ([1, 0], [1.0, 0.0], [0, 2]),
            dict(ideal_offsets=[0, 2]),
            "ideal_offsets given without ideal_labels",
        ),
        (([2000, 0], [1.0, 0.0], [0, 2]), dict(names=["ndcg"]), "label 2000 overflows"),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(names=["ndcg@-1"]), "unknown metric 'ndcg@-1'"),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(names=["p@0"]), "cutoff k must be >= 1"),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(names=[]), "at least one metric name"),
        (([1, 0], [1.0, 0.0], [0, 2]), dict(names=10), "names must be a metric name or a sequence"),
    ],
)
def test_bad_inputs(args, kwargs, match):
    kwargs = dict(kwargs)
    names = kwargs.pop("names", ["ndcg", "err"])
    with pytest.raises(MetricError, match=match):
        evaluate(names, *args, **kwargs)


def test_resolve_conventions_validates_table():
    assert resolve_conventions("ltr", gain=np.array([0, 1, 3])).gain == (0.0, 1.0, 3.0)
    with pytest.raises(MetricError, match="finite values >= 0"):
        resolve_conventions("ltr", gain=[0, -1])


def test_docs_preset_table_matches_presets():
    """docs/metrics.md's preset table is hand-written: every row must state what PRESETS holds."""
    from pathlib import Path

    from ltr.metrics import PRESETS

    text = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text(encoding="utf-8")
    table = text.split("## Presets", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split("`")[1]] = cells
    assert set(rows) == set(PRESETS)
    no_rel = {"skip (counted)": ("skip", ()), "skip": ("skip", ()), "0": ("zero", ()), "1": ("one", ()),
              "1 (MAP: 0)": ("one", (("map", "zero"),)), "1 (ERR: 0)": ("one", ())}  # fmt: skip
    ties = {
        "average": "average",
        "stable": "stable",
        "pessimistic": "pessimistic",
        "docno desc": "docno_desc",
    }
    p_den = {"k": "k", "min(k, n)": "min_k_n", "—": None}  # — : the tool has no such metric
    ap_den = {"R": "R", "min(R, k)": "min_R_k", "—": None}
    for name, (_, gain, tie, empty, p, ap, other, _tool) in rows.items():
        c = PRESETS[name]
        if gain.startswith("{"):  # a gain table, written {0, 1, 3}
            gain = tuple(float(g) for g in gain.strip("{}").split(","))
        assert (c.gain, c.ties, (c.no_relevant, c.no_relevant_by_metric)) == (
            gain,
            ties[tie],
            no_rel[empty],
        ), name
        assert p_den[p] in (None, c.p_denominator) and ap_den[ap] in (None, c.ap_denominator), name
        assert (c.default_k == 32) == ("bare name = @32" in other), name
        letor_discount = (c.discount, c.discount_base, c.discount_offset, c.discount_flat_ranks) == (
            "log",
            2,
            0,
            2,
        )
        assert letor_discount == ("ranks 1, 2 undiscounted, then 1/log2(i)" in other), name
        assert letor_discount or c.discount == "log2", name
        assert (c.zero_beyond_list == ("ndcg",)) == ("NDCG@k = 0 when n < k" in other), name
        assert (c.rel_threshold == 2.0) == ("relevant = label ≥ 2" in other), name
        assert c.rel_threshold in (1.0, 2.0) and c.err_gmax == 4, name


def test_a_strided_column_of_scores_reaches_the_kernels_contiguous():
    """The kernels are compiled per array layout: a column of a score matrix must not compile them again."""
    from ltr.metrics import _kernels

    rng = np.random.default_rng(0)
    matrix = rng.random((20, 3))
    labels, offsets = rng.integers(0, 3, 20), np.array([0, 8, 20])
    by_column = evaluate(["ndcg@5", "map"], labels, matrix[:, 1], offsets)
    by_copy = evaluate(["ndcg@5", "map"], labels, matrix[:, 1].copy(), offsets)
    for name in by_copy:
        np.testing.assert_array_equal(by_column[name], by_copy[name])
    layouts = {arg.layout for sig in _kernels.rank_order.signatures for arg in sig if hasattr(arg, "layout")}
    assert layouts == {"C"}, _kernels.rank_order.signatures


@pytest.mark.parametrize("kind", ["str", "bytes", "int", "object", "uint64", "big-endian str"])
@pytest.mark.parametrize("ties", ["docno_desc", "docno_asc"])
@pytest.mark.parametrize("depth", [None, 3])
def test_docno_tie_breaking_orders_as_a_plain_sort_does(kind, ties, depth):
    """Many ties (scores on a grid of 4) and ids of different lengths ("d1" < "d10" < "d2"), negative
    integers, uint64 ids above 2^63, big-endian strings, repeated ids: the ranked order equals Python's
    sort by (-score, id, row) per query."""
    from ltr.metrics.compute import rank_lists

    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 40, 60)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])
    scores = rng.integers(0, 4, n).astype(float)
    numbers = rng.integers(-30, 30, n)
    docno = {
        "str": np.array([f"d{v}" for v in numbers]),
        "bytes": np.array([f"d{v}".encode() for v in numbers]),
        "int": numbers,
        "object": np.array([f"d{v}" for v in numbers], dtype=object),
        "uint64": (numbers + 30).astype(np.uint64) * np.uint64(1 << 58),  # up to 59·2^58 > 2^63
        "big-endian str": np.array([f"{'aĀż'[v % 3]}{v}" for v in numbers]).astype(
            ">U4"
        ),  # code points > 255
    }[kind]
    ranked = rank_lists(np.zeros(n), scores, offsets, ties, docno, depth=depth)
    sign = -1 if ties == "docno_desc" else 1
    for q in range(len(sizes)):
        rows = list(range(offsets[q], offsets[q + 1]))
        ids = {r: (int(docno[r]) if kind in ("int", "uint64") else str(docno[r])) for r in rows}
        if sign == 1:
            want = sorted(rows, key=lambda r: (-scores[r], ids[r], r))
        else:  # descending ids, input order within equal ids
            by_id = sorted(rows, key=lambda r: ids[r], reverse=True)
            rank_of = {r: i for i, r in enumerate(sorted(set(ids[r] for r in by_id), reverse=True))}
            want = sorted(rows, key=lambda r: (-scores[r], rank_of[ids[r]], r))
        got = ranked.order[ranked.offsets[q] : ranked.offsets[q + 1]].tolist()
        assert got == want[: len(got)], q
        if depth is not None:  # the top `depth` and every row tied with the last of them
            last = scores[want[min(depth, len(want)) - 1]]
            assert len(got) == min(depth, len(want)) + sum(1 for r in want[depth:] if scores[r] == last)


@pytest.mark.parametrize("use_key", [False, True])
@pytest.mark.parametrize("grid", [None, 4, 40, "ulps"])
def test_full_ranking_orders_as_a_plain_sort_does(use_key, grid):
    """Every row ranked (numpy's vectorised sort of scores packed with their column, then runs of equal
    high bits settled): lists of 0..300 rows (runs of ties longer and shorter than the 64-row insertion
    limit), scores continuous, on a grid, or 0-300 units in the last place above a grid of 4 (distinct
    scores that share every bit but the packed ones: runs to order by the exact score), ±inf, a tie key
    or none; equal to Python's sort by (-score, key, row)."""
    from ltr.metrics.compute import rank_lists

    rng = np.random.default_rng(11)
    sizes = np.concatenate([[0, 1, 2, 64, 65, 300, 512], rng.integers(0, 130, 40)])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offsets[-1])
    if grid == "ulps":
        base = rng.integers(1, 5, n).astype(float)
        scores = base + rng.integers(0, 300, n) * np.spacing(base)
        assert len(np.unique(scores)) > 20 * len(np.unique(base))
    else:
        scores = rng.normal(size=n) if grid is None else rng.integers(0, grid, n).astype(float)
    scores[rng.random(n) < 0.05] = -0.0  # -0.0 ties with 0.0
    scores[rng.random(n) < 0.05] = 0.0
    scores[rng.random(n) < 0.02] = np.inf
    scores[rng.random(n) < 0.02] = -np.inf
    labels = rng.integers(0, 5, n).astype(float)
    ranked = rank_lists(labels, scores, offsets, "pessimistic" if use_key else "stable")
    assert ranked.offsets.tolist() == offsets.tolist()
    nan_scores = scores.copy()
    nan_scores[1::2] = np.nan  # rank_lists takes NaN (evaluate refuses it): the NaN rows last, in row order
    nan_scores[3::4] = -np.nan  # with the sign bit set too
    with_nan = rank_lists(labels, nan_scores, offsets, "stable").order
    for q in range(sizes.size):
        got = with_nan[offsets[q] : offsets[q + 1]]
        nan_rows = got[np.isnan(nan_scores[got])].tolist()
        assert nan_rows == sorted(nan_rows) and got[len(got) - len(nan_rows) :].tolist() == nan_rows
    for q in range(sizes.size):
        rows = range(offsets[q], offsets[q + 1])
        want = sorted(rows, key=lambda r: (-scores[r], labels[r] if use_key else 0, r))
        assert ranked.order[offsets[q] : offsets[q + 1]].tolist() == want, q

"""compare() and ComparisonReport: every number against ltr.stats / scipy, query-set refusal, NaN rule,
immutability and the Markdown / LaTeX / CSV renderings."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ltr.analysis.comparison import ComparisonReport, compare, latex_escape
from ltr.core.errors import ConfigError, DataError
from ltr.stats import (
    benjamini_hochberg,
    bootstrap_ci,
    effect_size,
    holm,
    paired_bootstrap_ci,
    randomization_test,
    tukey_hsd,
    win_tie_loss,
)

N = 250
SHIFTS = {"bm25": 0.0, "lambdamart": 0.03, "rank_net": 0.0, "x|y": 0.01}


def _systems(n: int = N, seed: int = 0) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    q = [f"q{i:04d}" for i in range(n)]
    base = rng.beta(2, 3, n)
    out = {}
    for name, shift in SHIFTS.items():
        ndcg = np.clip(base + shift + rng.normal(0, 0.1, n), 0, 1)
        err = np.clip(base / 2 + shift + rng.normal(0, 0.08, n), 0, 1)
        out[name] = pd.DataFrame({"ndcg@10": ndcg, "err@10": err}, index=q)
    out["bm25"].iloc[[3, 17], 0] = np.nan  # skipped by the baseline's ndcg convention
    out["rank_net"].iloc[[17, 40, 41], 0] = np.nan
    return out


@pytest.fixture(scope="module")
def systems() -> dict[str, pd.DataFrame]:
    return _systems()


@pytest.fixture(scope="module")
def report(systems: dict[str, pd.DataFrame]) -> ComparisonReport:
    return compare(systems, baseline="bm25", B=2000, seed=5)


def test_every_number_matches_the_stats_functions(
    systems: dict[str, pd.DataFrame], report: ComparisonReport
) -> None:
    for metric in ("ndcg@10", "err@10"):
        table = pd.DataFrame({s: df[metric] for s, df in systems.items()})
        kept = table.dropna()
        base = kept["bm25"].to_numpy()
        raw = {}
        for s in systems:
            r = report.row(s, metric)
            v = kept[s].to_numpy()
            ci = bootstrap_ci(v, B=2000, seed=5)
            assert (r.mean, r.ci_low, r.ci_high) == (ci.estimate, ci.low, ci.high)
            assert r.mean == pytest.approx(v.mean(), rel=1e-15)
            assert (r.n_queries, r.n_dropped) == (len(kept), len(table) - len(kept))
            if s == "bm25":
                assert r.is_baseline and np.isnan(r.diff) and r.wins is None and not r.significant
                continue
            diff = paired_bootstrap_ci(v, base, B=2000, seed=5)
            assert (r.diff, r.diff_ci_low, r.diff_ci_high) == (diff.estimate, diff.low, diff.high)
            assert r.pvalue == randomization_test(v, base, B=2000, seed=5).pvalue
            assert r.effect_size == effect_size(v, base).cohens_d
            wtl = win_tie_loss(v, base)
            assert (r.wins, r.ties, r.losses) == (wtl.wins, wtl.ties, wtl.losses)
            raw[s] = r.pvalue
        adjusted = holm(list(raw.values()))
        for (s, _), p_adj in zip(raw.items(), adjusted, strict=True):
            assert report.row(s, metric).pvalue_adjusted == p_adj
            assert report.row(s, metric).significant == (p_adj < 0.05)
    assert report.row("lambdamart", "ndcg@10").significant
    assert not report.row("rank_net", "err@10").significant


def test_t_test_and_bh_options_match_scipy(systems: dict[str, pd.DataFrame]) -> None:
    rep = compare(systems, baseline="bm25", B=500, test="t", correction="bh", metrics=["err@10"])
    assert rep.metrics == ("err@10",) and rep.test == "t" and rep.correction == "bh"
    others = ["lambdamart", "rank_net", "x|y"]
    p = [stats.ttest_rel(systems[s]["err@10"], systems["bm25"]["err@10"]).pvalue for s in others]
    for s, ref in zip(others, p, strict=True):
        assert rep.row(s, "err@10").pvalue == pytest.approx(ref, rel=1e-13)
    bh = stats.false_discovery_control(p, method="bh")
    np.testing.assert_allclose([rep.row(s, "err@10").pvalue_adjusted for s in others], bh, rtol=1e-13)
    np.testing.assert_allclose(benjamini_hochberg(p), bh, rtol=1e-13)


def test_nan_rule_drops_queries_not_scored_by_every_system(report: ComparisonReport) -> None:
    ndcg = report.row("lambdamart", "ndcg@10")
    assert (ndcg.n_queries, ndcg.n_dropped) == (N - 4, 4)  # q3, q17 (bm25) ∪ q17, q40, q41 (rank_net)
    assert ndcg.n_skipped_by_all == 0  # each was scored by some system
    err = report.row("lambdamart", "err@10")
    assert (err.n_queries, err.n_dropped) == (N, 0)
    assert "ndcg@10: 246 queries (4 not scored by every system)" in report.legend()


def test_queries_no_system_scored_are_called_skipped_not_unscored() -> None:
    """A query without a relevant document is skipped by every system (``no_relevant=skip``): the legend
    says so instead of "not scored by every system"; a query one system missed is counted apart."""
    q = [f"q{i}" for i in range(30)]
    rng = np.random.default_rng(3)
    a = pd.DataFrame({"ndcg@10": rng.random(30)}, index=q)
    b = pd.DataFrame({"ndcg@10": rng.random(30)}, index=q)
    a.loc[["q1", "q2"], "ndcg@10"] = np.nan
    b.loc[["q1", "q2", "q9"], "ndcg@10"] = np.nan  # q9: only b skipped it
    row = compare({"a": a, "b": b}, baseline="a", B=100).row("b", "ndcg@10")
    assert (row.n_queries, row.n_dropped, row.n_skipped_by_all) == (27, 3, 2)
    legend = compare({"a": a, "b": b}, baseline="a", B=100).legend()
    assert (
        "ndcg@10: 27 queries (2 skipped by every system: the metric is undefined for them, e.g. no relevant "
        "document; 1 not scored by every system)"
    ) in legend


def test_array_input_with_query_ids_aligns_by_id(
    systems: dict[str, pd.DataFrame], report: ComparisonReport
) -> None:
    rng = np.random.default_rng(1)
    per_query, ids = {}, {}
    for s, df in systems.items():
        shuffled = df.iloc[rng.permutation(len(df))]  # every system lists its queries in another order
        per_query[s] = {m: shuffled[m].to_numpy() for m in df.columns}
        ids[s] = shuffled.index.to_numpy()
    again = compare(per_query, baseline="bm25", query_ids=ids, B=2000, seed=5)
    for s in systems:
        for m in ("ndcg@10", "err@10"):
            a, b = report.row(s, m), again.row(s, m)
            assert a.mean == pytest.approx(b.mean, rel=1e-14)
            assert (a.n_queries, a.wins, a.losses) == (b.n_queries, b.wins, b.losses)
            assert a.effect_size == pytest.approx(b.effect_size, rel=1e-12, nan_ok=True)
    shared = compare(
        {s: {m: df[m].to_numpy() for m in df.columns} for s, df in systems.items()},
        baseline="bm25",
        query_ids=systems["bm25"].index.to_numpy(),
        B=2000,
        seed=5,
    )
    assert shared == report


def test_refuses_different_query_sets(systems: dict[str, pd.DataFrame]) -> None:
    bad = dict(systems)
    bad["lambdamart"] = systems["lambdamart"].drop(index=["q0001", "q0002"])
    bad["x|y"] = systems["x|y"].rename(index={"q0009": "zz9"})
    with pytest.raises(DataError) as err:
        compare(bad, baseline="bm25", B=100)
    msg = str(err.value)
    assert "different query sets" in msg and "'bm25' has 250 queries" in msg
    assert "'lambdamart' lacks 2 of the baseline's queries (e.g. 'q0001', 'q0002')" in msg
    assert (
        "'x|y' has 1 queries the baseline lacks (e.g. 'zz9') and lacks 1 of the baseline's queries (e.g. 'q0009')"
        in msg
    )
    assert "'rank_net'" not in msg


def test_other_input_errors(systems: dict[str, pd.DataFrame]) -> None:
    with pytest.raises(DataError, match="at least 2 systems"):
        compare({"bm25": systems["bm25"]}, baseline="bm25")
    with pytest.raises(ConfigError, match="baseline='nope'"):
        compare(systems, baseline="nope")
    with pytest.raises(DataError, match="no values for metric 'map'"):
        compare(systems, baseline="bm25", metrics=["map"], B=100)
    dup = dict(systems, bm25=pd.concat([systems["bm25"], systems["bm25"].iloc[:1]]))
    with pytest.raises(DataError, match="'q0000' appears more than once"):
        compare(dup, baseline="bm25", B=100)
    with pytest.raises(ConfigError, match="query_ids"):
        compare({"a": {"m": [0.1, 0.2]}, "b": {"m": [0.2, 0.3]}}, baseline="a")
    with pytest.raises(DataError, match="2 query ids"):
        compare({"a": {"m": [0.1, 0.2, 0.3]}, "b": {"m": [0.2, 0.3]}}, baseline="a", query_ids=[1, 2])
    with pytest.raises(DataError, match="only 1 queries"):
        compare({"a": {"m": [0.1, np.nan]}, "b": {"m": [0.2, 0.3]}}, baseline="a", query_ids=[1, 2])
    with pytest.raises(ConfigError, match="'err@10' more than once"):
        compare(systems, baseline="bm25", metrics=["err@10", "ndcg@10", "err@10"])
    with pytest.raises(ConfigError, match="no entry for system 'b'"):
        compare({"a": {"m": [0.1, 0.2]}, "b": {"m": [0.2, 0.3]}}, baseline="a", query_ids={"a": [1, 2]})
    text = {s: df.assign(note="x") for s, df in systems.items()}
    with pytest.raises(DataError, match="metric 'note': values must be numeric"):
        compare(text, baseline="bm25", metrics=["note"], B=100)
    with pytest.raises(DataError, match="±inf"):
        compare({"a": {"m": [0.1, np.inf]}, "b": {"m": [0.2, 0.3]}}, baseline="a", query_ids=[1, 2])
    with pytest.raises(DataError, match="expected a DataFrame or a mapping"):
        compare({"a": [0.1, 0.2], "b": [0.2, 0.3]}, baseline="a", query_ids=[1, 2])
    for kwargs in (
        {"ci": "basic"},
        {"correction": "sidak"},
        {"test": "wilcoxon"},
        {"alpha": 5},
        {"B": 0},
        {"seed": -1},
        {"tie_tolerance": -1},
        {"tie_tolerance": "0.1"},
        {"seed": 1.5},
        {"lower_is_better": ["err@01"]},
    ):
        with pytest.raises(ConfigError, match=next(iter(kwargs))):
            compare(systems, baseline="bm25", **kwargs)


def test_extra_columns_and_nullable_dtypes(
    systems: dict[str, pd.DataFrame], report: ComparisonReport
) -> None:
    """Non-metric columns are ignored unless asked for; pandas' nullable Float64 with <NA> counts as NaN."""
    tagged = {s: df.assign(note="x").astype({"ndcg@10": "Float64"}) for s, df in systems.items()}
    tagged["bm25"].loc["q0003", "ndcg@10"] = pd.NA
    rep = compare(tagged, baseline="bm25", metrics=["ndcg@10", "err@10"], B=2000, seed=5)
    assert rep.rows == report.rows


def test_report_is_immutable(report: ComparisonReport) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.baseline = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.rows[0].mean = 1.0  # type: ignore[misc]
    assert isinstance(report.rows, tuple) and isinstance(report.lower_is_better, frozenset)
    with pytest.raises(DataError, match="no row"):
        report.row("bm25", "map")


def test_small_query_sets_use_the_exact_randomisation_test() -> None:
    q = list(range(12))
    a = pd.DataFrame({"m": np.linspace(0.1, 0.9, 12)}, index=q)
    b = a + np.r_[np.full(10, 0.05), -0.01, 0.02][:, None]
    rep = compare({"a": a, "b": b}, baseline="a", B=100)
    # T = 10·0.05 − 0.01 + 0.02 = 0.51; |T*| ≥ 0.51 only when the ten 0.05 share a sign and the 0.02
    # keeps it: (+0.01 or −0.01) × (all + or all −) → 4 of the 2¹² sign vectors
    assert rep.row("b", "m").pvalue == randomization_test(b["m"], a["m"]).pvalue == 4 / 2**12


def test_best_and_lower_is_better(report: ComparisonReport, systems: dict[str, pd.DataFrame]) -> None:
    assert report.best("ndcg@10") == "lambdamart"
    rep = compare(systems, baseline="bm25", B=200, lower_is_better=["err@10"])
    lowest = min(systems, key=lambda s: systems[s]["err@10"].mean())  # from the data, not the report
    assert rep.best("err@10") == lowest != report.best("err@10")
    # a single name is one metric, not a sequence of characters
    one = compare(systems, baseline="bm25", B=200, metrics="err@10", lower_is_better="err@10")
    assert one.metrics == ("err@10",) and one.lower_is_better == frozenset({"err@10"})
    assert one.best("err@10") == lowest


def test_markdown_rendering(report: ComparisonReport) -> None:
    md = report.to_markdown()
    lines = md.splitlines()
    assert lines[0] == "| system | ndcg@10 | err@10 |"
    best = report.row("lambdamart", "ndcg@10")
    assert f"**{best.mean:.4f}**† [{best.ci_low:.4f}, {best.ci_high:.4f}]" in md
    assert "| rank\\_net |" in md and "| x\\|y |" in md  # escaped: not emphasis, not a column break
    assert "| bm25 (baseline) |" in md
    rank_net = report.row("rank_net", "err@10")
    assert f"| {rank_net.mean:.4f} [" in md  # not bold, no dagger
    assert sum(line.count("**") for line in lines if line.startswith("|")) == 4  # one bold cell per metric
    assert all(line.count("|") - line.count("\\|") == 4 for line in lines[:6])
    legend = lines[-1]
    for phrase in (
        "baseline bm25",
        "paired randomisation test",
        "Holm-corrected",
        "alpha = 0.05",
        "95% BCa bootstrap CI",
        "B = 2,000",
        "seed 5",
    ):
        assert phrase in legend
    detail = report.to_markdown(detail=True, decimals=3)
    assert "W/T/L = queries where the system beats the baseline by more than 0, is within it" in detail
    r = report.row("lambdamart", "err@10")
    assert f"| lambdamart | {r.diff:+.3f} | [{r.diff_ci_low:+.3f}, {r.diff_ci_high:+.3f}] |" in detail
    assert f"{r.wins}/{r.ties}/{r.losses} | {r.n_queries} | 0 |" in detail
    with pytest.raises(ConfigError, match="decimals"):
        report.to_markdown(decimals=-1)


def test_latex_rendering(report: ComparisonReport) -> None:
    tex = report.to_latex(caption="Test 50% & more", label="tab:cmp")
    assert tex.startswith("\\begin{table}") and tex.rstrip().endswith("\\end{table}")
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "\\begin{tabular}{lrr}" in tex
    assert "rank\\_net" in tex and "x\\textbar{}y" in tex
    best = report.row("lambdamart", "ndcg@10")
    assert f"\\textbf{{{best.mean:.4f}}}$^{{\\dagger}}$" in tex
    assert "Test 50\\% \\& more. Bold" in tex and "\\label{tab:cmp}" in tex and "95\\% BCa" in tex
    body = tex.replace("\\{", "").replace("\\}", "")
    assert body.count("{") == body.count("}")
    body = tex.split("\\midrule")[1].split("\\bottomrule")[0].strip().splitlines()
    assert len(body) == 4
    for line in body:
        assert line.endswith(" \\\\")
        cells = line[: -len(" \\\\")].split(" & ")
        assert len(cells) == 3  # no unescaped & inside a cell
        assert not any(re.search(r"(?<!\\)[%&#_|]", c) for c in cells), line
    plain = report.to_latex(ci=False)
    assert "\\scriptsize" not in plain and "\\label" not in plain


@pytest.mark.skipif(
    shutil.which("pdflatex") is None,
    reason="pdflatex not installed (apt-get install texlive-latex-recommended)",
)
def test_latex_compiles_with_hostile_names(tmp_path: Path) -> None:
    """The real check of escaping: pdflatex accepts the table, with names full of LaTeX specials."""
    rng = np.random.default_rng(3)
    q = list(range(40))
    names = ["bm25", "lambda_mart & co", "rank|net ~50%", "a{b}$c#^\\d<e>"]
    per_query = {
        n: pd.DataFrame({"ndcg@10": rng.random(40), "p_5 %": rng.random(40)}, index=q) for n in names
    }
    rep = compare(per_query, baseline="bm25", B=200)
    doc = (
        "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n"
        + rep.to_latex(caption="Hostile & names")
        + "\\end{document}\n"
    )
    (tmp_path / "t.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000


def test_latex_escape() -> None:
    assert latex_escape("a_b&c%d$e#f{g}h~i^j\\k<l>m|n") == (
        "a\\_b\\&c\\%d\\$e\\#f\\{g\\}h\\textasciitilde{}i\\textasciicircum{}j\\textbackslash{}k"
        "\\textless{}l\\textgreater{}m\\textbar{}n"
    )


def test_frame_and_csv(report: ComparisonReport, tmp_path) -> None:  # noqa: ANN001
    frame = report.to_frame()
    assert frame.index.names == ["system", "metric"] and len(frame) == 8
    assert (
        frame.loc[("lambdamart", "ndcg@10"), "pvalue_adjusted"]
        == report.row("lambdamart", "ndcg@10").pvalue_adjusted
    )
    assert pd.isna(frame.loc[("bm25", "err@10"), "wins"]) and str(frame["wins"].dtype) == "Int64"
    path = report.to_csv(tmp_path / "cmp.csv")
    back = pd.read_csv(path).set_index(["system", "metric"])
    assert list(back.columns) == list(frame.columns)
    np.testing.assert_allclose(back["mean"], frame["mean"], rtol=1e-15)
    np.testing.assert_allclose(back["diff_ci_high"], frame["diff_ci_high"], rtol=1e-15)
    assert back.loc[("x|y", "err@10"), "n_queries"] == 250


@pytest.mark.shared_data
def test_compare_on_real_per_query_ndcg_from_pytrec_eval(shared_data: Path) -> None:
    """Real data end to end: two single-feature rankers on the Yahoo!-derived LightGBM sample, per-query
    NDCG@10 from pytrec_eval (trec_eval's linear gain), queries without a relevant document skipped."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from sklearn.datasets import load_svmlight_file

    folder = shared_data / "lightgbm_lambdarank"
    X, y = load_svmlight_file(str(folder / "rank.train"), n_features=300)
    sizes = np.loadtxt(folder / "rank.train.query", dtype=np.int64)
    offsets = np.r_[0, np.cumsum(sizes)]
    X = X.tocsc()
    qrels = {
        f"q{i}": {f"d{j}": int(y[j]) for j in range(offsets[i], offsets[i + 1])} for i in range(len(sizes))
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"})
    tables = {}
    for name, feature in (("f90", 90), ("f215", 215), ("f16", 16)):
        score = X[:, feature].toarray().ravel()
        run = {q: {d: float(score[int(d[1:])]) for d in docs} for q, docs in qrels.items()}
        per_query = evaluator.evaluate(run)  # dict keyed by query id, in no particular order
        frame = pd.DataFrame({"ndcg@10": {q: m["ndcg_cut_10"] for q, m in per_query.items()}})
        no_relevant = [q for q, docs in qrels.items() if max(docs.values()) == 0]
        frame.loc[no_relevant, "ndcg@10"] = np.nan  # the `skip` convention
        tables[name] = frame.sample(frac=1.0, random_state=len(tables))  # each system in its own order
    rep = compare(tables, baseline="f90", B=5000, seed=1)
    assert len(no_relevant) == 3
    aligned = pd.DataFrame({s: t["ndcg@10"] for s, t in tables.items()}).dropna()
    for system in ("f215", "f16"):
        r = rep.row(system, "ndcg@10")
        assert (r.n_queries, r.n_dropped) == (198, 3)
        assert r.diff == pytest.approx((aligned[system] - aligned["f90"]).mean(), rel=1e-12)
        ref = stats.permutation_test(
            (aligned[system].to_numpy(), aligned["f90"].to_numpy()),
            lambda a, b, axis: np.mean(a - b, axis=axis),
            permutation_type="samples",
            n_resamples=9_999,
            vectorized=True,
            rng=0,
        ).pvalue
        assert r.pvalue == pytest.approx(ref, abs=5 * np.sqrt(2 * max(ref, 1e-3) * (1 - ref) / 5000) + 2e-4)
    t_rep = compare(tables, baseline="f90", B=500, test="t")
    for system in ("f215", "f16"):
        ref = stats.ttest_rel(aligned[system], aligned["f90"]).pvalue
        assert t_rep.row(system, "ndcg@10").pvalue == pytest.approx(ref, rel=1e-12)
    assert "198 queries (3 skipped by every system: the metric is undefined for them" in rep.to_markdown()
    # docs/statistics.md shows this very report: every table row there must be what the code prints
    docs = (Path(__file__).resolve().parents[1] / "docs" / "statistics.md").read_text(encoding="utf-8")
    rows = [line for line in rep.to_markdown(detail=True).splitlines() if line.startswith("| f")]
    assert len(rows) == 8 and all(line in docs for line in rows), [r for r in rows if r not in docs]
    # the risk rows: TRisk is scipy's one-sample t-test of the per-query differences, losses doubled
    for system in ("f215", "f16"):
        delta = (aligned[system] - aligned["f90"]).to_numpy()
        z = np.where(delta >= 0, delta, 2 * delta)
        (risk,) = [r for r in rep.risk if r.system == system]
        assert risk.urisk == pytest.approx(z.mean()) and risk.trisk == pytest.approx(
            stats.ttest_1samp(z, 0).statistic
        )


def test_all_pairs_runs_randomised_tukey_hsd_per_metric(systems: dict[str, pd.DataFrame]) -> None:
    rep = compare(systems, baseline="bm25", B=1000, seed=2, all_pairs=True)
    assert set(rep.hsd) == {"ndcg@10", "err@10"}
    for metric in rep.metrics:
        kept = pd.DataFrame({s: df[metric] for s, df in systems.items()}).dropna()
        assert rep.hsd[metric] == tukey_hsd({s: kept[s].to_numpy() for s in kept}, B=1000, seed=2)
    assert rep.hsd["ndcg@10"].n == N - 4
    with pytest.raises(TypeError):
        rep.hsd["map"] = rep.hsd["err@10"]  # type: ignore[index]
    md = rep.to_markdown(detail=True)
    h = rep.hsd["err@10"]
    assert "Randomised Tukey HSD, all pairs (family-wise p-values; B = 1,000, seed 2, 250 queries)" in md
    row = (
        "| rank\\_net | "
        + " | ".join(
            "—"
            if s == "rank_net"
            else f"{h.pvalue('rank_net', s):.4f}"
            if h.pvalue("rank_net", s) >= 1e-4
            else "<1e-4"
            for s in h.systems
        )
        + " |"
    )
    assert row in md
    assert dict(compare(systems, baseline="bm25", B=100).hsd) == {}


def test_legend_states_every_setting(systems: dict[str, pd.DataFrame]) -> None:
    rep = compare(
        systems,
        baseline="bm25",
        B=300,
        seed=9,
        ci="percentile",
        confidence=0.975,
        alpha=0.01,
        correction="none",
        test="t",
        metrics=["err@10"],
    )
    legend = rep.legend()
    for phrase in (
        "baseline bm25",
        "paired t-test",
        "not corrected for multiple comparisons",
        "alpha = 0.01",
        "97.5% percentile bootstrap CI",
        "B = 300",
        "seed 9",
        "err@10: 250 queries.",
    ):
        assert phrase in legend, phrase
    assert "ndcg@10" not in legend
    bh = compare(systems, baseline="bm25", B=300, correction="bh", metrics=["err@10"]).legend()
    assert "Benjamini–Hochberg-corrected over the 3 comparisons per metric" in bh

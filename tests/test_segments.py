"""Failure analysis by segment: hand-checkable attributes, bins, W/T/L and worst queries; CIs checked
against scipy's bootstrap; the plot."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import captured_figures
from scipy import stats

from ltr.analysis.segments import (
    builtin_segments,
    query_attributes,
    ranked_labels,
    segment_table,
    segments_markdown,
    user_segments,
    worst_markdown,
    worst_queries,
)
from ltr.core.errors import ConfigError, DataError
from ltr.stats import paired_bootstrap_ci

# three queries: q1 has 4 docs (labels 0 2 1 0), q2 2 docs (0 0), q3 3 docs (3 1 1)
LABELS = np.array([0, 2, 1, 0, 0, 0, 3, 1, 1], dtype=float)
OFFSETS = np.array([0, 4, 6, 9])
QIDS = ["q1", "q2", "q3"]


def test_query_attributes_by_hand() -> None:
    a = query_attributes(LABELS, OFFSETS, QIDS)
    assert a["n_docs"].tolist() == [4, 2, 3]
    assert a["n_relevant"].tolist() == [2, 0, 3]
    assert a["max_label"].tolist() == [2.0, 0.0, 3.0]
    assert query_attributes(LABELS, OFFSETS, QIDS, relevant_from=2)["n_relevant"].tolist() == [1, 0, 1]


def test_builtin_bins() -> None:
    attrs = pd.DataFrame(
        {"n_docs": [1, 2, 3, 4, 5, 6, 7, 8, 9], "n_relevant": [0, 1, 2, 4, 5, 9, 10, 30, 0],
         "max_label": [0, 1, 1, 2, 2, 2, 3, 4, 0]},
        index=[f"q{i}" for i in range(9)],
    )  # fmt: skip
    seg = builtin_segments(attrs)
    assert list(seg) == ["documents per query", "relevant documents", "highest label"]
    # tertiles of 1..9: cut at 3.67 → 4 and 6.33 → 6: 1–4, 5–6, 7–9
    assert seg["documents per query"].tolist() == ["n_docs 1–4"] * 4 + ["n_docs 5–6"] * 2 + ["n_docs 7–9"] * 3
    assert seg["relevant documents"].tolist() == ["0", "1", "2–4", "2–4", "5–9", "5–9", "≥ 10", "≥ 10", "0"]
    assert seg["highest label"].iloc[7] == "max label = 4"
    # every query has the same count: one bin; and a frame with n_docs only gives one family
    same = builtin_segments(pd.DataFrame({"n_docs": [5, 5, 5]}, index=["a", "b", "c"]))
    assert list(same) == ["documents per query"] and set(same["documents per query"]) == {"n_docs 5"}


def test_segments_keep_their_natural_order_and_empty_ones_are_left_out(tmp_path) -> None:  # noqa: ANN001
    """Bins read small to large (``n_docs 5–19`` before ``n_docs 20–63``, not string order), and a bin
    whose queries every system skipped (NaN: no relevant document) is not a row of NaNs."""
    n = 12
    q = [f"q{i}" for i in range(n)]
    attrs = pd.DataFrame(
        {"n_docs": [5, 6, 7, 8, 20, 30, 40, 50, 100, 150, 190, 196], "n_relevant": [0, 0, 1, 1, 3, 3, 3, 3, 12, 12, 12, 12],
         "max_label": [0, 0, 1, 1, 2, 2, 2, 2, 10, 10, 10, 10]},
        index=q,
    )  # fmt: skip
    base = pd.Series(np.r_[np.nan, np.nan, np.linspace(0.1, 0.9, n - 2)], index=q)
    new = base + 0.01
    table = segment_table({"b": base, "n": new}, baseline="b", segments=builtin_segments(attrs), B=50)
    docs = table[table.family == "documents per query"]["segment"].tolist()
    assert [int(s.split()[1].split("–")[0]) for s in docs] == sorted(
        int(s.split()[1].split("–")[0]) for s in docs
    )
    assert table[table.family == "relevant documents"]["segment"].tolist() == ["1", "2–4", "≥ 10"]
    assert table[table.family == "highest label"]["segment"].tolist() == [
        "max label = 1",
        "max label = 2",
        "max label = 10",
    ]
    assert not table["diff"].isna().any()
    from ltr.report.plots import plot_segments

    with captured_figures() as figures:
        plot_segments(table, tmp_path / "s.png", metric="m", baseline="b")
    for ax, family in zip(
        figures[0].axes, ["documents per query", "relevant documents", "highest label"], strict=True
    ):
        ticks = sorted(
            zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels()), strict=True), reverse=True
        )
        shown = [label.rsplit(" (n=", 1)[0] for _, label in ticks]
        assert shown == table[table.family == family]["segment"].tolist()


def test_user_segments_from_lists_and_column() -> None:
    ids = ["a", "b", "c", "d"]
    lists = user_segments({"head": ["a", "b"], "tail": ["d", "zz"]}, ids)
    assert lists.tolist() == ["head", "head", "other", "tail"]
    with pytest.raises(ConfigError, match="'b' is in both 'head' and 'tail'"):
        user_segments({"head": ["a", "b"], "tail": ["b"]}, ids)
    col = user_segments(pd.Series({"a": "en", "b": "de", "c": "en", "d": "fr", "e": "x"}), ids)
    assert col.tolist() == ["en", "de", "en", "fr"]
    with pytest.raises(DataError, match="no value for 1 queries"):
        user_segments(pd.Series({"a": "en"}), ["a", "b"])


def _systems(n: int = 60, seed: int = 0) -> tuple[dict[str, pd.Series], pd.Series]:
    rng = np.random.default_rng(seed)
    q = [f"q{i}" for i in range(n)]
    base = pd.Series(rng.random(n), index=q)
    long = pd.Series(np.where(np.arange(n) % 2 == 0, "long", "short"), index=q)
    # the new system wins on short queries, loses on long ones
    new = base + np.where(long == "short", 0.1, -0.05) + rng.normal(0, 0.02, n)
    return {"base": base, "new": new}, long


def test_segment_table_numbers_by_hand_and_ci_against_scipy() -> None:
    systems, length = _systems()
    table = segment_table(systems, baseline="base", segments={"length": length}, B=4000, seed=3)
    assert list(table["segment"]) == ["long", "short"] and set(table["system"]) == {"new"}
    for r in table.itertuples(index=False):
        q = length.index[length == r.segment]
        d = systems["new"][q] - systems["base"][q]
        assert r.n_queries == 30 and r.diff == pytest.approx(d.mean())
        assert r.mean == pytest.approx(systems["new"][q].mean())
        assert (r.wins, r.ties, r.losses) == (int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()))
        ours = paired_bootstrap_ci(systems["new"][q], systems["base"][q], method="percentile", B=4000, seed=3)
        assert (r.ci_low, r.ci_high) == (ours.low, ours.high)
        theirs = stats.bootstrap(
            (d.to_numpy(),), np.mean, n_resamples=4000, method="percentile", random_state=1
        )
        assert r.ci_low == pytest.approx(theirs.confidence_interval.low, abs=0.004)
        assert r.ci_high == pytest.approx(theirs.confidence_interval.high, abs=0.004)
    short, long = table.set_index("segment").loc["short"], table.set_index("segment").loc["long"]
    assert short.ci_low > 0 and long.ci_high < 0
    text = segments_markdown(table, metric="ndcg@10", baseline="base")
    assert "**length**" in text and "| short | new | 30 |" in text


def test_single_query_segment_has_no_ci_and_nan_pairs_are_dropped() -> None:
    base = pd.Series([0.5, 0.2, np.nan, 0.4], index=list("abcd"))
    new = pd.Series([0.6, 0.2, 0.9, 0.1], index=list("abcd"))
    seg = pd.Series(["x", "y", "y", "y"], index=list("abcd"))
    t = segment_table({"base": base, "new": new}, baseline="base", segments={"s": seg}, B=100).set_index(
        "segment"
    )
    assert t.loc["x", "n_queries"] == 1 and np.isnan(t.loc["x", "ci_low"])
    assert t.loc["y", "n_queries"] == 2 and t.loc["y", "diff"] == pytest.approx(-0.15)
    assert (t.loc["y", "wins"], t.loc["y", "ties"], t.loc["y", "losses"]) == (0, 1, 1)
    assert "| x | new | 1 |" in segments_markdown(t.reset_index(), metric="m", baseline="base")


def test_segment_table_refuses_bad_input() -> None:
    systems, length = _systems(n=10)
    with pytest.raises(ConfigError, match="baseline='nope'"):
        segment_table(systems, baseline="nope", segments={"l": length})
    with pytest.raises(DataError, match="does not assign every query"):
        segment_table(systems, baseline="base", segments={"l": length.iloc[:5]})


def test_ranked_labels_and_worst_queries_by_hand() -> None:
    scores = np.array([0.9, 0.1, 0.5, 0.2, 0.3, 0.3, 0.0, 0.5, 0.9])
    ranked = ranked_labels(LABELS, scores, OFFSETS, QIDS, depth=3)
    assert ranked["q1"] == ((0.0, 1.0, 0.0), (2.0, 1.0, 0.0))
    assert ranked["q2"] == ((0.0, 0.0), (0.0, 0.0))
    assert ranked["q3"] == ((1.0, 1.0, 3.0), (3.0, 1.0, 1.0))
    values = pd.Series([0.3, 1.0, 0.2], index=QIDS)
    base = pd.Series([0.8, 1.0, 0.4], index=QIDS)
    worst = worst_queries(values, base, ranked, system="new", k=2)
    assert [w.qid for w in worst] == ["q1", "q3"] and worst[0].diff == pytest.approx(-0.5)
    assert worst[1].ranked_labels == (1.0, 1.0, 3.0) and worst[1].ideal_labels == (3.0, 1.0, 1.0)
    text = worst_markdown(worst, metric="ndcg@10", baseline="base")
    assert "| new | q1 | 0.3000 | 0.8000 | -0.5000 | 0 1 0 | 2 1 0 |" in text


def test_worst_queries_break_equal_losses_by_the_smaller_system_value() -> None:
    """Two queries lose the same 0.5 (exact in binary): the one where the system scores less (a: 0.25)
    comes first, although it comes second in query order; the documented tie-break is value, then order.

    Kills mutant #8 (ties broken by query order only).
    """
    values = pd.Series([0.5, 0.25, 0.9], index=["b", "a", "c"])
    base = pd.Series([1.0, 0.75, 0.9], index=["b", "a", "c"])
    worst = worst_queries(values, base, {}, system="new", k=2)
    assert [w.qid for w in worst] == ["a", "b"] and [w.diff for w in worst] == [-0.5, -0.5]


def test_query_attributes_of_an_empty_query_count_no_relevant_document() -> None:
    """Offsets may hold an empty query (q2 of [0, 2, 2, 3]): it has 0 documents and 0 relevant ones, not
    the count of the next query's first document that a plain ``reduceat`` gives there.

    Kills mutant #9 (``n_relevant`` without the ``sizes > 0`` mask: 1 for q2).
    """
    a = query_attributes(np.array([1.0, 0.0, 2.0]), np.array([0, 2, 2, 3]), ["q1", "q2", "q3"])
    assert a["n_docs"].tolist() == [2, 0, 1]
    assert a["n_relevant"].tolist() == [1, 0, 1]


def test_query_attributes_of_empty_queries_anywhere() -> None:
    """An empty query's highest label is 0 (it has no document), not the next query's first label (2.0 for
    q2 before the fix), and an empty query at the end is counted, not an IndexError from ``reduceat``.
    """
    a = query_attributes(np.array([1.0, 0.0, 2.0]), np.array([0, 2, 2, 3]), ["q1", "q2", "q3"])
    assert a["max_label"].tolist() == [1.0, 0.0, 2.0]
    b = query_attributes(np.array([1.0, 0.0, 2.0]), np.array([0, 0, 2, 3, 3]), ["q0", "q1", "q2", "q3"])
    assert b.to_dict("list") == {
        "n_docs": [0, 2, 1, 0],
        "n_relevant": [0, 1, 1, 0],
        "max_label": [0.0, 1.0, 2.0, 0.0],
    }


def test_segment_plot_has_a_panel_per_family(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    from ltr.report.plots import plot_segments

    systems, length = _systems()
    systems["other"] = systems["new"] * 0.5
    segs = {
        "length": length,
        "half": pd.Series(np.where(np.arange(60) < 30, "first", "second"), index=length.index),
    }
    table = segment_table(systems, baseline="base", segments=segs, B=200)
    with captured_figures() as captured:
        path = plot_segments(table, tmp_path / "seg.png", metric="ndcg@10", baseline="base")
    assert path.stat().st_size > 5000
    axes = captured[0].axes
    assert len(axes) == 2
    # top to bottom in the table's order
    ticks = sorted(
        zip(axes[0].get_yticks(), (t.get_text() for t in axes[0].get_yticklabels()), strict=True),
        reverse=True,
    )
    assert [label for _, label in ticks] == ["long (n=30)", "short (n=30)"]
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["new", "other"]

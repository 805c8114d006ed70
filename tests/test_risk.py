"""Risk-sensitive comparison (issue 27 item 4): URisk, TRisk and GeoRisk (ltr.stats.risk), in
``compare()``, ``ltr.evaluate --compare`` and ``ltr.compare``.

Truths: the papers' definitions worked by hand, scipy's one-sample t-test for TRisk (it is URisk's
t-statistic), and a GeoRisk written here loop by loop from Dinçer, Macdonald & Ounis (SIGIR 2016).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, ttest_1samp

from ltr.analysis.comparison import compare
from ltr.core.errors import ConfigError, DataError
from ltr.evaluate import main as evaluate_main
from ltr.stats.risk import georisk, risk_adjusted, trisk, urisk


def _georisk_by_definition(x: np.ndarray, alpha: float) -> list[float]:
    """GeoRisk_α(j) = sqrt(S_j/c · Φ(ZRisk_α(j)/c)), ZRisk from e_ij = S_j·T_i/N, one cell at a time."""
    c, m = x.shape
    total = x.sum()
    out = []
    for j in range(m):
        s_j = sum(x[i, j] for i in range(c))
        zrisk = 0.0
        for i in range(c):
            t_i = sum(x[i, k] for k in range(m))
            e = s_j * t_i / total
            z = (x[i, j] - e) / math.sqrt(e) if e > 0 else 0.0
            zrisk += z if z >= 0 else (1 + alpha) * z
        out.append(math.sqrt(s_j / c * norm.cdf(zrisk / c)))
    return out


def test_the_worked_example():
    """r = (0.5, 0.3, 0.8, 0.2), b = (0.4, 0.5, 0.6, 0.2), α = 1: δ = (0.1, −0.2, 0.2, 0), z = (0.1, −0.4,
    0.2, 0), URisk = −0.025 (the mean difference is +0.025), sd(z) = √(0.2075/3), TRisk = −0.19011."""
    r, b = [0.5, 0.3, 0.8, 0.2], [0.4, 0.5, 0.6, 0.2]
    assert risk_adjusted(r, b, alpha=1.0).tolist() == pytest.approx([0.1, -0.4, 0.2, 0.0])
    assert urisk(r, b, alpha=1.0) == pytest.approx(-0.025)
    assert urisk(r, b, alpha=0.0) == pytest.approx(0.025)
    assert trisk(r, b, alpha=1.0).statistic == pytest.approx(-0.025 / (math.sqrt(0.2075 / 3) / 2))
    assert urisk(r, b, alpha=3.0) == pytest.approx((0.1 - 4 * 0.2 + 0.2) / 4)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 5.0])
def test_trisk_is_scipys_one_sample_t_test_of_the_risk_adjusted_differences(alpha):
    rng = np.random.default_rng(int(alpha))
    base = rng.random(50)
    system = np.clip(base + rng.normal(0.02, 0.1, 50), 0, 1)
    delta = system - base
    z = np.where(delta >= 0, delta, (1 + alpha) * delta)  # the definition, by numpy
    peer = ttest_1samp(z, 0.0)
    result = trisk(system, base, alpha=alpha)
    assert result.statistic == pytest.approx(peer.statistic)
    assert result.pvalue == pytest.approx(peer.pvalue)
    assert result.df == 49 and result.urisk == pytest.approx(z.mean())


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.5])
def test_georisk_follows_its_definition(alpha):
    rng = np.random.default_rng(7)
    x = rng.random((30, 4))
    x[3] = 0.0  # a query every system fails: its expected values are 0
    assert georisk(x, alpha=alpha).tolist() == pytest.approx(_georisk_by_definition(x, alpha))


def test_a_riskier_system_with_the_same_mean_has_lower_georisk_and_negative_urisk():
    """Two systems with the same mean: one tracks each query's difficulty, the other wins big on some
    queries and loses badly on others. The second is riskier by every measure."""
    base = np.array([0.2, 0.4, 0.6, 0.8] * 5)
    steady = base + 0.05
    erratic = base + np.array([0.25, -0.15] * 10)  # mean +0.05 too
    assert steady.mean() == pytest.approx(erratic.mean())
    assert urisk(steady, base) > 0 > urisk(erratic, base)
    geo = georisk(np.column_stack([base, steady, erratic]))
    assert geo[1] > geo[2]


def test_compare_reports_risk_per_system_and_metric():
    rng = np.random.default_rng(3)
    ids = [f"q{i}" for i in range(40)]
    base = rng.random(40)
    frames = {
        "base": pd.DataFrame({"ndcg": base, "loss": 1 - base}, index=ids),
        "new": pd.DataFrame({"ndcg": np.clip(base + rng.normal(0, 0.1, 40), 0, 1)}, index=ids),
    }
    frames["new"]["loss"] = 1 - frames["new"]["ndcg"]
    report = compare(frames, baseline="base", B=200, risk_alpha=2.0, lower_is_better="loss")
    risk = report.risk_frame().set_index(["system", "metric"])
    new, old = frames["new"]["ndcg"].to_numpy(), base
    assert risk.loc[("new", "ndcg"), "urisk"] == pytest.approx(urisk(new, old, alpha=2.0))
    assert risk.loc[("new", "ndcg"), "trisk"] == pytest.approx(trisk(new, old, alpha=2.0).statistic)
    assert risk.loc[("base", "ndcg"), "georisk"] == pytest.approx(
        _georisk_by_definition(np.column_stack([old, new]), 2.0)[0]
    )
    assert math.isnan(risk.loc[("base", "ndcg"), "trisk"])
    # lower is better: an increase is the loss, so the risk equals that of the negated values
    assert risk.loc[("new", "loss"), "urisk"] == pytest.approx(risk.loc[("new", "ndcg"), "urisk"])
    assert math.isnan(risk.loc[("new", "loss"), "georisk"])
    markdown = report.detail_markdown()
    assert "URisk(2)" in markdown and "TRisk(2)" in markdown and "GeoRisk(2)" in markdown
    with pytest.raises(ConfigError, match="risk_alpha"):
        compare(frames, baseline="base", B=200, risk_alpha=-1.0)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (([0.1, 0.2], [0.1]), DataError),
        (([0.1, float("nan")], [0.1, 0.2]), DataError),
    ],
)
def test_bad_inputs_are_named(args, error):
    with pytest.raises(error, match="risk"):
        urisk(*args)
    with pytest.raises(DataError, match="GeoRisk"):
        georisk([[0.1, -0.2], [0.3, 0.4]])


def _runs(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"{t} 0 d{d} {int(d < 2 + t % 3)}\n" for t in range(20) for d in range(8)))
    for name, shift in (("a", 0), ("b", 3)):  # b ranks some topics' relevant documents last
        lines = []
        for t in range(20):
            order = list(range(8)) if (t + shift) % 4 else list(reversed(range(8)))
            lines += [f"{t} Q0 d{d} {rank + 1} {8 - rank} {name}\n" for rank, d in enumerate(order)]
        (tmp_path / name).write_text("".join(lines))
    return qrels, tmp_path / "a", tmp_path / "b"


def test_evaluate_compare_json_carries_the_risk_of_each_system_and_measure(tmp_path, capsys):
    qrels, a, b = _runs(tmp_path)
    argv = ["--qrels", str(qrels), "--run", str(a), "--run", str(b), "--compare", "--json", "-m", "map"]
    assert evaluate_main([*argv, "-m", "ndcg_cut_10", "--risk-alpha", "2", "--B", "200"]) == 0
    out = json.loads(capsys.readouterr().out)
    per_query = {
        s: pd.Series({t: row["map"] for t, row in v["per_query"].items()}) for s, v in out["systems"].items()
    }
    delta = (per_query["b"] - per_query["a"][per_query["b"].index]).to_numpy()
    z = np.where(delta >= 0, delta, 3 * delta)
    (row,) = [r for r in out["risk"] if r["system"] == "b" and r["metric"] == "map"]
    assert row["urisk"] == pytest.approx(z.mean())
    assert row["trisk"] == pytest.approx(ttest_1samp(z, 0.0).statistic)
    assert {(r["system"], r["metric"]) for r in out["risk"]} == {
        (s, m) for s in ("a", "b") for m in ("map", "ndcg_cut_10")
    }
    assert evaluate_main([*argv, "--risk-alpha", "-1"]) == 2
    assert "--risk-alpha must be a number in [0, 1e+06]" in capsys.readouterr().err
    assert (
        evaluate_main([*argv, "--risk-alpha", "1e300"]) == 2
    )  # would overflow the risk-adjusted differences
    assert "--risk-alpha must be a number in [0, 1e+06]" in capsys.readouterr().err
    assert evaluate_main(["--qrels", str(qrels), "--run", str(a), "--risk-alpha", "1"]) == 2
    assert "--risk-alpha applies to --compare" in capsys.readouterr().err

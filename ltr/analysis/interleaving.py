"""Do interleaving's verdicts agree with the offline metric? Many ranker pairs, interleaved and scored.

For each pair ``(A, B)`` of rankers scored on the same labelled queries:
:func:`ltr.clicks.interleaving.simulate_interleaving` gives the preference ``Δ_AB`` with its CI,
sign-test p-value and the impressions needed at 80 % power; the offline difference is
``ΔM = mean_q M_A(q) − mean_q M_B(q)`` for the metric ``M`` (``ndcg@10`` by default, the ``ltr``
preset of :func:`ltr.metrics.evaluate`). Over the pairs:

* **agreement**: the fraction of pairs with ``sign(Δ_AB) = sign(ΔM)`` (a zero on either side counts
  as a disagreement unless both are zero), and the same fraction over the pairs whose interleaving
  verdict is significant (``p < α``);
* **Kendall's τ_b** between the ``Δ_AB`` and the ``ΔM`` of the pairs
  (:func:`ltr.analysis.agreement.kendall_tau`).

:func:`interleaving_table` runs the pairs; :class:`InterleavingTable` renders them (Markdown, CSV
rows, one summary line), as ``ltr.compare`` writes them (``interleaving.md`` / ``.csv``) for each
system against the baseline.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> d = RankingData(X=np.zeros((8, 1), np.float32), y=[2, 1, 0, 0, 0, 2, 1, 0], qid=[1] * 4 + [2] * 4)
>>> t = interleaving_table(d, {"good": d.y.astype(float), "worst": -d.y.astype(float)},
...                        [("good", "worst")], {"impressions": 50}, B=200)
>>> t.rows[0]["preference"] > 0, t.agreement
(True, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from ltr.analysis.agreement import kendall_tau
from ltr.clicks.interleaving import InterleavingResult, check_interleaving_config, simulate_interleaving
from ltr.core.errors import ConfigError, MetricError
from ltr.metrics import evaluate, parse_metric
from ltr.stats.power import queries_needed

COLUMNS = (
    "system_a", "system_b", "delta_metric", "preference", "low", "high", "pvalue", "pvalue_impressions",
    "wins", "ties", "losses", "sd", "impressions_needed", "ab_impressions_needed", "ab_ratio", "agree",
)  # fmt: skip


@dataclass(frozen=True)
class InterleavingTable:
    """Pairs interleaved: one row per pair (``COLUMNS``), the settings, agreement and Kendall's τ."""

    rows: list[dict[str, Any]]
    settings: dict[str, Any]
    metric: str
    alpha: float
    confidence: float

    @property
    def agreement(self) -> float:
        """Fraction of pairs whose interleaving verdict has the offline difference's sign."""
        return float(np.mean([r["agree"] for r in self.rows])) if self.rows else float("nan")

    @property
    def significant_agreement(self) -> float:
        """The agreement over the pairs with ``p < alpha`` (NaN when none is)."""
        sig = [r["agree"] for r in self.rows if r["pvalue"] < self.alpha]
        return float(np.mean(sig)) if sig else float("nan")

    @property
    def kendall_tau(self) -> float:
        """Kendall's τ_b between the pairs' preferences and offline differences (NaN below 2 pairs)."""
        if len(self.rows) < 2:
            return float("nan")
        return kendall_tau([r["preference"] for r in self.rows], [r["delta_metric"] for r in self.rows])

    @property
    def slope(self) -> float:
        """``β`` of ``Δ_AB ≈ β·ΔM``: least squares through the origin over the pairs (NaN without pairs)."""
        pref = np.array([r["preference"] for r in self.rows])
        delta = np.array([r["delta_metric"] for r in self.rows])
        denom = float(np.sum(delta**2))
        return float(np.sum(pref * delta) / denom) if denom > 0 else float("nan")

    def impressions_for(self, delta_metric: float, *, power: float = 0.8) -> int | None:
        """Impressions needed to detect an offline difference ``delta_metric`` at ``power`` (two-sided
        ``alpha``): ``n = σ̄²(z_{α/2} + z_β)²/(β·ΔM)²`` with the slope :attr:`slope` and ``σ̄²`` the mean
        per-impression outcome variance over the pairs. ``None`` when ``β ≤ 0`` (interleaving does not
        follow the metric on these pairs) or no pair varies."""
        beta = self.slope
        var = float(np.mean([r["sd"] ** 2 for r in self.rows])) if self.rows else 0.0
        if not (np.isfinite(beta) and beta > 0 and var > 0):
            return None
        return queries_needed(beta * delta_metric, var**0.5, alpha=self.alpha, power=power, paired=True)

    def to_frame(self) -> Any:
        import pandas as pd  # deferred: pandas only to write the table

        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    def write(self, out_dir: Path) -> list[Path]:
        """``interleaving.md`` and ``interleaving.csv`` in ``out_dir``; returns them."""
        out_dir.mkdir(parents=True, exist_ok=True)
        md, csv = out_dir / "interleaving.md", out_dir / "interleaving.csv"
        md.write_text(self.to_markdown())
        self.to_frame().to_csv(csv, index=False)
        return [md, csv]

    def metrics(self) -> dict[str, float]:
        """``interleaving/<A>/<key>`` per pair (its first system): preference, CI bounds, p-value,
        impressions needed (when defined), as MLflow metrics of the parent run."""
        out: dict[str, float] = {}
        for r in self.rows:
            for key in ("preference", "low", "high", "pvalue", "impressions_needed", "ab_impressions_needed"):
                if r[key] is not None and np.isfinite(r[key]):
                    out[f"interleaving/{r['system_a']}/{key}"] = float(r[key])
        return out

    def describe(self) -> str:
        """The settings in one phrase: method, users, impressions."""
        s = self.settings
        users = (
            f"{s['model']} users (eta {s['eta']:g}, epsilon {s['epsilon']:g})"
            if s["model"] == "pbm"
            else (f"cascade users (epsilon {s['epsilon']:g})")
        )
        tau = f", tau {s['tau']:g}" if s["method"] == "probabilistic" else ""
        return (
            f"{s['method']} interleaving{tau}, {users}, top {s['top_k']}, {s['impressions']} impressions "
            f"per query, seed {s['seed']}"
        )

    def to_markdown(self) -> str:
        level = f"{self.confidence:.0%}"
        lines = [
            "## Interleaving",
            "",
            f"Simulated {self.describe()}. Preference Δ = (wins − losses) / impressions of the first system "
            f"({level} bootstrap CI over queries; p: t-test over queries, the CI's unit); n: impressions to detect Δ "
            f"at 80 % power (α 0.05); A/B: impressions of an A/B test on clicks@k at the same power; "
            f"Δ{self.metric}: the offline difference.",
            "",
            f"| A | B | Δ{self.metric} | preference Δ [{level} CI] | p | wins / ties / losses | n | A/B | A/B ÷ n |",
            "|---|---|---:|---|---:|---|---:|---:|---:|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r['system_a']} | {r['system_b']} | {r['delta_metric']:+.4f} | {r['preference']:+.4f} "
                f"[{r['low']:+.4f}, {r['high']:+.4f}] | {r['pvalue']:.3g} | {r['wins']:.0f} / {r['ties']:.0f} / "
                f"{r['losses']:.0f} | {_count(r['impressions_needed'])} | {_count(r['ab_impressions_needed'])} | "
                f"{_ratio(r['ab_ratio'])} |"
            )
        lines += ["", self.agreement_line()]
        n = self.impressions_for(0.01)
        if n is not None:
            lines += [
                "",
                f"Over these pairs Δ ≈ {self.slope:.3g}·Δ{self.metric} (least squares through 0): detecting "
                f"Δ{self.metric} = 0.01 at 80 % power takes about {n:,} impressions.",
            ]
        return "\n".join(lines) + "\n"

    def agreement_line(self) -> str:
        tau = self.kendall_tau
        return (
            f"Agreement with Δ{self.metric}: {self.agreement:.0%} of {len(self.rows)} pairs"
            + ("" if np.isnan(tau) else f", Kendall's τ {tau:.2f}")
            + "."
        )

    def summary_line(self) -> str:
        """One console line: each pair's preference with its CI, and the agreement."""
        pairs = "; ".join(
            f"{r['system_a']} vs {r['system_b']} {r['preference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}], "
            f"n {_count(r['impressions_needed'])}"
            for r in self.rows
        )
        return f"Interleaving ({self.settings['method']}, {self.settings['model']}): {pairs}. {self.agreement_line()}"


def _count(n: Any) -> str:
    return "–" if n is None else f"{int(n):,}"


def _ratio(x: Any) -> str:
    return "–" if x is None else f"{x:.1f}×"


def _agree(pref: float, delta: float) -> bool:
    return bool(np.sign(pref) == np.sign(delta))


def interleaving_table(
    data: Any,
    scores: Mapping[str, Any],
    pairs: Sequence[tuple[str, str]],
    config: Mapping[str, Any] | None = None,
    *,
    where: str = "interleaving",
    B: int = 2000,
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> InterleavingTable:
    """Interleave each pair ``(A, B)`` of ``scores`` (system → scores on ``data``) as ``config`` says
    (:class:`ltr.clicks.interleaving.InterleavingConfig`, errors named after ``where``)."""
    settings = check_interleaving_config(config, where)
    try:
        parse_metric(settings["metric"])
    except MetricError as exc:
        raise ConfigError(f"{where}.metric: {exc}") from exc
    missing = [s for pair in pairs for s in pair if s not in scores]
    if missing:
        raise ConfigError(f"{where}: no scores for system {missing[0]!r}; systems: {', '.join(scores)}")
    metric = {
        s: float(np.nanmean(next(iter(evaluate(settings["metric"], data.y, v, data.offsets).values()))))
        for s, v in scores.items()
    }
    rows = []
    for a, b in pairs:
        r: InterleavingResult = simulate_interleaving(
            data,
            scores[a],
            scores[b],
            method=settings["method"],
            model=settings["model"],
            impressions_per_query=settings["impressions"],
            top_k=settings["top_k"],
            eta=settings["eta"],
            epsilon=settings["epsilon"],
            tau=settings["tau"],
            seed=settings["seed"],
            B=B,
            confidence=confidence,
            alpha=alpha,
        )
        delta = metric[a] - metric[b]
        rows.append(
            {
                "system_a": a,
                "system_b": b,
                "delta_metric": delta,
                "preference": r.preference,
                "low": r.low,
                "high": r.high,
                "pvalue": r.pvalue,
                "pvalue_impressions": r.pvalue_impressions,
                "wins": float(r.wins.sum()),
                "ties": float(r.ties.sum()),
                "losses": float(r.losses.sum()),
                "sd": r.sd,
                "impressions_needed": r.impressions_needed,
                "ab_impressions_needed": r.ab_impressions_needed,
                "ab_ratio": r.ab_ratio,
                "agree": _agree(r.preference, delta),
            }
        )
    return InterleavingTable(rows, settings, str(settings["metric"]), alpha, confidence)


def all_pairs(systems: Sequence[str]) -> list[tuple[str, str]]:
    """Every unordered pair, in order (e.g. the checkpoints of one training run).

    >>> all_pairs(["it10", "it20", "it40"])
    [('it10', 'it20'), ('it10', 'it40'), ('it20', 'it40')]
    """
    return list(combinations(systems, 2))


def interleave_with_baseline(data: Any, scores: Mapping[str, Any], exp: Any) -> InterleavingTable:
    """What ``ltr.compare`` reports for an experiment's ``interleaving:`` block: each system (A)
    against the baseline (B) on the test split ``data``; the CI level and α of ``exp.stats``."""
    from omegaconf import OmegaConf  # deferred: only an experiment file's node needs it

    block = exp.interleaving
    config = OmegaConf.to_container(block, resolve=True) if OmegaConf.is_config(block) else dict(block)
    baseline = str(exp.baseline)
    pairs = [(s, baseline) for s in scores if s != baseline]
    stats = exp.stats
    return interleaving_table(
        data,
        scores,
        pairs,
        config,
        B=max(int(stats.B), 1),
        confidence=float(stats.confidence),
        alpha=float(stats.alpha),
    )

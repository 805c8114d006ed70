"""Interleaving of two rankers under simulated users: the online comparison, run offline.

An *impression* shows one query's documents interleaved from two rankings ``A`` and ``B`` (arrays of
the query's document indices, best first); the simulated user clicks (the click models of
:mod:`ltr.clicks.simulation`: ``pbm`` or ``cascade``, attractiveness ``c(y)`` from the label); the
clicks give the impression's outcome ``o ∈ [−1, 1]`` (``+1``: A wins, ``−1``: B wins, ``0``: a tie).

Methods (each returns the shown list and its :class:`Assignment`, the credit rule):

* **team draft** (Radlinski, Kurup & Joachims, CIKM 2008): in each round a coin decides which ranker
  picks first; each picks its highest document not yet shown, joining its team (the team with fewer
  members picks next; on equal sizes the coin of the round). ``o = sign(#clicks on A's team −
  #clicks on B's team)``.
* **balanced** (Joachims 2003): one coin decides who leads; the list takes in turn the next document
  of A and of B (``k_A < k_B``, or equal and A leads → A's next; a document already shown is skipped).
  Credit: with ``c`` the lowest clicked position and ``k = min(rank_A(d_c), rank_B(d_c))``, ``h_A`` =
  clicked documents within A's top ``k``, ``h_B`` likewise; ``o = sign(h_A − h_B)``.
* **probabilistic** (Hofmann, Whiteson & de Rijke, CIKM 2011): each ranker is a softmax over the
  documents, ``P_X(d) ∝ rank_X(d)^−τ`` (τ = 3), over those not yet shown; at each position a fair coin
  picks A or B and that ranker draws the document. The outcome **marginalises over the assignments**
  (Hofmann et al.'s lower-variance estimator): given the list, the assignments are independent across
  positions because the documents left are the same whichever ranker drew, with
  ``P(position i from A | list) = P_A(d_i | R_i) / (P_A(d_i | R_i) + P_B(d_i | R_i))``, ``R_i`` the
  documents not shown above ``i``. With ``D = #clicks credited to A − #clicks credited to B``
  (a Poisson-binomial difference, exact by convolution), ``o = P(D > 0) − P(D < 0)``, the expectation
  of the drawn assignment's ``sign(D)``. ``marginalize=False`` scores the drawn assignment instead.

Per pair (:func:`simulate_interleaving`), every query is shown ``impressions_per_query`` times;
per query ``wins``, ``ties``, ``losses`` (sums of ``P(D > 0)``, … for the probabilistic outcome);
the preference (Chapelle, Joachims, Radlinski & Yue, TOIS 2012)
``Δ_AB = (wins_A − wins_B) / (wins_A + wins_B + ties)``, i.e. the mean outcome, with a bootstrap CI
over queries (:func:`ltr.stats.bootstrap_ci` of the per-query preferences, equal weights since every
query has the same number of impressions) and ``pvalue``, the two-sided t-test of the per-query
preferences against 0 (:func:`ltr.stats.paired.paired_t_test`; the CI's unit, so the two agree: does the
preference hold for new queries?). ``pvalue_impressions`` is the sign test over impressions
(``p = 2·P(X ≤ min(w, m − w))``, ``X ~ Binomial(m, ½)``, ``m`` impressions with a non-zero outcome, ``w`` of
them positive; :func:`ltr.stats.paired.sign_test`): it treats the impressions of one query as independent,
so it speaks only for the queries shown and is far smaller than the CI suggests.

Sample size (normal approximation, two-sided ``α``, power ``1 − β``): an experiment drawing a query at
random per impression has i.i.d. outcomes with mean ``Δ`` and variance ``σ²`` (both estimated from the
simulation's outcomes pooled over queries), so interleaving needs
``n = σ² (z_{α/2} + z_β)² / Δ²`` impressions (:func:`ltr.stats.power.queries_needed`, paired form).
An A/B test of the same pair on clicks@k (each arm shown one ranker's top ``k``, same users) needs
``2 · 2σ_c² (z_{α/2} + z_β)² / Δ_c²`` impressions in all (two arms, ``Δ_c`` the difference of the mean
clicks per impression, ``σ_c²`` their pooled variance); ``ab_ratio`` is that over ``n``.

>>> a, b = np.array([0, 1, 2, 3]), np.array([1, 0, 3, 2])
>>> shown, credit = team_draft(a, b, np.random.default_rng(0))
>>> shown.tolist(), credit.team.tolist()
([1, 0, 2, 3], [-1, 1, 1, -1])
>>> outcome(np.array([True, True, False, False]), credit)   # one click on each team: a tie
0.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.clicks.simulation import CLICK_MODELS, click_probabilities, examination_probabilities
from ltr.core.config_check import check_block, setting
from ltr.core.errors import ConfigError, DataError
from ltr.data import RankingData
from ltr.stats.bootstrap import bootstrap_ci
from ltr.stats.paired import paired_t_test, sign_test
from ltr.stats.power import queries_needed

METHODS = ("team_draft", "balanced", "probabilistic")


@dataclass
class InterleavingConfig:
    """The ``interleaving:`` block of an experiment (``ltr.compare``) and the simulation's options."""

    method: str = setting("team_draft", choices=METHODS)
    model: str = setting("pbm", choices=CLICK_MODELS)  # the simulated users' click model
    impressions: int = setting(100, low=1)  # impressions of every test query
    top_k: int = setting(10, low=1)  # documents shown per impression
    eta: float = setting(1.0, low=0.0)  # PBM examination (1/rank)^eta
    epsilon: float = setting(0.1, low=0.0, high=1.0)  # click noise
    tau: float = setting(3.0, low=0.0, open_low=True)  # probabilistic interleaving's softmax exponent
    seed: int = setting(0, low=0)
    metric: str = "ndcg@10"  # the offline metric whose difference the verdicts are compared with


def check_interleaving_config(given: Mapping[str, Any] | None, where: str = "interleaving") -> dict[str, Any]:
    """The block with defaults filled in and checked (errors name ``where.key``).

    >>> check_interleaving_config({"method": "td"})
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: interleaving.method: expected one of ['team_draft', 'balanced', 'probabilistic'], got 'td'
    """
    return check_block(InterleavingConfig, given, where)


@dataclass(frozen=True)
class Assignment:
    """How one interleaved list credits clicks (see the module docstring).

    ``team``: +1 (A) / −1 (B) per shown position (team draft; probabilistic: the drawn assignment;
    balanced: 0); ``rank_a``, ``rank_b``: 1-based rank of each shown document in A and B (balanced);
    ``p_a``: P(position from A | list) (probabilistic).
    """

    method: str
    team: np.ndarray
    rank_a: np.ndarray
    rank_b: np.ndarray
    p_a: np.ndarray = field(default_factory=lambda: np.empty(0))


def _check_pair(a: Any, b: Any, k: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape or not np.array_equal(np.sort(a), np.sort(b)):
        raise DataError("interleaving: the two rankings must order the same documents (each once)")
    if np.unique(a).shape[0] != a.shape[0]:
        raise DataError("interleaving: a ranking lists a document twice")
    n = a.shape[0] if k is None else min(int(k), a.shape[0])
    return a, b, n


def _ranks(order: np.ndarray, shown: np.ndarray) -> np.ndarray:
    where = {int(d): i + 1 for i, d in enumerate(order)}
    return np.array([where[int(d)] for d in shown], dtype=np.int64)


def _assignment(
    method: str, a: np.ndarray, b: np.ndarray, shown: list[int], team: list[int], p_a: Any = ()
) -> tuple[np.ndarray, Assignment]:
    s = np.array(shown, dtype=np.int64)
    credit = Assignment(
        method, np.array(team, dtype=np.int8), _ranks(a, s), _ranks(b, s), np.asarray(p_a, float)
    )
    return s, credit


def team_draft(a: Any, b: Any, rng: Any, k: int | None = None) -> tuple[np.ndarray, Assignment]:
    """Team-draft interleaving of rankings ``a`` and ``b`` (top ``k``, default all); a coin per round is
    ``rng.random() < 0.5`` → A picks first.

    >>> team_draft([2, 0, 1], [0, 1, 2], np.random.default_rng(1))[0].tolist()
    [0, 2, 1]
    """
    a, b, n = _check_pair(a, b, k)
    shown: list[int] = []
    team: list[int] = []
    used: set[int] = set()
    ia = ib = size_a = size_b = 0
    while len(shown) < n:
        a_picks = size_a < size_b or (size_a == size_b and rng.random() < 0.5)
        if a_picks:
            while int(a[ia]) in used:
                ia += 1
            doc, size_a = int(a[ia]), size_a + 1
        else:
            while int(b[ib]) in used:
                ib += 1
            doc, size_b = int(b[ib]), size_b + 1
        shown.append(doc)
        team.append(1 if a_picks else -1)
        used.add(doc)
    return _assignment("team_draft", a, b, shown, team)


def balanced(a: Any, b: Any, rng: Any, k: int | None = None) -> tuple[np.ndarray, Assignment]:
    """Balanced interleaving (Joachims 2003): ``rng.random() < 0.5`` → A leads.

    >>> balanced([2, 0, 1], [0, 1, 2], np.random.default_rng(1))[0].tolist()
    [0, 2, 1]
    """
    a, b, n = _check_pair(a, b, k)
    a_first = rng.random() < 0.5
    shown: list[int] = []
    used: set[int] = set()
    ka = kb = 0
    while len(shown) < n:
        if ka < kb or (ka == kb and a_first):
            doc, ka = int(a[ka]), ka + 1
        else:
            doc, kb = int(b[kb]), kb + 1
        if doc not in used:
            shown.append(doc)
            used.add(doc)
    return _assignment("balanced", a, b, shown, [0] * len(shown))


def softmax_weights(order: np.ndarray, tau: float) -> np.ndarray:
    """Per document index, ``rank^−τ`` of its rank in ``order`` (the unnormalised softmax ranker).

    >>> softmax_weights(np.array([2, 0, 1]), 1.0).tolist()
    [0.5, 0.3333333333333333, 1.0]
    """
    w = np.empty(order.shape[0])
    w[order] = np.arange(1, order.shape[0] + 1, dtype=np.float64) ** -float(tau)
    return w


def probabilistic(
    a: Any, b: Any, rng: Any, k: int | None = None, *, tau: float = 3.0
) -> tuple[np.ndarray, Assignment]:
    """Probabilistic interleaving (Hofmann et al. 2011): per position ``rng.random() < 0.5`` → A draws,
    then one ``rng.random()`` draws the document from that ranker's softmax over the documents left
    (inverse CDF in document-index order).

    >>> shown, credit = probabilistic([0, 1], [1, 0], np.random.default_rng(0), tau=1.0)
    >>> shown.tolist(), credit.p_a.round(4).tolist()
    ([0, 1], [0.6667, 0.5])
    """
    a, b, n = _check_pair(a, b, k)
    if not (isinstance(tau, int | float) and not isinstance(tau, bool) and tau > 0):
        raise ConfigError(f"interleaving.tau: expected a number > 0, got {tau!r}")
    m = a.shape[0]
    idx = np.unique(a)
    if not np.array_equal(idx, np.arange(m)):  # any document ids: work on positions in sorted order
        pos_a, pos_b = np.searchsorted(idx, a), np.searchsorted(idx, b)
    else:
        pos_a, pos_b = a, b
    w_a, w_b = softmax_weights(pos_a, tau), softmax_weights(pos_b, tau)
    left = np.ones(m, dtype=bool)
    shown: list[int] = []
    team: list[int] = []
    p_a: list[float] = []
    for _ in range(n):
        a_draws = rng.random() < 0.5
        pa, pb = np.where(left, w_a, 0.0), np.where(left, w_b, 0.0)
        pa, pb = pa / pa.sum(), pb / pb.sum()
        p = pa if a_draws else pb
        doc = min(int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right")), m - 1)
        while not left[doc]:  # rounding at the end of the CDF
            doc -= 1
        left[doc] = False
        shown.append(int(idx[doc]))
        team.append(1 if a_draws else -1)
        p_a.append(pa[doc] / (pa[doc] + pb[doc]))
    return _assignment("probabilistic", a, b, shown, team, p_a)


INTERLEAVERS = {"team_draft": team_draft, "balanced": balanced, "probabilistic": probabilistic}


def credit_difference(p_a: np.ndarray) -> np.ndarray:
    """Distribution of ``D = #A − #B`` over clicked positions credited to A with probabilities ``p_a``
    (independent): ``out[j]`` = P(D = j − len(p_a)).

    >>> credit_difference(np.array([0.5, 0.5])).tolist()
    [0.25, 0.0, 0.5, 0.0, 0.25]
    """
    m = p_a.shape[0]
    dist = np.zeros(2 * m + 1)
    dist[m] = 1.0
    for p in p_a:  # each click moves D by +1 (A) or −1 (B)
        dist = p * np.roll(dist, 1) + (1.0 - p) * np.roll(dist, -1)
    return dist


def outcome(clicks: Any, assignment: Assignment, *, marginalize: bool = True) -> float:
    """The impression's outcome in [−1, 1] from its clicks (bool per shown position) and credit.

    >>> credit = Assignment("balanced", np.zeros(3), np.array([1, 2, 3]), np.array([2, 1, 4]))
    >>> outcome(np.array([False, False, True]), credit)   # k = min(3, 4): A's top 3 holds it, B's top 3 not
    1.0
    """
    c = np.asarray(clicks, dtype=bool)
    if not c.any():
        return 0.0
    if assignment.method == "balanced":
        last = int(np.flatnonzero(c)[-1])
        k = min(assignment.rank_a[last], assignment.rank_b[last])
        h_a = int(np.sum(c & (assignment.rank_a <= k)))
        h_b = int(np.sum(c & (assignment.rank_b <= k)))
        return float(np.sign(h_a - h_b))
    if assignment.method == "probabilistic" and marginalize:
        dist = credit_difference(assignment.p_a[c])
        m = int(c.sum())
        return float(dist[m + 1 :].sum() - dist[:m].sum())
    return float(np.sign(int(np.sum(assignment.team[c]))))


def draw_clicks(
    labels: np.ndarray, *, model: str, eta: float, epsilon: float, max_label: float, rng: np.random.Generator
) -> np.ndarray:
    """Clicks (bool) of simulated users on lists with grades ``labels`` (impressions × positions), under
    ``pbm`` or ``cascade`` with the attractiveness and examination of :mod:`ltr.clicks.simulation`."""
    attract = click_probabilities(labels, epsilon=epsilon, max_label=max_label)
    u = rng.random(labels.shape)
    if model == "pbm":
        return u < examination_probabilities(np.arange(labels.shape[1]), eta=eta) * attract
    attracted = u < attract  # cascade: the first attractive document is clicked, nothing below is seen
    first = np.where(attracted.any(axis=1), attracted.argmax(axis=1), labels.shape[1])
    return np.arange(labels.shape[1]) == first[:, None]


@dataclass(frozen=True)
class InterleavingResult:
    """One pair interleaved: per query ``wins`` / ``ties`` / ``losses`` of A; ``outcomes`` (queries ×
    impressions); the preference with its CI, sign-test p-value and the sample sizes (module docstring);
    ``sd`` the per-impression outcome sd; ``ab_clicks_delta`` / ``ab_sd`` the A/B test's difference of
    mean clicks@k per impression and their pooled sd."""

    method: str
    model: str
    query_ids: np.ndarray
    wins: np.ndarray
    ties: np.ndarray
    losses: np.ndarray
    outcomes: np.ndarray
    preference: float
    low: float
    high: float
    pvalue: float  # t-test of the per-query preferences (queries are the unit, as for the CI)
    sd: float
    impressions_needed: int | None
    ab_clicks_delta: float
    ab_sd: float
    ab_impressions_needed: int | None
    confidence: float
    pvalue_impressions: float = math.nan  # sign test over impressions (the queries shown only)

    def per_query(self) -> dict[str, np.ndarray]:
        """Per query: ``qid``, ``wins``, ``ties``, ``losses`` of A and its ``preference`` (mean outcome)."""
        n = self.outcomes.shape[1]
        return {"qid": self.query_ids, "wins": self.wins, "ties": self.ties, "losses": self.losses,
                "preference": (self.wins - self.losses) / n}  # fmt: skip

    @property
    def ab_ratio(self) -> float | None:
        """A/B impressions (both arms) over interleaving impressions at the same power."""
        if self.impressions_needed is None or self.ab_impressions_needed is None:
            return None
        return self.ab_impressions_needed / self.impressions_needed


def impression_orders(
    scores_a: np.ndarray, scores_b: np.ndarray, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One query's two rankings for each of ``m`` impressions (``m × n`` document indices, best first).

    Documents with equal scores are shown in an order drawn per impression, the same draw for both
    rankers (so identical scores give identical lists): the expectation the ``ltr`` preset's
    ``ties=average`` metrics take. A query without ties draws nothing.

    >>> a, b = impression_orders(np.array([1.0, 1.0, 0.0]), np.array([0.0, 1.0, 2.0]), 4, np.random.default_rng(0))
    >>> a[:, 2].tolist(), sorted({tuple(r) for r in a[:, :2].tolist()}), b.tolist()[0]
    ([2, 2, 2, 2], [(0, 1), (1, 0)], [2, 1, 0])
    """
    n = scores_a.shape[0]
    if np.unique(scores_a).size == n and np.unique(scores_b).size == n:
        order_a, order_b = np.argsort(-scores_a, kind="stable"), np.argsort(-scores_b, kind="stable")
        return np.broadcast_to(order_a, (m, n)), np.broadcast_to(order_b, (m, n))
    keys = rng.random((m, n))
    return tuple(np.lexsort((keys, np.broadcast_to(-s, (m, n))), axis=-1) for s in (scores_a, scores_b))


def _sample_size(delta: float, sd: float, *, paired: bool, alpha: float, power: float) -> int | None:
    if delta == 0.0 or not np.isfinite(delta) or sd == 0.0:
        return None
    return queries_needed(delta, sd, alpha=alpha, power=power, paired=paired)


def simulate_interleaving(
    data: RankingData,
    scores_a: Any,
    scores_b: Any,
    *,
    method: str = "team_draft",
    model: str = "pbm",
    impressions_per_query: int = 100,
    top_k: int = 10,
    eta: float = 1.0,
    epsilon: float = 0.1,
    max_label: float | None = None,
    tau: float = 3.0,
    seed: int = 0,
    B: int = 2000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
) -> InterleavingResult:
    """Interleave rankers A and B (their scores on ``data``) for simulated users (module docstring).

    Labels are the users' relevance grades (``max_label``: the grade clicked with probability 1;
    default the largest label, at least 1). Queries with one document are shown too (always a tie).
    Tied scores are ordered at random per impression (:func:`impression_orders`).
    """
    cfg = {"method": method, "model": model, "impressions": impressions_per_query, "top_k": top_k,
           "eta": eta, "epsilon": epsilon, "tau": tau, "seed": seed}  # fmt: skip
    check_interleaving_config(cfg)
    sa, sb = (np.asarray(s, dtype=np.float64) for s in (scores_a, scores_b))
    for name, s in (("scores_a", sa), ("scores_b", sb)):
        if s.shape != (data.n_docs,) or not np.all(np.isfinite(s)):
            raise DataError(f"{data.name}: {name} must be {data.n_docs} finite numbers, got shape {s.shape}")
    if data.n_queries < 2:
        raise DataError(f"{data.name}: interleaving needs at least 2 queries (a CI over queries)")
    if data.y.min(initial=0.0) < 0:
        raise DataError(f"{data.name}: simulated users need labels >= 0")
    ymax = float(max(data.y.max(initial=0.0), 1.0) if max_label is None else max_label)
    if not ymax > 0:
        raise ConfigError(f"max_label: expected a number > 0, got {max_label!r}")
    interleave = INTERLEAVERS[method]
    extra = {"tau": tau} if method == "probabilistic" else {}
    rng, ab_rng = np.random.default_rng(seed), np.random.default_rng([seed, 1])
    users = {"model": model, "eta": eta, "epsilon": epsilon, "max_label": ymax}
    off = data.offsets
    outcomes = np.zeros((data.n_queries, impressions_per_query))
    ab_clicks = np.zeros((2, data.n_queries, impressions_per_query))
    for q in range(data.n_queries):
        y, rows = data.y[off[q] : off[q + 1]], slice(off[q], off[q + 1])
        ra, rb = impression_orders(sa[rows], sb[rows], impressions_per_query, rng)
        lists = [interleave(a, b, rng, top_k, **extra) for a, b in zip(ra, rb, strict=True)]
        clicks = draw_clicks(np.stack([y[s] for s, _ in lists]), rng=rng, **users)
        outcomes[q] = [outcome(c, credit) for c, (_, credit) in zip(clicks, lists, strict=True)]
        orders = impression_orders(sa[rows], sb[rows], impressions_per_query, ab_rng)
        for arm, order in enumerate(orders):  # the A/B test: each arm shows one ranker's top k
            ab_clicks[arm, q] = draw_clicks(y[order[:, :top_k]], rng=ab_rng, **users).sum(axis=1)
    wins = np.clip(outcomes, 0.0, None).sum(axis=1)
    losses = np.clip(-outcomes, 0.0, None).sum(axis=1)
    ties = impressions_per_query - wins - losses
    per_query = outcomes.mean(axis=1)
    ci = bootstrap_ci(per_query, B=B, confidence=confidence, seed=seed)
    flat = outcomes.ravel()
    by_impression = sign_test(flat, np.zeros_like(flat))
    by_query = paired_t_test(per_query, np.zeros_like(per_query)) if per_query.size >= 2 else by_impression
    delta, sd = float(flat.mean()), float(flat.std())
    click_a, click_b = ab_clicks[0].ravel(), ab_clicks[1].ravel()
    ab_delta = float(click_a.mean() - click_b.mean())
    ab_sd = math.sqrt((click_a.var() + click_b.var()) / 2.0)
    per_arm = _sample_size(ab_delta, ab_sd, paired=False, alpha=alpha, power=power)
    return InterleavingResult(
        method=method,
        model=model,
        query_ids=data.query_ids,
        wins=wins,
        ties=ties,
        losses=losses,
        outcomes=outcomes,
        preference=delta,
        low=ci.low,
        high=ci.high,
        pvalue=float(by_query.pvalue),
        pvalue_impressions=float(by_impression.pvalue),
        sd=sd,
        impressions_needed=_sample_size(delta, sd, paired=True, alpha=alpha, power=power),
        ab_clicks_delta=ab_delta,
        ab_sd=ab_sd,
        ab_impressions_needed=None if per_arm is None else 2 * per_arm,
        confidence=confidence,
    )

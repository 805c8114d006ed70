"""Seeded click simulation: turn a labelled ranking dataset into position-biased click logs.

A *production ranker* (the logging policy) orders each query's documents; the top ``top_k`` are
shown; a simulated user clicks according to a click model; every query is shown ``sessions``
times with independent clicks. Models (Chuklin, Markov & de Rijke, *Click Models for Web Search*):

* click probability of a document with grade ``y`` (the "attractiveness")
  ``c(y) = ε + (1 − ε)·(2^y − 1)/(2^ymax − 1)`` (noise ε: a non-relevant document is clicked with
  probability ε, a perfect one with probability 1);
* **position-based model** (``pbm``): the document at 1-based position ``r`` is examined with
  probability ``θ_r = (1/r)^η`` independently of the others, and clicked iff examined and
  attracted: ``P(click) = θ_r·c(y)``;
* **cascade model** (``cascade``): the user scans from the top and clicks the first attractive
  document (probability ``c(y)`` each), then leaves; nothing below the click is examined.

The logging policy is :func:`noisy_feature_scores` (one feature plus seeded Gaussian noise) or any
scores the caller supplies (e.g. a weak model trained on a few labelled queries).

The log keeps everything an unbiased learner needs: one query block per session with the shown
documents **in display order** (XGBoost's ``lambdarank_unbiased`` reads positions from row order),
``position`` (0-based display position; LightGBM's ``Dataset(position=...)``), and the source rows,
so results can be evaluated on the true labels.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> d = RankingData(X=np.zeros((4, 1), np.float32), y=[0, 4, 0, 2], qid=[1, 1, 1, 1])
>>> log = simulate_clicks(d, np.array([4.0, 3.0, 2.0, 1.0]), top_k=3, sessions=2, seed=0)
>>> log.position.tolist(), log.source_row.tolist(), log.data.qid.tolist()
([0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 2], [1, 1, 1, 2, 2, 2])
>>> click_probabilities(np.array([0, 2, 4]), epsilon=0.1, max_label=4).round(4).tolist()
[0.1, 0.28, 1.0]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.core.config_check import check_block, setting
from ltr.core.errors import ConfigError, DataError
from ltr.core.ranking import descending_ranks, query_index
from ltr.data import RankingData

CLICK_MODELS = ("pbm", "cascade")


@dataclass(frozen=True)
class ClickLog:
    """Simulated click logs.

    ``data``: one query block per session (qids 1, 2, …), its rows the shown documents in display
    order, ``y`` = clicks (0/1); ``position``: 0-based display position per row; ``source_row``:
    row of the labelled dataset each log row shows; ``source_query``: labelled-query position of
    each session; ``examination``: the probability that the row was examined under the click model.
    """

    data: RankingData
    position: np.ndarray
    source_row: np.ndarray
    source_query: np.ndarray
    examination: np.ndarray

    @property
    def click_rate(self) -> float:
        return float(self.data.y.mean()) if self.data.n_docs else 0.0


def click_probabilities(labels: np.ndarray, *, epsilon: float, max_label: float) -> np.ndarray:
    """``c(y) = ε + (1 − ε)(2^y − 1)/(2^ymax − 1)`` (labels above ``max_label`` are capped)."""
    y = np.minimum(np.asarray(labels, dtype=np.float64), max_label)
    return epsilon + (1.0 - epsilon) * (np.exp2(y) - 1.0) / (2.0**max_label - 1.0)


def examination_probabilities(position: np.ndarray, *, eta: float) -> np.ndarray:
    """PBM examination ``θ_r = (1/r)^η`` for 0-based positions (``r = position + 1``).

    >>> examination_probabilities(np.array([0, 1, 3]), eta=1.0).tolist()
    [1.0, 0.5, 0.25]
    """
    return (1.0 / (np.asarray(position, dtype=np.float64) + 1.0)) ** eta


def noisy_feature_scores(data: RankingData, *, feature: int, noise: float, seed: int) -> np.ndarray:
    """A production ranker: feature ``feature`` standardised over the data, plus ``noise``·N(0, 1).

    ``feature`` is a 1-based feature id, as in SVMlight files (column ``feature - 1`` of X; the one
    numbering of ``docs/data.md``).

    >>> from ltr.data import RankingData
    >>> d = RankingData(X=np.array([[1.0], [3.0]], np.float32), y=[0, 1], qid=[1, 1])
    >>> noisy_feature_scores(d, feature=1, noise=0.0, seed=0).tolist()
    [-1.0, 1.0]
    """
    check_block(LoggingPolicy, {"feature": feature, "noise": noise}, "clicks.logging")
    if not feature <= data.n_features:
        raise ConfigError(
            f"clicks.logging.feature: expected a 1-based feature id 1..{data.n_features}, got {feature!r}"
        )
    x = data.X[:, [feature - 1]]
    x = np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float64).ravel()
    x = (x - x.mean()) / (x.std() or 1.0)
    return x + noise * np.random.default_rng(seed).standard_normal(x.shape[0])


def simulate_clicks(
    data: RankingData,
    logging_scores: np.ndarray,
    *,
    model: str = "pbm",
    eta: float = 1.0,
    epsilon: float = 0.1,
    max_label: float | None = None,
    top_k: int = 10,
    sessions: int = 10,
    seed: int = 0,
) -> ClickLog:
    """Click logs of ``data`` ranked by ``logging_scores`` (module docstring has the models)."""
    options = {"model": model, "eta": eta, "epsilon": epsilon, "top_k": top_k, "sessions": sessions}
    check_block(ClickConfig, options, "clicks")
    scores = np.asarray(logging_scores, dtype=np.float64)
    if scores.shape != (data.n_docs,) or not np.all(np.isfinite(scores)):
        raise DataError(
            f"{data.name}: logging scores must be {data.n_docs} finite numbers, got shape {scores.shape}"
        )
    if data.n_docs and (data.y.min() < 0 or not np.all(np.isfinite(data.y))):
        raise DataError(f"{data.name}: click simulation needs finite labels >= 0")
    ymax = float(max(data.y.max(initial=0.0), 1.0) if max_label is None else max_label)
    if not ymax > 0:
        raise ConfigError(f"clicks.max_label: expected a number > 0, got {max_label!r}")

    # shown documents of every query in display order (ties in the logging scores: input order)
    rank = descending_ranks(scores, data.offsets, ties="first").astype(np.int64)
    qidx = query_index(data.offsets)
    shown = np.flatnonzero(rank <= top_k)
    shown = shown[np.lexsort((rank[shown], qidx[shown]))]
    n_shown = np.bincount(qidx[shown], minlength=data.n_queries)
    shown_off = np.r_[0, np.cumsum(n_shown)]

    # every query's block repeated `sessions` times (query-major)
    session_query = np.repeat(np.arange(data.n_queries), sessions)
    sizes = n_shown[session_query]
    starts = np.repeat(shown_off[session_query], sizes)
    within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = shown[starts + within]
    position = within.astype(np.int64)
    session_id = np.repeat(np.arange(session_query.shape[0]), sizes)

    rng = np.random.default_rng(seed)
    attract = click_probabilities(data.y[rows], epsilon=epsilon, max_label=ymax)
    u = rng.random(rows.shape[0])
    if model == "pbm":
        examined = examination_probabilities(position, eta=eta)
        clicks = u < examined * attract
    else:  # cascade: the first attractive document of a session is clicked, nothing below it is seen
        attracted = u < attract
        clicks = attracted & (_above(attracted.astype(np.float64), sizes) == 0)
        examined = np.ones(rows.shape[0])  # P(no attractive document above): a product down the list
        for pos in range(1, int(position.max(initial=0)) + 1):
            idx = np.flatnonzero(position == pos)
            examined[idx] = examined[idx - 1] * (1.0 - attract[idx - 1])
    log_data = RankingData(
        X=data.X[rows],
        y=clicks.astype(np.float64),
        qid=session_id + 1,
        name=f"{data.name} ({model} clicks, {sessions} sessions, top {top_k})",
    )
    return ClickLog(
        data=log_data,
        position=position,
        source_row=rows,
        source_query=session_query,
        examination=examined,
    )


def _above(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per row, the sum of ``values`` over the rows above it in the same session (``sizes`` rows each)."""
    total = np.cumsum(values) - values
    nonempty = sizes > 0
    starts = (np.cumsum(sizes) - sizes)[nonempty]
    return total - np.repeat(total[starts], sizes[nonempty])


@dataclass
class LoggingPolicy:
    """The production ranker that ordered the shown lists: one feature, standardised, plus noise."""

    kind: str = setting("feature", choices=("feature",))
    feature: int = setting(1, low=1)  # 1-based feature id (column feature - 1 of X)
    noise: float = setting(1.0, low=0.0)  # standard deviation of the Gaussian noise


@dataclass
class ClickConfig:
    """The ``clicks:`` block of a click-trained model config (module docstring has the models)."""

    model: str = setting("pbm", choices=CLICK_MODELS)  # pbm (position-based) | cascade
    eta: float = setting(1.0, low=0.0)  # PBM examination (1/rank)^eta
    epsilon: float = setting(0.1, low=0.0, high=1.0)  # click noise
    max_label: float | None = setting(None, low=0.0, open_low=True)  # ymax; None = the largest label
    top_k: int = setting(10, low=1)  # documents shown per session
    sessions: int = setting(10, low=1)  # independent click draws per training query
    logging: LoggingPolicy = field(default_factory=LoggingPolicy)
    # a `python -m ltr.clicks propensity --output` JSON file: lambdamart_clicks then weights every
    # (clicked, non-clicked) pair by 1/θ of the clicked position (pairwise IPS, ltr/models/clicks/pairwise_ips.py)
    propensities: str | None = setting(None)
    # IPS clipping: the weights use max(θ_r, floor), at most 1/floor (0 = no clipping)
    propensity_floor: float = setting(0.0, low=0.0, high=1.0)


def resolve_click_config(cfg: Mapping[str, Any] | None, where: str = "model.clicks") -> dict[str, Any]:
    """The ``clicks:`` block with defaults filled in and checked (:class:`ClickConfig`)."""
    return check_block(ClickConfig, cfg, where)


def clicks_from_config(data: RankingData, cfg: Mapping[str, Any] | None, *, seed: int) -> ClickLog:
    """Simulate click logs of ``data`` as a ``clicks:`` config block says (logging ranker included)."""
    c = resolve_click_config(cfg)
    log = c["logging"]
    scores = noisy_feature_scores(data, feature=log["feature"], noise=float(log["noise"]), seed=seed)
    return simulate_clicks(
        data,
        scores,
        model=c["model"],
        eta=float(c["eta"]),
        epsilon=float(c["epsilon"]),
        max_label=c["max_label"],
        top_k=int(c["top_k"]),
        sessions=int(c["sessions"]),
        seed=seed + 1,
    )


def randomize_top(scores: np.ndarray, offsets: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """RandTop-n: scores whose ranking shuffles each query's top ``n`` uniformly (the rest keep order).

    >>> s = randomize_top(np.array([3.0, 2.0, 1.0, 0.0]), np.array([0, 4]), 2, np.random.default_rng(0))
    >>> sorted(np.argsort(-s)[:2].tolist()), np.argsort(-s)[2:].tolist()
    ([0, 1], [2, 3])
    """
    rank = descending_ranks(np.asarray(scores, dtype=np.float64), offsets, ties="first")
    out = -rank.astype(np.float64)  # the logging order itself
    top = rank <= n
    out[top] = float(n) + rng.random(int(top.sum()))  # above every other document, in random order
    return out


def simulate_log_table(
    data: RankingData,
    *,
    rounds: int,
    rand_top: int = 0,
    feature: int = 1,
    noise: float = 1.0,
    model: str = "pbm",
    eta: float = 1.0,
    epsilon: float = 0.1,
    top_k: int = 10,
    sessions: int = 1,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """A click log with the columns ``session, qid, doc, position (1-based), click``.

    Each of ``rounds`` rounds draws a new production ranker (:func:`noisy_feature_scores` with a new
    noise seed: the orders differ between rounds, as in a log spanning ranker updates) and, when
    ``rand_top`` > 0, shuffles its top ``rand_top`` per round (RandTop-n randomization); then
    :func:`simulate_clicks` shows each query ``sessions`` times. ``doc`` is the row of ``data``.
    """
    if not (isinstance(rounds, int) and rounds >= 1):
        raise ConfigError(f"rounds: expected an integer >= 1, got {rounds!r}")
    if not (isinstance(rand_top, int) and rand_top >= 0):
        raise ConfigError(f"rand_top: expected an integer >= 0, got {rand_top!r}")
    rng = np.random.default_rng(seed)
    parts: list[dict[str, np.ndarray]] = []
    first_session = 0
    for r in range(rounds):
        scores = noisy_feature_scores(data, feature=feature, noise=noise, seed=seed + 2 * r)
        if rand_top:
            scores = randomize_top(scores, data.offsets, rand_top, rng)
        log = simulate_clicks(
            data,
            scores,
            model=model,
            eta=eta,
            epsilon=epsilon,
            top_k=top_k,
            sessions=sessions,
            seed=seed + 2 * r + 1,
        )
        parts.append(
            {
                "session": log.data.qid.astype(np.int64) + first_session,
                "qid": data.qid[log.source_row],
                "doc": log.source_row.astype(np.int64),
                "position": log.position + 1,
                "click": log.data.y.astype(np.int64),
            }
        )
        first_session += log.data.n_queries
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}

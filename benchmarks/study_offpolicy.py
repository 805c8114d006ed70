"""Bias and CI coverage of the off-policy estimators (ltr.clicks.offpolicy) against simulated truth.

For each seed: a synthetic dataset, a click log of a noisy production ranker (PBM or cascade users,
examination (1/r)^eta known to the estimators), a new ranker (the true labels plus noise), the four
estimators with a 95 % bootstrap CI over queries, and the truth (the new ranker's expected clicks@k /
click-DCG@k under the simulated users, on the log's queries). Prints, per case and estimator, the mean
bias, its standard error, the RMSE, the share of seeds whose CI held the truth on the log's queries
(``cover``) and the share whose CI held the mean over 5,000 fresh queries (``cover∞``: what a bootstrap
CI over queries is for).

    python benchmarks/study_offpolicy.py --seeds 100          # the table in docs/online.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ltr.clicks.logs import impression_log
from ltr.clicks.offpolicy import ESTIMATORS, estimate_offpolicy, fit_reward_model, new_ranks, true_value
from ltr.clicks.simulation import click_probabilities, examination_probabilities, simulate_log_table
from ltr.data.synthetic import generate

CASES = {
    # name: (user model, documents shown per session, what it shows)
    "pbm, all shown": ("pbm", 100, "every candidate shown: the estimators' assumptions hold"),
    "pbm, top 5 shown": ("pbm", 5, "the log shows 5 documents; the new top 10 has documents never shown"),
    "cascade, all shown": ("cascade", 100, "cascade users: examination depends on the clicks above"),
}


def one_seed(
    seed: int, model: str, top_k: int, *, queries: int, rounds: int, k: int, metric: str, eta: float
):
    data = generate(queries, seed=seed, max_docs=20)
    table = simulate_log_table(data, rounds=rounds, model=model, eta=eta, top_k=top_k, noise=1.0, seed=seed)
    log = impression_log(**{c: table[c] for c in ("session", "qid", "doc", "position", "click")})
    theta = examination_probabilities(np.arange(max(int(table["position"].max()), k)), eta=eta)  # 0-based in
    qid, doc = data.qid.astype(str), np.arange(data.n_docs).astype(str)
    rng = np.random.default_rng(10_000 + seed)
    scores = data.y + rng.normal(0.0, 1.0, data.n_docs)  # the new ranker: better than production
    gamma = click_probabilities(data.y, epsilon=0.1, max_label=max(float(data.y.max()), 1.0))
    pair_x = data.X[np.asarray(log.pair_doc, dtype=np.int64)]
    reward = fit_reward_model(log, theta, pair_x, data.X, seed=seed)
    theta_k = examination_probabilities(np.arange(k), eta=eta)
    est = estimate_offpolicy(
        log, theta, qid=qid, doc=doc, scores=scores, k=k, metric=metric, reward=reward, n_bootstrap=1000,
        seed=seed,
    )  # fmt: skip
    truth = true_value(gamma, new_ranks(qid, scores), qid, theta_k, k=k, metric=metric, model=model)
    t = float(np.mean([truth[q] for q in est.queries]))
    return t, est


def population_truth(*, k: int, metric: str, eta: float, model: str, queries: int = 5000) -> float:
    """The new ranker's mean value over many fresh queries: what a CI over queries estimates."""
    data = generate(queries, seed=987_654, max_docs=20)
    qid = data.qid.astype(str)
    scores = data.y + np.random.default_rng(987_654).normal(0.0, 1.0, data.n_docs)
    gamma = click_probabilities(data.y, epsilon=0.1, max_label=max(float(data.y.max()), 1.0))
    theta_k = examination_probabilities(np.arange(k), eta=eta)
    truth = true_value(gamma, new_ranks(qid, scores), qid, theta_k, k=k, metric=metric, model=model)
    return float(np.mean(list(truth.values())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--metric", choices=("clicks", "dcg"), default="clicks")
    parser.add_argument("--eta", type=float, default=1.0)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"{args.seeds} seeds, {args.queries} queries, {args.rounds} sessions per query, k = {args.k}, "
          f"metric {args.metric}, examination (1/r)^{args.eta:g}")  # fmt: skip
    print(
        f"{'case':<20} {'estimator':<12} {'truth':>7} {'bias':>8} {'±se':>7} {'rmse':>7} {'cover':>6} {'cover∞':>6}"
    )
    for case, (model, top_k, _) in CASES.items():
        rows = {e: [] for e in ESTIMATORS}
        truths = []
        population = population_truth(k=args.k, metric=args.metric, eta=args.eta, model=model)
        for seed in range(args.seeds):
            truth, est = one_seed(seed, model, top_k, queries=args.queries, rounds=args.rounds, k=args.k,
                                  metric=args.metric, eta=args.eta)  # fmt: skip
            truths.append(truth)
            for e in ESTIMATORS:
                low, high = est.ci[e]
                rows[e].append((est.mean[e] - truth, low <= truth <= high, low <= population <= high))
        for e in ESTIMATORS:
            err = np.array([r[0] for r in rows[e]])
            cover, cover_population = np.mean([r[1] for r in rows[e]]), np.mean([r[2] for r in rows[e]])
            se = err.std(ddof=1) / np.sqrt(err.size)
            print(f"{case:<20} {e:<12} {np.mean(truths):>7.4f} {err.mean():>+8.4f} {se:>7.4f} "
                  f"{np.sqrt(np.mean(err**2)):>7.4f} {cover:>6.2f} {cover_population:>6.2f}")  # fmt: skip
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

"""The neural rankers (``ltr/models/neural/``): losses against their formulas worked by hand in numpy,
gradients against finite differences, the networks against a numpy reference implementation, a
planted non-linear relevance function learned better than the linear model, seeds, padding and the
list cap, saving without pickle, and the refusals of bad configs."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy.special import log_softmax
from sklearn.metrics import ndcg_score

pytest.importorskip("jax", reason="the neural extra (jax, optax, rax) is not installed")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from ltr.core.errors import ConfigError, DataError  # noqa: E402
from ltr.data import RankingData  # noqa: E402
from ltr.data.synthetic import generate  # noqa: E402
from ltr.metrics import evaluate  # noqa: E402
from ltr.models import build_ranker, load_ranker  # noqa: E402
from ltr.models.neural import lists, losses, network  # noqa: E402
from ltr.models.params import NEURAL_LOSSES  # noqa: E402

TINY = {"n_epochs": 3, "hidden_units": [8, 4], "batch_size": 64}  # one batch an epoch: one compiled shape


def mean_metric(name: str, data: RankingData, scores: np.ndarray) -> float:
    """ltr's metric over the queries with a relevant document (the early-stopping convention)."""
    return float(np.nanmean(evaluate(name, data.y, scores, data.offsets)[name]))


def _np(*values):
    return [jnp.asarray(np.asarray(v)) for v in values]


# --- the losses, by hand ---------------------------------------------------------------------------------


def _dcg_discount(rank):
    return 1.0 / np.log2(1.0 + rank)


def by_hand(loss: str, s: np.ndarray, y: np.ndarray, temperature: float = 1.0) -> float:
    """Each loss's formula from the docs, for one list, in float64 numpy."""
    n = len(s)
    if loss == "softmax":
        return float(-np.sum(y / y.sum() * log_softmax(s)))
    if loss == "listmle":
        order = np.argsort(-y, kind="stable")
        ss = s[order]
        return float(-sum(ss[k] - np.log(np.sum(np.exp(ss[k:]))) for k in range(n)))
    gain = 2.0**y - 1.0
    ideal = np.sum(np.sort(gain)[::-1] * _dcg_discount(np.arange(1, n + 1)))
    if loss == "approxndcg":
        sig = 1.0 / (1.0 + np.exp(-(s[None, :] - s[:, None]) / temperature))  # sig[i, j] = σ((s_j − s_i)/T)
        ranks = 1.0 + sig.sum(axis=1) - 0.5  # the j = i term is σ(0) = 0.5
        return float(-np.sum(gain * _dcg_discount(ranks)) / ideal)
    pairs = [(i, j) for i in range(n) for j in range(n) if y[i] > y[j]]
    logistic = {(i, j): math.log1p(math.exp(-(s[i] - s[j]))) for i, j in pairs}
    if loss == "pairwise":
        return float(np.mean([logistic[p] for p in pairs]))
    rank = np.empty(n)
    rank[np.argsort(-s, kind="stable")] = np.arange(1, n + 1)
    delta = {
        (i, j): abs(gain[i] - gain[j])
        * abs(_dcg_discount(abs(rank[i] - rank[j])) - _dcg_discount(abs(rank[i] - rank[j]) + 1))
        / ideal
        for i, j in pairs
    }
    return float(np.mean([delta[p] * logistic[p] for p in pairs]))


LISTS = [
    (np.array([2.0, 1.0, 0.0, -1.0]), np.array([2.0, 1.0, 0.0, 0.0])),
    (np.array([0.3, 1.7, -0.4, 0.9, 0.0]), np.array([0.0, 1.0, 3.0, 1.0, 0.0])),
]


@pytest.mark.parametrize("loss", NEURAL_LOSSES)
@pytest.mark.parametrize("case", range(len(LISTS)))
def test_each_loss_equals_its_formula_on_hand_worked_lists(loss, case):
    s, y = LISTS[case]
    got = losses.list_losses(loss, *_np(s[None], y[None], np.ones((1, len(s)), bool)))
    assert float(got[0]) == pytest.approx(by_hand(loss, s, y), rel=1e-5, abs=1e-6)


def test_the_pairwise_value_worked_on_paper():
    """One pair (labels 1 > 0) with scores 2 and 1: log(1 + e^−1) = 0.3132617."""
    got = losses.list_losses("pairwise", *_np([[2.0, 1.0]], [[1.0, 0.0]], [[True, True]]))
    assert float(got[0]) == pytest.approx(math.log1p(math.exp(-1.0)), abs=1e-7)
    assert math.log1p(math.exp(-1.0)) == pytest.approx(0.3132617, abs=1e-7)


def test_approxndcg_at_a_low_temperature_is_minus_sklearns_ndcg():
    """With binary labels 2^y − 1 = y, so scikit-learn's NDCG (linear gains) is the same NDCG."""
    s = np.array([0.3, 1.7, -0.4, 0.9, 0.0, 2.2])
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    got = losses.list_losses("approxndcg", *_np(s[None], y[None], np.ones((1, 6), bool)), temperature=1e-3)
    assert -float(got[0]) == pytest.approx(ndcg_score(y[None], s[None]), abs=1e-5)


@pytest.mark.parametrize("loss", NEURAL_LOSSES)
def test_every_loss_ignores_padding(loss):
    """The same list padded to 16 with masked items of any score and label: the same value (rax's
    lambdaweights grow with the padded length; ltr divides that back out)."""
    s, y = LISTS[1]
    rng = np.random.default_rng(0)
    padded_s = np.concatenate([s, rng.normal(size=11) * 5])
    padded_y = np.concatenate([y, rng.integers(0, 4, size=11).astype(float)])
    mask = np.arange(16) < len(s)
    short = losses.list_losses(loss, *_np(s[None], y[None], np.ones((1, len(s)), bool)))
    long = losses.list_losses(loss, *_np(padded_s[None], padded_y[None], mask[None]))
    assert float(long[0]) == pytest.approx(float(short[0]), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("loss", NEURAL_LOSSES)
def test_batch_loss_is_the_weighted_mean_over_lists_with_a_preference(loss):
    (s1, y1), (s2, y2) = LISTS
    scores = np.zeros((4, 5))
    labels = np.zeros((4, 5))
    mask = np.zeros((4, 5), bool)
    scores[0, :4], labels[0, :4], mask[0, :4] = s1, y1, True
    scores[1], labels[1], mask[1] = s2, y2, True
    scores[2], labels[2], mask[2] = [1, 2, 3, 4, 5], [1, 1, 1, 1, 1], True  # all equal: no preference
    mask[3, 0] = True  # a filler list
    weights = np.array([2.0, 0.5, 7.0, 0.0])
    got = float(losses.batch_loss(loss, *_np(scores, labels, mask, weights)))
    want = (2.0 * by_hand(loss, s1, y1) + 0.5 * by_hand(loss, s2, y2)) / 2.5
    assert got == pytest.approx(want, rel=1e-5, abs=1e-7)


def test_the_loss_names_are_the_configs():
    assert losses.LOSSES == NEURAL_LOSSES


# --- gradients against finite differences ------------------------------------------------------------------


FAST_GRADIENTS = {("softmax", "attention"), ("lambdaloss", "mlp"), ("approxndcg", "mlp")}


@pytest.fixture
def float64():
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


#: every (loss, scorer) pair is checked with the slow tests; three of them with the fast ones (~4 s each)
GRADIENT_CASES = [
    pytest.param(loss, scorer, marks=() if (loss, scorer) in FAST_GRADIENTS else pytest.mark.slow)
    for loss in NEURAL_LOSSES
    for scorer in ("mlp", "attention")
]


@pytest.mark.parametrize(("loss", "scorer"), GRADIENT_CASES)
def test_gradients_of_network_and_loss_match_finite_differences(loss, scorer, float64):
    """d loss / d θ · v by automatic differentiation vs (L(θ + εv) − L(θ − εv)) / 2ε, float64, for three
    random directions v over every parameter at once."""
    spec = network.NetworkSpec(
        n_features=3, hidden_units=(4, 4), scorer=scorer, attention_heads=2, log1p=True
    )
    params = {
        k: jnp.asarray(v, jnp.float64) for k, v in network.init_params(spec, jax.random.PRNGKey(1)).items()
    }
    rng = np.random.default_rng(2)
    x = jnp.asarray(rng.normal(size=(2, 6, 3)) * 3.0)
    labels = jnp.asarray(rng.integers(0, 3, size=(2, 6)).astype(np.float64))
    mask = jnp.asarray(np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]], bool))
    transform = (jnp.asarray(rng.normal(size=3) * 0.1), jnp.asarray(np.array([1.0, 2.0, 0.5])))
    weights = jnp.asarray([1.0, 2.0])

    def objective(p):
        return losses.batch_loss(loss, network.apply(p, spec, transform, x, mask), labels, mask, weights)

    objective = jax.jit(objective)
    grads = jax.jit(jax.grad(objective))(params)
    assert any(float(jnp.abs(g).max()) > 1e-6 for g in grads.values())
    for trial in range(3):
        direction = {
            k: jnp.asarray(np.random.default_rng(10 + trial).normal(size=v.shape)) for k, v in params.items()
        }
        analytic = sum(float(jnp.sum(grads[k] * direction[k])) for k in params)
        eps = 1e-6
        plus = objective({k: params[k] + eps * direction[k] for k in params})
        minus = objective({k: params[k] - eps * direction[k] for k in params})
        numeric = float(plus - minus) / (2 * eps)
        assert analytic == pytest.approx(numeric, rel=1e-4, abs=1e-7), (trial, analytic, numeric)


# --- the networks against a numpy reference ---------------------------------------------------------------


def _relu(v):
    return np.maximum(v, 0.0)


def _layer_norm(h, g, b):
    mu = h.mean(-1, keepdims=True)
    var = ((h - mu) ** 2).mean(-1, keepdims=True)
    return (h - mu) / np.sqrt(var + 1e-5) * g + b


def reference_scores(arrays: dict, params: dict, X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The scorers of docs/models.md in float64 numpy, from the saved ``model.npz`` read by numpy alone."""
    P = {k.removeprefix("param."): v.astype(np.float64) for k, v in arrays.items() if k.startswith("param.")}
    z = X.astype(np.float64)
    if params["feature_transform"] == "log1p_zscore":
        z = np.sign(z) * np.log1p(np.abs(z))
    z = (z - arrays["transform.mean"]) / arrays["transform.scale"]
    out = np.empty(X.shape[0])
    for q in range(len(offsets) - 1):
        h = z[offsets[q] : offsets[q + 1]]
        for i in range(len(params["hidden_units"])):
            h = _relu(h @ P[f"dense_{i}.w"] + P[f"dense_{i}.b"])
        if params["scorer"] == "attention":
            heads = params["attention_heads"]
            d = h.shape[1] // heads
            for layer in range(params["attention_layers"]):
                p = f"block_{layer}"
                q_, k_, v_ = (h @ P[f"{p}.{n}.w"] + P[f"{p}.{n}.b"] for n in "qkv")
                parts = []
                for head in range(heads):
                    cols = slice(head * d, (head + 1) * d)
                    logits = q_[:, cols] @ k_[:, cols].T / np.sqrt(d)
                    weights = np.exp(logits - logits.max(1, keepdims=True))
                    parts.append(weights / weights.sum(1, keepdims=True) @ v_[:, cols])
                attended = np.hstack(parts) @ P[f"{p}.o.w"] + P[f"{p}.o.b"]
                h = _layer_norm(h + attended, P[f"{p}.ln1.g"], P[f"{p}.ln1.b"])
                ff = _relu(h @ P[f"{p}.ff1.w"] + P[f"{p}.ff1.b"]) @ P[f"{p}.ff2.w"] + P[f"{p}.ff2.b"]
                h = _layer_norm(h + ff, P[f"{p}.ln2.g"], P[f"{p}.ln2.b"])
        out[offsets[q] : offsets[q + 1]] = (h @ P["out.w"])[:, 0] + P["out.b"][0]
    return out


@pytest.fixture(scope="module")
def small():
    return generate(40, seed=1, max_docs=30), generate(15, seed=2, max_docs=30, qid_start=900)


FITTED = {
    "mlp": {"name": "neural_softmax", "params": TINY},
    "attention": {"name": "neural_attention", "params": {**TINY, "feature_transform": "zscore"}},
}


@pytest.fixture(scope="module")
def fitted(small, tmp_path_factory):
    train, valid = small
    out = {}
    for kind, cfg in FITTED.items():
        ranker = build_ranker(cfg, seed=3, num_threads=1).fit(train, valid)
        folder = tmp_path_factory.mktemp(kind)
        ranker.save(folder)
        out[kind] = (ranker, folder)
    return out


@pytest.mark.parametrize("kind", list(FITTED))
def test_saved_parameters_scored_by_numpy_equal_predict(kind, fitted, small):
    """model.npz read with numpy (``allow_pickle=False``) and scored by the documented formula."""
    ranker, folder = fitted[kind]
    _, test = small
    with np.load(folder / "model.npz", allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    manifest = json.loads((folder / "manifest.json").read_text())
    want = reference_scores(arrays, manifest["params"], test.dense(), test.offsets)
    np.testing.assert_allclose(ranker.predict(test), want, rtol=2e-4, atol=2e-4)
    loaded = load_ranker(folder)
    np.testing.assert_array_equal(loaded.predict(test), ranker.predict(test))
    assert loaded.best_iteration_ == ranker.best_iteration_ and loaded.n_iterations_ == ranker.n_iterations_


def test_the_attention_scorer_reads_the_list_and_the_mlp_does_not(fitted, small):
    """Changing one document changes the attention scores of the OTHER documents of its list, never
    another list's; permuting a list permutes its scores. The MLP scores each document alone."""
    _, test = small
    q = int(np.argmax(test.group_sizes > 5))
    rows = np.arange(test.offsets[q], test.offsets[q + 1])
    X = test.dense().copy()
    X2 = X.copy()
    X2[rows[0]] += 3.0
    changed = RankingData(X=X2, y=test.y, qid=test.qid)
    for kind in FITTED:
        ranker = fitted[kind][0]
        before, after = ranker.predict(test), ranker.predict(changed)
        others = rows[1:]
        outside = np.setdiff1d(np.arange(test.n_docs), rows)
        np.testing.assert_array_equal(before[outside], after[outside])
        if kind == "attention":
            assert np.abs(before[others] - after[others]).max() > 1e-6
            assert ranker.scores_per_query
        else:
            np.testing.assert_array_equal(before[others], after[others])
            assert not ranker.scores_per_query
    perm = np.random.default_rng(0).permutation(len(rows))
    one = RankingData(X=X[rows], y=test.y[rows], qid=test.qid[rows])
    shuffled = RankingData(X=X[rows][perm], y=test.y[rows][perm], qid=test.qid[rows])
    attention = fitted["attention"][0]
    np.testing.assert_allclose(
        attention.predict(shuffled), attention.predict(one)[perm], rtol=1e-5, atol=1e-6
    )


def test_fit_is_seeded_and_deterministic(small):
    train, valid = small
    cfg = {"name": "neural_softmax", "params": TINY}  # dropout 0.1: the seed also draws the dropout masks
    a, b = (build_ranker(cfg, seed=5, num_threads=1).fit(train, valid) for _ in range(2))
    c = build_ranker(cfg, seed=6, num_threads=1).fit(train, valid)
    np.testing.assert_array_equal(a.predict(valid), b.predict(valid))
    assert a.evals_result_ == b.evals_result_
    assert not np.array_equal(a.predict(valid), c.predict(valid))


def test_early_stopping_keeps_the_best_epoch(small):
    """The validation history has one value per epoch; the kept network scores the best epoch's value."""
    train, valid = small
    cfg = {"name": "neural_softmax", "params": {**TINY, "n_epochs": 12, "learning_rate": 0.05},
           "early_stopping": {"patience": 3, "metric": "ndcg@5"}}  # fmt: skip
    ranker = build_ranker(cfg, seed=0, num_threads=1).fit(train, valid)
    history = ranker.evals_result_["valid"]["ndcg@5"]
    assert len(history) == ranker.epochs_ <= 12 and len(ranker.evals_result_["train"]["softmax_loss"]) == len(
        history
    )
    best = ranker.best_iteration_
    assert history[best] == max(history) and (ranker.epochs_ == 12 or ranker.epochs_ - 1 - best == 3)
    kept = mean_metric("ndcg@5", valid, ranker.predict(valid))
    assert kept == pytest.approx(history[best], abs=1e-12)


@pytest.mark.slow  # three trainings on 400 queries: ~4.5 s
def test_a_planted_nonlinear_relevance_is_learned_better_than_linear():
    """Relevance = 2·[x0·x1 > 0] + [|x2| > 1]: no linear function ranks it; the MLP must, on held-out queries."""

    def planted(n_queries, seed, qid_start):
        rng = np.random.default_rng(seed)
        sizes = rng.integers(10, 30, n_queries)
        X = rng.normal(size=(sizes.sum(), 6)).astype(np.float32)
        y = 2.0 * (X[:, 0] * X[:, 1] > 0) + (np.abs(X[:, 2]) > 1)
        return RankingData(X=X, y=y, qid=np.repeat(np.arange(qid_start, qid_start + n_queries), sizes))

    train, valid, test = planted(300, 0, 1), planted(60, 1, 1000), planted(100, 2, 2000)

    def ndcg(ranker):
        return mean_metric("ndcg@10", test, ranker.predict(test))

    linear = ndcg(build_ranker({"name": "linear"}, seed=0, num_threads=1).fit(train, valid))
    params = {"n_epochs": 40, "hidden_units": [32, 16], "learning_rate": 0.01, "dropout": 0.0}
    neural = ndcg(
        build_ranker({"name": "neural_softmax", "params": params}, seed=0, num_threads=1).fit(train, valid)
    )
    random_scores = mean_metric("ndcg@10", test, np.random.default_rng(0).random(test.n_docs))
    assert neural > random_scores + 0.25
    assert neural > linear + 0.1, (neural, linear)


# --- the list plumbing ---------------------------------------------------------------------------------------


def test_the_list_cap_samples_distinct_documents_of_the_query_anew_each_epoch():
    offsets = np.array([0, 50, 53])
    rng = np.random.default_rng(0)
    first = lists.list_rows(offsets, np.array([0, 1]), cap=10, rng=rng)
    second = lists.list_rows(offsets, np.array([0, 1]), cap=10, rng=rng)
    assert first.shape == (2, 16)
    for rows in (first, second):
        kept = rows[0][rows[0] >= 0]
        assert len(kept) == 10 == len(set(kept)) and kept.min() >= 0 and kept.max() < 50
        assert rows[1][:3].tolist() == [50, 51, 52] and (rows[1][3:] == -1).all()
    assert not np.array_equal(first[0], second[0])


def test_a_training_epoch_holds_every_query_once_in_full_batches():
    data = generate(21, seed=0, max_docs=40)
    batches = list(lists.training_batches(data, batch_size=8, cap=None, rng=np.random.default_rng(0)))
    assert [b.x.shape[0] for b in batches] == [8, 8, 8]
    assert sum(int((b.weights > 0).sum()) for b in batches) == 21
    assert sum(int(b.mask[b.weights > 0].sum()) for b in batches) == data.n_docs
    assert sum(float(b.labels.sum()) for b in batches) == pytest.approx(float(data.y.sum()))
    assert all(b.mask.any(axis=1).all() for b in batches)  # a filler list holds one document
    assert all(not b.x[~b.mask].any() for b in batches)  # padding is zeros


def test_scoring_groups_cover_every_query_once_within_the_block_size():
    sizes = np.random.default_rng(0).integers(1, 300, 200)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    groups = list(lists.scoring_groups(offsets, max_cells=1024))
    seen = np.concatenate(groups)
    assert sorted(seen.tolist()) == list(range(200))
    for g in groups:
        assert len(g) == 1 or len(g) * lists.padded_length(int(sizes[g].max())) <= 1024


def test_sparse_and_dense_features_train_the_same_network(small):
    import scipy.sparse as sp

    train, valid = small
    sparse = RankingData(X=sp.csr_matrix(train.X), y=train.y, qid=train.qid)
    cfg = {"name": "neural_softmax", "params": TINY}
    a = build_ranker(cfg, seed=1, num_threads=1).fit(train)
    b = build_ranker(cfg, seed=1, num_threads=1).fit(sparse)
    np.testing.assert_allclose(a.predict(valid), b.predict(valid), rtol=1e-5, atol=1e-6)


# --- bad input: one error before any training ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"params": {"loss": "ranknet"}}, r"model.params.loss: expected one of \['softmax', 'listmle', 'approxndcg', 'pairwise', 'lambdaloss'\], got 'ranknet'"),
        ({"params": {"max_list_size": 0}}, r"model.params.max_list_size: must be in \[1, inf\], got 0"),
        ({"params": {"hidden_units": []}}, r"model.params.hidden_units: expected a non-empty list of layer widths >= 1"),
        ({"params": {"scorer": "attention", "hidden_units": [10], "attention_heads": 3}},
         r"model.params.attention_heads: 3 heads must divide the attention width, the last of hidden_units \(10\)"),
        ({"params": {"n_trees": 10}}, r"model.params: unknown key\(s\) n_trees; neural_softmax accepts: loss, scorer, hidden_units,"),
        ({"engine_params": {"b_1": 0.8}}, r"model neural_softmax: model.engine_params.b_1 is not an argument of optax.adamw; did you mean b1\?"),
        ({"engine_params": {"b1": "high"}}, r"model.engine_params.b1: expected a number, got 'high'"),
        ({"engine_params": {"b1": 2.0}}, r"model.engine_params.b1: AdamW needs 0 <= b1 < 1, got 2.0"),
        ({"engine_params": {"b2": 1.0}}, r"model.engine_params.b2: AdamW needs 0 <= b2 < 1, got 1.0"),
        ({"engine_params": {"eps": -1.0}}, r"model.engine_params.eps: AdamW needs eps > 0, got -1.0"),
        ({"engine_params": {"eps": 0}}, r"model.engine_params.eps: AdamW needs eps > 0, got 0"),
    ],
)  # fmt: skip
def test_bad_configs_are_one_config_error_when_the_model_is_built(cfg, message):
    with pytest.raises(ConfigError, match=message):
        build_ranker({"name": "neural_softmax", **cfg}, seed=0, num_threads=1)


def test_bad_data_is_named_before_training(small):
    train, _ = small
    X = train.dense().copy()
    X[7, 2] = np.nan
    bad = RankingData(X=X, y=train.y, qid=train.qid, name="train.txt")
    ranker = build_ranker({"name": "neural_softmax", "params": TINY}, seed=0, num_threads=1)
    with pytest.raises(
        DataError,
        match=r"train.txt \(train\): query qid=\d+ \(rows 1-\d+\) has a non-finite value in feature 3 \(row 8\)",
    ):
        ranker.fit(bad)
    y = train.y.copy()
    y[4] = -1
    with pytest.raises(DataError, match=r"has label -1 at row 5; neural_softmax needs relevance grades >= 0"):
        ranker.fit(RankingData(X=train.X, y=y, qid=train.qid, name="train.txt"))


def test_labels_beyond_the_gain_table_and_lists_without_preference_are_refused(small):
    train, _ = small
    y = train.y.copy()
    y[3] = 40
    big = RankingData(X=train.X, y=y, qid=train.qid, name="clicks.txt")
    with pytest.raises(
        DataError,
        match=r"clicks.txt \(train\): query qid=\d+ \(rows 1-\d+\) has label 40, but neural_lambdaloss \(loss lambdaloss, gain 2\^y − 1\) accepts labels 0-31",
    ):
        build_ranker({"name": "neural_lambdaloss", "params": TINY}, seed=0, num_threads=1).fit(big)
    build_ranker({"name": "neural_softmax", "params": TINY}, seed=0, num_threads=1).fit(big)  # no gains: fine
    flat = RankingData(X=train.X, y=np.ones(train.n_docs), qid=train.qid, name="flat.txt")
    with pytest.raises(
        DataError, match=r"flat.txt \(train\): no query has two documents with different labels"
    ):
        build_ranker({"name": "neural_softmax", "params": TINY}, seed=0, num_threads=1).fit(flat)


def test_a_feature_constant_in_training_keeps_scale_one(small):
    """log1p(1.0) is no exact double: a variance from Σt² − n·mean² left σ ≈ 4e-8, and a later value of
    1.5 moved the scores by 7e5. Constant in training → σ = 1; a different value moves scores modestly."""
    train, _ = small
    X = train.dense().copy()
    X[:, 0] = 1.0
    ranker = build_ranker({"name": "neural_softmax", "params": TINY}, seed=0, num_threads=1)
    ranker.fit(RankingData(X=X, y=train.y, qid=train.qid))
    assert ranker.transform_.scale[0] == 1.0
    moved = X.copy()
    moved[:, 0] = 1.5
    before = ranker.predict(RankingData(X=X, y=train.y, qid=train.qid))
    after = ranker.predict(RankingData(X=moved, y=train.y, qid=train.qid))
    assert np.abs(after - before).max() < 10.0


def test_bad_query_weights_are_named_before_training(small):
    train, _ = small
    weights = np.ones(train.n_queries)
    weights[2] = np.nan
    ranker = build_ranker({"name": "neural_softmax", "params": TINY}, seed=0, num_threads=1)
    with pytest.raises(DataError, match=r"query qid=\d+ has weight nan; weights must be >= 0"):
        ranker.fit(RankingData(X=train.X, y=train.y, qid=train.qid, weight=weights))
    with pytest.raises(
        DataError, match=r"\(train\): every query has weight 0; neural_softmax has nothing to learn"
    ):
        ranker.fit(RankingData(X=train.X, y=train.y, qid=train.qid, weight=np.zeros(train.n_queries)))


def test_a_non_finite_feature_in_a_split_to_score_is_named_before_training(
    small, tmp_path, monkeypatch, capsys
):
    """The pipeline asks the model to check the test split before the fit (a NaN test feature used to
    fail after training, in the metric, without naming it); predict itself returns the NaN score."""
    from helpers import train_main_in_process, write_letor

    for name, first in (("train", 1), ("vali", 100), ("test", 200)):
        write_letor(tmp_path / f"{name}.txt", 12, first)
    lines = (tmp_path / "test.txt").read_text().splitlines()
    lines[4] = re.sub(r" 7:\S+", " 7:nan", lines[4])
    (tmp_path / "test.txt").write_text("\n".join(lines) + "\n")
    args = ["+model=neural_softmax", "data=svmlight", f"data.train={tmp_path}/train.txt", f"data.valid={tmp_path}/vali.txt",
            f"data.test={tmp_path}/test.txt", "data.n_features=10", "data.nonfinite=keep", "tracking=none", "num_threads=1"]  # fmt: skip
    code = train_main_in_process(args, tmp_path, monkeypatch)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            "error: svmlight/test (test): query qid=200 (rows 1-5) has a non-finite value in feature 7 (row 5); "
            "neural_softmax needs finite features"
        )
    ), err
    assert "best iteration" not in out  # announced, but no epoch ran


def test_seeds_beyond_32_bits_are_distinct_seeds(small):
    train, valid = small
    cfg = {"name": "neural_softmax", "params": TINY}
    a = build_ranker(cfg, seed=5, num_threads=1).fit(train)
    b = build_ranker(cfg, seed=2**32 + 5, num_threads=1).fit(train)
    c = build_ranker(cfg, seed=2**70, num_threads=1).fit(train)
    assert not np.array_equal(a.predict(valid), b.predict(valid))
    assert np.isfinite(c.predict(valid)).all()


def test_building_a_model_neither_starts_jax_nor_sets_its_threads():
    """Config checks (an ensemble validates its members with one thread) must not decide JAX's threads:
    the first fit, score or load does, with its own num_threads."""
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "from ltr.models import build_ranker\n"
        "build_ranker({'name': 'ensemble_blend', 'members': ['lambdamart', 'neural_softmax'], 'n_jobs': 1}, seed=0, num_threads=0)\n"
        "build_ranker({'name': 'neural_attention'}, seed=0, num_threads=1)\n"
        "print('jax' in sys.modules, os.environ.get('XLA_FLAGS'))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split() == ["False", "None"], out.stderr


def test_logged_models_require_the_neural_packages():
    from importlib.metadata import version

    from ltr.models.pyfunc import _pip_requirements

    requirements = _pip_requirements()
    for name in ("jax", "jaxlib", "optax", "rax"):
        assert f"{name}=={version(name)}" in requirements


def test_a_diverging_fit_says_which_parameter_to_lower(small):
    train, _ = small
    cfg = {"name": "neural_softmax", "params": {**TINY, "learning_rate": 1e30}}
    with pytest.raises(
        DataError, match=r"training diverged in epoch \d+ .*lower model.params.learning_rate \(now 1e\+30\)"
    ):
        build_ranker(cfg, seed=0, num_threads=1).fit(train)


@pytest.mark.parametrize("damage", ["garbage", "shape", "missing"])
def test_a_damaged_or_foreign_model_file_is_refused(damage, fitted, tmp_path):
    import shutil

    _, folder = fitted["mlp"]
    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    file = copy / "model.npz"
    if damage == "garbage":
        file.write_bytes(b"PK\x03\x04 not a zip")
        match = r"model.npz: cannot read the network's parameters"
    else:
        with np.load(file, allow_pickle=False) as stored:
            arrays = {k: stored[k] for k in stored.files}
        if damage == "shape":
            arrays["param.dense_0.w"] = arrays["param.dense_0.w"][:, :3]
            match = (
                r"param.dense_0.w is float32 \(\d+, 3\), the network of the manifest needs float32 \(\d+, 8\)"
            )
        else:
            del arrays["param.out.b"]
            match = r"param.out.b is missing"
        np.savez(file, **arrays)
    with pytest.raises(ConfigError, match=match):
        load_ranker(copy)


def test_an_object_array_in_the_file_is_never_unpickled(fitted, tmp_path):
    import shutil

    _, folder = fitted["mlp"]
    copy = tmp_path / "model"
    shutil.copytree(folder, copy)
    with np.load(copy / "model.npz", allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    arrays["param.out.b"] = np.array([{"evil": 1}], dtype=object)
    np.savez(copy / "model.npz", **arrays)
    with pytest.raises(ConfigError, match=r"cannot read the network's parameters .*allow_pickle"):
        load_ranker(copy)

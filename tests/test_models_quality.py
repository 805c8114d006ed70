"""Quality on real data (rank.train, 5-fold query CV) and the cross-validation helper itself."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.data.svmlight import load_svmlight
from ltr.metrics import evaluate
from ltr.models.crossval import cross_val_scores, query_folds, train_valid_split
from ltr.stats import paired_bootstrap_ci


def test_query_folds_partition_the_queries():
    folds = query_folds(23, 5, seed=4)
    together = np.concatenate(folds)
    assert sorted(together.tolist()) == list(range(23))
    assert {len(f) for f in folds} <= {4, 5}
    assert [f.tolist() for f in folds] == [f.tolist() for f in query_folds(23, 5, seed=4)]
    train, valid = train_valid_split(folds[0], 0.25, seed=1)
    assert len(valid) == 1 and not set(train) & set(valid) and set(train) | set(valid) == set(folds[0])
    with pytest.raises(ConfigError, match=r"k must be in \[2, number of queries = 3\], got 5"):
        query_folds(3, 5, seed=0)


def test_out_of_fold_scores_come_from_models_that_never_saw_the_query():
    X = np.arange(60, dtype=np.float32).reshape(30, 2)
    data = RankingData(X=X, y=np.tile([0, 1, 2], 10), qid=np.repeat(np.arange(10), 3))
    scores, models = cross_val_scores(data, {"name": "linear"}, k=5, seed=0)
    folds = query_folds(10, 5, seed=0)
    for model, test_q in zip(models, folds, strict=True):
        rows = data.row_indices(test_q)
        np.testing.assert_array_equal(scores[rows], model.predict(data.X[rows]))
    assert np.isfinite(scores).all()


@pytest.mark.slow
@pytest.mark.shared_data
def test_lambdamart_beats_best_single_feature_on_rank_train(shared_data):
    data = load_svmlight(shared_data / "lightgbm_lambdarank" / "rank.train")
    assert data.n_queries == 201
    values = {}
    for name in ("lambdamart", "feature"):
        scores, _ = cross_val_scores(data, {"name": name}, k=5, seed=0, num_threads=2)
        values[name] = evaluate("ndcg@10", data.y, scores, data.offsets)["ndcg@10"]
    diff = paired_bootstrap_ci(values["lambdamart"], values["feature"], B=2000, seed=0)
    assert diff.estimate > 0.02 and diff.low > 0, diff

"""ONNX: one graph, input ``features`` (float32 ``[N, n_features]``), output ``score`` (float32 ``[N, 1]``).

Trees become one ``ai.onnx.ml.TreeEnsembleRegressor`` node (``aggregate_function=SUM``,
``base_values=[base_score]``) built from :class:`~ltr.export.trees.TreeEnsemble`: every split is
``BRANCH_LEQ`` on its float32 threshold (the canonical ``x <= t``), and
``nodes_missing_value_tracks_true`` carries the NaN direction (the true branch is the left child),
so LightGBM's and XGBoost's default directions survive. ltr builds the node itself instead of using
onnxmltools: the trees of folded ensembles, the best iteration and the float32 rounding of each
threshold in the direction that keeps the comparison exact are then ltr's, not a converter's (on
the tests' held-out rows, onnxmltools' converters disagreed with LightGBM 4.7 on 51 of 830 rows and
with XGBoost 3.2 on every row).
A linear model is ``MatMul`` + ``Add`` in double precision, cast to float32 at the end. McRank
(``classification``) is the one model only ONNX expresses: a ``K``-target tree ensemble (class
``k``'s trees sum into target ``k``), ``Softmax`` over the classes and ``MatMul`` with the grades
``0 … K−1`` — ltr's score Σ_k k·p_k.

Scoring with onnxruntime::

    import onnxruntime as ort
    session = ort.InferenceSession("model.onnx")
    scores = session.run(None, {"features": X.astype("float32")})[0][:, 0]

NaN is a missing value (the tree's default direction; a linear model gives NaN).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.extras import import_optional
from ltr.export.trees import ExpectedGrade, Exportable, LinearScorer, TreeEnsemble, Written

INPUT = "features"
OUTPUT = "score"
OPSET = 17
ML_OPSET = 3
MISSING = "nan"  # NaN reaches the model as NaN and takes each node's default direction
SUFFIX = ".onnx"


def _tree_node(classes: tuple[TreeEnsemble, ...], helper: Any, output: str) -> Any:
    """One TreeEnsembleRegressor: target ``c`` sums the trees of ``classes[c]`` (plus its base score)."""
    ids, tree_ids, features, values, modes, true_ids, false_ids, tracks = ([] for _ in range(8))
    t_tree, t_node, t_ids, t_weights = [], [], [], []
    numbered = [(c, tree) for c, model in enumerate(classes) for tree in model.trees]
    for k, (target, tree) in enumerate(numbered):
        for n in range(tree.feature.shape[0]):
            leaf = bool(tree.is_leaf[n])
            tree_ids.append(k)
            ids.append(n)
            features.append(0 if leaf else int(tree.feature[n]))
            values.append(0.0 if leaf else float(tree.threshold[n]))
            modes.append("LEAF" if leaf else "BRANCH_LEQ")
            true_ids.append(0 if leaf else int(tree.left[n]))
            false_ids.append(0 if leaf else int(tree.right[n]))
            tracks.append(0 if leaf else int(tree.nan_left[n]))
            if leaf:
                t_tree.append(k)
                t_node.append(n)
                t_ids.append(target)
                t_weights.append(float(tree.value[n]))
    return helper.make_node(
        "TreeEnsembleRegressor",
        [INPUT],
        [output],
        domain="ai.onnx.ml",
        n_targets=len(classes),
        aggregate_function="SUM",
        base_values=[float(model.base_score) for model in classes],
        post_transform="NONE",
        nodes_treeids=tree_ids,
        nodes_nodeids=ids,
        nodes_featureids=features,
        nodes_values=values,
        nodes_modes=modes,
        nodes_truenodeids=true_ids,
        nodes_falsenodeids=false_ids,
        nodes_missing_value_tracks_true=tracks,
        target_treeids=t_tree,
        target_nodeids=t_node,
        target_ids=t_ids,
        target_weights=t_weights,
    )


def _linear_nodes(model: LinearScorer, helper: Any, numpy_helper: Any) -> tuple[list[Any], list[Any]]:
    weights = numpy_helper.from_array(model.weights.reshape(-1, 1).astype(np.float64), "weights")
    bias = numpy_helper.from_array(np.array([model.bias], dtype=np.float64), "bias")
    nodes = [
        helper.make_node("Cast", [INPUT], ["x64"], to=11),  # DOUBLE
        helper.make_node("MatMul", ["x64", "weights"], ["dot"]),
        helper.make_node("Add", ["dot", "bias"], ["sum"]),
        helper.make_node("Cast", ["sum"], [OUTPUT], to=1),  # FLOAT
    ]
    return nodes, [weights, bias]


def build(model: Exportable, names: list[str]) -> Any:
    """The ONNX ModelProto of ``model`` (feature names go to the graph's doc string, in order)."""
    onnx = import_optional("onnx", extra="export", needed_for="--format onnx")
    TensorProto, checker, helper, numpy_helper = (
        onnx.TensorProto,
        onnx.checker,
        onnx.helper,
        onnx.numpy_helper,
    )

    initializers: list[Any] = []
    if isinstance(model, TreeEnsemble):
        nodes = [_tree_node((model,), helper, OUTPUT)]
    elif isinstance(model, ExpectedGrade):  # Σ_k k · softmax_k(class margins)
        grades = np.arange(len(model.classes), dtype=np.float32).reshape(-1, 1)
        initializers = [numpy_helper.from_array(grades, "grades")]
        nodes = [
            _tree_node(model.classes, helper, "margins"),
            helper.make_node("Softmax", ["margins"], ["probabilities"], axis=1),
            helper.make_node("MatMul", ["probabilities", "grades"], [OUTPUT]),
        ]
    else:
        nodes, initializers = _linear_nodes(model, helper, numpy_helper)
    graph = helper.make_graph(
        nodes,
        "ltr_ranker",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [None, model.n_features])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [None, 1])],
        initializer=initializers,
        doc_string="features (in column order): " + " ".join(names),
    )
    proto = helper.make_model(
        graph,
        producer_name="ltr.export",
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ai.onnx.ml", ML_OPSET)],
    )
    proto.ir_version = 8
    checker.check_model(proto)
    return proto


def write(model: Exportable, out: Path, names: list[str], **_: Any) -> Written:
    """Write ``out`` (a ``.onnx`` file); says how to load it."""
    out.write_bytes(build(model, names).SerializeToString())
    return Written(
        missing=MISSING,
        how_to_load=(
            f"onnxruntime.InferenceSession({str(out)!r}).run(None, {{{INPUT!r}: X_float32}})[0][:, 0]",
        ),
    )


def score(out: Path, X: np.ndarray, names: list[str]) -> np.ndarray:
    """Scores of float32 rows by onnxruntime on the written file (the shipped parity check)."""
    ort = import_optional("onnxruntime", extra="export", needed_for="checking an ONNX file (--check)")

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {INPUT: np.asarray(X, dtype=np.float32)})[0], dtype=np.float64)[:, 0]

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
A neural ranker's MLP (:class:`~ltr.export.neural.NeuralScorer`) is ``Gather`` of the kept columns
(``data.features``), the ``data.normalize`` transform, the network's ``feature_transform``
(``Sign``·``Log(1 + Abs)``, then ``Sub``/``Div``) and ``MatMul``/``Add``/``Relu`` per layer, in float32
except the logarithm (computed in double, then rounded: ``Log(1 + x)`` in float32 would lose the
digits of a small ``x`` that ``log1p`` keeps).

Scoring with onnxruntime::

    import onnxruntime as ort
    session = ort.InferenceSession("model.onnx")
    scores = session.run(None, {"features": X.astype("float32")})[0][:, 0]

NaN is a missing value (the tree's default direction; a linear or neural model gives NaN).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.extras import import_optional
from ltr.export.neural import NeuralScorer
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


class _Nodes:
    """A graph under construction: nodes and initialisers with fresh names."""

    def __init__(self, helper: Any, numpy_helper: Any) -> None:
        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(value, name))
        return name

    def op(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [output], **attrs))
        return output


def _signed_log1p(g: _Nodes, x: str, prefix: str) -> str:
    """``sign(x)·log(1 + |x|)`` of a float32 tensor, the logarithm in double (module docstring)."""
    wide = g.op("Cast", [x], f"{prefix}.x64", to=11)  # DOUBLE
    one = g.const(f"{prefix}.one", np.array(1.0, dtype=np.float64))
    log = g.op(
        "Log", [g.op("Add", [g.op("Abs", [wide], f"{prefix}.abs"), one], f"{prefix}.plus1")], f"{prefix}.log"
    )
    signed = g.op("Mul", [g.op("Sign", [wide], f"{prefix}.sign"), log], f"{prefix}.signed")
    return g.op("Cast", [signed], f"{prefix}.out", to=1)  # FLOAT


def _zscore_normalize(g: _Nodes, x: str, norm: Any) -> str:
    """``data.normalize=zscore``: ``float32((x − m)/s)`` in double; a constant feature → 0 (NaN kept)."""
    constant = ~np.isfinite(norm.scale_)
    mean = g.const("normalize.mean", np.where(constant, 0.0, norm.mean_).astype(np.float64))
    scale = g.const("normalize.scale", np.where(constant, 1.0, norm.scale_).astype(np.float64))
    wide = g.op("Cast", [x], "normalize.x64", to=11)
    z = g.op("Div", [g.op("Sub", [wide, mean], "normalize.centred"), scale], "normalize.z64")
    zero = g.const("normalize.zero", np.array(0.0, dtype=np.float64))
    kept = g.op("Not", [g.op("IsNaN", [x], "normalize.nan")], "normalize.present")
    to_zero = g.op("And", [kept, g.const("normalize.constant", constant)], "normalize.to_zero")
    return g.op("Cast", [g.op("Where", [to_zero, zero, z], "normalize.out64")], "normalize.out", to=1)


def _neural_nodes(model: NeuralScorer, helper: Any, numpy_helper: Any) -> tuple[list[Any], list[Any]]:
    """The MLP of :class:`~ltr.export.neural.NeuralScorer`, its steps in its order (module docstring)."""
    g = _Nodes(helper, numpy_helper)
    x = INPUT
    if model.columns is not None:  # data.features: the kept columns of the full row
        x = g.op("Gather", [x, g.const("columns", np.asarray(model.columns, np.int64))], "kept", axis=1)
    if model.normalize is not None and model.normalize.method == "zscore":
        x = _zscore_normalize(g, x, model.normalize)
    elif model.normalize is not None and model.normalize.method == "log1p":
        x = _signed_log1p(g, x, "normalize")
    if model.log1p:
        x = _signed_log1p(g, x, "transform")
    centred = g.op("Sub", [x, g.const("transform.mean", model.mean.astype(np.float32))], "transform.centred")
    h = g.op("Div", [centred, g.const("transform.scale", model.scale.astype(np.float32))], "z")
    for i, (w, b) in enumerate(model.layers):
        dot = g.op("MatMul", [h, g.const(f"dense_{i}.w", w.astype(np.float32))], f"dense_{i}.dot")
        h = g.op(
            "Relu",
            [g.op("Add", [dot, g.const(f"dense_{i}.b", b.astype(np.float32))], f"dense_{i}.pre")],
            f"h_{i}",
        )
    dot = g.op("MatMul", [h, g.const("out.w", model.out[0].astype(np.float32))], "out.dot")
    g.op("Add", [dot, g.const("out.b", model.out[1].astype(np.float32))], OUTPUT)
    return g.nodes, g.initializers


def build(model: Exportable | NeuralScorer, names: list[str]) -> Any:
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
    elif isinstance(model, NeuralScorer):
        nodes, initializers = _neural_nodes(model, helper, numpy_helper)
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


def write(model: Exportable | NeuralScorer, out: Path, names: list[str], **_: Any) -> Written:
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

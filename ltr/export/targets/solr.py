"""Solr's LTR module: a ``MultipleAdditiveTreesModel`` JSON (trees only; the model store's upload body).

Solr scores ``score = Σ_trees weight · leaf`` in float32, and a node goes left iff
``feature <= threshold`` where ``threshold = Float.parseFloat(text) + 1e-6f`` (its
``NODE_SPLIT_SLACK``, added in float32 arithmetic). ltr writes, for each canonical threshold ``t``
(float32, ``x <= t``), the float32 ``c`` with ``float32(c + 1e-6f) == t`` exactly
(:func:`solr_threshold`), so Solr compares against ``t`` itself. A threshold no ``c`` reaches
(Solr's sums skip it: LightGBM's split between 0 and positive values sits at 1e-35, and
``c + 1e-6f`` near 0 moves in steps of about 1e-13) becomes the largest reachable one below it:
values in the gap — for the zero split, positive values up to 1e-35, float32 subnormals in
practice — go right instead of left. Each gap is stated when exporting
(:attr:`~ltr.export.trees.Written.gaps`) and left out of the parity probes. Numbers are written as strings (Solr's own example form), each the exact value of a
float32. The base score is folded into the first tree's leaves; every tree has weight ``"1"``.

Solr has no missing values: a feature that does not apply to a document takes its
``defaultValue`` (0 unless the feature store says otherwise), so the model is exported for
**missing = 0** (:data:`MISSING`): NaN is not routed by the trees' default directions, and the
parity check scores both sides with NaN replaced by 0.

Solr's ``LinearModel`` has no intercept, so ``linear`` is refused for Solr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.export.trees import (
    FLOAT32,
    Exportable,
    Gap,
    TreeBuilder,
    TreeEnsemble,
    Written,
    float_text,
    gap_note,
    java_float,
    zero_for_missing,
)

CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
SLACK = FLOAT32(1e-6)  # MultipleAdditiveTreesModel.RegressionTreeNode.NODE_SPLIT_SLACK
MISSING = "zero"
SUFFIX = ".json"


def solr_threshold(t: np.float32) -> tuple[np.float32, np.float32]:
    """``(c, T)``: the float32 text ``c`` Solr reads and the threshold ``T = float32(c + 1e-6f)`` it compares with.

    ``T == t`` whenever some float32 reaches it; otherwise ``T`` is the largest reachable value below
    ``t`` (e.g. LightGBM's zero split at 1e-35 becomes ``x <= 0``) and values in ``(T, t]`` go right.

    >>> c, T = solr_threshold(np.float32(0.5)); bool(T == np.float32(0.5))
    True
    >>> float(solr_threshold(np.float32(1e-35))[1])
    0.0
    """
    t = FLOAT32(t)
    if np.isinf(t):  # Float.parseFloat("Infinity") + 1e-6f is Infinity
        return t, t
    c = FLOAT32(t - SLACK)
    up, down = FLOAT32(np.inf), FLOAT32(-np.inf)
    for _ in range(1 << 12):
        total = FLOAT32(c + SLACK)
        if total > t:
            c = FLOAT32(np.nextafter(c, down))
        elif FLOAT32(np.nextafter(c, up) + SLACK) <= t:
            c = FLOAT32(np.nextafter(c, up))
        else:
            break
    return c, FLOAT32(c + SLACK)


def _node(tree: Any, n: int, names: list[str], gaps: list[Gap]) -> dict[str, Any]:
    if tree.is_leaf[n]:
        return {"value": repr(float_text(tree.value[n]))}
    c, compared = solr_threshold(tree.threshold[n])
    if compared != tree.threshold[n]:
        gaps.append(Gap(int(tree.feature[n]), float(compared), float(tree.threshold[n])))
    return {
        "feature": names[int(tree.feature[n])],
        "threshold": java_float(c),
        "left": _node(tree, int(tree.left[n]), names, gaps),
        "right": _node(tree, int(tree.right[n]), names, gaps),
    }


def definition(
    model: Exportable, names: list[str], name: str, store: str | None, gaps: list[Gap] | None = None
) -> dict[str, Any]:
    """The model JSON Solr's ``/schema/model-store`` takes; splits Solr cannot place exactly go to ``gaps``."""
    if not isinstance(model, TreeEnsemble):
        raise ConfigError(
            "solr: a linear model would be Solr's LinearModel, which has no intercept (bias "
            f"{model.bias!r}); export it to onnx, vespa or opensearch/elasticsearch (RankLib) instead"
        )
    folded = model.base_folded()
    found = [] if gaps is None else gaps
    body: dict[str, Any] = {
        "class": CLASS,
        "name": name,
        "features": [{"name": n} for n in names],
        "params": {"trees": [{"weight": "1", "root": _node(t, 0, names, found)} for t in folded.trees]},
    }
    if store:
        body["store"] = store
    return body


def write(
    model: Exportable,
    out: Path,
    names: list[str],
    *,
    model_name: str,
    feature_store: str | None = None,
    **_: Any,
) -> Written:
    """Write ``out``; says how to upload it (missing features are 0 in Solr)."""
    gaps: list[Gap] = []
    out.write_text(json.dumps(definition(model, names, model_name, feature_store, gaps), indent=1) + "\n")
    unique = tuple(sorted(set(gaps)))
    return Written(
        missing=MISSING,
        gaps=unique,
        how_to_load=(
            *(
                gap_note(g, names) + " (Solr adds 1e-6 in float32 and cannot reach the threshold)"
                for g in unique
            ),
            f"curl -XPUT 'http://localhost:8983/solr/<collection>/schema/model-store' --data-binary @{out} "
            "-H 'Content-type:application/json'",
            f"rerank with rq={{!ltr model={model_name} reRankDocs=100}}",
        ),
    )


def read(out: Path, names: list[str]) -> TreeEnsemble:
    """The written file read back with Solr's semantics (threshold text + 1e-6f, ``<=``, float32 leaves)."""
    body = json.loads(out.read_text())
    column = {name: j for j, name in enumerate(names)}
    trees = []
    for entry in body["params"]["trees"]:
        build = TreeBuilder()
        weight = float(FLOAT32(entry["weight"]))

        def add(node: dict[str, Any], build: TreeBuilder = build, weight: float = weight) -> int:
            i = build.add()
            if "value" in node:
                build.leaf(i, weight * float(FLOAT32(node["value"])))
            else:
                left, right = add(node["left"]), add(node["right"])
                threshold = FLOAT32(FLOAT32(node["threshold"]) + SLACK)
                build.split(i, column[node["feature"]], threshold, False, left, right)
            return i

        add(entry["root"])
        trees.append(build.tree())
    return TreeEnsemble(tuple(trees), 0.0, len(names), source="solr")


def score(out: Path, X: np.ndarray, names: list[str]) -> np.ndarray:
    """Scores of float32 rows as Solr computes them from the written file (missing = 0)."""
    return read(out, names).predict(zero_for_missing(X))

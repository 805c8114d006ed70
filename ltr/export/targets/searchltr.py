"""Elasticsearch / OpenSearch LTR plugins: the ``_createmodel`` request body of a feature set.

Both plugins (o19s/elasticsearch-learning-to-rank and its fork opensearch-learning-to-rank-base)
take ``POST <prefix>/_featureset/<feature set>/_createmodel`` with::

    {"model": {"name": NAME, "model": {"type": TYPE, "definition": "..."}}}

(prefix ``_ltr`` on Elasticsearch, ``_plugins/_ltr`` on OpenSearch). ltr writes two types:

* ``model/xgboost+json`` (trees; the default): the definition is the XGBoost JSON dump array
  (:mod:`ltr.export.targets.dumps`: ``x < split_condition`` in float32, NaN → the ``missing`` child, split
  features named by the feature set's feature names, tree weights 1, base score folded into the
  first tree). No ``objective`` is given, so the plugin applies no output transform. Current
  OpenSearch-LTR routes NaN by ``missing`` (since its fix of #378); older versions fill an absent
  feature with 0.0, and OpenSearch 3.3 sent NaN to ``no`` — see docs/export.md.
* ``model/ranklib`` (``--model-type ranklib``; the default for ``linear``): RankLib's text form,
  ``## LambdaMART`` + the ``<ensemble>`` XML (``x <= threshold`` in float32, features by 1-based
  ordinal = position in the feature set, leaves summed in float32) or ``## Linear Regression``
  (``0:bias j:w_j``, in double). RankLib has no missing values: the model is exported for
  **missing = 0**.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from ltr.core.errors import ConfigError
from ltr.export import trees
from ltr.export.targets.dumps import model_dump, read_dump
from ltr.export.trees import FLOAT32, Exportable, Gap, LinearScorer, Tree, TreeBuilder, TreeEnsemble, Written

XGBOOST_TYPE = "model/xgboost+json"
RANKLIB_TYPE = "model/ranklib"
MODEL_TYPES = ("xgboost+json", "ranklib")
PREFIX = {"elasticsearch": "_ltr", "opensearch": "_plugins/_ltr"}
SUFFIX = ".json"


def _ranklib_node(tree: Tree, n: int, pos: str | None) -> str:
    attr = f' pos="{pos}"' if pos else ""
    if tree.is_leaf[n]:
        return f"<split{attr}><output>{trees.float_text(tree.value[n])!r}</output></split>"
    return (
        f"<split{attr}><feature>{int(tree.feature[n]) + 1}</feature>"
        f"<threshold>{trees.java_float(tree.threshold[n])}</threshold>"
        f"{_ranklib_node(tree, int(tree.left[n]), 'left')}{_ranklib_node(tree, int(tree.right[n]), 'right')}</split>"
    )


def ranklib_text(model: Exportable) -> str:
    """RankLib's model text: LambdaMART ensemble XML (one line, no whitespace nodes) or Linear Regression."""
    if isinstance(model, LinearScorer):
        terms = " ".join(f"{j}:{float(w)!r}" for j, w in enumerate(model.weights, start=1))
        return f"## Linear Regression\n## Lambda = 1.0E-10\n0:{float(model.bias)!r} {terms}\n"
    xml = "".join(
        f'<tree id="{k}" weight="1">{_ranklib_node(t, 0, None)}</tree>'
        for k, t in enumerate(model.base_folded().trees, start=1)
    )
    return f"## LambdaMART\n## No. of trees = {len(model.trees)}\n<ensemble>{xml}</ensemble>\n"


def request_body(
    model: Exportable, names: list[str], model_name: str, model_type: str, gaps: list[Gap] | None = None
) -> dict[str, Any]:
    """The ``_createmodel`` body for ``model_type`` (``xgboost+json`` or ``ranklib``)."""
    if model_type == "xgboost+json":
        if not isinstance(model, TreeEnsemble):
            raise ConfigError(
                "--model-type xgboost+json: a linear model has no trees; use --model-type ranklib "
                "(RankLib's Linear Regression keeps the bias)"
            )
        kind, definition = XGBOOST_TYPE, json.dumps(model_dump(model, names, gaps))
    elif model_type == "ranklib":
        kind, definition = RANKLIB_TYPE, ranklib_text(model)
    else:
        raise ConfigError(f"--model-type: expected one of {', '.join(MODEL_TYPES)}, got {model_type!r}")
    return {"model": {"name": model_name, "model": {"type": kind, "definition": definition}}}


def writer(engine: str) -> Any:
    """The ``write`` function for ``engine`` (``elasticsearch`` or ``opensearch``)."""

    def write(
        model: Exportable,
        out: Path,
        names: list[str],
        *,
        model_name: str,
        feature_set: str,
        model_type: str | None = None,
        **_: Any,
    ) -> Written:
        chosen = model_type or ("ranklib" if isinstance(model, LinearScorer) else "xgboost+json")
        gaps: list[Gap] = []
        out.write_text(json.dumps(request_body(model, names, model_name, chosen, gaps), indent=1) + "\n")
        unique = tuple(sorted(set(gaps)))
        return Written(
            missing="nan" if chosen == "xgboost+json" else "zero",
            gaps=unique,
            how_to_load=(
                *(trees.gap_note(g, names) for g in unique),
                f"curl -XPOST 'http://localhost:9200/{PREFIX[engine]}/_featureset/{feature_set}/_createmodel' "
                f"-H 'Content-Type: application/json' --data-binary @{out}",
                f'query: {{"sltr": {{"featureset": "{feature_set}", "model": "{model_name}", "params": {{...}}}}}}',
            ),
        )

    return write


def _read_ranklib(text: str, n_features: int) -> Exportable:
    lines = text.splitlines()
    if lines[0].startswith("## Linear Regression"):
        pairs = dict(item.split(":") for item in lines[-1].split())
        weights = np.zeros(n_features)
        for key, value in pairs.items():
            if int(key) > 0:
                weights[int(key) - 1] = float(value)
        return LinearScorer(weights, float(pairs["0"]))
    root = ElementTree.fromstring("".join(line for line in lines if not line.startswith("##")))
    parsed = []
    for element in root.iter("tree"):
        build = TreeBuilder()
        weight = float(FLOAT32(element.get("weight")))

        def add(split: ElementTree.Element, build: TreeBuilder = build, weight: float = weight) -> int:
            i = build.add()
            output = split.find("output")
            if output is not None:
                build.leaf(i, weight * float(FLOAT32(output.text.strip())))  # type: ignore[union-attr]
                return i
            children = split.findall("split")
            left = add(next(c for c in children if c.get("pos") == "left"))
            right = add(next(c for c in children if c.get("pos") == "right"))
            feature = int(split.findtext("feature").strip()) - 1  # type: ignore[union-attr]
            build.split(i, feature, FLOAT32(split.findtext("threshold").strip()), False, left, right)  # type: ignore[union-attr]
            return i

        add(element.find("split"))  # type: ignore[arg-type]
        parsed.append(build.tree())
    return TreeEnsemble(tuple(parsed), 0.0, n_features, source="ranklib")


def score(out: Path, X: np.ndarray, names: list[str]) -> np.ndarray:
    """Scores of float32 rows as the plugin computes them from the written request body."""
    model = json.loads(out.read_text())["model"]["model"]
    if model["type"] == XGBOOST_TYPE:
        return read_dump(json.loads(model["definition"]), names, "xgboost+json").predict(X)
    return _read_ranklib(model["definition"], len(names)).predict(trees.zero_for_missing(X))

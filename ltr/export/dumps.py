"""The XGBoost JSON dump form of a tree list (``Booster.get_dump(dump_format="json")``), written and read back.

The Elasticsearch/OpenSearch LTR plugins (``model/xgboost+json``) and Vespa's ``xgboost()`` rank
feature read this form. Its node goes to ``yes`` iff ``value < split_condition`` (a float32), and
a NaN value goes to the ``missing`` child. From the canonical ``x <= t`` ltr writes
``split_condition = next float32 above t`` (:func:`~ltr.export.trees.float32_above`), exact for
float32 feature values, and ``missing`` = ``yes`` when NaN goes left. Numbers are written as the
exact value of a float32 (the plugins parse them as Java floats). Node ids are the canonical node
indices; ``yes`` is always the first child (the plugins check it).

>>> from ltr.export.trees import Tree
>>> t = Tree(feature=np.array([0, -1, -1]), threshold=np.array([1.0, 0, 0], np.float32),
...          left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
...          nan_left=np.array([True, False, False]), value=np.array([0.0, -1.0, 2.0]))
>>> node = tree_dump(t, ["a"]); node["split_condition"], node["missing"] == node["yes"]
(1.0000001192092896, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr.errors import ConfigError
from ltr.export.trees import FLOAT32, Tree, TreeBuilder, TreeEnsemble, float32_above, float_text


def tree_dump(tree: Tree, names: list[str]) -> dict[str, Any]:
    """One tree as a nested XGBoost JSON dump node (module docstring)."""

    def node(n: int, depth: int) -> dict[str, Any]:
        if tree.is_leaf[n]:
            return {"nodeid": n, "leaf": float_text(tree.value[n])}
        bound = float32_above(tree.threshold[n])
        if not np.isfinite(bound):
            raise ConfigError(
                f"a split at {float(tree.threshold[n])!r} on {names[int(tree.feature[n])]} cannot be written as "
                "'x < t' with a finite float32 t"
            )
        yes, no = int(tree.left[n]), int(tree.right[n])
        return {
            "nodeid": n,
            "depth": depth,
            "split": names[int(tree.feature[n])],
            "split_condition": float_text(bound),
            "yes": yes,
            "no": no,
            "missing": yes if tree.nan_left[n] else no,
            "children": [node(yes, depth + 1), node(no, depth + 1)],
        }

    return node(0, 0)


def model_dump(model: TreeEnsemble, names: list[str]) -> list[dict[str, Any]]:
    """Every tree, the base score folded into the first tree's leaves (the dump has no base_score)."""
    return [tree_dump(t, names) for t in model.base_folded().trees]


def read_dump(trees: list[dict[str, Any]], names: list[str], source: str) -> TreeEnsemble:
    """A dump read back with its documented semantics (``<`` float32, NaN → ``missing``, float32 leaves)."""
    column = {name: j for j, name in enumerate(names)}
    out = []
    for root in trees:
        build = TreeBuilder()

        def add(node: dict[str, Any], build: TreeBuilder = build) -> int:
            i = build.add()
            if "leaf" in node:
                build.leaf(i, float(FLOAT32(node["leaf"])))
                return i
            yes = next(c for c in node["children"] if c["nodeid"] == node["yes"])
            no = next(c for c in node["children"] if c["nodeid"] == node["no"])
            below = np.nextafter(FLOAT32(node["split_condition"]), FLOAT32(-np.inf))  # x < u <=> x <= prev(u)
            left, right = add(yes), add(no)
            build.split(i, column[node["split"]], below, node.get("missing") == node["yes"], left, right)
            return i

        add(root)
        out.append(build.tree())
    return TreeEnsemble(tuple(out), 0.0, len(names), source=source)

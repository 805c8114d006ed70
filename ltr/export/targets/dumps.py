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

from ltr.export.trees import FLOAT32, Gap, Tree, TreeBuilder, TreeEnsemble, float32_above, float_text


def strict_bound(tree: Tree, n: int, gaps: list[Gap]) -> float:
    """``u`` with ``x < u`` iff canonical ``x <= t`` — or, where that needs ``u = inf`` (a split sending
    +inf left; JSON has no infinity), the largest float32, stating the gap: ``x >= FLT_MAX`` goes right."""
    bound = float32_above(tree.threshold[n])
    if np.isfinite(bound):
        return float_text(bound)
    biggest = np.finfo(FLOAT32).max
    gaps.append(Gap(int(tree.feature[n]), float(np.nextafter(biggest, FLOAT32(0))), float("inf")))
    return float_text(biggest)


def tree_dump(tree: Tree, names: list[str], gaps: list[Gap] | None = None) -> dict[str, Any]:
    """One tree as a nested XGBoost JSON dump node (module docstring); stated deviations go to ``gaps``."""
    found = [] if gaps is None else gaps

    def node(n: int, depth: int) -> dict[str, Any]:
        if tree.is_leaf[n]:
            return {"nodeid": n, "leaf": float_text(tree.value[n])}
        bound = strict_bound(tree, n, found)
        yes, no = int(tree.left[n]), int(tree.right[n])
        return {
            "nodeid": n,
            "depth": depth,
            "split": names[int(tree.feature[n])],
            "split_condition": bound,
            "yes": yes,
            "no": no,
            "missing": yes if tree.nan_left[n] else no,
            "children": [node(yes, depth + 1), node(no, depth + 1)],
        }

    return node(0, 0)


def model_dump(model: TreeEnsemble, names: list[str], gaps: list[Gap] | None = None) -> list[dict[str, Any]]:
    """Every tree, the base score folded into the first tree's leaves (the dump has no base_score)."""
    return [tree_dump(t, names, gaps) for t in model.base_folded().trees]


def read_dump(
    trees: list[dict[str, Any]], names: list[str], source: str, *, float32_leaves: bool = True
) -> TreeEnsemble:
    """A dump read back with its documented semantics (``<`` float32, NaN → ``missing``; leaves read as
    Java floats by the LTR plugins, as doubles by Vespa: ``float32_leaves=False``)."""
    column = {name: j for j, name in enumerate(names)}
    out = []
    for root in trees:
        build = TreeBuilder()

        def add(node: dict[str, Any], build: TreeBuilder = build) -> int:
            i = build.add()
            if "leaf" in node:
                build.leaf(i, float(FLOAT32(node["leaf"])) if float32_leaves else float(node["leaf"]))
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

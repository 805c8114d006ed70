"""Binned training data built once and reused by later fits: what the trials of a hyper-parameter search share.

Before growing trees a histogram engine bins the features: LightGBM's ``Dataset``, XGBoost's
``QuantileDMatrix``. The binned copy depends on the data and a few binning parameters only, so the trials
of a search that differ in the other parameters (learning rate, tree size, regularisation) can all
train on one copy. :data:`BINNED` keeps these copies for the fits of one process. An entry is the binned
train matrix and one matrix per evaluated split (binned against the train matrix: the splits share its
bin edges), found again only by a fit with

* the same **key**, :func:`binning_key`: the ranker's class and the values of the parameters the engine
  bakes into the binned data (``ltr.models.engines.lgbm.dataset_params``; for XGBoost the ``QuantileDMatrix``
  arguments besides the data, ``max_bin`` and ``nthread``);
* the same **data objects** (:class:`~ltr.data.RankingData` compared with ``is``, for every split):
  labels, weights and query groups belong to them, so a fit on other data — another split, a
  simulated click log with its own labels and weights — never gets another's matrices. An entry holds
  its data objects, so their ids cannot be reused by new objects while it lives.

Off until :meth:`BinnedCache.enable` (a sweep's jobs turn it on, :mod:`ltr.sweep.shared_data`); keeps the
``size`` most recently built entries (4), whichever engine built them; ``built`` counts the matrices
built since it was turned on. A reused matrix gives the same model as a new one (``tests/test_pruning.py`` and
``tests/test_binned.py`` compare the predictions with fits on fresh matrices).

>>> import numpy as np
>>> from ltr.data import RankingData
>>> train, valid = (RankingData(X=np.zeros((2, 1), np.float32), y=[0, 1], qid=[1, 1]) for _ in range(2))
>>> cache, made = BinnedCache(), []
>>> make = lambda data, reference: made.append(reference) or f"matrix {len(made)}"
>>> cache.enable()
>>> cache.matrices(("demo", 255), train, {"train": train, "valid": valid}, make)
('matrix 1', {'train': 'matrix 1', 'valid': 'matrix 2'})
>>> cache.matrices(("demo", 255), train, {"train": train, "valid": valid}, make)[1]["valid"], cache.built
('matrix 2', 2)
>>> cache.matrices(("demo", 63), train, {"valid": valid}, make), cache.built  # other binning: built again
(('matrix 3', {'valid': 'matrix 4'}), 4)
>>> cache.matrices(("demo", 255), valid, {"valid": valid}, make)[0], cache.built  # other train data: its own
('matrix 5', 6)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ltr.data import RankingData

#: builds one binned matrix of ``data``; ``reference`` is the train matrix (``None`` for train itself)
MakeMatrix = Callable[[RankingData, Any], Any]


def binning_key(ranker: Any, params: Mapping[str, Any], names: Iterable[str]) -> tuple[Any, ...]:
    """The cache key of a fit: the ranker's class and ``repr`` of each binning parameter in ``names``.

    >>> binning_key(1, {"max_bin": 63, "eta": 0.1}, ["max_bin", "min_data_in_bin"])
    (<class 'int'>, (('max_bin', '63'), ('min_data_in_bin', 'None')))
    """
    return (type(ranker), tuple((name, repr(params.get(name))) for name in names))


class BinnedCache:
    """The binned matrices of the last ``size`` (key, data) pairs built while enabled (module docstring)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.enabled = False
        self.built = 0  # matrices built while enabled (a reuse builds none)
        self._entries: list[tuple[tuple[Any, ...], dict[str, RankingData], Any, dict[str, Any]]] = []

    def enable(self, enabled: bool = True) -> None:
        """Turn reuse on (or off: the entries are dropped and ``built`` restarts from 0)."""
        self.enabled = enabled
        if not enabled:
            self._entries.clear()
            self.built = 0

    def matrices(
        self, key: tuple[Any, ...], train: RankingData, splits: Mapping[str, RankingData], make: MakeMatrix
    ) -> tuple[Any, dict[str, Any]]:
        """The train matrix and one matrix per evaluated split (train's own for ``"train"``): reused from
        an entry with an equal ``key`` and the very same data objects, else built with ``make``."""
        data = {"train": train, **splits}
        if self.enabled:
            for entry_key, entry_data, dtrain, dsets in self._entries:
                same_data = entry_data.keys() == data.keys() and all(entry_data[r] is data[r] for r in data)
                if entry_key == key and same_data:
                    return dtrain, dsets
        dtrain = make(train, None)
        dsets = {role: dtrain if role == "train" else make(d, dtrain) for role, d in splits.items()}
        if self.enabled:
            self.built += len({id(d) for d in dsets.values()} | {id(dtrain)})
            self._entries = [*self._entries[-(self.size - 1) :], (key, data, dtrain, dsets)]
        return dtrain, dsets


#: the process's cache, shared by every engine (turned on by ``ltr.sweep.shared_data.share_binned_datasets``)
BINNED = BinnedCache()

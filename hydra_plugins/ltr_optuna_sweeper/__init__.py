"""Hydra's entry to ltr's Optuna sweeper (the logic lives in :mod:`ltr.sweep.sweeper`).

Hydra instantiates a plugin only if its class is defined under the ``hydra_plugins`` namespace
package, which it scans at start-up; so this package (shipped in ltr's wheel; ``hydra_plugins`` has no
``__init__.py``, it is shared with other plugins) defines a thin subclass and registers the
sweeper's structured config as ``hydra/sweeper=ltr_optuna``. Importing it stays light: Optuna is
imported only when a sweep runs.
"""

from hydra.core.config_store import ConfigStore

from ltr.sweep import sweeper as optuna_sweeper


class LtrOptunaSweeper(optuna_sweeper.OptunaSweeper):
    """:class:`ltr.sweep.sweeper.OptunaSweeper` under the name Hydra accepts for a plugin."""


ConfigStore.instance().store(
    group="hydra/sweeper", name="ltr_optuna", node=optuna_sweeper.OptunaSweeperConf, provider="ltr"
)

"""Exceptions ``ltr`` raises for bad input. Each message says what was expected, what was got, and where."""


class LtrError(Exception):
    """Base class of every error ``ltr`` raises on purpose."""


class DataError(LtrError, ValueError):
    """Malformed or inconsistent data: names the file and line, or the query, that is wrong."""


class ConfigError(LtrError, ValueError):
    """A configuration value that cannot work: names the parameter and the accepted values."""


class MetricError(LtrError, ValueError):
    """An unknown metric name or convention, or metric inputs that do not line up."""


class NotFittedError(LtrError, ValueError, AttributeError):
    """A model used before ``fit`` (or ``load``): predicting, saving or reading fitted attributes.

    Also a ``ValueError`` and an ``AttributeError``, like scikit-learn's ``NotFittedError``."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with what happened to the work in progress (``run 1a2b marked KILLED``) as its message."""


class Terminated(Interrupted):
    """SIGTERM, raised in the main thread by the handler of :func:`ltr.core.interrupts.recorded`:
    a ``KeyboardInterrupt``, so everything that cleans up after Ctrl-C (MLflow runs ended KILLED, Optuna
    trials failed as interrupted) does the same for a SIGTERM."""


class ClusterError(LtrError, RuntimeError):
    """A Dask cluster that lost a worker or stopped answering within its timeout: names what was lost
    and what to do."""

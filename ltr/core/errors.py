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

"""The model registry: a run's logged model registered under a name, as ``models:/NAME/VERSION``.

``python -m ltr.compare … --register NAME`` registers the comparison's best system (or
``--register-system S``); every command that takes a model (``ltr.evaluate --model``, ``ltr.export``,
ensembles' members) then accepts ``models:/NAME/VERSION``.
"""

from __future__ import annotations

from ltr.core.errors import ConfigError
from ltr.tracking.store import mask_secrets, process_uris, retry_call


def check_model_name(name: str, option: str = "--register") -> str:
    """A registered model's name as MLflow accepts it (no ``/`` or ``:``, not empty), or a ConfigError.

    >>> check_model_name("ranker-prod")
    'ranker-prod'
    >>> check_model_name("team/ranker")
    Traceback (most recent call last):
    ltr.core.errors.ConfigError: --register team/ranker: a registered model's name cannot contain '/' or ':' (it is read back as models:/NAME/VERSION)
    """
    if not name.strip():
        raise ConfigError(f"{option}: give the registered model's name, e.g. {option} ranker-prod")
    if "/" in name or ":" in name:
        raise ConfigError(
            f"{option} {name}: a registered model's name cannot contain '/' or ':' "
            "(it is read back as models:/NAME/VERSION)"
        )
    return name


def register_run_model(uri: str, run_id: str, name: str, *, option: str = "--register") -> str:
    """Register the model run ``run_id`` logged (on store ``uri``) as a new version of ``name``, creating
    the registered model if needed; returns its ``models:/NAME/VERSION`` URI."""
    from mlflow import MlflowClient  # deferred: slow import; only a registering command loads it
    from mlflow.exceptions import MlflowException  # deferred: as above

    check_model_name(name, option)
    client = MlflowClient(uri, registry_uri=uri)
    with process_uris(uri, uri):
        run = retry_call(client.get_run, run_id)
        models = retry_call(
            client.search_logged_models,
            experiment_ids=[run.info.experiment_id],
            filter_string=f"source_run_id = '{run_id}'",
        )
        if not models:
            raise ConfigError(
                f"{option} {name}: run {run_id} logged no model (was it run with tracking.log_model=false?)"
            )
        try:
            retry_call(client.create_registered_model, name)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise ConfigError(f"{option} {name}: {mask_secrets(str(exc)).splitlines()[0]}") from exc
        version = retry_call(
            client.create_model_version, name, models[0].model_uri, run_id=run_id, model_id=models[0].model_id
        )
    return f"models:/{name}/{version.version}"

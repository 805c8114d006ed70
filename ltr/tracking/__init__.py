"""MLflow, the one package that talks to it (besides the pyfunc wrapper :mod:`ltr.models.pyfunc`).

``store`` (where runs are kept: URIs, credentials, retries), ``writer`` (a run being written:
:class:`~ltr.tracking.writer.Tracker`), ``reader`` (finished runs read back), ``fallback`` (runs a dead
server left in a local store, imported back), ``loading`` (a fitted ranker from a model URI or a folder)
and the command line ``python -m ltr.tracking import-fallback``.
"""

"""Configured experiments: config schemas, the fit-and-evaluate pipeline, its MLflow record, fold protocols, provenance."""

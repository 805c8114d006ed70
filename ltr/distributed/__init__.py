"""Training and evaluation on a Dask cluster: the backend, data the workers parse and keep, LightGBM and XGBoost."""

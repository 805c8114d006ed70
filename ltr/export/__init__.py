"""Export a trained ranker to ONNX, the search engines' LTR formats and the engines' own files.

``python -m ltr.export MODEL --format F --out PATH`` (:mod:`ltr.export.__main__`); docs/export.md
per target. One module per target (``onnx``, ``searchltr`` for Elasticsearch/OpenSearch, ``solr``,
``vespa``, ``native``; ``dumps`` the XGBoost JSON dump two of them share), the shared
representation (``trees``: canonical ``x <= t`` float32 splits with a NaN direction) and its reader
of fitted rankers (``reading``), a neural ranker's network (``neural``: ONNX only), the feature map
(``features``), the model source (``source``), the format table (``formats``) and the parity check
(``parity``). Importing this package loads no ONNX
and no engine; they load when a file is written or checked.
"""

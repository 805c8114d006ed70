"""File formats that are not ranking datasets: compressed inputs, text lines, prediction files and TREC runs."""

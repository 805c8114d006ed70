"""One module per export target: ONNX, the search engines' LTR formats, the engines' own files."""

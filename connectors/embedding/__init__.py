"""The model runtime: where the packaged MiniLM lies (model_path), picking and
opening an encoder (runtime), the ONNX export and its encoder, and a cache of
query vectors. No store module is imported here."""

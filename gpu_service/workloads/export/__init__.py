"""The `export` kind: a model version to ONNX, OpenVINO, TorchScript or a TensorRT engine."""

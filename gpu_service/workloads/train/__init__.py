"""The `train` kind: `spec.py` is declared in the API process; `run.py` (with the
trainer, DataParallel and the manifest) runs in the worker."""

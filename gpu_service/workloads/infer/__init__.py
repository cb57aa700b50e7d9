"""The `infer` kind: `spec.py` is declared in the API process; `run.py` (with the
annotation of images) runs in the resident worker."""

"""The `diagnostic` kind: `spec.py` is declared in the API process; `run.py` runs in
the worker."""

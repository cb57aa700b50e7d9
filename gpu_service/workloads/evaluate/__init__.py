"""The `evaluate` job kind: ultralytics' validator on a registered model and a dataset."""

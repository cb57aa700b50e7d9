"""The `carril` command line, on the Python client."""

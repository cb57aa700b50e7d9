"""How Carril's processes are started: their command lines and environment, defined once
for `make run` (carril_run.py), the tests' stack harness and the benchmarks."""

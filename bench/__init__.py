"""Carril's benchmark suite: `python -m bench` (what `make bench` runs).

Each benchmark measures Carril and its baseline in the same run on the same machine and
reports the ratio, so a noisy shared machine moves both sides together. Speed is
reported here, never asserted in tests.
"""

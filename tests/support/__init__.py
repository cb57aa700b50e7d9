"""Helpers shared by every test suite (real services as subprocesses, fixtures)."""

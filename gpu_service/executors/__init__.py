"""Executors: where admitted jobs run. `base` is the seam (ADR 0015), `local` the
spawned local workers."""

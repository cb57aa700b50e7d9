"""`python -m bench [options]`: run the suite and write bench/results/latest.{json,md}."""

from __future__ import annotations

from bench.cli import main

raise SystemExit(main())

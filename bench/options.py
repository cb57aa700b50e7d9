"""Every size a benchmark uses, from the command line (`python -m bench --help`).

Defaults run each benchmark in a few minutes on a small machine; `tiny()` is what the
harness test uses to prove every benchmark runs and reports well-formed results.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = (
    "health",
    "inference",
    "admission",
    "scheduling",
    "polling",
    "upload",
    "training",
    "dataparallel",
    "ray_cluster",
    "exports",
    "scaling",
)


@dataclass(frozen=True)
class Options:
    only: tuple[str, ...] = BENCHMARKS
    out: Path = ROOT / "bench" / "results"
    workdir: Path | None = None  # default: a fresh temporary folder, removed afterwards
    docs: Path | None = None  # rewrite the table in this Markdown file (docs/benchmarks.md)
    # 1. health under load
    health_samples: int = 300
    health_load_s: float = 30.0
    # 2. inference throughput (one model, the same images, imgsz and batch on every path)
    images: int = 32
    imgsz: int = 320
    batch: int = 16
    repeats: int = 5
    single_repeats: int = 10
    infer_conf: float = 1e-4  # low enough that the untrained model gives ~20 boxes/image
    # 3. admission overhead
    admission_samples: int = 20
    admission_pause_s: float = 5.0  # between samples without spares (the cold baseline)
    # 4. scheduling
    trace_jobs: int = 14
    trace_seed: int = 7
    time_unit_s: float = 2.0  # seconds per trace time unit
    fifo_real: bool = True  # also run the trace under FIFO through the real service
    # 5. polling
    poll_seconds: float = 8.0
    poll_concurrency: int = 8
    # the web path again on PostgreSQL (a database of its own); "" skips it
    postgres_url: str = "postgresql://postgres@127.0.0.1:5432/postgres"
    # 6. upload
    upload_mib: int = 1024
    # 7. training overhead
    train_images: int = 16
    epochs: int = 3
    train_imgsz: int = 64
    train_batch: int = 8
    seed: int = 42
    train_repeats: int = 5
    # 8. DataParallel
    dp_steps: int = 20
    dp_batch: int = 32
    dp_imgsz: int = 320
    # 9. scaling: queue lengths and web job rows, comma-separated, growing
    scaling_queued: str = "100,1000,10000"
    scaling_samples: int = 30
    scaling_tiny_jobs: int = 100
    scaling_web_rows: str = "1000,10000,100000"
    # the web app's reconciler pass interval during the full-path benchmarks
    reconcile_interval_s: float = 0.5
    extra: dict[str, str] = field(default_factory=dict)

    def tiny(self) -> Options:
        return replace(
            self,
            health_samples=20,
            health_load_s=2.0,
            images=4,
            imgsz=64,
            batch=2,
            repeats=1,
            single_repeats=2,
            admission_samples=3,
            admission_pause_s=2.0,
            trace_jobs=4,
            time_unit_s=0.3,
            fifo_real=False,
            poll_seconds=1.0,
            poll_concurrency=2,
            upload_mib=4,
            train_images=4,
            epochs=1,
            train_imgsz=32,
            train_batch=4,
            train_repeats=1,
            dp_steps=2,
            dp_batch=4,
            dp_imgsz=64,
            scaling_queued="10,40",
            scaling_samples=3,
            scaling_tiny_jobs=4,
            scaling_web_rows="50,200",
        )

    def queue_sizes(self) -> list[int]:
        return [int(x) for x in self.scaling_queued.split(",") if x.strip()]

    def web_row_sizes(self) -> list[int]:
        return [int(x) for x in self.scaling_web_rows.split(",") if x.strip()]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Carril measured against raw ultralytics and naive designs.",
    )
    defaults = Options()
    p.add_argument(
        "--only",
        default=",".join(BENCHMARKS),
        help=f"comma-separated benchmarks to run, of: {', '.join(BENCHMARKS)}",
    )
    p.add_argument("--out", type=Path, default=defaults.out, help="where latest.json/md go")
    p.add_argument("--workdir", type=Path, default=None, help="keep services' storage here")
    p.add_argument("--docs", type=Path, default=None, help="update the table in this file")
    p.add_argument("--tiny", action="store_true", help="every size at its smallest (a smoke run)")
    for f in fields(Options):
        if f.name in {"only", "out", "workdir", "docs", "extra"}:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = getattr(defaults, f.name)
        if isinstance(default, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        else:
            p.add_argument(flag, type=type(default), default=None, help=f"default {default}")
    return p


def options_parse(argv: list[str]) -> Options:
    args = parser().parse_args(argv)
    only = tuple(name.strip() for name in args.only.split(",") if name.strip())
    unknown = [name for name in only if name not in BENCHMARKS]
    if unknown:
        parser().error(f"unknown benchmark(s): {', '.join(unknown)}")
    options = Options(only=only, out=args.out, workdir=args.workdir, docs=args.docs)
    if args.tiny:
        options = options.tiny()
    given = {
        f.name: getattr(args, f.name)
        for f in fields(Options)
        if f.name not in {"only", "out", "workdir", "docs", "extra"}
        and getattr(args, f.name) is not None
    }
    return replace(options, **given)

"""A small closed-loop HTTP load generator, run as its own process by the polling
benchmark: `python -m bench.loadgen --url URL --seconds S --concurrency C [--header H]`.

Each thread keeps one connection alive and sends the next request when the previous
answer is read. Prints one JSON line: requests, errors, rps, p50/p99 latency.
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import httpx

from bench.stats import ms, percentile


def _worker(*, url: str, headers: dict[str, str], until: float, out: list, errors: list) -> None:
    with httpx.Client(headers=headers, timeout=30) as client:
        client.get(url)  # connect before the clock starts counting
        while (started := time.perf_counter()) < until:
            try:
                response = client.get(url)
                ok = response.status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                out.append(time.perf_counter() - started)
            else:
                errors.append(1)


def load(*, url: str, seconds: float, concurrency: int, headers: dict[str, str]) -> dict:
    latencies: list[float] = []
    errors: list[int] = []
    start = time.perf_counter() + 0.5  # let every thread connect first
    until = start + seconds
    threads = [
        threading.Thread(
            target=_worker,
            kwargs={
                "url": url,
                "headers": headers,
                "until": until,
                "out": latencies,
                "errors": errors,
            },
        )
        for _ in range(concurrency)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - (until - seconds)
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "seconds": round(elapsed, 3),
        "rps": round(len(latencies) / elapsed, 2),
        "p50_ms": ms(percentile(latencies, 50)) if latencies else None,
        "p99_ms": ms(percentile(latencies, 99)) if latencies else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.loadgen")
    p.add_argument("--url", required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--header", action="append", default=[], help="Name: value")
    args = p.parse_args()
    headers = dict(h.split(": ", 1) for h in args.header)
    print(
        json.dumps(
            load(url=args.url, seconds=args.seconds, concurrency=args.concurrency, headers=headers)
        )
    )


if __name__ == "__main__":
    main()

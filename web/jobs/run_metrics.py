"""A training's numbers as the job list, the compare page and the chart read them.

`Job.metrics` is what the GPU service reports: `epochs` (one record per seed and epoch)
while it runs, then `best_seed` and `seeds` (each seed's final validation metrics). The
final metrics of a training are its best seed's; they are copied into
`Job.final_metrics` so a list can be ordered by them in the database.
"""

from __future__ import annotations

from typing import Any

# The final metrics a job list can be sorted by, as ultralytics' validator names them.
METRIC_KEYS = ("precision", "recall", "mAP50", "mAP50-95")


def final_metrics_of(*, metrics: Any, result: Any) -> dict[str, float]:
    """The best seed's final validation metrics, or {} while there are none.

    Read from `metrics` (`best_seed`, `seeds`), else from the result, which carries the
    same two once the training succeeded.
    """
    for source in (metrics, result):
        if not isinstance(source, dict):
            continue
        seeds = source.get("seeds")
        if not isinstance(seeds, list) or not seeds:
            continue
        best = source.get("best_seed")
        chosen = next((s for s in seeds if isinstance(s, dict) and s.get("seed") == best), None)
        values = (chosen or {}).get("metrics")
        if isinstance(values, dict):
            return {
                key: float(values[key])
                for key in METRIC_KEYS
                if isinstance(values.get(key), int | float)
            }
    return {}


def epochs_by_seed(*, metrics: Any) -> list[dict[str, Any]]:
    """The per-epoch records grouped as one series per seed, in the order seeds ran."""
    records = (metrics or {}).get("epochs") if isinstance(metrics, dict) else None
    series: dict[Any, list[dict[str, Any]]] = {}
    for record in records or []:
        if isinstance(record, dict):
            series.setdefault(record.get("seed"), []).append(record)
    return [{"seed": seed, "epochs": rows} for seed, rows in series.items()]

"""`carril gpus`: the GPUs and the queue, as the web app last saw them."""

from __future__ import annotations

from carril_client.cli.common import JsonOption, client, output


def gpus(json_: JsonOption = False) -> None:
    """The GPUs (memory, the job on each lane) and the queue."""
    out = output(json_)
    with client() as carril:
        overview = carril.gpus()
    out.emit(
        overview,
        lambda: out.table(
            ["index", "name", "host", "memory (MiB)", "jobs"],
            [
                [g.get("index"), g.get("name"), g.get("host"), g.get("memory_total_mib"),
                 ", ".join(str(j.get("id") or "busy") for j in g.get("jobs") or []) or "-"]
                for g in overview.get("gpus") or []
            ],
            title=f"runtime: {overview.get('runtime')}; queued: {len(overview.get('queue') or [])}",
        ),
    )  # fmt: skip

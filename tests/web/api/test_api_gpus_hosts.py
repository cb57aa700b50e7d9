"""GPUs on several hosts (a Ray cluster): the web API passes each GPU's host through."""

from __future__ import annotations


def test_the_gpus_view_names_the_host_of_each_gpu(owner_api, fake_gpu):
    from jobs.reconciler import reconcile_once

    first = fake_gpu.gpus_answer["gpus"][0]
    fake_gpu.gpus_answer["gpus"] = [
        {**first, "index": 0, "host": "gpu-a"},
        {**first, "index": 1, "uuid": "GPU-sim-1", "host": "gpu-b"},
    ]
    reconcile_once(client=fake_gpu.client())

    gpus = owner_api.get("/api/v1/gpus/").json()["gpus"]

    assert [(gpu["index"], gpu["host"]) for gpu in gpus] == [(0, "gpu-a"), (1, "gpu-b")]

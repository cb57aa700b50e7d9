"""Example prices, shipped and dated; NOT live prices (nothing is fetched, ever).

They are round figures in the range public price lists showed around the date below,
for one workstation-class GPU bought and run locally and a comparable cloud GPU. Replace
every one with your own quotes, on the cost page or through `GET /api/v1/cost/?...`.
"""

from __future__ import annotations

AS_OF = "2026-11-01"
LABEL = f"Example prices as of {AS_OF}: illustrations, not quotes or live prices."

DEFAULTS: dict[str, float | str | bool | None] = {
    "currency": "USD",
    "gpu_model": "24 GB workstation GPU (local) / comparable cloud GPU",
    # local
    "hardware_price": 7200.0,  # the machine with its GPUs
    "amortisation_months": 36.0,
    "gpus": 2.0,  # GPUs in the machine: its capacity is gpus x 730 GPU-hours a month
    "energy_price_per_kwh": 0.30,
    "kwh_per_gpu_hour": None,  # None: the measured energy per GPU-hour (or the modelled one)
    "ops_per_month": 150.0,  # admin time, space, spares
    # cloud
    "cloud_on_demand_per_gpu_hour": 1.10,
    "cloud_committed_per_gpu_hour": 0.75,
    "use_committed": False,
    "transfer_in_per_gb": 0.0,  # most clouds do not charge ingress; some paths do
    "storage_per_gb_month": 0.023,
    # hybrid: train locally, serve in the cloud
    "training_share": None,  # None: the measured share of GPU-hours that were training
    "model_transfer_per_gb": 0.09,  # moving trained models out (egress) per GB
}

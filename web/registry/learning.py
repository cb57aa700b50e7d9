"""Whether a training learned anything: the did-not-learn warning (ADR 0045).

A training whose best seed's validation fitness is 0 still registers its weights (they
are what it produced, and a user may want to look at them), but the version carries this
warning on its job, on its page and in the API, and the promotion gate refuses it.
"""

from __future__ import annotations

from typing import Any

DID_NOT_LEARN = "did_not_learn"
DID_NOT_LEARN_MESSAGE = (
    "The training did not learn: its best validation fitness (mAP50-95) is 0. "
    "Train longer, at a larger image size, or on more data before using it."
)


def best_seed_result(result: dict[str, Any]) -> dict[str, Any]:
    """The best seed's entry of a TrainingResult (the first seed if none is marked)."""
    seeds = result.get("seeds") or []
    best = result.get("best_seed")
    return next((s for s in seeds if s.get("seed") == best), seeds[0] if seeds else {})


def training_did_not_learn(result: dict[str, Any]) -> bool:
    """True when the best seed's fitness was measured and is zero (or less). A result
    without a fitness (nothing validated) is not called a failure to learn."""
    fitness = best_seed_result(result).get("fitness")
    return fitness is not None and float(fitness) <= 0.0

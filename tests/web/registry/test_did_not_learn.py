"""A training that did not learn (best fitness 0): its weights are registered, the
version says it did not learn in the API, and the promotion gate refuses it (ADR 0045)."""

from __future__ import annotations

import copy

from jobs.models import Job
from registry.models import ModelVersion
from registry.services import model_version_register_from_training

from tests.web.factories import DELIVERED, TRAIN_RESULT, model_version


def finished_training(owner, *, best_fitness: float | None, fingerprint: str = "b" * 64) -> Job:
    result = copy.deepcopy(TRAIN_RESULT)
    result["weights"]["fingerprint"] = fingerprint
    for seed in result["seeds"]:
        seed["fitness"] = 0.0 if best_fitness is not None else None
    best = next(s for s in result["seeds"] if s["seed"] == result["best_seed"])
    best["fitness"] = best_fitness
    return Job.objects.create(
        owner=owner,
        kind="train",
        state="succeeded",
        dispatched_at=DELIVERED,
        spec={"model": "yolov8n", "epochs": 1, "imgsz": 64},
        result=result,
    )


def test_a_training_whose_best_fitness_is_zero_still_registers_its_weights_marked(owner):
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=0.0))
    assert version is not None
    assert version.stage == "candidate"
    assert version.did_not_learn is True
    assert version.warnings == ["did_not_learn"]


def test_a_training_that_learned_is_not_marked(owner):
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=0.3))
    assert version.did_not_learn is False
    assert version.warnings == []


def test_a_training_with_no_measured_fitness_is_not_called_a_failure_to_learn(owner):
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=None))
    assert version.did_not_learn is False


def test_the_api_says_so_on_the_version_and_on_its_training_job(owner, owner_api):
    job = finished_training(owner, best_fitness=0.0)
    version = model_version_register_from_training(job=job)
    document = owner_api.get(f"/api/v1/models/{version.id}/").json()
    assert document["did_not_learn"] is True
    assert document["warnings"] == ["did_not_learn"]
    listed = owner_api.get("/api/v1/models/").json()["results"]
    assert listed[0]["warnings"] == ["did_not_learn"]
    notes = owner_api.get(f"/api/v1/jobs/{job.id}/").json()["notes"]
    assert len(notes) == 1
    assert notes[0].startswith("The training did not learn")


def test_the_promotion_gate_refuses_it_even_when_serving_is_no_better(owner, admin_api):
    serving = model_version(fingerprint="s" * 64, stage="serving")
    serving.metrics = {"mAP50-95": 0.0}
    serving.save()
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=0.0))
    body = {
        "stage": "serving",
        "reason": "ci",
        "require": {"metric": "mAP50-95", "over": "serving", "min_improvement": 0.0},
    }
    response = admin_api.post(f"/api/v1/models/{version.id}/stage/", body, format="json")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "GATE_FAILED"
    assert "did not learn" in error["message"]
    assert error["details"]["candidate"]["warnings"] == ["did_not_learn"]
    version.refresh_from_db()
    assert version.stage == "candidate"


def override(admin_api, version, *, min_improvement: float):
    require = {
        "metric": "mAP50-95",
        "min_improvement": min_improvement,
        "allow_did_not_learn": True,
    }
    body = {"stage": "serving", "reason": "pipeline check", "require": require}
    return admin_api.post(f"/api/v1/models/{version.id}/stage/", body, format="json")


def test_with_the_explicit_override_the_gate_lets_it_through_when_the_numbers_hold(
    owner, admin_api
):
    serving = model_version(fingerprint="s" * 64, stage="serving")
    serving.metrics = {"mAP50-95": 0.0}
    serving.save()
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=0.0))
    version.metrics = {**version.metrics, "mAP50-95": 0.0}
    version.save()
    response = override(admin_api, version, min_improvement=0.0)
    assert response.status_code == 200, response.content
    assert response.json()["stage"] == "serving"


def test_the_override_does_not_make_a_worse_model_pass(owner, admin_api):
    serving = model_version(fingerprint="s" * 64, stage="serving")
    serving.metrics = {"mAP50-95": 0.2}
    serving.save()
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=0.0))
    version.metrics = {**version.metrics, "mAP50-95": 0.0}
    version.save()
    response = override(admin_api, version, min_improvement=0.0)
    assert response.status_code == 409
    assert "did not learn" not in response.json()["error"]["message"]


def test_a_promotion_without_the_gate_is_the_explicit_override_kept_in_the_history(
    owner, admin_api
):
    version = model_version_register_from_training(job=finished_training(owner, best_fitness=0.0))
    response = admin_api.post(
        f"/api/v1/models/{version.id}/stage/",
        {"stage": "serving", "reason": "smoke test of the pipeline, accuracy irrelevant"},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["warnings"] == ["did_not_learn"]
    version = ModelVersion.objects.get(id=version.id)
    assert version.stage == "serving"
    assert version.events.last().reason == "smoke test of the pipeline, accuracy irrelevant"

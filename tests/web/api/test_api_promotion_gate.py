"""A promotion with a gate: the stage changes only if the candidate beats the serving
version by the margin, checked in the same transaction; else 409 GATE_FAILED with both
numbers and nothing changed."""

from __future__ import annotations

from registry.models import ModelVersion

from tests.web.factories import model_version


def versions(serving: float | None, candidate: float) -> tuple[ModelVersion, ModelVersion | None]:
    ours = model_version(fingerprint="c" * 64)
    ours.metrics = {"mAP50-95": candidate}
    ours.save()
    theirs = None
    if serving is not None:
        theirs = model_version(fingerprint="s" * 64, stage="serving")
        theirs.metrics = {"mAP50-95": serving}
        theirs.save()
    return ours, theirs


def promote(api, version, margin):
    body = {
        "stage": "serving",
        "reason": "ci",
        "require": {"metric": "mAP50-95", "over": "serving", "min_improvement": margin},
    }
    return api.post(f"/api/v1/models/{version.id}/stage/", body, format="json")


def test_a_candidate_that_beats_serving_by_the_margin_is_promoted(admin_api):
    ours, theirs = versions(serving=0.40, candidate=0.45)
    response = promote(admin_api, ours, 0.01)
    assert response.status_code == 200, response.content
    assert response.json()["stage"] == "serving"
    theirs.refresh_from_db()
    assert theirs.stage == "candidate"


def test_a_candidate_short_of_the_margin_is_refused_with_both_numbers_and_nothing_changes(
    admin_api,
):
    ours, theirs = versions(serving=0.40, candidate=0.405)
    response = promote(admin_api, ours, 0.01)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "GATE_FAILED"
    assert error["details"]["candidate"]["value"] == 0.405
    assert error["details"]["serving"]["value"] == 0.40
    assert error["details"]["candidate"]["source"] == "training validation"
    ours.refresh_from_db()
    theirs.refresh_from_db()
    assert (ours.stage, theirs.stage) == ("candidate", "serving")
    assert not ours.events.filter(to_stage="serving").exists()


def test_with_nothing_serving_a_candidate_that_learned_nothing_is_refused(admin_api):
    ours, _ = versions(serving=None, candidate=0.0)
    assert promote(admin_api, ours, 0.01).status_code == 409
    ModelVersion.objects.filter(id=ours.id).update(metrics={"mAP50-95": 0.02})
    assert promote(admin_api, ours, 0.01).status_code == 200

"""The model registry over the API: everyone reads, administrators import and change stages."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from registry.models import ModelEvent, ModelVersion

from tests.web.factories import model_version

WEIGHTS = {
    "fingerprint": "d" * 64,
    "task": "detect",
    "architecture": "yolov8n",
    "class_names": ["square", "disc"],
    "imgsz": 64,
    "size_bytes": 11,
}


def import_weights(client, name: str = "shapes-v1"):
    upload = SimpleUploadedFile("best.pt", b"pt-contents")
    return client.post("/api/v1/models/import/", {"name": name, "file": upload}, format="multipart")


def test_every_signed_in_user_lists_model_versions(owner_api):
    model_version()
    body = owner_api.get("/api/v1/models/").json()
    assert body["count"] == 1
    assert body["results"][0]["stage"] == "candidate"


def test_an_administrator_imports_weights_through_the_gpu_service(admin_api, fake_gpu, storage):
    fake_gpu.weights = WEIGHTS
    response = import_weights(admin_api)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["fingerprint"] == "d" * 64
    assert body["stage"] == "candidate"
    assert body["source"] == "import"
    assert fake_gpu.weights_seen == [b"pt-contents"]
    assert list((storage / "uploads" / "weights").iterdir()) == []  # upload deleted


def test_rejected_weights_answer_422_and_register_nothing(admin_api, fake_gpu, storage):
    fake_gpu.weights_rejected = True
    response = import_weights(admin_api)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "WEIGHTS_REJECTED"
    assert not ModelVersion.objects.exists()
    assert list((storage / "uploads" / "weights").iterdir()) == []


def test_importing_the_same_weights_twice_is_a_conflict(admin_api, fake_gpu):
    fake_gpu.weights = WEIGHTS
    import_weights(admin_api)
    response = import_weights(admin_api, name="again")
    assert response.status_code == 409
    assert ModelVersion.objects.count() == 1


def test_an_ordinary_user_may_not_import_or_change_stages(owner_api, fake_gpu):
    version = model_version()
    assert import_weights(owner_api).status_code == 403
    response = owner_api.post(
        f"/api/v1/models/{version.id}/stage/", {"stage": "serving", "reason": "x"}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert fake_gpu.requests == []


def test_promotion_needs_a_reason_and_records_who_and_why(admin_api, admin):
    version = model_version()
    url = f"/api/v1/models/{version.id}/stage/"
    assert admin_api.post(url, {"stage": "serving", "reason": ""}, format="json").status_code == 400
    response = admin_api.post(url, {"stage": "serving", "reason": "best mAP"}, format="json")
    assert response.status_code == 200
    event = response.json()["events"][-1]
    assert (event["action"], event["actor"], event["reason"]) == ("promote", "ada", "best mAP")


def test_promoting_another_version_demotes_the_serving_one_and_going_back_is_a_rollback(admin_api):
    first = model_version(fingerprint="1" * 64)
    second = model_version(fingerprint="2" * 64)
    for version, reason in ((first, "first"), (second, "better"), (first, "second regressed")):
        admin_api.post(
            f"/api/v1/models/{version.id}/stage/",
            {"stage": "serving", "reason": reason},
            format="json",
        )
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.stage, second.stage) == ("serving", "candidate")
    actions = list(ModelEvent.objects.filter(model_version=first).values_list("action", flat=True))
    assert actions == ["promote", "demote", "rollback"]


def test_retiring_a_version_records_a_retire_event(admin_api):
    version = model_version()
    response = admin_api.post(
        f"/api/v1/models/{version.id}/stage/", {"stage": "retired", "reason": "old"}, format="json"
    )
    assert response.json()["stage"] == "retired"
    assert response.json()["events"][-1]["action"] == "retire"

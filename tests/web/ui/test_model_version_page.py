"""A model version's own page: its figures, its stage history, its source, and its
weights download, for every signed-in user (the registry is readable by all)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from jobs.models import Job
from registry.models import ModelEvent, ModelVersion


def _version_of(job: Job) -> ModelVersion:
    return ModelVersion.objects.get(source_job=job)


def _store_weights(storage: Path, version: ModelVersion) -> bytes:
    data = b"weights of " + version.fingerprint.encode()
    (storage / "weights").mkdir(parents=True, exist_ok=True)
    (storage / "weights" / f"{version.fingerprint}.pt").write_bytes(data)
    return data


def test_the_training_job_page_links_to_the_version_s_own_page(
    owner_client: Client, finished_training: Job
) -> None:
    version = _version_of(finished_training)
    html = owner_client.get(reverse("ui:job_detail", kwargs={"job_id": finished_training.id}))
    assert f'href="/models/{version.id}/" data-testid="model-version-link"' in html.content.decode()


def test_it_shows_the_version_s_metrics_history_and_source(
    owner_client: Client, finished_training: Job, storage: Path
) -> None:
    version = _version_of(finished_training)
    _store_weights(storage, version)
    ModelEvent.objects.create(
        model_version=version, action="register", to_stage="candidate", reason="best weights"
    )
    response = owner_client.get(reverse("ui:model_version", kwargs={"version_id": version.id}))
    html = response.content.decode()
    assert response.status_code == 200
    assert "yolov8n-best" in html
    assert '<td>mAP50-95</td><td class="num">0.3000</td>' in html
    assert "best weights" in html
    assert f'href="/jobs/{finished_training.id}/" data-testid="version-source"' in html
    assert 'data-testid="weights-download"' in html


def test_someone_else_s_training_is_named_but_not_linked(
    other_client: Client, finished_training: Job
) -> None:
    version = _version_of(finished_training)
    html = other_client.get(reverse("ui:model_version", kwargs={"version_id": version.id}))
    assert html.status_code == 200
    assert 'data-testid="version-source"' not in html.content.decode()


def test_any_signed_in_user_downloads_the_weights_under_a_lasting_name(
    other_client: Client, finished_training: Job, storage: Path
) -> None:
    version = _version_of(finished_training)
    data = _store_weights(storage, version)
    response = other_client.get(reverse("ui:model_weights", kwargs={"version_id": version.id}))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == data
    assert response["Content-Disposition"] == (
        f'attachment; filename="yolov8n-best-{version.fingerprint[:12]}.pt"'
    )


def test_missing_weights_are_a_404_and_the_page_says_so(
    owner_client: Client, version: ModelVersion
) -> None:
    page = owner_client.get(reverse("ui:model_version", kwargs={"version_id": version.id}))
    assert 'data-testid="weights-missing"' in page.content.decode()
    response = owner_client.get(reverse("ui:model_weights", kwargs={"version_id": version.id}))
    assert response.status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["ui:model_version", "ui:model_weights"])
def test_an_anonymous_visitor_is_sent_to_sign_in(name: str, version: ModelVersion) -> None:
    response = Client().get(reverse(name, kwargs={"version_id": version.id}))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_an_unknown_version_is_a_404(owner_client: Client) -> None:
    missing = "00000000-0000-0000-0000-000000000009"
    assert owner_client.get(f"/models/{missing}/").status_code == 404
    assert owner_client.get(f"/models/{missing}/weights.pt").status_code == 404


def test_only_an_administrator_sees_the_stage_form(
    owner_client: Client, admin_client_: Client, version: ModelVersion
) -> None:
    url = reverse("ui:model_version", kwargs={"version_id": version.id})
    assert b"version-stage-form" not in owner_client.get(url).content
    assert b"version-stage-form" in admin_client_.get(url).content

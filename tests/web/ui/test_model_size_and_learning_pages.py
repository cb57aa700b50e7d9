"""The pages say what size a model runs at and when a training did not learn (ADR 0045):
the inference form shows the size it will use, a job at another size carries a note, a
did-not-learn version is marked on its job, its page and the model list."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse
from jobs.models import Job
from registry.models import ModelVersion


def did_not_learn(training: Job) -> ModelVersion:
    """Make a finished training's best fitness 0, as its version then records it."""
    seeds = [{**s, "fitness": 0.0} for s in training.result["seeds"]]
    Job.objects.filter(id=training.id).update(result={**training.result, "seeds": seeds})
    ModelVersion.objects.filter(source_job=training).update(did_not_learn=True)
    return ModelVersion.objects.get(source_job=training)


def test_the_inference_form_shows_the_size_the_version_was_trained_at(
    owner_client: Client, version: ModelVersion
) -> None:
    ModelVersion.objects.filter(id=version.id).update(stage="serving", imgsz=96)
    html = owner_client.get(reverse("ui:infer_new")).content.decode()
    assert 'name="imgsz" min="32" max="2048" step="32" value="96"' in html
    assert "The model was trained at 96" in html
    # Each choice carries its own size, for the form to follow a change of version.
    assert '<option value="" data-imgsz="96">Serving: imported-1</option>' in html


def test_the_form_opened_on_a_chosen_version_shows_that_version_s_size(
    owner_client: Client, version: ModelVersion
) -> None:
    other = ModelVersion.objects.create(
        name="small", fingerprint="e" * 64, source="import", imgsz=160, stage="serving"
    )
    ModelVersion.objects.filter(id=version.id).update(imgsz=96)
    html = owner_client.get(reverse("ui:infer_new") + f"?version={version.id}").content.decode()
    assert 'value="96"' in html
    assert f'data-imgsz="{other.imgsz}"' in html


def test_a_version_without_a_training_size_shows_640(
    owner_client: Client, version: ModelVersion
) -> None:
    html = owner_client.get(reverse("ui:infer_new")).content.decode()
    assert 'value="640"' in html
    assert "records no training size" in html


def test_an_inference_at_another_size_says_so_on_its_page(
    owner_client: Client, finished_inference: Job, version: ModelVersion
) -> None:
    ModelVersion.objects.filter(id=version.id).update(imgsz=96)
    Job.objects.filter(id=finished_inference.id).update(
        spec={**finished_inference.spec, "imgsz": 640}
    )
    html = owner_client.get(reverse("ui:job_detail", kwargs={"job_id": finished_inference.id}))
    assert 'data-testid="job-notes"' in html.content.decode()
    assert "the model was trained at 96 px" in html.content.decode()


def test_a_did_not_learn_version_is_marked_on_its_job_its_page_and_the_list(
    owner_client: Client, finished_training: Job
) -> None:
    version = did_not_learn(finished_training)

    job_html = owner_client.get(
        reverse("ui:job_detail", kwargs={"job_id": finished_training.id})
    ).content.decode()
    assert 'data-testid="did-not-learn"' in job_html
    assert "The training did not learn" in job_html

    page = owner_client.get(reverse("ui:model_version", kwargs={"version_id": version.id}))
    assert 'data-testid="version-did-not-learn"' in page.content.decode()

    listing = owner_client.get(reverse("ui:models")).content.decode()
    assert 'data-testid="model-did-not-learn"' in listing


def test_a_version_that_learned_carries_no_such_mark(
    owner_client: Client, finished_training: Job
) -> None:
    version = ModelVersion.objects.get(source_job=finished_training)
    page = owner_client.get(reverse("ui:model_version", kwargs={"version_id": version.id}))
    assert "did-not-learn" not in page.content.decode()
    job_html = owner_client.get(reverse("ui:job_detail", kwargs={"job_id": finished_training.id}))
    assert 'data-testid="job-notes"' not in job_html.content.decode()

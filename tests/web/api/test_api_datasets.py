"""Datasets over the API: scoped to their owner (staff see all), deletable, images served."""

from __future__ import annotations

from datasets.models import Dataset

from tests.web.factories import dataset_uploaded


def test_a_user_lists_only_their_own_datasets(owner, other, owner_api):
    mine = dataset_uploaded(owner)
    dataset_uploaded(other)
    body = owner_api.get("/api/v1/datasets/").json()
    assert body["count"] == 1
    assert body["results"][0]["id"] == str(mine.id)


def test_staff_see_every_dataset(owner, other, staff_api):
    dataset_uploaded(owner)
    dataset_uploaded(other)
    assert staff_api.get("/api/v1/datasets/").json()["count"] == 2


def test_the_owner_reads_a_dataset_with_its_report(owner, owner_api):
    dataset = dataset_uploaded(owner)
    body = owner_api.get(f"/api/v1/datasets/{dataset.id}/").json()
    assert body["classes"] == ["square", "disc"]
    assert body["report"]["valid"] is True
    assert set(body["splits"]) == {"train", "val"}


def test_deleting_a_dataset_removes_its_files(owner, owner_api, other_api):
    dataset = dataset_uploaded(owner)
    assert other_api.delete(f"/api/v1/datasets/{dataset.id}/").status_code == 404
    assert dataset.path.is_dir()
    assert owner_api.delete(f"/api/v1/datasets/{dataset.id}/").status_code == 204
    assert not Dataset.objects.exists()
    assert not dataset.path.exists()


def test_samples_list_images_with_their_boxes_and_urls_that_serve_them(owner, owner_api):
    dataset = dataset_uploaded(owner)
    samples = owner_api.get(f"/api/v1/datasets/{dataset.id}/samples/?split=val&limit=2").json()
    assert len(samples) == 2
    assert samples[0]["boxes"][1]["class_name"] == "disc"
    image = owner_api.get(samples[0]["url"])
    assert image.status_code == 200
    assert b"".join(image.streaming_content).startswith(b"\x89PNG")


def test_image_names_that_leave_the_dataset_folder_answer_404(owner, owner_api, storage):
    dataset = dataset_uploaded(owner)
    (storage / "secret.png").write_bytes(b"\x89PNG secret")
    for url in (
        f"/api/v1/datasets/{dataset.id}/images/train/..%2F..%2F..%2Fsecret.png",
        f"/api/v1/datasets/{dataset.id}/images/../../secret.png",
        f"/api/v1/datasets/{dataset.id}/images/labels/train_0.txt",
        f"/api/v1/datasets/{dataset.id}/images/train/.hidden.png",
    ):
        assert owner_api.get(url).status_code == 404, url


def test_a_dataset_a_running_job_uses_cannot_be_deleted(owner, owner_api):
    from jobs.models import Job

    dataset = dataset_uploaded(owner)
    Job.objects.create(owner=owner, kind="train", state="running", dataset=dataset)
    response = owner_api.delete(f"/api/v1/datasets/{dataset.id}/")
    assert response.status_code == 409
    assert dataset.path.is_dir()

"""The browser UI's routes, mounted at the site root."""

from __future__ import annotations

from django.urls import path

from ui.views import (
    account,
    auth,
    compare_page,
    cost,
    dashboard,
    datasets,
    evaluation_new,
    evaluation_page,
    inference,
    job_video,
    jobs,
    model_exports,
    model_version,
    models,
    storage,
    training,
    usage,
    webhooks,
)

app_name = "ui"

urlpatterns = [
    path("login/", auth.sign_in, name="login"),
    path("logout/", auth.sign_out, name="logout"),
    path("account/", account.account, name="account"),
    path("account/tokens/", account.token_create, name="token_create"),
    path("account/tokens/<int:token_id>/revoke/", account.token_revoke, name="token_revoke"),
    path("account/webhooks/", webhooks.webhook_list, name="webhooks"),
    path("account/webhooks/new/", webhooks.webhook_new, name="webhook_new"),
    path(
        "account/webhooks/deliveries/<int:delivery_id>/redeliver/",
        webhooks.webhook_redeliver,
        name="webhook_redeliver",
    ),
    path(
        "account/webhooks/<int:webhook_id>/delete/", webhooks.webhook_delete, name="webhook_delete"
    ),
    path("", dashboard.dashboard, name="dashboard"),
    path("status.json", dashboard.dashboard_status, name="dashboard_status"),
    path("datasets/", datasets.dataset_list, name="datasets"),
    path("datasets/<uuid:dataset_id>/", datasets.dataset_detail, name="dataset_detail"),
    path(
        "datasets/<uuid:dataset_id>/images/<str:split>/<str:name>",
        datasets.dataset_image,
        name="dataset_image",
    ),
    path("datasets/<uuid:dataset_id>/delete/", datasets.dataset_delete, name="dataset_delete"),
    path("train/", training.train_new, name="train_new"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/compare/", compare_page.jobs_compare, name="jobs_compare"),
    path("jobs/<uuid:job_id>/", jobs.job_detail, name="job_detail"),
    path("jobs/<uuid:job_id>/labels/", jobs.job_labels, name="job_labels"),
    path("jobs/<uuid:job_id>/evaluation/", evaluation_page.job_evaluation, name="job_evaluation"),
    path("jobs/<uuid:job_id>/status.json", jobs.job_status, name="job_status"),
    path("jobs/<uuid:job_id>/cancel/", jobs.job_cancel, name="job_cancel"),
    path("jobs/<uuid:job_id>/run-again/", jobs.job_run_again, name="job_run_again"),
    path("jobs/<uuid:job_id>/images/<str:name>", jobs.job_image, name="job_image"),
    path("jobs/<uuid:job_id>/detections.json", jobs.job_detections, name="job_detections"),
    path("jobs/<uuid:job_id>/files/<path:relpath>", job_video.job_file, name="job_file"),
    path("jobs/<uuid:job_id>/evaluation/", evaluation_page.job_evaluation, name="job_evaluation"),
    path("infer/", inference.infer_new, name="infer_new"),
    path("models/", models.model_list, name="models"),
    path("models/<uuid:version_id>/", model_version.model_version_detail, name="model_version"),
    path("models/<uuid:version_id>/weights.pt", model_version.model_weights, name="model_weights"),
    path("models/<uuid:version_id>/stage/", models.model_stage, name="model_stage"),
    path(
        "models/<uuid:version_id>/evaluate/",
        evaluation_new.evaluation_new,
        name="evaluation_new",
    ),
    path("usage/", usage.usage_page, name="usage"),
    path("storage/", storage.storage_page, name="storage"),
    path("cost/", cost.cost_page, name="cost"),
    path("models/<uuid:version_id>/download/", model_exports.model_download, name="model_download"),
    path("models/<uuid:version_id>/export/", model_exports.model_export_start, name="model_export"),
    path(
        "models/<uuid:version_id>/serving-format/",
        model_exports.model_serving_format,
        name="model_serving_format",
    ),
]

"""Routes of the public REST API under /api/v1/. Add to this contract; never change it."""

from __future__ import annotations

from django.urls import path

from api.views import auth, cost, datasets, gpus, jobs, models, quotas, usage, webhooks

app_name = "api"

urlpatterns = [
    # First: the job status poll is the most frequent request there is, and Django tries
    # the routes in order. No other route reads as a job id, so the order changes nothing
    # else (and the OpenAPI document sorts its paths).
    path("jobs/<uuid:job_id>/", jobs.JobDetailView.as_view(), name="job-detail"),
    path("auth/token/", auth.TokenObtainView.as_view(), name="token-obtain"),
    path("auth/tokens/", auth.TokensView.as_view(), name="tokens"),
    path("auth/tokens/<int:token_id>/", auth.TokenRevokeView.as_view(), name="token-revoke"),
    path("datasets/", datasets.DatasetsView.as_view(), name="datasets"),
    path(
        "datasets/<uuid:dataset_id>/", datasets.DatasetDetailView.as_view(), name="dataset-detail"
    ),
    path(
        "datasets/<uuid:dataset_id>/samples/",
        datasets.DatasetSamplesView.as_view(),
        name="dataset-samples",
    ),
    path(
        "datasets/<uuid:dataset_id>/images/<str:split>/<str:name>",
        datasets.DatasetImageView.as_view(),
        name="dataset-image",
    ),
    path("models/", models.ModelsView.as_view(), name="models"),
    path("models/import/", models.ModelImportView.as_view(), name="model-import"),
    path("models/<uuid:version_id>/", models.ModelDetailView.as_view(), name="model-detail"),
    path("models/<uuid:version_id>/stage/", models.ModelStageView.as_view(), name="model-stage"),
    path(
        "models/<uuid:version_id>/download/",
        models.ModelDownloadView.as_view(),
        name="model-download",
    ),
    path(
        "models/<uuid:version_id>/exports/", models.ModelExportsView.as_view(), name="model-exports"
    ),
    path("models/<uuid:version_id>/export/", models.ModelExportView.as_view(), name="model-export"),
    path(
        "models/<uuid:version_id>/serving-format/",
        models.ModelServingFormatView.as_view(),
        name="model-serving-format",
    ),
    path("jobs/", jobs.JobsView.as_view(), name="jobs"),
    path("jobs/train/", jobs.TrainView.as_view(), name="job-train"),
    path("jobs/compare/", jobs.JobsCompareView.as_view(), name="jobs-compare"),
    path("jobs/infer/", jobs.InferView.as_view(), name="job-infer"),
    path("jobs/evaluate/", jobs.EvaluateView.as_view(), name="job-evaluate"),
    path("jobs/<uuid:job_id>/cancel/", jobs.JobCancelView.as_view(), name="job-cancel"),
    path("jobs/<uuid:job_id>/logs/", jobs.JobLogsView.as_view(), name="job-logs"),
    path("jobs/<uuid:job_id>/detections/", jobs.JobDetectionsView.as_view(), name="job-detections"),
    path("jobs/<uuid:job_id>/evaluation/", jobs.JobEvaluationView.as_view(), name="job-evaluation"),
    path(
        "jobs/<uuid:job_id>/artifacts/<path:relpath>",
        jobs.JobArtifactView.as_view(),
        name="job-artifact",
    ),
    path("gpus/", gpus.GpusView.as_view(), name="gpus"),
    path("usage/", usage.UsageView.as_view(), name="usage"),
    path("cost/", cost.CostView.as_view(), name="cost"),
    path("quotas/", quotas.OwnQuotaView.as_view(), name="quota-own"),
    path("quotas/<str:username>/", quotas.UserQuotaView.as_view(), name="quota-user"),
    path("webhooks/", webhooks.WebhooksView.as_view(), name="webhooks"),
    path("webhooks/<int:webhook_id>/", webhooks.WebhookDetailView.as_view(), name="webhook-detail"),
    path(
        "webhooks/<int:webhook_id>/deliveries/",
        webhooks.WebhookDeliveriesView.as_view(),
        name="webhook-deliveries",
    ),
    path(
        "webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver/",
        webhooks.WebhookRedeliverView.as_view(),
        name="webhook-redeliver",
    ),
]

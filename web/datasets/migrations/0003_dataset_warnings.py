"""The dataset document gives its per-split counts once: in `splits`, not again in
`report` (issue 13). Moves `report.splits` and `report.classes` of existing rows to the
row's own `splits` and `classes` (kept for refused datasets now too), and back on reverse.
Warnings stay in `report.warnings`; datasets validated before keep the ones they had."""

from django.db import migrations


def report_counts_to_row(apps, schema_editor):
    Dataset = apps.get_model("datasets", "Dataset")
    for dataset in Dataset.objects.all().iterator():
        report = dict(dataset.report or {})
        if "splits" not in report and "classes" not in report:
            continue
        splits = report.pop("splits", None)
        classes = report.pop("classes", None)
        dataset.splits = dataset.splits or splits or {}
        dataset.classes = dataset.classes or classes or []
        dataset.report = report
        dataset.save(update_fields=["splits", "classes", "report"])


def row_counts_to_report(apps, schema_editor):
    Dataset = apps.get_model("datasets", "Dataset")
    for dataset in Dataset.objects.all().iterator():
        if not dataset.report:
            continue
        dataset.report = {
            **dataset.report,
            "splits": dataset.splits,
            "classes": dataset.classes,
        }
        if dataset.state != "ready":
            dataset.splits, dataset.classes = {}, []
        dataset.save(update_fields=["splits", "classes", "report"])


class Migration(migrations.Migration):
    dependencies = [
        ("datasets", "0002_dataset_state"),
    ]

    operations = [
        migrations.RunPython(report_counts_to_row, row_counts_to_report),
    ]

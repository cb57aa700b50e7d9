"""A training's name, tags and note, and its final metrics copied out for sorting."""

from django.db import migrations, models


def fill_final_metrics(apps, schema_editor):
    from jobs.run_metrics import final_metrics_of

    Job = apps.get_model("jobs", "Job")
    for job in Job.objects.filter(kind="train").only("id", "metrics", "result").iterator():
        final = final_metrics_of(metrics=job.metrics, result=job.result)
        if final:
            Job.objects.filter(id=job.id).update(final_metrics=final)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0006_evaluate_kind"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="name",
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddField(
            model_name="job",
            name="tags",
            field=models.CharField(blank=True, max_length=700),
        ),
        migrations.AddField(
            model_name="job",
            name="note",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="job",
            name="final_metrics",
            field=models.JSONField(default=dict),
        ),
        migrations.RunPython(fill_final_metrics, migrations.RunPython.noop),
    ]

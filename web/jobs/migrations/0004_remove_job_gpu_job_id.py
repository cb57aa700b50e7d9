"""One job id (issue 11): the column goes once 0003 has moved the rows off it."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("jobs", "0003_one_job_id")]

    operations = [migrations.RemoveField(model_name="job", name="gpu_job_id")]

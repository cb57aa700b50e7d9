from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_apitoken_expires_at")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scopes",
            field=models.JSONField(blank=True, default=list),
        ),
    ]

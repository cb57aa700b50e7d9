from datetime import timedelta

from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def give_active_tokens_an_expiry(apps, schema_editor):
    # Tokens issued before expiry existed expire one TTL after this migration: nobody is
    # cut off by the upgrade, and no token lives for ever.
    ApiToken = apps.get_model("accounts", "ApiToken")
    expires_at = timezone.now() + timedelta(days=settings.CARRIL_TOKEN_TTL_DAYS)
    ApiToken.objects.filter(revoked_at__isnull=True, expires_at__isnull=True).update(
        expires_at=expires_at
    )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(give_active_tokens_an_expiry, migrations.RunPython.noop),
    ]

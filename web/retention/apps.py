from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "retention"
    verbose_name = "Storage retention"
    default_auto_field = "django.db.models.BigAutoField"

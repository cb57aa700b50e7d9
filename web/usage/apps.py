from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "usage"
    verbose_name = "GPU usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from usage.metrics import register_gpu_seconds_collector

        register_gpu_seconds_collector()

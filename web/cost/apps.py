from django.apps import AppConfig


class CostConfig(AppConfig):
    name = "cost"
    verbose_name = "Cloud, local or hybrid"

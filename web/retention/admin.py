from django.contrib import admin

from retention.models import RetentionPin


@admin.register(RetentionPin)
class RetentionPinAdmin(admin.ModelAdmin):
    list_display = ("model_version", "reason", "pinned_by", "created_at")

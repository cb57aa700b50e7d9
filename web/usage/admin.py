from django.contrib import admin

from usage.models import AttemptUsage, UserQuota


@admin.register(UserQuota)
class UserQuotaAdmin(admin.ModelAdmin):
    list_display = ("user", "max_gpus", "gpu_hours_per_month", "storage_bytes", "priority")
    search_fields = ("user__username",)


@admin.register(AttemptUsage)
class AttemptUsageAdmin(admin.ModelAdmin):
    list_display = ("job", "attempt", "gpus", "gpu_seconds", "energy_wh", "energy_source")
    readonly_fields = [f.name for f in AttemptUsage._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

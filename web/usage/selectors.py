"""Sums of GPU usage by user, kind, day and month (issue 16)."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from carril_web.errors import ValidationFailed
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate

from usage.models import AttemptUsage

MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


@dataclass(frozen=True)
class Month:
    year: int
    month: int

    @classmethod
    def parse(cls, raw: str | None, *, today: date | None = None) -> Month:
        """`YYYY-MM`; empty means this month (UTC)."""
        if not raw:
            today = today or datetime.now(UTC).date()
            return cls(today.year, today.month)
        match = MONTH.match(raw)
        if match is None:
            raise ValidationFailed(
                "month must look like YYYY-MM", details={"field": "month", "value": raw}
            )
        return cls(int(match[1]), int(match[2]))

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        return self.start + timedelta(days=calendar.monthrange(self.year, self.month)[1])

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


def usage_rows(*, start: datetime, end: datetime, user=None):
    rows = AttemptUsage.objects.filter(held_until__gte=start, held_until__lt=end)
    return rows.filter(job__owner=user) if user is not None else rows


def _sums(rows) -> dict[str, Any]:
    return rows.aggregate(
        gpu_seconds=Sum("gpu_seconds"), energy_wh=Sum("energy_wh"), attempts=Count("id")
    )


def _figures(sums: dict[str, Any]) -> dict[str, Any]:
    seconds = sums.get("gpu_seconds") or 0.0
    return {
        "gpu_seconds": round(seconds, 3),
        "gpu_hours": round(seconds / 3600.0, 6),
        "energy_kwh": round((sums.get("energy_wh") or 0.0) / 1000.0, 6),
        "attempts": sums.get("attempts") or 0,
    }


def usage_summary(*, month: Month, user=None) -> dict[str, Any]:
    """One month's usage: totals, per user, per kind, per day. `user` None: everyone."""
    rows = usage_rows(start=month.start, end=month.end, user=user)
    sources = sorted(set(rows.values_list("energy_source", flat=True).distinct()))
    by_user = [
        {"user": row["job__owner__username"], **_figures(row)}
        for row in rows.values("job__owner__username")
        .annotate(gpu_seconds=Sum("gpu_seconds"), energy_wh=Sum("energy_wh"), attempts=Count("id"))
        .order_by("job__owner__username")
    ]
    by_kind = [
        {"kind": row["job__kind"], **_figures(row)}
        for row in rows.values("job__kind")
        .annotate(gpu_seconds=Sum("gpu_seconds"), energy_wh=Sum("energy_wh"), attempts=Count("id"))
        .order_by("job__kind")
    ]
    per_day = {
        row["day"]: row
        for row in rows.annotate(day=TruncDate("held_until", tzinfo=UTC))
        .values("day")
        .annotate(gpu_seconds=Sum("gpu_seconds"), energy_wh=Sum("energy_wh"), attempts=Count("id"))
    }
    days = []
    day = month.start.date()
    while day < month.end.date():
        days.append({"day": day.isoformat(), **_figures(per_day.get(day, {}))})
        day += timedelta(days=1)
    return {
        "month": str(month),
        "user": user.get_username() if user is not None else None,
        "totals": _figures(_sums(rows)),
        # "modelled" when any energy here was computed from a declared wattage.
        "energy_sources": sources,
        "by_user": by_user,
        "by_kind": by_kind,
        "by_day": days,
    }


def gpu_seconds_by_user_and_kind() -> list[tuple[str, str, float]]:
    """All time, for the Prometheus counter carril_gpu_seconds_total{user,kind}."""
    rows = (
        AttemptUsage.objects.values("job__owner__username", "job__kind")
        .annotate(seconds=Sum("gpu_seconds"))
        .order_by("job__owner__username", "job__kind")
    )
    return [(r["job__owner__username"], r["job__kind"], r["seconds"] or 0.0) for r in rows]


def usage_visible(*, requester, month: str | None, username: str | None = None) -> dict[str, Any]:
    """What `requester` may see of one month: their own usage; administrators everyone's,
    or one user's with `username`."""
    from accounts.services import user_is_administrator
    from carril_web.errors import Forbidden, NotFound
    from django.contrib.auth import get_user_model

    chosen = Month.parse(month)
    if not user_is_administrator(user=requester):
        if username and username != requester.get_username():
            raise Forbidden("Only administrators may see another user's usage.")
        return usage_summary(month=chosen, user=requester)
    if not username:
        return usage_summary(month=chosen)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"no user {username!r}", details={"field": "user"})
    return usage_summary(month=chosen, user=user)

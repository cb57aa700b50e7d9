"""A training's name, tags and note: their rules, shared by the API and the pages, and
the one change a person may make to a job after it was submitted (issue 13).

Tags are slugs, lower-cased, stored as ",a,b," (see `Job.tags`).
"""

from __future__ import annotations

import re
from typing import Any

from carril_web.errors import Forbidden, ValidationFailed
from django.contrib.auth.models import AbstractBaseUser

from jobs.models import Job

NAME_MAX = 100
NOTE_MAX = 2000
TAGS_MAX = 20
TAG_MAX = 32
TAG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
LABEL_FIELDS = ("name", "tags", "note")


def tag_problem(tag: Any) -> str | None:
    if not isinstance(tag, str) or not TAG_PATTERN.match(tag.lower()):
        return (
            f"{tag!r} is not a tag: letters, digits, '-' and '_', starting with a letter or digit."
        )
    if len(tag) > TAG_MAX:
        return f"{tag!r} is longer than {TAG_MAX} characters."
    return None


def tags_clean(raw: Any) -> list[str]:
    """The tags as stored: lower-cased, each once, in the order given; or ValidationFailed."""
    if isinstance(raw, str):
        raw = [part for part in re.split(r"[,\s]+", raw) if part]
    if not isinstance(raw, list):
        raise ValidationFailed(details={"fields": {"tags": ["A list of tags."]}})
    problems = [p for p in (tag_problem(tag) for tag in raw) if p]
    tags = list(dict.fromkeys(tag.lower() for tag in raw if isinstance(tag, str)))
    if len(tags) > TAGS_MAX:
        problems.append(f"At most {TAGS_MAX} tags; there are {len(tags)}.")
    if problems:
        raise ValidationFailed(details={"fields": {"tags": problems}})
    return tags


def labels_clean(*, values: dict[str, Any]) -> dict[str, Any]:
    """name, tags and note as they will be stored, for the ones present in `values`."""
    fields: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    for key in ("name", "note"):
        if key not in values:
            continue
        value = values[key] if values[key] is not None else ""
        limit = NAME_MAX if key == "name" else NOTE_MAX
        if not isinstance(value, str):
            fields[key] = ["Text."]
        elif len(value.strip()) > limit:
            fields[key] = [f"At most {limit} characters; this is {len(value.strip())}."]
        else:
            out[key] = value.strip()
    if "tags" in values:
        try:
            out["tags"] = tags_clean(values["tags"] if values["tags"] is not None else [])
        except ValidationFailed as exc:
            fields.update(exc.details["fields"])
    if fields:
        raise ValidationFailed(details={"fields": fields})
    return out


def tags_stored(tags: list[str]) -> str:
    return f",{','.join(tags)}," if tags else ""


def job_labels_set(*, job: Job, user: AbstractBaseUser, values: dict[str, Any]) -> Job:
    """Rename, retag or annotate a training. Only its owner may; nothing else changes."""
    if job.owner_id != user.pk:
        raise Forbidden("Only the job's owner can change its name, tags or note.")
    unknown = sorted(set(values) - set(LABEL_FIELDS))
    if unknown:
        raise ValidationFailed(
            f"Only name, tags and note can be changed; not {', '.join(unknown)}.",
            details={"fields": {key: ["Cannot be changed."] for key in unknown}},
        )
    clean = labels_clean(values=values)
    if "tags" in clean:
        clean["tags"] = tags_stored(clean["tags"])
    for key, value in clean.items():
        setattr(job, key, value)
    if clean:
        job.save(update_fields=[*clean, "updated_at"])
    return job

"""`job_get`'s one SELECT, compiled to SQL once and run again with each call's values.

`GET /api/v1/jobs/{id}/` is the hottest read there is: scripts and the job page poll it
several times a second. Running the query takes about 0.05 ms on SQLite; building it
through the ORM each time (a queryset cloned per filter, two joins, some 60 columns
quoted and compiled, their converters looked up) took about 1 ms, a third of the whole
request. So the same queryset `job_get` would build is compiled once per database
connection and per visibility (every owner's jobs, or one owner's), with sentinel values
where the job id and the owner go; each call runs that SQL with its own values and turns
the row into the Job the ORM would have returned (owner and model version attached),
through the steps of Django's ModelIterable: the same converters, `from_db`, the same
related populators. tests/web/jobs/test_compiled_get.py holds it to the ORM's answer.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.query import get_related_populators

from jobs.models import Job

# Stand-ins compiled into the SQL, then found among its parameters and replaced per call.
# Neither can be a real row's: ids are uuid4 (this one is not), user ids are positive.
_JOB_SENTINEL = uuid.UUID("5e771e15-0000-0000-0000-0000c0a1e5ce")
_OWNER_SENTINEL = -7_115_061


@dataclass(frozen=True)
class _Compiled:
    connection: BaseDatabaseWrapper  # the one it was compiled for (one per thread)
    sql: str
    params: tuple[Any, ...]
    job_at: int
    owner_at: int | None
    converters: tuple[tuple[int, Sequence[Callable[..., Any]], Any], ...]
    job_columns: slice
    init_list: tuple[str, ...]
    related_populators: tuple[Any, ...]


def _position(params: Sequence[Any], value: Any, *, what: str) -> int:
    found = [i for i, param in enumerate(params) if param == value]
    if len(found) != 1:
        # Django compiled the filter in a way this module does not expect: fail loudly
        # rather than run a query with the wrong values in it.
        raise RuntimeError(f"the compiled job query has {len(found)} {what} parameters")
    return found[0]


def _compile(*, alias: str, one_owner: bool) -> _Compiled:
    connection = connections[alias]
    # What job_get asked the ORM for: `get` drops the model's ordering.
    jobs = Job.objects.using(alias).select_related("owner", "model_version").order_by()
    jobs = jobs.filter(id=_JOB_SENTINEL)
    if one_owner:
        jobs = jobs.filter(owner=_OWNER_SENTINEL)
    compiler = jobs.query.get_compiler(using=alias)
    sql, params = compiler.as_sql()
    job_at = _position(params, Job._meta.pk.get_db_prep_value(_JOB_SENTINEL, connection), what="id")
    owner_at = None
    if one_owner:
        owner_value = Job._meta.get_field("owner").get_db_prep_value(_OWNER_SENTINEL, connection)
        owner_at = _position(params, owner_value, what="owner")
    select, klass_info = compiler.select, compiler.klass_info
    fields = [column[0] for column in select[0 : compiler.col_count]]
    converters = compiler.get_converters(fields)
    first, last = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    return _Compiled(
        connection=connection,
        sql=sql,
        params=tuple(params),
        job_at=job_at,
        owner_at=owner_at,
        converters=tuple((pos, convs, expr) for pos, (convs, expr) in converters.items()),
        job_columns=slice(first, last),
        init_list=tuple(column[0].target.attname for column in select[first:last]),
        related_populators=tuple(get_related_populators(klass_info, select, alias)),
    )


_compiled = threading.local()  # connections are per thread, and so is what is compiled


def _compiled_for(*, alias: str, one_owner: bool) -> _Compiled:
    key = (alias, one_owner)
    cache: dict[tuple[str, bool], _Compiled] = _compiled.__dict__.setdefault("by_key", {})
    compiled = cache.get(key)
    if compiled is None or compiled.connection is not connections[alias]:
        compiled = cache[key] = _compile(alias=alias, one_owner=one_owner)
    return compiled


def job_row_get(*, job_id: uuid.UUID | str, owner_id: int | None) -> Job | None:
    """The job with its owner and model version, or None; with `owner_id`, only if that
    user owns it. A malformed id raises what the ORM raises (ValidationError)."""
    alias = router.db_for_read(Job)
    compiled = _compiled_for(alias=alias, one_owner=owner_id is not None)
    connection = compiled.connection
    params = list(compiled.params)
    params[compiled.job_at] = Job._meta.pk.get_db_prep_value(job_id, connection)
    if compiled.owner_at is not None:
        owner_field = Job._meta.get_field("owner")
        params[compiled.owner_at] = owner_field.get_db_prep_value(owner_id, connection)
    with connection.cursor() as cursor:
        cursor.execute(compiled.sql, params)
        found = cursor.fetchone()
    if found is None:
        return None
    row = list(found)
    for pos, convs, expression in compiled.converters:
        value = row[pos]
        for converter in convs:
            value = converter(value, expression, connection)
        row[pos] = value
    job = Job.from_db(alias, compiled.init_list, row[compiled.job_columns])
    for populator in compiled.related_populators:
        populator.populate(row, job)
    return job

"""Two or more trainings side by side (`jobs.comparison`), from the job list's checkboxes."""

from __future__ import annotations

from carril_web.errors import ValidationFailed
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from jobs.comparison import compare_ids_parse, comparison

from ui.compare_view import compare_page
from ui.pages import render_page


@login_required
@require_GET
def jobs_compare(request: HttpRequest) -> HttpResponse:
    try:
        ids = compare_ids_parse(request.GET.getlist("ids"))
        page = compare_page(document=comparison(user=request.user, ids=ids))
    except ValidationFailed as exc:
        return render_page(
            request, "ui/jobs/compare.html", {"problem": exc.message}, section="train", status=400
        )
    return render_page(request, "ui/jobs/compare.html", {"page": page}, section="train")

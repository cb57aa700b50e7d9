"""Which model versions a user may see and use: the registry's tenant rule.

A version trained on someone's private dataset carries what it learnt from it, so it is
theirs until an administrator makes it serve. A user sees and uses:

- the versions their own trainings registered (any stage);
- the versions an administrator imported (shared by intent);
- the version that is serving (everyone's default for inference).

Everyone else's candidates and retired versions are invisible: they answer 404 exactly
like a missing version, and neither fine-tuning nor inference may start from them.
Administrators (who manage the registry) and staff (who see every user's records) see
every version.
"""

from __future__ import annotations

from accounts.services import user_is_administrator, user_sees_everything
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from registry.models import ModelVersion, Source, Stage


def model_versions_visible_to(*, user: AbstractBaseUser) -> QuerySet[ModelVersion]:
    versions = ModelVersion.objects.all()
    if user_sees_everything(user=user) or user_is_administrator(user=user):
        return versions
    return versions.filter(
        Q(source_job__owner_id=user.pk) | Q(source=Source.IMPORT) | Q(stage=Stage.SERVING)
    )


def model_version_visible_to(*, user: AbstractBaseUser, version: ModelVersion) -> bool:
    return model_versions_visible_to(user=user).filter(id=version.id).exists()

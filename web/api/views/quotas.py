"""Quotas (issue 16): a user reads their own limits and usage; administrators read and
set any user's overrides (a blank limit takes the default from settings, 0 is none)."""

from __future__ import annotations

from carril_web.errors import NotFound
from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from jobs.quotas import quota_public
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from usage.models import UserQuota

from api.permissions import ADMINISTRATORS_ONLY


class QuotaIn(serializers.Serializer):
    max_gpus = serializers.IntegerField(min_value=0, allow_null=True, required=False)
    gpu_hours_per_month = serializers.FloatField(min_value=0, allow_null=True, required=False)
    storage_bytes = serializers.IntegerField(min_value=0, allow_null=True, required=False)
    priority = serializers.IntegerField(min_value=-100, max_value=100, required=False)


class OwnQuotaView(APIView):
    @extend_schema(operation_id="quota_own", responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response(quota_public(user=request.user))


class UserQuotaView(APIView):
    permission_classes = ADMINISTRATORS_ONLY

    @staticmethod
    def _user(username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise NotFound(f"no user {username!r}")
        return user

    @extend_schema(operation_id="quota_user", responses={200: dict})
    def get(self, request: Request, username: str) -> Response:
        return Response(quota_public(user=self._user(username)))

    @extend_schema(request=QuotaIn, responses={200: dict})
    def put(self, request: Request, username: str) -> Response:
        user = self._user(username)
        body = QuotaIn(data=request.data)
        body.is_valid(raise_exception=True)
        UserQuota.objects.update_or_create(user=user, defaults=body.validated_data)
        return Response(quota_public(user=user))

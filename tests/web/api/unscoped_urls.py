"""A URL configuration with the two mistakes the token-scope check exists to catch: a
route with no declared scope and a view whose permission classes drop TokenScopes."""

from __future__ import annotations

from django.urls import path
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView


class Undeclared(APIView):
    def get(self, request):
        return Response({})


class Unscoped(APIView):
    permission_classes = [IsAuthenticated]

    def put(self, request):
        return Response({})


urlpatterns = [
    path("undeclared/", Undeclared.as_view(), name="undeclared"),
    path("unscoped/", Unscoped.as_view(), name="unscoped"),
]

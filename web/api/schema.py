"""Teaches drf-spectacular how our token authentication looks in the OpenAPI document."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class HashedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.HashedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "`Token <token>` or `Bearer <token>`; get one from POST /api/v1/auth/token/."
            ),
        }

"""API tokens: obtain one with a password, list, create and revoke your own."""

from __future__ import annotations

from accounts.models import ApiToken
from accounts.services import (
    IssuedToken,
    api_token_create,
    api_token_create_scoped,
    api_token_obtain,
    api_token_revoke,
)
from accounts.throttling import sign_in_succeeded
from carril_web.errors import Unauthorized
from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.scopes import TokenScopes, scopes_handed_on, token_scopes
from api.serializers import TokenCreateIn, TokenObtainIn, TokenObtainOut, TokenOut


def _issued(issued: IssuedToken) -> dict:
    return TokenObtainOut(
        {
            "token": issued.secret,
            "id": issued.token.id,
            "prefix": issued.token.prefix,
            "name": issued.token.name,
            "expires_at": issued.token.expires_at,
            "scopes": issued.token.scopes,
        }
    ).data


class TokenObtainView(APIView):
    authentication_classes: list = []
    permission_classes = [TokenScopes]  # declared public: no sign-in needed
    # Failed passwords are throttled as on the sign-in pages (ADR 0024): per username at
    # one client address, per address, and slowed per username; counted in the database
    # for every process (accounts/throttling.py).

    @extend_schema(request=TokenObtainIn, responses={200: TokenObtainOut}, auth=[])
    def post(self, request: Request) -> Response:
        data = TokenObtainIn(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(
            request._request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if user is None or not user.is_active:
            raise Unauthorized("Wrong username or password.")
        sign_in_succeeded(request=request._request, user=user)
        issued = api_token_obtain(user=user, name=data.validated_data.get("name", "") or "api")
        return Response(_issued(issued))


class TokensView(APIView):
    @extend_schema(responses={200: TokenOut(many=True)})
    def get(self, request: Request) -> Response:
        tokens = ApiToken.objects.filter(user=request.user)
        return Response(TokenOut(tokens, many=True).data)

    @extend_schema(request=TokenCreateIn, responses={201: TokenObtainOut})
    def post(self, request: Request) -> Response:
        data = TokenCreateIn(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        held = token_scopes(request)
        if held:
            scopes = scopes_handed_on(
                held=held,
                asked=params.get("scopes"),
                user=request.user,
                for_user=params.get("user"),
            )
            issued = api_token_create(user=request.user, name=params.get("name", ""), scopes=scopes)
        elif "scopes" in params or "user" in params:
            issued = api_token_create_scoped(
                actor=request.user,
                username=params.get("user"),
                name=params.get("name", ""),
                scopes=params.get("scopes") or [],
            )
        else:
            issued = api_token_create(user=request.user, name=params.get("name", ""))
        return Response(_issued(issued), status=status.HTTP_201_CREATED)


class TokenRevokeView(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request: Request, token_id: int) -> Response:
        api_token_revoke(user=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)

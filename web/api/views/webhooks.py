"""Webhooks: register, list, delete your own; read their delivery log; redeliver."""

from __future__ import annotations

from carril_web.errors import NotFound
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from webhooks.models import Webhook, WebhookDelivery
from webhooks.services import delivery_redeliver, webhook_create, webhooks_visible_to

from api.serializers import WebhookCreatedOut, WebhookDeliveryOut, WebhookIn, WebhookOut


def _webhook(request: Request, webhook_id: int) -> Webhook:
    webhook = webhooks_visible_to(user=request.user).filter(id=webhook_id).first()
    if webhook is None:
        raise NotFound()
    return webhook


class WebhooksView(APIView):
    @extend_schema(responses={200: WebhookOut(many=True)})
    def get(self, request: Request) -> Response:
        return Response(WebhookOut(webhooks_visible_to(user=request.user), many=True).data)

    @extend_schema(request=WebhookIn, responses={201: WebhookCreatedOut})
    def post(self, request: Request) -> Response:
        data = WebhookIn(data=request.data)
        data.is_valid(raise_exception=True)
        webhook, secret = webhook_create(actor=request.user, **data.validated_data)
        body = WebhookCreatedOut({**WebhookOut(webhook).data, "secret": secret}).data
        return Response(body, status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    @extend_schema(responses={200: WebhookOut})
    def get(self, request: Request, webhook_id: int) -> Response:
        return Response(WebhookOut(_webhook(request, webhook_id)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, webhook_id: int) -> Response:
        _webhook(request, webhook_id).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookDeliveriesView(APIView):
    @extend_schema(responses={200: WebhookDeliveryOut(many=True)})
    def get(self, request: Request, webhook_id: int) -> Response:
        deliveries = _webhook(request, webhook_id).deliveries.all()[:200]
        return Response(WebhookDeliveryOut(deliveries, many=True).data)


class WebhookRedeliverView(APIView):
    @extend_schema(request=None, responses={202: WebhookDeliveryOut})
    def post(self, request: Request, webhook_id: int, delivery_id: int) -> Response:
        webhook = _webhook(request, webhook_id)
        delivery = WebhookDelivery.objects.filter(webhook=webhook, id=delivery_id).first()
        if delivery is None:
            raise NotFound()
        delivery = delivery_redeliver(delivery=delivery)
        return Response(WebhookDeliveryOut(delivery).data, status=status.HTTP_202_ACCEPTED)

"""Liveness, readiness and Prometheus metrics, outside the versioned API (probes and scrapers
expect fixed paths). /healthz and /readyz are open: they tell nothing but up or down."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Response
from fastapi.responses import JSONResponse

from common.errors import BatonError
from common.logging import mask_secrets
from oss.api.auth import Context, reader
from oss.api.metrics import CONTENT_TYPE
from oss.api.schemas import Health, Readiness, error_responses

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Live: the process answers")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Ready: the store and the broker answer",
    responses={503: {"model": Readiness, "description": "Which of them failed, and why"}},
)
def readyz(context: Context) -> Any:
    checks = {"store": _check(context.store.ping), "broker": _check(context.broker.ping)}
    ready = all(result == "ok" for result in checks.values())
    body = Readiness(ready=ready, checks=checks)
    return body if ready else JSONResponse(body.model_dump(), status_code=503)


def _check(ping: Any) -> str:
    try:
        ping()
    except BatonError as exc:  # the adapters turn every failure into StoreError / BrokerError
        return f"failed: {mask_secrets(str(exc))}"
    return "ok"


def add_metrics_route(app: FastAPI, public: bool) -> None:
    """/metrics: counters and latencies by route and task type, never task data, so open by
    default (a scraper then needs no secret); BATON_METRICS_PUBLIC=false asks for a read token."""

    def metrics(context: Context) -> Response:
        return Response(context.metrics.exposition(), media_type=CONTENT_TYPE)

    app.add_api_route(
        "/metrics",
        metrics,
        methods=["GET"],
        tags=["health"],
        summary="Prometheus metrics",
        dependencies=[] if public else [Depends(reader)],
        response_class=Response,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Metrics"},
            **({} if public else error_responses(401)),
        },
    )

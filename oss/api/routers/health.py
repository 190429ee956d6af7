"""Liveness, readiness and Prometheus metrics, outside the versioned API (probes and scrapers
expect fixed paths). /healthz and /readyz are open: they tell nothing but up or down."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import structlog

from fastapi import APIRouter, Depends, FastAPI, Response
from fastapi.responses import JSONResponse

from common.errors import BatonError
from common.secrets.documents import mask_secrets
from oss.api.auth import Context, every_task_reader
from oss.api.metrics import CONTENT_TYPE
from oss.api.schemas import Health, Readiness, error_responses

log = structlog.get_logger(__name__)
router = APIRouter(tags=["health"])
# What /readyz says of a part that failed. It needs no token: the store's host and port, or the
# driver's words, would tell anyone who asks where the store is and what runs there. The
# detail goes to the log.
PROBE_FAILED = "failed: no usable answer (the OSS log says why)"
# The longest /readyz waits for a probe: past the adapters' own ~2 s, a probe stuck elsewhere
# (a connection that hangs) still gets its answer.
PROBE_DEADLINE_SECONDS = 3.0


@router.get("/healthz", response_model=Health, summary="Live: the process answers")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Ready: the store and the broker answer",
    responses={503: {"model": Readiness, "description": "Which of them failed, and why"}},
)
async def readyz(context: Context) -> Any:
    """Both probes at once, each bounded: the adapters' pings give up after about 2 s (their own
    short timeouts, not the store's), and PROBE_DEADLINE_SECONDS answers for one that does not."""
    checks: dict[str, str] = {}
    async with anyio.create_task_group() as probes:
        for part, ping in (("store", context.store.ping), ("broker", context.broker.ping)):
            probes.start_soon(_check, part, ping, checks)
    checks = {"store": checks["store"], "broker": checks["broker"]}
    ready = all(result == "ok" for result in checks.values())
    body = Readiness(ready=ready, checks=checks)
    return body if ready else JSONResponse(body.model_dump(), status_code=503)


async def _check(part: str, ping: Callable[[], None], checks: dict[str, str]) -> None:
    checks[part] = f"failed: no answer within {PROBE_DEADLINE_SECONDS:g} s"
    with anyio.move_on_after(PROBE_DEADLINE_SECONDS) as deadline:
        try:
            await anyio.to_thread.run_sync(ping, abandon_on_cancel=True)
        except BatonError as exc:  # the adapters turn every failure into StoreError / BrokerError
            log.warning("readiness probe failed", part=part, error=mask_secrets(str(exc)))
            checks[part] = PROBE_FAILED
            return
        checks[part] = "ok"
    if deadline.cancelled_caught:
        log.warning("readiness probe failed", part=part, error=checks[part].removeprefix("failed: "))


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
        dependencies=[] if public else [Depends(every_task_reader)],  # its counts are every team's
        response_class=Response,
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Metrics"},
            **({} if public else error_responses(401, 403)),
        },
    )

"""What every request handler needs, built once per app by create_app and kept on app.state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from common.broker.port import Broker
from common.flows import FlowCatalog
from common.store.items.port import ItemStore
from common.store.tasks.port import TaskStore
from oss.api.metrics import ApiMetrics
from oss.services.tasks import TaskService
from oss.settings import ApiToken, OssSettings


@dataclass
class ApiContext:
    settings: OssSettings
    store: TaskStore
    broker: Broker
    flows: FlowCatalog
    service: TaskService
    metrics: ApiMetrics
    tokens: tuple[ApiToken, ...]
    clock: Callable[[], float]
    # the records of for_each steps kept over records (docs/design/item-records.md)
    items: ItemStore | None = None


async def get_context(request: Request) -> ApiContext:  # pure: see oss/api/auth.py
    context: ApiContext = request.app.state.baton
    return context

"""The answer to a submission with `dry_run`: the plan of what the task would do, nothing created.

Only a dry run reads the gates' tables, the module registry and the drains. They are opened here,
through the app's parts, rather than as POST /tasks' dependencies: a dependency costs every
submission a solve and a hand-over to the thread pool and back.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from oss.api.access import repeats_in_scope
from oss.api.context import ApiContext
from oss.api.gate_tables import gate_tables
from oss.api.routers.module_drains import module_drains
from oss.api.routers.modules import module_registry
from oss.api.schemas import CreateTask
from oss.settings import ApiToken
from oss.api.scoped_views import plan_shown
from oss.services.dry_run import dry_run


def plan_answer(request: Request, context: ApiContext, token: ApiToken, body: CreateTask, options: dict[str, Any]) -> Response:
    """200 with the plan as the token may see it (its scope masks what lies outside)."""
    tables = gate_tables(request, context)
    registry, drains = module_registry(request, context), module_drains(request, context)
    with repeats_in_scope(context.store, token):
        plan = dry_run(context.service, tables, registry, now=context.clock(), module_ttl=context.settings.module_ttl,
                       task_type=body.task_type, parameters=body.parameters, drains=drains,
                       **options)  # fmt: skip
    return Response(plan_shown(context.store, token, plan), status_code=200, media_type="application/json")

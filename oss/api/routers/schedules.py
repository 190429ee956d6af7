"""Schedules over REST: create, list, show, pause, resume, delete (`baton schedules` does the same).

The sweeper runs the ticks (common/relay/schedule_runner.py); this router only manages definitions.
"""

from __future__ import annotations

from typing import Annotated, Any
from zoneinfo import available_timezones

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from common.errors import DuplicateSchedule
from common.cron import CRON_PROBLEM, cron_pattern, is_cron
from common.input_limits import NO_CONTROL_PATTERN
from common.access import at_least
from common.reserved import RESERVED_LABEL_SCHEMA, SCHEDULE_LABEL
from common.scheduling import Schedule
from common.scheduling import MAX_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS, Missed, Overlap, ScheduleError
from oss.api.access import may_create, role_of
from oss.api.auth import Context, Operator, Reader
from oss.api.query import ASCII_INT
from oss.api.errors import ApiError
from oss.api.schemas import MAX_LABELS, NO_OTHER_KEYS, JsonInt, LabelKey, LabelValue, error_responses
from oss.services.schedules import ScheduleService, UnknownSchedule
from oss.settings import ApiToken, Role
from oss.api.parts import app_part

router = APIRouter(prefix="/api/v1", tags=["schedules"])
ScheduleName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_-]*$")]


# Exactly one of cron and interval_seconds, as check_timing wants it.
_ONE_TIMING = {"oneOf": [
    {"required": ["cron"], "properties": {"cron": {"type": "string"}, "interval_seconds": {"type": "null"}}},
    {"required": ["interval_seconds"], "properties": {"interval_seconds": {"type": "number"}, "cron": {"type": "null"}}},
]}  # fmt: skip
ZONES = frozenset(available_timezones())


def _zone(value: str) -> str:
    if value not in ZONES:
        raise ValueError("is not a known time zone (IANA name, e.g. Europe/Paris)")
    return value


def _cron(value: str) -> str:
    if not is_cron(value):
        raise ValueError(CRON_PROBLEM)
    return value


# What the document publishes is what the validators take: the zones as an enum; the cron as the
# very expression common/cron.py checks with (not a pydantic `pattern`, compiled once there).
TimeZone = Annotated[str, AfterValidator(_zone), Field(min_length=1, max_length=64, json_schema_extra={"enum": sorted(ZONES)})]
Cron = Annotated[str, AfterValidator(_cron), Field(min_length=1, max_length=256, json_schema_extra={"pattern": f"^(?:{cron_pattern()})$"})]


class CreateSchedule(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_ONE_TIMING)

    name: ScheduleName
    task_type: str = Field(min_length=1, max_length=128, pattern=NO_CONTROL_PATTERN)
    parameters: dict[str, Any] = Field(default_factory=dict)
    cron: Cron | None = Field(
        None, examples=["*/5 * * * *"],
        description="Five fields (minute hour day month weekday), in `timezone`: numbers, *, a-b ranges, /steps, lists",
    )  # fmt: skip
    # A JSON number only: "60" or true (read as 1 by a lax model) is refused, as the schema says.
    interval_seconds: float | None = Field(None, ge=MIN_INTERVAL_SECONDS, le=MAX_INTERVAL_SECONDS, strict=True,
                                           description="Instead of cron")  # fmt: skip
    timezone: TimeZone = Field("UTC", examples=["Europe/Paris"])
    overlap: Overlap = Field(Overlap.SKIP, description="While the previous task runs: skip, queue or allow")
    missed: Missed = Field(Missed.LATEST, description="Ticks missed by more than the grace: latest, skip or all")
    priority: JsonInt = Field(0, ge=0, le=4)
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, max_length=MAX_LABELS, description="Not `schedule`: baton sets it to the schedule's name",
        json_schema_extra={**NO_OTHER_KEYS, **RESERVED_LABEL_SCHEMA},
    )  # fmt: skip


class ScheduleView(BaseModel):
    ScheduleId: str
    Name: str
    TaskType: str
    Parameters: dict[str, Any]
    Cron: str | None
    IntervalSeconds: float | None
    Timezone: str
    Overlap: Overlap
    Missed: Missed
    Priority: int
    Labels: dict[str, str]
    Paused: bool
    NextAt: float
    LastTickAt: float | None
    LastTaskId: str | None
    Fired: int
    Skipped: int
    LastError: str
    CreatedBy: str | None
    TimeCreate: float
    Version: int


class ScheduleList(BaseModel):
    items: list[ScheduleView]


def schedules_service(request: Request, context: Context) -> ScheduleService:
    """One per app, opened on first use beside the task store."""
    return app_part(request, "schedules", lambda: ScheduleService.open(
        context.settings.store_url, context.flows, context.clock, context.settings.input_limits))


Schedules = Annotated[ScheduleService, Depends(schedules_service)]


@router.post("/schedules", status_code=201, response_model=ScheduleView, summary="Create a schedule",
             responses=error_responses(401, 403, 404, 409, 413, 422, 503))  # fmt: skip
def create_schedule(body: CreateSchedule, schedules: Schedules, token: Operator, response: Response) -> dict:
    """Its parameters are checked against the task type now, as a submission's would be."""
    may_create(token, body.task_type, {**body.labels, SCHEDULE_LABEL: body.name}, "operator")
    try:
        created = schedules.create(
            name=body.name, task_type=body.task_type, parameters=body.parameters, cron=body.cron,
            interval_seconds=body.interval_seconds, timezone=body.timezone, overlap=body.overlap,
            missed=body.missed, priority=body.priority, labels=body.labels, created_by=token.name,
        )  # fmt: skip
    except ScheduleError as exc:
        raise ApiError(422, "the schedule is not valid", fields=[(exc.field, exc.message)]) from None
    except DuplicateSchedule:
        raise ApiError(409, "a schedule with this name exists already", fields=[("name", "taken")]) from None
    response.headers["Location"] = f"/api/v1/schedules/{created.ScheduleId}"
    return schedules.shown(created)


@router.get("/schedules", response_model=ScheduleList, summary="Schedules, by name",
            responses=error_responses(401, 422, 503))  # fmt: skip
def list_schedules(schedules: Schedules, token: Reader,
                   limit: Annotated[int, Query(ge=1, le=500), ASCII_INT] = 100) -> dict:  # fmt: skip
    if token.scope is None:
        return {"items": [schedules.shown(s) for s in schedules.list(limit)]}
    mine = [s for s in schedules.list(SCOPED_SCAN) if _may(token, s, "read")]  # its namespaces' only
    return {"items": [schedules.shown(s) for s in mine[:limit]]}


@router.get("/schedules/{schedule}", response_model=ScheduleView, summary="One schedule, by id or name",
            responses=error_responses(401, 404, 422, 503))  # fmt: skip
def get_schedule(schedule: str, schedules: Schedules, token: Reader) -> dict:
    return schedules.shown(_mine(schedules, token, schedule, "read"))


@router.post("/schedules/{schedule}/pause", response_model=ScheduleView, summary="Pause: no tick runs",
             responses=error_responses(401, 403, 404, 409, 422, 503))  # fmt: skip
def pause_schedule(schedule: str, schedules: Schedules, token: Operator) -> dict:
    _mine(schedules, token, schedule, "operator")
    return schedules.shown(schedules.pause(schedule))


@router.post("/schedules/{schedule}/resume", response_model=ScheduleView,
             summary="Resume: the next tick is the first after now (ticks while paused are not run)",
             responses=error_responses(401, 403, 404, 409, 422, 503))  # fmt: skip
def resume_schedule(schedule: str, schedules: Schedules, token: Operator) -> dict:
    _mine(schedules, token, schedule, "operator")
    return schedules.shown(schedules.resume(schedule))


@router.delete("/schedules/{schedule}", status_code=204, summary="Delete (the tasks it created stay)",
               responses=error_responses(401, 403, 404, 422, 503))  # fmt: skip
def delete_schedule(schedule: str, schedules: Schedules, token: Operator) -> Response:
    _mine(schedules, token, schedule, "operator")
    schedules.delete(schedule)
    return Response(status_code=204)


SCOPED_SCAN = 500  # schedules a scoped token's listing looks through for those of its namespaces


def _may(token: ApiToken, schedule: Schedule, needed: Role) -> bool:
    """A schedule is in a namespace when the tasks it creates are (its labels and `schedule`)."""
    role = role_of(token, schedule.TaskType, {**schedule.Labels, SCHEDULE_LABEL: schedule.Name})
    return role is not None and at_least(role, needed)


def _mine(schedules: ScheduleService, token: ApiToken, id_or_name: str, needed: Role) -> Schedule:
    """The schedule, if the token may do what needs `needed` on it: else the answer for a name
    that names none (outside its namespaces), or 403 (inside, with too low a role)."""
    found = schedules.get(id_or_name)
    if token.scope is None:
        return found
    if not _may(token, found, "read"):
        raise UnknownSchedule("no such schedule")
    if not _may(token, found, needed):
        raise ApiError(403, f"{token.name} may only read this schedule; this needs {needed}")
    return found

"""Schedules at the edge: a tick's key no client can take, strict timing types, only standard
cron, and refusals that never echo the refused value."""

from __future__ import annotations

import pytest

from common.cron import cron_pattern
from common.relay.schedule_runner import ScheduleRunner
from common.scheduling import ScheduleError, check_timing, tick_key
from common.store.side_stores import open_schedule_store
from tests.api.support import SUBMITTER, Api, auth

BODY = {"name": "pulse", "task_type": "create_db", "parameters": {"name": "db1"}, "interval_seconds": 60}


def create(api: Api, **changes: object):
    return api.client.post("/api/v1/schedules", json={**BODY, **changes}, headers=auth())


def test_a_client_cannot_take_a_ticks_key_and_the_tick_creates_its_task(api: Api) -> None:
    schedule = create(api).json()
    key = tick_key(schedule["ScheduleId"], schedule["NextAt"])
    body = {"task_type": "create_db", "parameters": {"name": "db1"}, "idempotency_key": key}
    taken = api.client.post("/api/v1/tasks", json=body, headers=auth(SUBMITTER))
    assert taken.status_code == 422, taken.text
    assert [f["path"] for f in taken.json()["error"]["fields"]] == ["idempotency_key"]
    assert key not in taken.text and api.store.list_tasks() == []

    context = api.client.app.state.baton  # type: ignore[attr-defined]
    schedules = open_schedule_store(context.settings.store_url)
    try:
        report = ScheduleRunner(schedules, api.store, context.service.submit, 60).run_due(schedule["NextAt"] + 1)
    finally:
        schedules.close()
    assert report.created == 1
    (task,) = api.store.list_tasks()
    assert task.IdempotencyKey == key and task.Labels == {"schedule": "pulse"}


@pytest.mark.parametrize("interval", ["60", True, "1", [60], {"s": 60}])
def test_interval_seconds_takes_a_json_number_only(api: Api, interval: object) -> None:
    response = create(api, interval_seconds=interval)
    assert response.status_code == 422, response.text
    assert [f["path"] for f in response.json()["error"]["fields"]] == ["interval_seconds"]
    assert api.get("/api/v1/schedules").json()["items"] == []


def test_interval_seconds_as_a_number_is_taken(api: Api) -> None:
    assert create(api, interval_seconds=60).json()["IntervalSeconds"] == 60
    assert create(api, name="half", interval_seconds=90.5).json()["IntervalSeconds"] == 90.5


@pytest.mark.parametrize(
    "cron",
    [
        "SOMEVALUE * * * *", "0 0 3 * * *", "* * * * * *", "@daily", "0 0 L * *", "0 0 * * 1#2", "0 0 * JAN *",
        "0 0 * * MON", "5-3 * * * *", "*/0 * * * *", "*/61 * * * *", "60 * * * *", "00 * * * *", " 0 3 * * *",
        "0  3 * * *", "0\t3 * * *", "0 3 * * *\n", "0 0 30 2 *", "0 0 31 4 *", "0 0 31 2-4/2 *", "5/10 * * * *",
        "0 0 ? * *", "0 0 1W * *", "٣ * * * *", "0 3 * * *\x00",
    ],
)  # fmt: skip
def test_only_standard_five_field_cron_is_taken_and_the_refusal_does_not_echo_it(api: Api, cron: str) -> None:
    response = create(api, interval_seconds=None, cron=cron)
    assert response.status_code == 422, (cron, response.text)
    error = response.json()["error"]
    assert [f["path"] for f in error["fields"]] == ["cron"]
    assert "SOMEVALUE" not in response.text and "five-field cron" in error["fields"][0]["message"]
    with pytest.raises(ScheduleError, match="five-field cron") as refused:  # the CLI's path: the same rule
        check_timing(cron, None, "UTC")
    assert cron not in str(refused.value)


@pytest.mark.parametrize("cron", ["0 3 * * *", "*/5 * * * *", "0 9-17/2 * * 1-5", "0 0 30 2 1", "0 0 31 1-12/2 *",
                                  "0,30 0 29 2 *", "59 23 31 12 7"])  # fmt: skip
def test_standard_cron_is_taken(api: Api, cron: str) -> None:
    response = create(api, interval_seconds=None, cron=cron)
    assert response.status_code == 201, (cron, response.text)


def test_a_refused_time_zone_is_not_echoed(api: Api) -> None:
    response = create(api, timezone="Mars/Olympus_SECRETISH")
    assert response.status_code == 422 and "SECRETISH" not in response.text
    assert [f["path"] for f in response.json()["error"]["fields"]] == ["timezone"]


def test_the_published_cron_pattern_is_what_is_taken(api: Api) -> None:
    published = api.get("/api/v1/openapi.json").json()["components"]["schemas"]
    variants = [v for name, v in published.items() if name.startswith("CreateSchedule_")]
    patterns = {json_pattern(v["properties"]["cron"]) for v in variants}
    assert patterns == {f"^(?:{cron_pattern()})$"}


def json_pattern(schema: dict) -> str:
    return next(option["pattern"] for option in schema["anyOf"] if option.get("type") == "string")

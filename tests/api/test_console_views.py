"""What the API derives for an operator (the console shows it): every attempt of a step, when a
delayed task starts, search by id or text, counts per status, an alarm's task status, and
acknowledging many alarms at once with a reason."""

from __future__ import annotations

import json
import time

from common.engine.document import Alarm
from common.engine.states import Phase, ResultCode
from common.engine.core.entries import AttemptResult
from tests.api.support import READER, SECRET, auth

ACK = "/api/v1/alarms/acknowledge"


def test_every_attempt_with_its_error_and_times_not_only_the_last(api):
    task_id = api.rollback_failed()  # step 1 failed ("boom"); so did its rollback
    api.act(task_id, "retry-rollback", "the host is back")
    api.step(task_id, AttemptResult(ResultCode.TIMED_OUT, "timed out after 5s; stopped"))
    task = api.get(f"/api/v1/tasks/{task_id}").json()
    seen = [(a["Cursor"], a["Phase"], a["Attempt"], a["Outcome"], a["Message"]) for a in task["Attempts"]]
    assert seen == [
        (0, Phase.NORMAL, 1, "ok", ""),
        (1, Phase.NORMAL, 1, "failed", "boom"),
        (1, Phase.ROLLBACK, 1, "failed", "boom"),  # the first rollback attempt keeps its error...
        (1, Phase.ROLLBACK, 1, "failed", "timed out after 5s; stopped"),  # ...the document only the last
    ]
    for attempt in task["Attempts"]:
        assert attempt["Worker"] == "worker" and attempt["Run"] == 0
        assert attempt["TimeStart"] <= attempt["TimeEnd"]
    assert task["Steps"][1]["RollbackMessage"] == "timed out after 5s; stopped"


def test_attempts_of_a_running_step_and_of_a_retried_run(api):
    task_id = api.rolled_back()
    api.act(task_id, "retry", "again")
    api.step(task_id, finish=False)
    attempts = api.get(f"/api/v1/tasks/{task_id}").json()["Attempts"]
    assert [(a["Run"], a["Cursor"], a["Phase"], a["Outcome"]) for a in attempts] == [
        (0, 0, 0, "ok"), (0, 1, 0, "failed"), (0, 1, 1, "ok"), (0, 0, 1, "ok"),
        (1, 0, 0, "running"),
    ]  # fmt: skip
    assert attempts[-1]["TimeEnd"] is None


def test_attempt_messages_are_masked(api):
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    api.step(task_id, AttemptResult(ResultCode.FAILED, f"login with {SECRET} refused"))
    response = api.get(f"/api/v1/tasks/{task_id}")
    assert SECRET not in response.text
    assert response.json()["Attempts"][0]["Message"] == "login with *** refused"


def test_a_delayed_task_says_when_it_starts(api):
    later = time.time() + 600
    delayed = api.create("free_form", start_at=later)["task_id"]
    now = api.create("free_form")["task_id"]
    assert api.get(f"/api/v1/tasks/{delayed}").json()["ScheduledFor"] == later
    assert api.get(f"/api/v1/tasks/{now}").json()["ScheduledFor"] is None
    items = {t["TaskId"]: t for t in api.get("/api/v1/tasks").json()["items"]}
    assert items[delayed]["ScheduledFor"] == later and items[now]["ScheduledFor"] is None
    api.step(now)
    assert api.get(f"/api/v1/tasks/{now}").json()["ScheduledFor"] is None
    # Paused, its scheduled dispatch is withdrawn; it still says when it will start.
    assert api.act(delayed, "pause", "not yet").json()["ScheduledFor"] == later


def test_search_by_id_prefix_or_text(api):
    first = api.create(parameters={"name": "db1"}, labels={"team": "payments"})["task_id"]
    other = api.create("free_form", labels={"env": "prod"})["task_id"]
    api.step(other, AttemptResult(ResultCode.FAILED, "Disk full on host-7"))

    def found(q: str) -> list[str]:
        response = api.get("/api/v1/tasks", token=READER, q=q)
        assert response.status_code == 200, response.text
        return [t["TaskId"] for t in response.json()["items"]]

    assert found(first) == [first]
    assert found(first[:6].upper()) == [t for t in (other, first) if t.startswith(first[:6])]
    assert found("create_") == [first] and found("FREE") == [other]
    assert found("disk FULL") == [other] and found("team=pay") == [first] and found("prod") == [other]
    assert found("no such thing") == []
    assert set(found("  ")) == {first, other}  # blank: no search


def test_a_search_never_confirms_a_secret(api):
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    api.step(task_id, AttemptResult(ResultCode.FAILED, f"login with {SECRET} refused"))
    assert [t["TaskId"] for t in api.get("/api/v1/tasks", q="login with").json()["items"]] == [task_id]
    assert api.get("/api/v1/tasks", q=SECRET[:8]).json()["items"] == []
    # Nor do the counts: a count of 1 for the secret's text would confirm it as surely.
    probe = api.get("/api/v1/tasks", q=SECRET[:8]).json()
    assert probe["total"] == 0 and set(probe["counts"].values()) == {0}
    assert api.get("/api/v1/tasks", q="login with").json()["total"] == 1


def test_total_and_counts_per_status(api):
    api.rolled_back()
    api.rollback_failed()
    running = api.create()["task_id"]
    api.step(running, finish=False)
    api.create("free_form")
    page = api.get("/api/v1/tasks", limit=1).json()
    assert len(page["items"]) == 1 and page["total"] == 4
    assert page["counts"] == {"SUCCESS": 0, "NOT_STARTED": 1, "RUNNING": 1, "ROLLING_BACK": 0,
                              "ROLLED_BACK": 1, "ROLLBACK_FAILED": 1}  # fmt: skip
    failed = api.get("/api/v1/tasks", status="ROLLED_BACK").json()
    assert failed["total"] == 1 and failed["counts"] == page["counts"]  # counts: every status
    typed = api.get("/api/v1/tasks", task_type="free_form").json()
    assert typed["total"] == 1 and typed["counts"]["NOT_STARTED"] == 1 and typed["counts"]["RUNNING"] == 0


def alarm(alarm_id: str, task_id: str | None = None, kind: str = "rollback_failed") -> Alarm:
    return Alarm(AlarmId=alarm_id, Kind=kind, Time=100.0, Message="m", TaskId=task_id)


def test_an_alarm_shows_its_task_status_now(api):
    task_id = api.rollback_failed()
    api.store.add_alarm(alarm("a-1", task_id))
    api.store.add_alarm(alarm("a-2", None, "dead_letter"))
    api.store.add_alarm(alarm("a-3", "gone"))

    def statuses() -> dict[str, tuple]:
        items = api.get("/api/v1/alarms", token=READER).json()["items"]
        return {a["AlarmId"]: (a["TaskStatus"], a["TaskStatusName"]) for a in items}

    assert statuses() == {"a-1": (5, "ROLLBACK_FAILED"), "a-2": (None, None), "a-3": (None, None)}
    assert api.act(task_id, "compensate", "dropped by hand").status_code == 200
    assert statuses()["a-1"] == (3, "ROLLING_BACK")
    api.step(task_id)  # the rollback of step 0
    assert statuses()["a-1"] == (4, "ROLLED_BACK")  # still open, but its task needs nothing now


def test_acknowledge_many_by_id_with_a_reason(api):
    for i in range(3):
        api.store.add_alarm(alarm(f"a-{i}"))
    api.store.acknowledge_alarm("a-2", by="someone", now=50.0)
    response = api.client.post(ACK, json={"ids": ["a-0", "a-1", "a-2", "nope", "a-0"],
                                          "reason": " tasks compensated "}, headers=auth())  # fmt: skip
    assert response.status_code == 200, response.text
    assert response.json() == {"acknowledged": ["a-0", "a-1"], "already": ["a-2"], "unknown": ["nope"]}
    alarms = {a["AlarmId"]: a for a in api.get("/api/v1/alarms").json()["items"]}
    assert alarms["a-0"]["AcknowledgedBy"] == "olga" and alarms["a-0"]["AcknowledgedReason"] == "tasks compensated"
    assert alarms["a-2"]["AcknowledgedBy"] == "someone" and alarms["a-2"]["AcknowledgedReason"] is None


def test_acknowledge_many_by_filter(api):
    api.store.add_alarm(alarm("r-1", "t-1"))
    api.store.add_alarm(alarm("r-2", "t-2"))
    api.store.add_alarm(alarm("d-1", None, "dead_letter"))
    body = {"filter": {"kind": "rollback_failed", "task_id": "t-2"}, "reason": "done"}
    assert api.client.post(ACK, json=body, headers=auth()).json()["acknowledged"] == ["r-2"]
    body = {"filter": {"kind": "dead_letter"}, "ids": ["r-1"], "reason": "done"}
    assert sorted(api.client.post(ACK, json=body, headers=auth()).json()["acknowledged"]) == ["d-1", "r-1"]
    assert api.get("/api/v1/alarms", acknowledged="false").json()["items"] == []


def test_acknowledge_many_refuses_what_it_cannot_do(api):
    api.store.add_alarm(alarm("a-1"))
    cases = [
        ({"ids": ["a-1"]}, "reason"),
        ({"ids": ["a-1"], "reason": "   "}, "reason"),
        ({"reason": "why"}, "ids"),
        ({"ids": ["a-1"], "reason": "why", "extra": 1}, "extra"),
        ({"ids": ["x"] * 501, "reason": "why"}, "ids"),
        ({"filter": {"colour": "red"}, "reason": "why"}, "filter.colour"),
        ({"ids": ["a-1", "\ud800"], "reason": "why"}, "ids[1]"),
        ({"filter": {"task_id": "x y"}, "reason": "why"}, "filter.task_id"),
    ]
    for body, path in cases:  # as text: the client would not encode a lone surrogate
        response = api.client.post(ACK, content=json.dumps(body), headers={**auth(), "Content-Type": "application/json"})
        assert response.status_code == 422, (body, response.text)
        assert [f["path"] for f in response.json()["error"]["fields"]] == [path], body
    assert api.client.post(ACK, json={"ids": ["a-1"], "reason": "x"}, headers=auth(READER)).status_code == 403
    assert api.get("/api/v1/alarms", acknowledged="false").json()["items"][0]["AlarmId"] == "a-1"

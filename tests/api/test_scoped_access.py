"""Scoped tokens (docs/design/access.md), walked over every route the app serves with the worked
example of docs/guide/access.md as its flows and tokens: a token limited to namespaces lists,
counts, streams and changes only their tasks, and anything else answers as if it did not exist.

The routes are enumerated from the OpenAPI document the app serves: a route added without a
case in ROUTES fails `test_every_route_has_a_scoped_case`, and each case is one test of what a
scoped token gets there. The secret canary (a create_db task's admin_password) never shows. The
world they walk is tests/api/scoped_world.py; the walks beyond the routes are
tests/api/test_scoped_access_edges.py."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.api.scoped_callback_case import callback_case
from tests.api.scoped_world import (  # noqa: F401  (world: a fixture, found by name)
    ACCESS,
    DASHBOARDS,
    METHODS,
    OPS,
    PAYMENTS,
    SECRET,
    World,
    no_secret,
    not_found,
    world,
)

# --- one case per route ----------------------------------------------------------------------


def create_task(w: World) -> None:
    made = w.call("post", "/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "pay2"},
                                                  "labels": {"team": "payments", "env": "prod"}})  # fmt: skip
    assert made.status_code == 201, made.text
    for labels in ({"team": "shop"}, {}):  # its type, not its labels: told what its namespaces ask
        refused = w.call("post", "/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "x"}, "labels": labels})
        assert refused.status_code == 403 and "team=payments" in refused.json()["error"]["message"], refused.text
    read_only = w.call("post", "/api/v1/tasks", json={"task_type": "report", "labels": {"team": "payments"}})
    assert read_only.status_code == 403  # payments reads reports, it does not submit them
    # dashboards: create_db is outside every namespace, answered as a type flows.yaml lacks
    outside = w.call("post", "/api/v1/tasks", DASHBOARDS, json={"task_type": "create_db", "parameters": {"name": "x"}})
    unknown = w.call("post", "/api/v1/tasks", DASHBOARDS, json={"task_type": "create_dc", "parameters": {"name": "x"}})
    assert outside.status_code == unknown.status_code == 422
    assert outside.text.replace("create_db", "?") == unknown.text.replace("create_dc", "?")
    # a plan says the key is held, not by which task of another team
    plan = w.call("post", "/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "shop1"},
                                                 "labels": {"team": "payments"}, "dry_run": True})  # fmt: skip
    assert plan.status_code == 200 and w.theirs not in plan.text, plan.text
    assert plan.json()["locks"][0]["holders"] == ["another namespace's task"] and plan.json()["start"]["when"] == "lock"
    own = w.call("post", "/api/v1/tasks", json={"task_type": "create_db", "parameters": {"name": "pay1"},
                                                "labels": {"team": "payments"}, "dry_run": True}).json()  # fmt: skip
    assert own["locks"][0]["holders"] == [w.mine]
    planned = w.call("post", "/api/v1/tasks", DASHBOARDS, json={"task_type": "create_db", "dry_run": True})
    assert planned.status_code == 422 and planned.text.replace("create_db", "?") == unknown.text.replace("create_dc", "?")
    # waiting for another namespace's task: as for a task that does not exist
    body = {"task_type": "create_db", "parameters": {"name": "pay3"}, "labels": {"team": "payments"}}
    after = w.call("post", "/api/v1/tasks", json={**body, "after_task": w.theirs})
    nothing = w.call("post", "/api/v1/tasks", json={**body, "after_task": "no-such-task"})
    assert after.status_code == 404 and after.json() == nothing.json()
    # an idempotency key another namespace's task holds: taken, but nothing of that task told
    taken = w.call("post", "/api/v1/tasks", json={**body, "idempotency_key": "k-shop"})
    assert taken.status_code == 409 and w.theirs not in taken.text and taken.json()["error"]["fields"] == [], taken.text
    total = len(w.api.store.list_tasks(limit=100))
    assert total == 6  # five made by ops, one by payments: nothing refused was written


def list_tasks(w: World) -> None:
    page = w.call("get", "/api/v1/tasks").json()
    assert {t["TaskId"] for t in page["items"]} == {w.mine, w.mine_report}
    assert page["total"] == 2 and sum(page["counts"].values()) == 2
    for query in ({"task_type": "create_db"}, {"label": "team=shop"}, {"q": "shop"}, {"q": w.theirs[:8]}):
        found = w.call("get", "/api/v1/tasks", params=query).json()
        assert w.theirs not in json.dumps(found) and found["total"] <= 1, (query, found)
    assert w.call("get", "/api/v1/tasks", DASHBOARDS).json()["total"] == 2  # the two reports
    assert w.call("get", "/api/v1/tasks", OPS).json()["total"] == 5  # an unscoped token: every task
    paged = w.call("get", "/api/v1/tasks", params={"limit": 1}).json()
    second = w.call("get", "/api/v1/tasks", params={"limit": 1, "cursor": paged["next_cursor"]}).json()
    assert second["next_cursor"] is None and len(second["items"]) == 1
    no_secret(w.call("get", "/api/v1/tasks"))
    # a payments task waiting for a shop task: listed, waiting for "another namespace's task"
    waiting = w.call("post", "/api/v1/tasks", OPS, json={"task_type": "create_db", "parameters": {"name": "pay7"},
                                                         "labels": {"team": "payments"}, "after_task": w.theirs})  # fmt: skip
    listed = w.call("get", "/api/v1/tasks", params={"limit": 1})
    assert listed.json()["items"][0]["TaskId"] == waiting.json()["task_id"] and w.theirs not in listed.text
    assert listed.json()["items"][0]["WaitingFor"]["TaskId"] == "another namespace's task"


def get_task(w: World) -> None:
    not_found(w, w.call("get", f"/api/v1/tasks/{w.theirs}"), "/api/v1/tasks/no-such-task")
    shown = w.call("get", f"/api/v1/tasks/{w.mine}")
    assert shown.status_code == 200 and shown.json()["History"]
    no_secret(shown)
    not_found(w, w.call("get", f"/api/v1/tasks/{w.mine}", DASHBOARDS), "/api/v1/tasks/no-such-task")
    # a shop task waiting for payments' task: payments sees that one waits, not which
    waits = w.call("post", "/api/v1/tasks", OPS, json={"task_type": "create_db", "parameters": {"name": "shop9"},
                                                       "labels": {"team": "shop"}, "after_task": w.mine}).json()["task_id"]  # fmt: skip
    shown = w.call("get", f"/api/v1/tasks/{w.mine}")
    assert waits not in shown.text and shown.json()["AwaitedBy"] == ["another namespace's task"], shown.json()["AwaitedBy"]
    assert w.call("get", f"/api/v1/tasks/{w.mine}", OPS).json()["AwaitedBy"] == [waits]
    assert waits not in w.call("get", f"/api/v1/tasks/{w.mine}/events", params={"timeout": 0.3}).text
    assert waits not in w.call("post", f"/api/v1/tasks/{w.mine}/pause", json={"reason": "walk"}).text


def step_items(w: World) -> None:
    not_found(w, w.call("get", f"/api/v1/tasks/{w.theirs}/steps/create/items"), "/api/v1/tasks/nope/steps/create/items")
    assert w.call("get", f"/api/v1/tasks/{w.mine}/steps/create/items").status_code == 409  # seen: not a for_each


def task_events(w: World) -> None:
    not_found(w, w.call("get", f"/api/v1/tasks/{w.theirs}/events", params={"timeout": 0.2}),
              "/api/v1/tasks/nope/events", params={"timeout": 0.2})  # fmt: skip
    stream = w.call("get", f"/api/v1/tasks/{w.mine}/events", params={"timeout": 0.3})
    assert stream.status_code == 200 and "event: task" in stream.text
    no_secret(stream)


def action(name: str) -> Callable[[World], None]:
    def case(w: World) -> None:
        body = {"reason": "walk"} if name != "skip" else {"reason": "walk", "step": 0}
        for task_id in (w.theirs, w.theirs_waiting, w.report):
            not_found(w, w.call("post", f"/api/v1/tasks/{task_id}/{name}", json=body),
                      f"/api/v1/tasks/nope/{name}", "post", json=body)  # fmt: skip
            w.untouched(task_id)
        # dashboards is an operator nowhere: the role's 403, the same for any id
        refused = w.call("post", f"/api/v1/tasks/{w.report}/{name}", DASHBOARDS, json=body)
        assert refused.status_code == 403 and refused.json() == w.call("post", f"/api/v1/tasks/nope/{name}", DASHBOARDS,
                                                                       json=body).json()  # fmt: skip
        assert w.call("post", f"/api/v1/tasks/{w.mine_report}/{name}", json=body).status_code == 403  # seen, read only
        w.untouched(w.mine_report)
        assert w.call("post", f"/api/v1/tasks/{w.mine}/{name}", json=body).status_code in (200, 409)  # its own

    return case


def step_action(w: World) -> None:
    body = {"reason": "walk"}

    def path(task_id: str) -> str:
        return f"/api/v1/tasks/{task_id}/steps/0/actions/approve"

    for task_id in (w.theirs, w.theirs_waiting, w.report):
        not_found(w, w.call("post", path(task_id), json=body), path("nope"), "post", json=body)
        w.untouched(task_id)
    # dashboards submits reports only: another namespace's task is none; its own report's step,
    # a command, offers no action (404 naming it)
    outside = w.call("post", path(w.mine), DASHBOARDS, json=body)
    assert outside.status_code == 404 and outside.json() == w.call("post", path("nope"), DASHBOARDS, json=body).json()
    w.untouched(w.mine)
    report = w.call("post", path(w.report), DASHBOARDS, json=body)
    assert report.status_code == 404 and report.json()["error"]["fields"][0]["path"] == "action", report.text
    assert w.call("post", path(w.mine_report), json=body).status_code == 403  # seen, read only
    w.untouched(w.mine_report)
    own = w.call("post", path(w.mine), json=body)  # its own: a command step offers no action
    assert own.status_code == 404 and own.json()["error"]["fields"][0]["path"] == "action", own.text


def bulk(w: World) -> None:
    body = {"reason": "walk", "status": "NOT_STARTED"}
    dry = w.call("post", "/api/v1/bulk/cancel", json=body).json()
    assert dry["matched"] == 1 and dry["applied"] == [w.mine], dry  # not the read-only report, nobody else's
    assert w.call("post", "/api/v1/bulk/cancel", OPS, json=body).json()["matched"] == 5
    others = (w.theirs, w.theirs_waiting, w.mine_report, w.report)
    done = w.call("post", "/api/v1/bulk/cancel", json={**body, "dry_run": False}).json()
    assert done["applied"] == [w.mine] and done["matched"] == 1
    for task_id in others:  # (the shop task waiting for db:pay1 is granted it now: the lock's doing, not the token's)
        w.untouched(task_id)
    assert w.call("post", "/api/v1/bulk/cancel", DASHBOARDS, json=body).status_code == 403  # no operator namespace


def migrate(w: World) -> None:
    to = w.api.client.app.state.baton.flows.get("create_db").content_hash
    moved = w.call("post", "/api/v1/task-types/create_db/migrate", json={"to": to, "reason": "walk"}).json()
    assert moved["matched"] == 1 and moved["current"] == [w.mine], moved
    outside = w.call("post", "/api/v1/task-types/create_db/migrate", DASHBOARDS, json={"to": to, "reason": "walk"})
    assert outside.status_code == 403  # dashboards is an operator nowhere
    ops_only = w.call("post", "/api/v1/task-types/create_db/migrate", OPS, json={"to": to, "reason": "walk"}).json()
    assert ops_only["matched"] == 3


def task_types(w: World) -> None:
    listed = [t["name"] for t in w.call("get", "/api/v1/task-types", DASHBOARDS).json()["items"]]
    assert listed == ["report"]
    assert len(w.call("get", "/api/v1/task-types").json()["items"]) == 2  # payments-all holds any type


def task_type(w: World) -> None:
    not_found(w, w.call("get", "/api/v1/task-types/create_db", DASHBOARDS), "/api/v1/task-types/nope")
    assert w.call("get", "/api/v1/task-types/create_db").status_code == 200


def alarms(w: World) -> None:
    listed = w.call("get", "/api/v1/alarms").json()["items"]
    assert [a["AlarmId"] for a in listed] == [w.alarms["mine"]]
    assert w.call("get", "/api/v1/alarms", DASHBOARDS).json()["items"] == []
    assert len(w.call("get", "/api/v1/alarms", OPS).json()["items"]) == 3


def acknowledge_alarms(w: World) -> None:
    answer = w.call("post", "/api/v1/alarms/acknowledge", json={"filter": {}, "reason": "walk",
                                                                "ids": [w.alarms["theirs"], w.alarms["nothing"]]}).json()  # fmt: skip
    assert answer["acknowledged"] == [w.alarms["mine"]], answer
    assert sorted(answer["unknown"]) == sorted([w.alarms["theirs"], w.alarms["nothing"]])
    still_open = {a.AlarmId for a in w.api.store.list_alarms(acknowledged=False)}
    assert still_open == {w.alarms["theirs"], w.alarms["nothing"]}


def acknowledge_alarm(w: World) -> None:
    for about in ("theirs", "nothing"):
        not_found(w, w.call("post", f"/api/v1/alarms/{w.alarms[about]}/ack"), "/api/v1/alarms/nope/ack", "post")
    assert w.call("post", f"/api/v1/alarms/{w.alarms['mine']}/ack").status_code == 200
    assert {a.AlarmId for a in w.api.store.list_alarms(acknowledged=False)} == {w.alarms["theirs"], w.alarms["nothing"]}


HOST = {"name": "db-host-1", "cpu": 8, "memory_mb": 16384, "storage_gb": 200}


def list_hosts(w: World) -> None:
    assert w.call("get", "/api/v1/hosts").status_code == 200  # shared: read by every token


def add_host(w: World) -> None:
    assert w.call("post", "/api/v1/hosts", json=HOST).status_code == 403
    assert w.call("get", "/api/v1/hosts", OPS).json()["items"] == []


def host_action(name: str) -> Callable[[World], None]:
    def case(w: World) -> None:
        assert w.call("post", "/api/v1/hosts", OPS, json=HOST).status_code == 201
        assert w.call("post", f"/api/v1/hosts/db-host-1/{name}").status_code == 403
        assert w.call("get", "/api/v1/hosts", OPS).json()["items"][0]["state"] == "active"

    return case


def create_schedule(w: World) -> None:
    body = {"name": "shop-hourly", "task_type": "create_db", "parameters": {"name": "x"}, "interval_seconds": 3600,
            "labels": {"team": "shop"}}  # fmt: skip
    assert w.call("post", "/api/v1/schedules", json=body).status_code == 403
    made = w.call("post", "/api/v1/schedules", json={**body, "name": "pay-hourly", "labels": {"team": "payments"}})
    assert made.status_code == 201, made.text
    outside = w.call("post", "/api/v1/schedules", DASHBOARDS, json={**body, "name": "d"})
    assert outside.status_code == 403  # dashboards' role is submit: schedules need operator


def list_schedules(w: World) -> None:
    assert [s["Name"] for s in w.call("get", "/api/v1/schedules").json()["items"]] == ["pay-nightly"]
    assert [s["Name"] for s in w.call("get", "/api/v1/schedules", DASHBOARDS).json()["items"]] == ["shop-nightly"]


def get_schedule(w: World) -> None:
    not_found(w, w.call("get", "/api/v1/schedules/shop-nightly"), "/api/v1/schedules/nope")
    assert w.call("get", "/api/v1/schedules/pay-nightly").status_code == 200


def schedule_change(method: str, suffix: str) -> Callable[[World], None]:
    def case(w: World) -> None:
        before = w.call("get", "/api/v1/schedules/shop-nightly", OPS).json()
        not_found(w, w.call(method, f"/api/v1/schedules/shop-nightly{suffix}"), f"/api/v1/schedules/nope{suffix}", method)
        assert w.call("get", "/api/v1/schedules/shop-nightly", OPS).json() == before
        assert w.call(method, f"/api/v1/schedules/pay-nightly{suffix}").status_code in (200, 204, 409)

    return case


def list_modules(w: World) -> None:
    assert w.call("get", "/api/v1/modules", params={"stale": "true"}).status_code == 200


def module_change(name: str) -> Callable[[World], None]:
    def case(w: World) -> None:
        assert w.call("post", f"/api/v1/modules/mysql/{name}", json={"reason": "walk"}).status_code == 403
        assert w.call("get", "/api/v1/modules", OPS).json()["items"] == []  # no drain was recorded

    return case


def list_locks(w: World) -> None:
    every = w.call("get", "/api/v1/locks", OPS).json()["items"]
    assert {lock["key"] for lock in every} == {"db:pay1", "db:shop1"}
    (lock,) = w.call("get", "/api/v1/locks").json()["items"]
    assert lock["key"] == "db:pay1" and [h["task_id"] for h in lock["holders"]] == [w.mine]
    assert lock["waiters"] == []  # the shop task waiting for it is not payments'
    assert w.call("get", "/api/v1/locks", params={"key": "db:shop1"}).json()["items"] == []
    assert w.call("get", "/api/v1/locks", DASHBOARDS).json()["items"] == []


def access(w: World) -> None:
    assert w.call("get", "/api/v1/access").json() == json.loads(ACCESS)
    assert w.call("get", "/api/v1/access", OPS).json() == {"name": "ops", "role": "operator", "scoped": False,
                                                           "namespaces": []}  # fmt: skip


def open_route(path: str) -> Callable[[World], None]:
    def case(w: World) -> None:
        answer = w.api.client.get(path)  # no token: nothing of a task is there
        assert answer.status_code in (200, 503)
        assert not any(t in answer.text for t in (w.theirs, w.mine, SECRET))

    return case


ROUTES: dict[tuple[str, str], Callable[[World], None]] = {
    ("post", "/api/v1/tasks"): create_task,
    ("get", "/api/v1/tasks"): list_tasks,
    ("get", "/api/v1/tasks/{task_id}"): get_task,
    ("get", "/api/v1/tasks/{task_id}/steps/{step}/items"): step_items,
    ("get", "/api/v1/tasks/{task_id}/events"): task_events,
    **{("post", f"/api/v1/tasks/{{task_id}}/{name}"): action(name)
       for name in ("cancel", "retry", "retry-rollback", "compensate", "pause", "resume", "skip", "redrive", "rollback")},
    ("post", "/api/v1/tasks/{task_id}/steps/{step}/actions/{action}"): step_action,
    ("post", "/api/v1/callbacks/{token}"): lambda w: callback_case(w, PAYMENTS, SECRET),
    ("post", "/api/v1/bulk/{action}"): bulk,
    ("post", "/api/v1/task-types/{name}/migrate"): migrate,
    ("get", "/api/v1/task-types"): task_types,
    ("get", "/api/v1/task-types/{name}"): task_type,
    ("get", "/api/v1/alarms"): alarms,
    ("post", "/api/v1/alarms/acknowledge"): acknowledge_alarms,
    ("post", "/api/v1/alarms/{alarm_id}/ack"): acknowledge_alarm,
    ("get", "/api/v1/hosts"): list_hosts,
    ("post", "/api/v1/hosts"): add_host,
    ("post", "/api/v1/hosts/{name}/drain"): host_action("drain"),
    ("post", "/api/v1/hosts/{name}/activate"): host_action("activate"),
    ("post", "/api/v1/schedules"): create_schedule,
    ("get", "/api/v1/schedules"): list_schedules,
    ("get", "/api/v1/schedules/{schedule}"): get_schedule,
    ("delete", "/api/v1/schedules/{schedule}"): schedule_change("delete", ""),
    ("post", "/api/v1/schedules/{schedule}/pause"): schedule_change("post", "/pause"),
    ("post", "/api/v1/schedules/{schedule}/resume"): schedule_change("post", "/resume"),
    ("get", "/api/v1/modules"): list_modules,
    ("post", "/api/v1/modules/{module}/drain"): module_change("drain"),
    ("post", "/api/v1/modules/{module}/undrain"): module_change("undrain"),
    ("get", "/api/v1/locks"): list_locks,
    ("get", "/api/v1/access"): access,
    ("get", "/healthz"): open_route("/healthz"),
    ("get", "/readyz"): open_route("/readyz"),
    ("get", "/metrics"): open_route("/metrics"),
}  # fmt: skip


def test_every_route_has_a_scoped_case(world: World) -> None:
    document = world.api.client.get("/api/v1/openapi.json").json()
    served = {(method, path) for path, item in document["paths"].items() for method in item if method in METHODS}
    assert served == set(ROUTES), f"routes without a scoped case: {sorted(served - set(ROUTES))}"


@pytest.mark.parametrize("route", list(ROUTES), ids=lambda r: f"{r[0]} {r[1]}" if isinstance(r, tuple) else "")
def test_a_scoped_token_on(world: World, route: tuple[str, str]) -> None:
    ROUTES[route](world)

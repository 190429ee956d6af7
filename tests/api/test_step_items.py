"""A for_each step's items through the API, kept inline or in records of their own
(docs/design/item-records.md, "Views and limits"): the task view shows the counts by state, never a
records step's items; the items come paged by index from /tasks/{id}/steps/{step}/items, the same
for both representations, masked as the task view masks them; a bad request is a 4xx naming its
field, judged after the token.

Tasks are run by the engine's real changes on the API's own SQLite file (tests/support/dag_sim.py),
over records with `fan_out.RECORDS_ENABLED` on for this test only."""

from __future__ import annotations

import threading

import pytest

from common.engine.kinds.for_each import records as fan_out_kind
from common.engine.states import Phase
from common.store.sqlite.items import SqliteItemStore
from oss.cli.item_reads import ItemReads
from oss.cli.render import branches_line
from tests.api.support import READER, auth
from tests.support.dag_sim import Simulator
from tests.unit.test_graph_transitions import fan_out, new

HOSTS = [f"host-{i:02d}.example" for i in range(20)]


def run_fan_out(api, task_id: str, records: bool, monkeypatch, *, secret: bool = False,
                fail_item: int | None = 5, steps: int | None = None, retry: int = 0) -> Simulator:
    """A task a -> each(hosts, max_parallel 4) -> join; item `fail_item` fails (the task rolls
    back); `steps`: stop after that many deliveries and outcomes (the task still running)."""
    monkeypatch.setattr(fan_out_kind, "RECORDS_ENABLED", records)
    fails = lambda t, cursor, item, phase: cursor == 1 and item == fail_item and phase is Phase.NORMAL  # noqa: E731
    simulator = Simulator(api.store, fails, SqliteItemStore(api.store.path))
    flow = fan_out(max_parallel=4)
    flow[1].NormalRetry = retry
    task = new(flow, {"hosts": list(HOSTS), "password": "hunter2-secret"}, task_id=task_id)
    task.SecretParameters = ["hosts", "password"] if secret else ["password"]
    simulator.submit(task)
    if steps is None:
        simulator.run(lambda n: 0)
    else:
        for _ in range(steps):
            simulator.step(0)
    return simulator


def page(api, task_id: str, step="1", token=READER, **params):
    return api.get(f"/api/v1/tasks/{task_id}/steps/{step}/items", token=token, **params)


def every_item(api, task_id: str, **params) -> list[dict]:
    found, after = [], None
    while True:
        answer = page(api, task_id, **params, **({"after": after} if after is not None else {}))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        found += body["Items"]
        assert len(body["Items"]) <= int(params.get("limit", 100))
        if body["NextAfter"] is None:
            return found
        after = body["NextAfter"]


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_the_view_shows_counts_by_state_and_a_records_step_never_its_items(api, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch)
    step = api.get("/api/v1/tasks/fe").json()["Steps"][1]
    assert sum(step["ItemCounts"].values()) == 20
    assert step["ItemCounts"].get("rolled_back", 0) >= 1  # item 5 failed: what ran was undone
    assert api.get("/api/v1/tasks/fe").json()["Steps"][0]["ItemCounts"] is None  # not a fan-out step
    if records:
        assert step["ItemStore"] == "records" and step["ItemCount"] == 20 and step["Items"] is None
    else:
        assert len(step["Items"]) == 20
        assert step["ItemCounts"] == {s: sum(i["State"] == s for i in step["Items"]) for s in step["ItemCounts"]}


def test_a_records_step_shows_its_items_attempts_summed_as_an_inline_one(api, monkeypatch):
    run_fan_out(api, "in", False, monkeypatch, retry=2)
    run_fan_out(api, "rec", True, monkeypatch, retry=2)
    shown = {t: api.get(f"/api/v1/tasks/{t}").json()["Steps"][1] for t in ("in", "rec")}
    items = every_item(api, "rec", limit=500)
    sums = (sum(i["Attempts"] for i in items), sum(i["RollbackAttempts"] for i in items))
    assert items[5]["Attempts"] == 3 and sums[1] > 0  # item 5 tried three times; what ran was undone
    for step in shown.values():
        assert (step["Attempts"], step["RollbackAttempts"]) == sums
    stored = api.store.get("rec").Steps[1]  # kept as the step's own when its items settled
    assert (stored.Attempts, stored.RollbackAttempts) == sums


def test_both_representations_show_the_same_items_and_counts(api, monkeypatch):
    run_fan_out(api, "in", False, monkeypatch)
    run_fan_out(api, "rec", True, monkeypatch)
    shown = {}
    for task_id in ("in", "rec"):
        items = every_item(api, task_id, limit=7)
        assert [i["Item"] for i in items] == list(range(20))
        shown[task_id] = [(i["Item"], i["Value"], i["State"], i["Code"]) for i in items]
        counts = api.get(f"/api/v1/tasks/{task_id}").json()["Steps"][1]["ItemCounts"]
        assert counts == {s: sum(i["State"] == s for i in items) for s in counts}
    assert shown["in"] == shown["rec"]


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_a_page_filters_by_state_in_item_order(api, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch)
    everything = every_item(api, "fe", limit=500)
    for states in ("rolled_back", "cancelled,failed", "waiting, rolled_back", "succeeded"):
        wanted = {s.strip() for s in states.split(",")}
        expected = [i["Item"] for i in everything if i["State"] in wanted]
        assert [i["Item"] for i in every_item(api, "fe", state=states, limit=3)] == expected
    first = page(api, "fe", limit=5).json()
    assert (len(first["Items"]), first["NextAfter"], first["ItemCount"], first["Name"]) == (5, 4, 20, "each")
    assert page(api, "fe", step="each", after=17).json()["Items"][0]["Item"] == 18  # by name too
    assert page(api, "fe", after=19).json() | {"Items": None} == {**first, "Items": None, "NextAfter": None}


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_the_failed_filter_finds_the_item_that_failed_once_it_is_rolled_back(api, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch)
    found = every_item(api, "fe", failed="true", limit=2)
    assert [(i["Item"], i["State"], i["Code"]) for i in found] == [(5, "rolled_back", 1)]
    assert [i["Item"] for i in every_item(api, "fe", failed="false", limit=500)] == list(range(20))
    # Both filters: the failed items in one of these states now, on either kind of step.
    assert [i["Item"] for i in every_item(api, "fe", failed="true", state="rolled_back,failed", limit=2)] == [5]
    assert every_item(api, "fe", failed="true", state="succeeded", limit=2) == []
    assert page(api, "fe", failed="yes").status_code == 422


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_secret_item_values_and_outputs_are_masked_as_in_the_task_view(api, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch, secret=True, fail_item=None)
    text = page(api, "fe", limit=500).text
    assert "host-" not in text and "***" in text
    assert "host-" not in api.get("/api/v1/tasks/fe").text


@pytest.mark.parametrize(("params", "field"), [
    ({"state": "exploded"}, "query.state"),
    ({"state": "FAILED;drop"}, "query.state"),
    ({"limit": 0}, "query.limit"),
    ({"limit": 501}, "query.limit"),
    ({"limit": "1_0"}, "query.limit"),
    ({"after": -3}, "query.after"),
    ({"after": "x"}, "query.after"),
    ({"state": "running,,failed"}, "query.state"),
])
def test_a_bad_request_is_a_422_naming_its_field(api, monkeypatch, params, field):
    run_fan_out(api, "fe", True, monkeypatch, steps=6)
    answer = page(api, "fe", **params)
    assert answer.status_code == 422, answer.text
    assert field in [f["path"] for f in answer.json()["error"]["fields"]], answer.text


@pytest.mark.parametrize(("step", "status"), [("0", 409), ("a", 409), ("7", 404), ("nope", 404), ("01", 422),
                                             ("00", 422), ("007", 422)])
def test_a_step_without_items_is_409_and_no_such_step_404_naming_it(api, monkeypatch, step, status):
    run_fan_out(api, "fe", True, monkeypatch, steps=6)
    answer = page(api, "fe", step=step)
    assert answer.status_code == status, answer.text
    field = "path.step"
    assert field in [f["path"] for f in answer.json()["error"]["fields"]], answer.text
    if status == 422:  # "01" is not step 1: the value named, as written
        assert repr(step) in answer.json()["error"]["fields"][0]["message"], answer.text


def test_the_token_is_judged_before_the_request_and_an_unknown_task_is_404(api, monkeypatch):
    run_fan_out(api, "fe", True, monkeypatch, steps=6)
    assert api.client.get("/api/v1/tasks/fe/steps/1/items?limit=0").status_code == 401
    assert api.client.get("/api/v1/tasks/fe/steps/1/items", headers=auth("wrong-token-012345")).status_code == 401
    assert page(api, "nothere").status_code == 404
    assert page(api, "fe", stauts="x").status_code == 422


def test_a_running_records_step_pages_what_is_stored(api, monkeypatch):
    run_fan_out(api, "fe", True, monkeypatch, fail_item=None, steps=8)
    step = api.get("/api/v1/tasks/fe").json()["Steps"][1]
    counts = step["ItemCounts"]
    assert step["State"] == "running" and sum(counts.values()) == 20 and counts["waiting"] >= 12
    assert len(every_item(api, "fe", state="waiting")) == counts["waiting"]


def test_the_event_stream_carries_a_records_steps_counts_when_they_change(api, monkeypatch):
    from tests.api.test_events import read_events
    from tests.support.cluster import STATE_DEADLINE, wait_until

    simulator = run_fan_out(api, "fe", True, monkeypatch, steps=4)
    collected: list = []
    reader = threading.Thread(target=lambda: read_events(api, "fe", into=collected))
    reader.start()
    progress = lambda: [e[2] for e in list(collected) if e[0] == "progress"]  # noqa: E731
    wait_until(lambda: progress(), 30, "the first progress event")
    first = progress()[0]
    assert (first["Step"], first["Name"], first["ItemCount"], sum(first["ItemCounts"].values())) == (1, "each", 20, 20)
    for _ in range(6):  # items claimed and finished: the task document does not change
        simulator.step(0)
    wait_until(lambda: len(progress()) >= 2, 30, "a progress event for the changed counts")
    simulator.run(lambda n: 0)
    reader.join(timeout=STATE_DEADLINE)
    assert not reader.is_alive() and collected[-1][0] == "end"
    sent = [p["ItemCounts"] for p in progress()]
    assert all(a != b for a, b in zip(sent, sent[1:]))  # only when they change
    assert sent[-1] == api.get("/api/v1/tasks/fe").json()["Steps"][1]["ItemCounts"]
    assert "rolled_back" in sent[-1]


def test_an_item_over_records_that_keeps_failing_is_skipped_through_the_api(api, monkeypatch):
    simulator = run_fan_out(api, "fe", True, monkeypatch, retry=5, steps=0)
    for _ in range(2000):
        found = page(api, "fe", state="running").json()["Items"]
        if any(i["Item"] == 5 and i["Code"] is not None for i in found):
            break
        simulator.step(0)
    body = {"reason": "host 5 is retired", "step": 1, "item": 5}
    answer = api.client.post("/api/v1/tasks/fe/skip", json=body, headers=auth())
    assert answer.status_code == 200, answer.text
    assert answer.json()["History"][-1]["Event"] == "operator_skipped"
    assert page(api, "fe", state="operator_skipped").json()["Items"][0]["Item"] == 5
    again = api.client.post("/api/v1/tasks/fe/skip", json=body, headers=auth())
    assert again.status_code == 409 and "has not failed an attempt" in again.text
    version = api.store.get("fe").Version
    beyond = api.client.post("/api/v1/tasks/fe/skip", json={**body, "item": 99}, headers=auth())
    assert beyond.status_code == 422 and "item 99" in beyond.text  # a value out of range: the request's
    assert [f["path"] for f in beyond.json()["error"]["fields"]] == ["item"] and api.store.get("fe").Version == version


def test_watch_reads_the_runs_of_items_kept_in_records(api, monkeypatch):
    """`baton watch` on the store shows a records step's items in flight, read from their records."""
    simulator = run_fan_out(api, "watched", True, monkeypatch, steps=3)  # 4 items dispatched (max_parallel 4)
    task = api.store.get("watched")
    assert task.Runs == []
    with ItemReads(api.store) as reader:
        runs = reader.runs(task)
    assert branches_line(task, runs) == "  in flight: each[0, 1, 2, 3] (pending)"
    simulator.items.close()

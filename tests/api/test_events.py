"""GET /api/v1/tasks/{id}/events: every change of a task, in order, as Server-Sent Events."""

from __future__ import annotations

import json
import threading

from common.engine.document import NotifyTarget
from common.engine.core.notifications import WEBHOOK
from common.store.tasks.mutate import mutate
from tests.api.support import FAIL, SECRET, Api, auth
from tests.support.cluster import STATE_DEADLINE, wait_until


def read_events(api: Api, task_id: str, headers: dict[str, str] | None = None, started: threading.Event | None = None,
                into: list | None = None, **params: object) -> list[tuple[str, str, dict]]:  # fmt: skip
    """(event, id, data) of every event until the server ends the stream; appended to `into` as
    they arrive, when given (a test waits for one)."""
    events: list[tuple[str, str, dict]] = [] if into is None else into
    fields: dict[str, str] = {}
    with api.client.stream("GET", f"/api/v1/tasks/{task_id}/events", params=params,
                           headers={**auth(), **(headers or {})}) as response:  # fmt: skip
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith(":"):
                continue
            if not line:
                if fields:
                    events.append((fields.get("event", ""), fields.get("id", ""), json.loads(fields["data"])))
                    if started is not None:
                        started.set()
                fields = {}
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
    return events


def test_a_client_sees_every_change_in_order_then_the_end(api: Api) -> None:
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    collected: list = []
    connected = threading.Event()
    reader = threading.Thread(target=lambda: read_events(api, task_id, started=connected, into=collected))
    reader.start()
    assert connected.wait(STATE_DEADLINE)
    api.step(task_id)  # step 0 claimed and done
    # The stream sees this state on its own before the next changes come.
    wait_until(lambda: any(e[0] == "task" and e[2]["TaskStatus"] == 2 for e in list(collected)), 30, "RUNNING seen")
    api.step(task_id, FAIL)  # step 1 fails: rollback of 1, then of 0, in quick succession
    api.step(task_id)
    api.step(task_id)
    reader.join(timeout=STATE_DEADLINE)
    assert not reader.is_alive()
    assert collected[-1][0] == "end" and collected[-1][2] == {"TaskStatus": 4}
    snapshots = [e for e in collected if e[0] == "task"]
    versions = [int(e[1].split(".")[0]) for e in snapshots]
    assert versions == sorted(set(versions))  # each version at most once, in order
    statuses = [e[2]["TaskStatus"] for e in snapshots]
    assert statuses[0] == 1 and statuses[-1] == 4 and 2 in statuses
    # Every history event arrived, once, in order, even those of changes faster than a poll.
    changes = [e[2] for e in collected if e[0] == "change"]
    assert changes == snapshots[-1][2]["History"]
    assert [c["Event"] for c in changes][:2] == ["created", "dispatched"]
    assert "rollback_succeeded" in [c["Event"] for c in changes]
    assert SECRET not in json.dumps(collected)


def test_resuming_with_last_event_id_sends_only_newer_versions(api: Api) -> None:
    task_id = api.create(task_type="free_form")["task_id"]
    api.step(task_id)  # done: version 2, final
    everything = read_events(api, task_id)
    last_id = everything[-2][1]
    assert [e[0] for e in everything][-2:] == ["task", "end"] and last_id.startswith("2.")
    resumed = read_events(api, task_id, headers={"Last-Event-ID": last_id})
    assert [e[0] for e in resumed] == ["end"]


def test_a_stream_ends_after_its_timeout_and_unknown_tasks_are_404(api: Api) -> None:
    task_id = api.create(task_type="free_form")["task_id"]
    events = read_events(api, task_id, timeout=0.5)
    assert [e[0] for e in events][-2:] == ["task", "timeout"]
    assert api.get("/api/v1/tasks/nope/events").status_code == 404
    assert api.client.get(f"/api/v1/tasks/{task_id}/events").status_code == 401


def test_a_final_task_ends_its_stream_while_a_webhook_still_waits_for_its_receiver(api: Api) -> None:
    task_id = api.create(task_type="free_form")["task_id"]
    mutate(api.store, task_id, lambda t: _notified(t))  # as if its type had a `notify`
    api.step(task_id)  # done: "succeeded" waits in the outbox for a receiver nobody runs here
    assert any(e.Kind == WEBHOOK for e in api.store.get(task_id).Outbox)
    events = read_events(api, task_id, timeout=20)
    assert [e[0] for e in events][-2:] == ["task", "end"]


def _notified(task):
    new = task.clone()
    new.Notify = [NotifyTarget(Url="http://127.0.0.1:9/")]
    return new

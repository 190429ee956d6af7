"""Module drain end to end, with real processes on the real RabbitMQ (SQLite store, or MongoDB
on SecantusDB with BATON_TEST_STORE=mongo): OSS serving REST, `baton` CLI invocations, the
resource and mysql modules (stand-in commands) and a separate sweeper.

- Drained over REST while a mysql command runs: that command finishes; new tasks run their
  resource step, then their mysql step waits (`WaitingFor` kind drain, in the REST view and
  `baton get`), with who drained and why in the history; undrained with the CLI, every task
  succeeds, each mysql step run once, the history naming who undrained and why.
- Each item of a `for_each` step is held on its own and runs once after the undrain: kept in
  records of their own (the default), each record's run is marked, the task shows the drain as
  `WaitingFor` (REST, `baton get`, the event stream) and no longer once they ran; kept inline,
  each run in the task is marked.
- A message already in the mysql queue when the drain begins (its module was stopped) is held
  at the claim like one published after it, and runs only after the undrain.
- Items waiting while no live module serves their queue: the task view says so (`Waiting`).

The tests with a `for_each` step run twice: with item records (the default) and with
BATON_ITEM_RECORDS=false. The others run once, with the default: the setting only decides where a
`for_each` step keeps its items, so it changes nothing in a task without one.
"""

from __future__ import annotations

import concurrent.futures
import json
import signal
import time

import pytest

from common.engine.states import TaskStatus
from tests.deploy.support import http
from tests.support.cluster import STATE_DEADLINE, Cluster, commits, wait_until
from tests.support.oss_deployment import baton, oss_deployment, stream_events
from tests.support.test_store import cluster_mongo_url
from common.store.items.open import open_item_store_for

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

# Steps under a timeout only a broken run reaches: on a loaded machine a 4 s hold must not race it.
FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0}
task_types:
  provision:
    parameters:
      hold: {type: number, default: 0.1}
    steps:
      - name: reserve
        normal:   {module: resource, command: step_a}
        rollback: {module: resource, command: undo_a}
      - name: create
        normal:   {module: mysql, command: hold}
      - name: finish
        normal:   {module: resource, command: step_c}
  fleet:
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: per_node
        for_each: nodes
        normal:   {module: mysql, command: step_item}
"""


@pytest.fixture(scope="module", params=[True, False], ids=["item records", "inline items"])
def deployment(rabbitmq_url, tmp_path_factory, request):
    records = request.param
    with oss_deployment(tmp_path_factory.mktemp("drain"), rabbitmq_url, FLOWS,
                        {"resource": "tests.support.standin_commands:resource",
                         "mysql": "tests.support.standin_commands:mysql"},
                        mongo_url=cluster_mongo_url(request),
                        extra_env={"BATON_ITEM_RECORDS": "true" if records else "false"}) as deployed:  # fmt: skip
        deployed[0].records = records
        yield deployed


@pytest.fixture(autouse=True)
def undrained_after(deployment):
    """A test that failed half-way leaves mysql served again, so the next ones of the shared
    deployment fail for their own faults only, not for its drain."""
    yield
    cluster, base = deployment
    http("POST", f"{base}/api/v1/modules/mysql/undrain", {"reason": "the test ended"})  # 409 when not drained
    if cluster.procs["mysql"].popen.poll() is not None:
        cluster.restart("mysql")


# For a test whose tasks have no `for_each` step: the deployment with item records only.
default_records_only = pytest.mark.parametrize("deployment", [True], ids=["item records"], indirect=True)


def submit(base: str, **parameters) -> str:
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "provision", "parameters": parameters})
    assert status == 201, created
    return created["task_id"]


def task(base: str, task_id: str) -> dict:
    return http("GET", f"{base}/api/v1/tasks/{task_id}")[1]


def held(base: str, task_id: str) -> bool:
    shown = task(base, task_id)
    return shown["WaitingFor"] is not None and shown["WaitingFor"]["Kind"] == "drain"


def events(shown: dict, name: str) -> list[dict]:
    return [e for e in shown["History"] if e["Event"] == name]


@default_records_only
def test_drained_mysql_holds_new_steps_lets_running_ones_finish_and_undrain_lets_them_go(deployment):
    cluster, base = deployment
    running = submit(base, hold=4.0)
    wait_until(lambda: [e for e in events(task(base, running), "claimed") if e["Cursor"] == 1], 60,
               "the long mysql step running")
    # The reason quotes a secret: masked in the record, every view, every log line.
    status, drained = http("POST", f"{base}/api/v1/modules/mysql/drain",
                           {"reason": "deploy mysql 1.4 password=hunter2-old"})  # fmt: skip
    assert (status, drained["drained"], drained["actor"]) == (200, True, "tester"), drained
    assert drained["reason"] == "deploy mysql 1.4 password=***", drained
    # A second drain is refused naming who drained it: it would hide the first one's who and why.
    status, again = http("POST", f"{base}/api/v1/modules/mysql/drain", {"reason": "deploy mysql 1.5"})
    assert status == 409 and "drained already (by tester at " in again["error"]["message"], again
    again_cli = baton(cluster, "modules", "drain", "mysql", "--reason", "deploy 1.5", "--as", "ops:olga")
    assert again_cli.returncode == 4 and "drained already (by tester at " in again_cli.stderr, again_cli.stderr
    for hostile in ("deploy\x00", "deploy \u202eevil", "zero\u200bwidth"):
        status, refused = http("POST", f"{base}/api/v1/modules/mysql/drain", {"reason": hostile})
        assert status == 422 and refused["error"]["fields"][0]["path"].endswith("reason"), refused
        by_cli = baton(cluster, "modules", "undrain", "mysql", "--reason", hostile.replace("\x00", "\x01"))
        assert by_cli.returncode == 2 and "reason" in by_cli.stderr, by_cli.stderr
    hidden_actor = baton(cluster, "modules", "undrain", "mysql", "--reason", "ok", "--as", "ol\u202ega")
    assert hidden_actor.returncode == 2 and "actor" in hidden_actor.stderr, hidden_actor.stderr
    time.sleep(1.2)  # a module reads its drain record at most once a second
    waiting = [submit(base) for _ in range(3)]
    by_cli = baton(cluster, "submit", "provision", "--json")
    assert by_cli.returncode == 0, by_cli.stderr
    waiting.append(json.loads(by_cli.stdout)["TaskId"])
    for task_id in waiting:
        wait_until(lambda t=task_id: held(base, t), 60, f"task {task_id} held by the drain")

    # The running command finished, and its task with it, drain or not.
    assert cluster.wait_final(running, timeout=60).TaskStatus is TaskStatus.SUCCESS
    for task_id in waiting:
        shown = task(base, task_id)
        assert shown["TaskStatus"] == int(TaskStatus.RUNNING)
        # Held, not running: nothing of it runs until the undrain.
        assert [s["State"] for s in shown["Steps"]] == ["succeeded", "waiting", "waiting"], shown["Steps"]
        assert (shown["WaitingFor"]["Kind"], shown["WaitingFor"]["Key"]) == ("drain", "mysql")
        (event,) = events(shown, "waiting_for_drain")
        assert (event["Actor"], event["Cursor"]) == ("tester", 1)
        assert event["Message"] == "module mysql drained by tester: deploy mysql 1.4 password=***"
        assert not [e for e in shown["History"] if e["Event"] == "claimed" and e["Cursor"] == 1]
    streamed = stream_events(base, waiting[0])  # the event stream says the same
    assert "waiting_for_drain" in [data["Event"] for kind, data in streamed if kind == "change"]
    assert [data["WaitingFor"]["Kind"] for kind, data in streamed if kind == "task"][-1] == "drain"
    shown = baton(cluster, "get", waiting[0])
    assert shown.returncode == 0, shown.stderr
    assert "waiting for drain mysql since" in shown.stdout
    listed = baton(cluster, "modules")
    assert "mysql        drained by tester" in listed.stdout and "deploy mysql 1.4 password=***" in listed.stdout
    status, modules = http("GET", f"{base}/api/v1/modules")
    assert [m["drain"]["reason"] for m in modules["items"] if m["module"] == "mysql"] == ["deploy mysql 1.4 password=***"]
    running = baton(cluster, "list", "--status", "2", "--limit", "100")  # held work apart from running work
    lines = {line.split()[0]: line for line in running.stdout.splitlines()}
    assert all("held (waiting for drain mysql)" in lines[task_id] for task_id in waiting), running.stdout
    listed_json = json.loads(baton(cluster, "list", "--status", "2", "--json").stdout)["items"]
    assert {t["TaskId"]: t["Steps"][1]["State"] for t in listed_json if t["TaskId"] in waiting} == dict.fromkeys(
        waiting, "waiting")
    # The operator takes one held step over by hand: skipped, its task goes on while the rest wait.
    by_hand = waiting.pop()
    status, skipped = http("POST", f"{base}/api/v1/tasks/{by_hand}/skip", {"reason": "created by hand", "step": 1})
    assert status == 200, skipped
    done = cluster.wait_final(by_hand, timeout=60)
    assert done.TaskStatus is TaskStatus.SUCCESS and done.Steps[1].State.value == "operator_skipped"
    assert commits(done) == {(0, 0): 1, (2, 0): 1}  # the held step never ran

    undrained = baton(cluster, "modules", "undrain", "mysql", "--reason", "1.4 is out", "--as", "ops:olga",
                      "--json")
    assert undrained.returncode == 0, undrained.stderr
    undrained_at = json.loads(undrained.stdout)["Since"]
    for task_id in waiting:
        done = cluster.wait_final(task_id, timeout=60)
        assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
        assert commits(done) == {(0, 0): 1, (1, 0): 1, (2, 0): 1}  # each step ran once
        (released,) = [e for e in done.History if e.Event == "drain_released"]
        assert (released.Actor, released.Cursor) == ("ops:olga", 1)
        assert released.Message == "module mysql undrained by ops:olga: 1.4 is out"
        # Let go by a re-publication after the undrain (how soon is the re-check period plus
        # the machine's load: not asserted).
        assert released.Time >= undrained_at, released.Time - undrained_at
        assert task(base, task_id)["WaitingFor"] is None
    logged = [e for e in cluster.log_events("mysql") if e.get("event") == "step held: module drained"]
    assert {e["drained_by"] for e in logged} == {"tester"} and {e["task_id"] for e in logged} == {*waiting, by_hand}
    assert {e["reason"] for e in logged} == {"deploy mysql 1.4 password=***"}
    for name in ("oss", "mysql"):
        assert "hunter2" not in cluster.procs[name].log_text(), name
    assert "hunter2" not in json.dumps(task(base, waiting[0]))
    # Undrained, `baton modules --stale` says who let the steps go and why.
    stale = baton(cluster, "modules", "--stale")
    assert "mysql        undrained by ops:olga at " in stale.stdout and ": 1.4 is out" in stale.stdout, stale.stdout
    assert "undrained" not in baton(cluster, "modules").stdout


@default_records_only
def test_a_message_queued_before_the_drain_is_held_at_the_claim(deployment):
    cluster, base = deployment
    cluster.kill("mysql", signal.SIGTERM)  # nobody consumes the mysql queue now
    task_id = submit(base)
    wait_until(lambda: task(base, task_id)["Steps"][0]["State"] == "succeeded", 60, "the resource step")
    wait_until(lambda: cluster.broker.queue_depth("mysql") >= 1, 60, "its mysql step's message queued, unclaimed")
    drained = baton(cluster, "modules", "drain", "mysql", "--reason", "deploy 1.5", "--as", "ops:olga")
    assert drained.returncode == 0, drained.stderr
    cluster.restart("mysql")
    wait_until(lambda: held(base, task_id), 60, "the queued message held at the claim")
    time.sleep(1.0)
    shown = task(base, task_id)
    assert shown["Steps"][1]["State"] == "waiting" and not [e for e in events(shown, "claimed") if e["Cursor"] == 1]
    status, _ = http("POST", f"{base}/api/v1/modules/mysql/undrain", {"reason": "1.5 is out"})
    assert status == 200
    done = cluster.wait_final(task_id, timeout=60)
    assert done.TaskStatus is TaskStatus.SUCCESS and commits(done)[(1, 0)] == 1
    (released,) = [e for e in done.History if e.Event == "drain_released"]
    assert released.Actor == "tester" and released.Message.endswith("1.5 is out")


def test_each_item_of_a_fan_out_is_held_and_runs_once_after_the_undrain(deployment):
    cluster, base = deployment
    status, _ = http("POST", f"{base}/api/v1/modules/mysql/drain", {"reason": "deploy 1.6"})
    assert status == 200
    time.sleep(1.2)  # a module reads its drain record at most once a second
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "fleet", "parameters": {"nodes": ["a", "b", "c"]}})
    assert status == 201, created
    task_id = created["task_id"]

    def all_held() -> bool:
        runs = task(base, task_id)["Runs"]
        return len(runs) == 3 and all(r["HeldBy"] == "mysql" for r in runs)

    def all_held_records() -> bool:
        runs = [r.Run for r in item_records(cluster, task_id)]
        return len(runs) == 3 and all(r is not None and r.HeldBy == "mysql" and r.HeldSince for r in runs)

    if cluster.records:
        # Opened as the items are being held: a hold changes the records, not the task, and the
        # stream sends the task again once its WaitingFor moved.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            streaming = pool.submit(stream_until_drain, base, task_id)
            wait_until(all_held_records, 60, "every item's record held by the drain")
            streamed = streaming.result(timeout=STATE_DEADLINE + 60)  # the stream ends itself first
        assert task(base, task_id)["Runs"] == []  # the runs live in the records
        assert [data["WaitingFor"] for kind, data in streamed if kind == "task"][-1]["Kind"] == "drain"
        held_events = [e for r in item_records(cluster, task_id) for e in r.History if e.Event == "waiting_for_drain"]
        assert sorted(e.Item for e in held_events) == [0, 1, 2]
        assert {(e.Actor, e.Message) for e in held_events} == {("tester", "module mysql drained by tester: deploy 1.6")}
        shown = baton(cluster, "get", task_id)
        assert shown.returncode == 0, shown.stderr
        assert "waiting for drain mysql since" in shown.stdout
        got = json.loads(baton(cluster, "get", task_id, "--json").stdout)
        assert got["WaitingFor"]["Kind"] == "drain" and got["Steps"][0]["State"] == "waiting"  # nothing of it runs
        listed = http("GET", f"{base}/api/v1/tasks?task_type=fleet")[1]["items"]  # the console's list
        assert [(t["WaitingFor"]["Kind"], t["StepStates"]) for t in listed if t["TaskId"] == task_id] == [
            ("drain", ["waiting"])]
        listed = json.loads(baton(cluster, "list", "--type", "fleet", "--json").stdout)["items"]
        assert [t["WaitingFor"]["Kind"] for t in listed if t["TaskId"] == task_id] == ["drain"]
    else:
        wait_until(all_held, 60, "every item held by the drain")
        assert sorted(e["Item"] for e in events(task(base, task_id), "waiting_for_drain")) == [0, 1, 2]
    shown = task(base, task_id)
    assert (shown["WaitingFor"]["Kind"], shown["WaitingFor"]["Key"]) == ("drain", "mysql")
    assert shown["Steps"][0]["State"] == "waiting", shown["Steps"][0]  # kept in records or inline alike
    if cluster.records:  # re-published while drained, without backoff: still held, never claimed
        def held_again() -> bool:  # each item's re-publication reached the module and was held
            holds = [e.get("item") for e in cluster.log_events("mysql")
                     if e.get("event") == "step held: module drained" and e.get("task_id") == task_id]
            return all(holds.count(item) >= 2 for item in range(3))

        wait_until(held_again, 60, "every item re-published and held again")
        kept = item_records(cluster, task_id)
        assert all(r.Run.HeldBy == "mysql" and r.Attempts == 0 for r in kept)
        assert [sum(e.Event == "waiting_for_drain" for e in r.History) for r in kept] == [1, 1, 1]
        assert not [e for r in kept for e in r.History if e.Event == "redispatched"]
    status, _ = http("POST", f"{base}/api/v1/modules/mysql/undrain", {"reason": "1.6 is out"})
    assert status == 200
    done = cluster.wait_final(task_id, timeout=60)
    assert done.TaskStatus is TaskStatus.SUCCESS
    ran = sorted(e.Item for e in done.History if e.Event == "step_succeeded" and e.Item is not None)
    assert ran == [0, 1, 2]  # each item once
    released = [e for e in done.History if e.Event == "drain_released"]
    assert sorted(e.Item for e in released) == [0, 1, 2]
    assert {(e.Actor, e.Message) for e in released} == {("tester", "module mysql undrained by tester: 1.6 is out")}
    assert task(base, task_id)["WaitingFor"] is None
    if cluster.records:
        assert all(r.Run is None for r in item_records(cluster, task_id))


def stream_until_drain(base: str, task_id: str) -> list[tuple[str, dict]]:
    """The task's event stream up to the first `task` event that shows a drain (or its end)."""
    return stream_events(base, task_id, seconds=STATE_DEADLINE,
                         until=lambda kind, data: kind == "task" and (data.get("WaitingFor") or {}).get("Kind") == "drain")


def item_records(cluster: Cluster, task_id: str) -> list:
    items = open_item_store_for(cluster.store)
    try:
        return items.page_items(task_id, cluster.store.get(task_id).Generation, 0, limit=10)
    finally:
        items.close()



def test_items_waiting_on_a_module_none_serves_say_so_in_the_task_view(deployment):
    cluster, base = deployment
    cluster.kill("mysql", signal.SIGTERM)  # its registration goes with it: no live mysql module
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "fleet", "parameters": {"nodes": ["a", "b"]}})
    assert status == 201, created
    task_id = created["task_id"]
    # The items' runs wait in their records (or in the task, inline): the view says why either way.
    wait_until(lambda: task(base, task_id)["Waiting"] == "no live module serves queue mysql", 60,
               "the task view naming the unserved queue")
    cluster.restart("mysql")
    assert cluster.wait_final(task_id, timeout=60).TaskStatus is TaskStatus.SUCCESS
    assert task(base, task_id)["Waiting"] is None


@default_records_only
def test_a_delayed_start_shows_its_step_waiting_until_its_time_and_may_be_skipped(deployment):
    """A task submitted with a future `start_at`: its first step is dispatched but nothing runs it,
    so it reads `waiting` (not `running`), `WaitingFor` says until when, `baton list` marks it
    held and `baton get` says what it waits for; skipping the step leaves the next one held."""
    cluster, base = deployment
    start_at = time.time() + 3600
    status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "provision", "start_at": start_at})
    assert status == 201, created
    task_id = created["task_id"]
    shown = task(base, task_id)
    assert [s["State"] for s in shown["Steps"]] == ["waiting", "waiting", "waiting"], shown["Steps"]
    assert (shown["WaitingFor"]["Kind"], shown["WaitingFor"]["Until"]) == ("start_at", pytest.approx(start_at))
    assert shown["TaskStatus"] == int(TaskStatus.NOT_STARTED)
    listed = baton(cluster, "list", "--status", "1", "--limit", "100")
    line = next(line for line in listed.stdout.splitlines() if line.startswith(task_id))
    assert "held (waiting for start_at until " in line, listed.stdout
    got = baton(cluster, "get", task_id)
    assert "[0] reserve              waiting" in got.stdout and "waiting for start_at until " in got.stdout, got.stdout

    status, skipped = http("POST", f"{base}/api/v1/tasks/{task_id}/skip", {"reason": "reserved by hand", "step": 0})
    assert status == 200, skipped
    assert [s["State"] for s in skipped["Steps"]] == ["operator_skipped", "waiting", "waiting"]
    assert skipped["WaitingFor"]["Kind"] == "start_at"  # the next step waits for the same start
    status, _ = http("POST", f"{base}/api/v1/tasks/{task_id}/cancel", {"reason": "test over"})
    assert status == 200
    assert cluster.wait_final(task_id, timeout=60).TaskStatus is TaskStatus.ROLLED_BACK

"""Rate limits through real processes, the guide's worked example (docs/guide/rate-limits.md):
OSS serving REST, a module and a sweeper, and the `baton` CLI as its own process, on one store.

- the eleventh task on a key with `limit: 10` waits, and every view says so: the task view
  (`WaitingFor` kind rate, `Rate.NextAt`), `baton get` ("waiting for rate host:db1: 10 per 3600s, next slot at ..."),
  the dry-run plan over REST and `baton submit --plan`;
- a submission whose key cannot be made is a 422 naming the parameter, and nothing is created;
- a waiter cancelled ends rolled back, having run nothing and taken no slot;
- with a short window, waiting tasks start as slots free, no more than the limit per window;
- a step's own rate: its attempts go out no faster than the rate, the other steps unhindered.
"""

from __future__ import annotations

import json
import re

import pytest

from common.engine.states import TaskStatus
from tests.deploy.support import http
from tests.support.cluster import wait_until
from tests.support.doc_examples import blocks
from tests.support.oss_deployment import baton, oss_deployment
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
PAGE = "docs/guide/rate-limits.md"
(GUIDE,) = blocks(PAGE, "Declaring a rate", "yaml")
# The guide's task type as written, its step served by the stand-in module; its window lengthened
# from a minute to an hour, so its eleventh task still waits when the test's last view is read on
# a loaded machine. `quick`: a short window, to watch waiting tasks start as slots free.
FLOWS = GUIDE.replace("{module: mysql, command: noop}", "{module: resource, command: hold}").replace(
    "per: 60s", "per: 1h") + """
  quick:
    rate: {key: "host:{host}", limit: 2, per: 1s}
    parameters:
      host: {type: string, required: true}
      hold: {type: number, default: 0.01}
    steps:
      - name: create
        normal: {module: resource, command: hold}
  stepped:
    parameters:
      host: {type: string, required: true}
      hold: {type: number, default: 0.01}
    steps:
      - name: prepare
        normal: {module: resource, command: hold}
      - name: create
        rate: {key: "host:{host}", limit: 2, per: 1s}
        normal: {module: resource, command: hold}
"""


@pytest.fixture(scope="module")
def deployment(rabbitmq_url, tmp_path_factory, request):
    with oss_deployment(tmp_path_factory.mktemp("rates"), rabbitmq_url, FLOWS,
                        {"resource": "tests.support.standin_commands:resource"},
                        mongo_url=cluster_mongo_url(request)) as deployed:  # fmt: skip
        yield deployed


def submit(base: str, task_type: str, **parameters: object) -> dict:
    status, body = http("POST", f"{base}/api/v1/tasks", {"task_type": task_type, "parameters": parameters})
    assert status == 201, body
    return body["task"]


def task(base: str, task_id: str) -> dict:
    return http("GET", f"{base}/api/v1/tasks/{task_id}")[1]


def settled(base: str, task_id: str) -> dict:
    """The task once the rate table answered: a slot taken, or the next one's time."""
    wait_until(lambda: task(base, task_id)["Rate"]["State"] == "taken" or task(base, task_id)["Rate"]["NextAt"],
               30, "the rate table's answer")
    return task(base, task_id)


def test_the_eleventh_task_waits_and_every_view_says_so(deployment):
    cluster, base = deployment
    ten = [settled(base, submit(base, "create_database", host="db1")["TaskId"]) for _ in range(10)]
    assert all(t["WaitingFor"] is None and t["Rate"]["State"] == "taken" for t in ten)
    assert {cluster.wait_final(t["TaskId"]).TaskStatus for t in ten} == {TaskStatus.SUCCESS}
    waiting = settled(base, submit(base, "create_database", host="db1")["TaskId"])
    assert (waiting["WaitingFor"]["Kind"], waiting["WaitingFor"]["Key"]) == ("rate", "host:db1")
    assert waiting["Rate"]["State"] == "waiting" and waiting["Rate"]["NextAt"] == ten[0]["Rate"]["Since"] + 3600
    assert waiting["Runs"] == []
    other = settled(base, submit(base, "create_database", host="db2")["TaskId"])  # another key: its own window
    assert other["WaitingFor"] is None

    shown = baton(cluster, "get", waiting["TaskId"])
    assert shown.returncode == 0, shown.stderr
    assert "waiting for rate host:db1: 10 per 3600s, next slot at 20" in shown.stdout, shown.stdout
    # the line reads as the guide shows it, its times aside (the window here is an hour)
    (line,) = blocks(PAGE, "What a waiting task shows", "text")
    shape = re.sub(r"\d", r"\\d", re.escape(line.strip().replace("per 60s", "per 3600s")))
    assert re.search(shape, shown.stdout), (line, shown.stdout)

    status, plan = http("POST", f"{base}/api/v1/tasks", {"task_type": "create_database", "parameters": {"host": "db1"},
                                                          "dry_run": True})
    assert status == 200, plan
    assert plan["start"]["when"] == "rate" and plan["rate"]["slots_left"] == 0
    assert plan["start"]["reasons"][0].startswith("once a start slot of rate host:db1 frees at 20")
    planned = baton(cluster, "submit", "create_database", "host=db3", "--plan")
    assert planned.returncode == 0, planned.stderr
    assert "rate: host:db3 (10 per 3600s): 10 start slots left now" in planned.stdout, planned.stdout

    status, _ = http("POST", f"{base}/api/v1/tasks/{waiting['TaskId']}/cancel", {"reason": "not this hour"})
    assert status == 200
    ended = cluster.wait_final(waiting["TaskId"])
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK and ended.Steps[0].Attempts == 0 and ended.WaitingFor is None
    assert "rate_taken" not in [e.Event for e in ended.History]


def test_a_key_naming_a_missing_parameter_is_a_422_and_creates_nothing(deployment):
    cluster, base = deployment
    status, body = http("POST", f"{base}/api/v1/tasks", {"task_type": "create_database", "parameters": {}})
    assert status == 422, body
    assert [f["path"] for f in body["error"]["fields"]] == ["parameters.host"]
    refused = baton(cluster, "submit", "create_database")
    assert refused.returncode != 0 and "parameters.host" in refused.stderr, refused.stderr
    assert http("GET", f"{base}/api/v1/tasks?task_type=create_database&status=NOT_STARTED")[1]["items"] == []


def test_waiting_tasks_start_as_slots_free_never_more_than_the_limit_per_window(deployment):
    cluster, base = deployment
    ids = [submit(base, "quick", host="fast")["TaskId"] for _ in range(5)]
    by_cli = baton(cluster, "submit", "quick", "host=fast", "--json")
    assert by_cli.returncode == 0, by_cli.stderr
    ids.append(json.loads(by_cli.stdout)["TaskId"])
    tasks = [cluster.wait_final(task_id) for task_id in ids]
    assert [t.TaskStatus for t in tasks] == [TaskStatus.SUCCESS] * len(ids)
    times = sorted(t.Rate.Since for t in tasks)
    assert all(times[i + 2] - times[i] >= 1.0 for i in range(len(times) - 2)), times  # 2 per 1 s


def test_a_rated_step_goes_out_no_faster_than_its_rate(deployment):
    cluster, base = deployment
    ids = [submit(base, "stepped", host="slow")["TaskId"] for _ in range(6)]
    tasks = [cluster.wait_final(task_id) for task_id in ids]
    assert [t.TaskStatus for t in tasks] == [TaskStatus.SUCCESS] * len(ids)
    taken = sorted(e.Time for t in tasks for e in t.History if e.Event == "rate_taken" and e.Cursor == 1)
    assert len(taken) == len(ids)  # one slot per attempt, and each ran once
    assert all(taken[i + 2] - taken[i] >= 1.0 for i in range(len(taken) - 2)), taken  # 2 per 1 s
    assert not any(e.Event == "rate_taken" and e.Cursor == 0 for t in tasks for e in t.History)

"""Per-module RabbitMQ users (deploy/rabbitmq-users.sh): which queues each module publishes to,
worked out from flows.yaml, and what the generated permissions allow on a real broker."""

from __future__ import annotations

import secrets
import subprocess
import uuid
from collections.abc import Callable

import pika
import pika.exceptions
import pytest

from common.broker.rabbitmq import RabbitBroker
from common.queues import ALARM_QUEUE, band_queues
from tests.deploy.conftest import delete_users
from tests.deploy.support import REPO, deploy_module
from tests.support.cluster import STATE_DEADLINE

perms = deploy_module("rabbitmq_permissions")

CHAIN = """
version: 1
task_types:
  chain:
    steps:
      - name: a
        normal:   {module: alpha, command: run}
        rollback: {module: alpha, command: undo}
      - name: b
        normal:   {module: beta, command: run}
      - name: c
        normal:   {module: gamma, command: run}
        rollback: {module: delta, command: undo}
"""


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "flows.yaml"
    path.write_text(CHAIN)
    return perms.load_flows(path)


def test_publish_targets_follow_every_route_of_the_flows(chain):
    targets = perms.publish_targets(chain)
    alarms = ALARM_QUEUE
    # alpha: step a succeeded -> b; a failed -> its own rollback; retries -> itself
    assert targets["alpha"] == {"alpha", "beta", alarms}
    # beta: b succeeded -> c; b failed -> b has no rollback, so a's rollback (alpha)
    assert targets["beta"] == {"beta", "gamma", "alpha", alarms}
    # gamma: c failed -> c's rollback runs on delta
    assert targets["gamma"] == {"gamma", "delta", alarms}
    # delta: c's rollback done -> b passed over -> a's rollback (alpha); failed -> alarm
    assert targets["delta"] == {"delta", "alpha", alarms}


DIAMOND = """
version: 1
task_types:
  diamond:
    steps:
      - name: a
        normal:   {module: alpha, command: run}
        rollback: {module: alpha, command: undo}
      - name: b
        after: [a]
        normal:   {module: beta, command: run}
        rollback: {module: beta, command: undo}
      - name: c
        after: [a]
        normal:   {module: gamma, command: run}
      - name: d
        after: [b, c]
        normal:   {module: delta, command: run}
        rollback: {module: epsilon, command: undo}
"""


def test_publish_targets_of_a_graph_cover_joins_parallel_branches_and_rollback_order(tmp_path):
    path = tmp_path / "flows.yaml"
    path.write_text(DIAMOND)
    targets = perms.publish_targets(perms.load_flows(path))
    alarms = ALARM_QUEUE
    # a done -> b and c at once; a failed -> its own rollback
    assert targets["alpha"] == {"alpha", "beta", "gamma", alarms}
    # b done -> d; b failed, or the last to drain -> b's rollback, or (c has none) a's
    assert targets["beta"] == {"beta", "delta", "alpha", alarms}
    # c failed: c has no rollback, so the rollback may start at b (its sibling) or a
    assert targets["gamma"] == {"gamma", "delta", "beta", "alpha", alarms}
    assert targets["delta"] == {"delta", "epsilon", alarms}
    # d's rollback done -> b's rollback, and past c (no rollback) a's
    assert targets["epsilon"] == {"epsilon", "beta", "alpha", alarms}


def test_each_module_reads_only_its_own_queue(chain):
    grants = {g.user: g for g in perms.grants(chain, declare="own")}
    # Its queue under both queue types: classic, and quorum's one per priority band.
    bands = tuple(sorted(band_queues("beta")))
    assert len(bands) == 10 and {"beta.q.flight", "beta.q.start", "beta.q.start.4"} <= set(bands)
    assert grants["beta"].read == ("beta", *bands)
    assert grants["beta"].configure == tuple(sorted(("beta", "beta.dead", "beta.q.dead", *bands)))
    assert grants["beta"].write == ("amq.default",)
    assert set(grants["oss"].configure) >= {
        "alpha",
        "alpha.dead",
        ALARM_QUEUE,
        ALARM_QUEUE + ".dead",
    }
    everything = {g.user: g for g in perms.grants(chain, declare="all")}
    assert everything["beta"].read == ("beta", *bands)
    assert everything["beta"].configure == everything["oss"].configure


def test_patterns_are_anchored_and_escaped():
    assert perms.pattern(("baton.alarms", "mysql")) == r"^(baton\.alarms|mysql)$"
    assert perms.pattern(()) == "^$"


# -- on RabbitMQ ---------------------------------------------------------------------------------


def channel(url: str):
    connection = pika.BlockingConnection(pika.URLParameters(url))
    ch = connection.channel()
    ch.confirm_delivery()
    return connection, ch


def refused(url: str, action: Callable) -> bool:
    """True when the broker refuses `action(channel)` with 403 ACCESS_REFUSED."""
    connection, ch = channel(url)
    try:
        action(ch)
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code == 403, exc
        return True
    finally:
        if connection.is_open:
            connection.close()
    return False


@pytest.fixture(scope="module")
def queues(broker_users):
    """Every queue of flows.yaml, declared as OSS does (its own user, the real adapter)."""
    broker = RabbitBroker(broker_users["oss"])
    try:
        for queue in ("resource", "mysql", "monitor", ALARM_QUEUE):
            broker.declare(queue)
    finally:
        broker.close()
    return broker_users["vhost"]


@pytest.mark.rabbitmq
def test_a_module_user_consumes_its_queue_and_publishes_to_the_next_but_reads_no_other(
    queues, broker_users
):
    resource, mysql, monitor = (
        broker_users["resource"],
        broker_users["mysql"],
        broker_users["monitor"],
    )
    # its own queue: consume and get
    assert not refused(resource, lambda ch: ch.basic_consume("resource", lambda *a: None))
    assert not refused(resource, lambda ch: ch.basic_get("resource"))
    # the next module's queue (demo: resource -> mysql): publish, confirmed and routed
    body = uuid.uuid4().hex.encode()
    assert not refused(resource, lambda ch: ch.basic_publish("", "mysql", body, mandatory=True))
    # another module's queue: neither consume nor get
    assert refused(resource, lambda ch: ch.basic_consume("mysql", lambda *a: None))
    assert refused(resource, lambda ch: ch.basic_get("mysql"))
    assert refused(resource, lambda ch: ch.basic_get(ALARM_QUEUE))
    assert refused(mysql, lambda ch: ch.basic_get("resource"))
    # the monitor reads its queue and the alarm queue; mysql reads what resource sent it
    assert not refused(monitor, lambda ch: ch.basic_get(ALARM_QUEUE))
    got: list[bytes] = []
    assert not refused(mysql, lambda ch: got.append(ch.basic_get("mysql", auto_ack=True)[2]))
    assert got == [body]
    # today's runtime re-declares every queue it publishes to: allowed once OSS created them
    assert not refused(resource, lambda ch: ch.queue_declare("mysql", passive=True))


@pytest.mark.rabbitmq
def test_with_declare_own_a_module_may_create_only_its_own_queues(queues):
    """The profile for a runtime that leaves other modules' queues to OSS: no configure right on
    them at all (which also means it cannot delete them)."""
    vhost = queues.rsplit("/", 1)[1]
    user, password = f"baton-test-{uuid.uuid4().hex[:8]}-own", secrets.token_hex(12)
    script = subprocess.run(
        [
            str(REPO / "deploy" / "rabbitmq-users.sh"),
            "--flows",
            str(REPO / "flows.yaml"),
            "--vhost",
            vhost,
            "--prefix",
            "unused-",
            "--declare",
            "own",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    line = next(
        x.strip() for x in script.splitlines() if "set_permissions" in x and "unused-resource" in x
    )
    grant = line.replace("ctl -q", "rabbitmqctl -q").replace("unused-resource", user)
    try:
        subprocess.run(
            [
                "sh",
                "-c",
                f"printf '%s\\n' '{password}' | rabbitmqctl -q add_user {user} && {grant}",
            ],
            check=True,
            capture_output=True,
            timeout=STATE_DEADLINE,  # each rabbitmqctl call starts a VM: slow at load
        )
        url = queues.replace("guest:guest", f"{user}:{password}")
        args = {
            "x-max-priority": 9,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "resource.dead",
        }
        assert not refused(
            url, lambda ch: ch.queue_declare("resource", durable=True, arguments=args)
        )
        assert refused(
            url,
            lambda ch: ch.queue_declare(
                "mysql", durable=True, arguments={**args, "x-dead-letter-routing-key": "mysql.dead"}
            ),
        )
        assert refused(url, lambda ch: ch.queue_delete("mysql"))
    finally:
        delete_users(user)

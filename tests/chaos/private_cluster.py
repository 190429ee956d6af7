"""Three private RabbitMQ nodes clustered on this machine, for quorum queues and fail-over.

Each node is a PrivateRabbit (its own name, AMQP and distribution ports, data directory); the
three share one Erlang cookie of their own, which is what lets them cluster and nothing else
join. The nodes start in parallel (an Erlang node takes seconds to boot, three in a row would
triple it); the second and third join the first as they boot (their config file names it). Closing stops and removes all three,
whatever state they are in, also when the test failed.

    with PrivateCluster() as cluster:
        cluster.start()
        cluster.url            # the three nodes, comma-separated: BATON_BROKER_URL
        cluster.leader_of("orders.q.flight", vhost)   # the node leading a quorum queue
        cluster.node(name).kill9()
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import Self

from tests.chaos.private_rabbit import CTL_TIMEOUT, PrivateRabbit, PrivateRabbitError

SIZE = 3


class PrivateCluster:
    def __init__(self, size: int = SIZE):
        cookie = secrets.token_hex(16).upper()
        self.nodes: list[PrivateRabbit] = []
        try:
            for _ in range(size):
                # The first node is the seed; the others join it as they boot.
                seed = self.nodes[0].node if self.nodes else None
                self.nodes.append(PrivateRabbit(cookie=cookie, prefix="baton-quorum", join=seed))
        except BaseException:
            self.close()
            raise

    @property
    def url(self) -> str:
        return ",".join(node.url for node in self.nodes)

    def vhost_url(self, vhost: str) -> str:
        path = "%2F" if vhost == "/" else vhost
        return ",".join(f"amqp://guest:guest@127.0.0.1:{node.port}/{path}" for node in self.nodes)

    def start(self) -> float:
        """Start the nodes in parallel, the second and third joining the first as they boot
        (peer discovery from their config file); returns the seconds it took."""
        began = time.monotonic()
        in_parallel([node.start for node in self.nodes])
        wanted, deadline = {node.node for node in self.nodes}, time.monotonic() + CTL_TIMEOUT
        running = self.running_nodes()
        while set(running) != wanted and time.monotonic() < deadline:  # a node still joining
            time.sleep(1)
            running = self.running_nodes()
        if set(running) != wanted:
            raise PrivateRabbitError(f"cluster did not form: running {running}")
        return time.monotonic() - began

    def running_nodes(self, via: PrivateRabbit | None = None) -> list[str]:
        via = via or next(node for node in self.nodes if node.running())
        status = json.loads(via.ctl("cluster_status", "--formatter", "json").stdout)
        return list(status.get("running_nodes", []))

    def node(self, name: str) -> PrivateRabbit:
        return next(node for node in self.nodes if node.node == name)

    def any_running(self) -> PrivateRabbit:
        return next(node for node in self.nodes if node.running())

    @contextlib.contextmanager
    def vhost(self, name: str | None = None) -> Iterator[tuple[str, str]]:
        """A vhost of its own on the cluster; yields (name, the comma-separated URL of it)."""
        name = name or f"quorum-{secrets.token_hex(4)}"
        first = self.any_running()
        first.ctl("add_vhost", name)
        try:
            first.ctl("set_permissions", "-p", name, "guest", ".*", ".*", ".*")
            yield name, self.vhost_url(name)
        finally:
            # With a node down, deleting a vhost of quorum queues waits for that node until
            # rabbitmqctl gives up (a minute): the vhost then stays, and goes with the cluster's
            # data directories when the cluster is closed.
            if all(node.running() for node in self.nodes):
                with contextlib.suppress(Exception):
                    self.any_running().ctl("delete_vhost", name)

    def queues(self, vhost: str) -> list[dict]:
        """name, type, leader and messages of every queue of `vhost`, as a running node says."""
        out = self.any_running().ctl(
            "list_queues", "-p", vhost, "name", "type", "leader", "messages", "--formatter", "json"
        ).stdout
        return json.loads(out)

    def leader_of(self, queue: str, vhost: str) -> str:
        for row in self.queues(vhost):
            if row["name"] == queue:
                return str(row["leader"])
        raise PrivateRabbitError(f"no queue {queue!r} in {vhost}")

    def start_stopped(self) -> None:
        """Start again (in parallel) the nodes a test killed or stopped: they rejoin the cluster."""
        in_parallel([node.start for node in self.nodes if not node.running()])

    def close(self) -> None:
        def kill_then_close(node: PrivateRabbit) -> None:
            # Its data goes with it: no clean stop to wait for.
            with contextlib.suppress(Exception):
                if node.running():
                    node.kill9()
            node.close()

        in_parallel([lambda node=node: kill_then_close(node) for node in self.nodes], swallow=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def in_parallel(calls: list[Callable[[], object]], *, swallow: bool = False) -> None:
    """Run `calls` on threads of their own; raise the first error unless `swallow`."""
    errors: list[BaseException] = []

    def run(call: Callable[[], object]) -> None:
        try:
            call()
        except BaseException as exc:  # reported to the caller below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(call,), daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors and not swallow:
        raise errors[0]

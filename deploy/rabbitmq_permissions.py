"""RabbitMQ users for baton: one for OSS and the sweeper, one per module (deploy/README.md).

Prints a shell script of rabbitmqctl commands, worked out from flows.yaml: which queue each
module consumes, and which queues it publishes to (the next step of every task type, after a
success or a failure, in either phase; its own queue for retries and steps given back at
shutdown; the alarm queue). Passwords are not arguments: the script reads each user's from the
environment when it runs (RABBITMQ_PASSWORD_OSS, RABBITMQ_PASSWORD_<MODULE>) and hands it to
rabbitmqctl on standard input, so it never shows in a process list.

What RabbitMQ can and cannot enforce (permissions are regexes on configure / write / read):
- read: a module user may consume its own queue and no other (the monitor also the alarm queue).
- configure: declaring a queue needs it. `--declare all` (what the module runtime does today:
  it declares every queue it may publish to) grants it on every baton queue, which also allows
  deleting them; `--declare own` grants a module its own queues only, for a runtime that leaves
  the other queues to OSS. Current RabbitMQ documents that declaring a queue with a dead-letter
  exchange (every baton queue has one) also needs read on that queue; 3.10 does not check it.
- write: baton publishes through the default exchange, which needs write on `amq.default` and
  then reaches EVERY queue of the vhost: "publishes only where it must" cannot be enforced this
  way. The targets computed here are printed as comments, and are what topic permissions would
  enforce if baton published through a topic exchange (see deploy/README.md).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections import defaultdict
from dataclasses import dataclass

from common.flows import FlowCatalog, load_flows
from common.queues import ALARM_QUEUE, dead_letter_queue, module_queue, physical_queues
from common.engine.document import Step
from common.engine.states import Phase

OSS_USER = "oss"
# Queues a module consumes besides its own (modules/monitor/__main__.py: the alarm consumer).
EXTRA_READS = {"monitor": (ALARM_QUEUE,)}
DEFAULT_EXCHANGE = "amq.default"  # how RabbitMQ names "" in permission checks


@dataclass(frozen=True)
class Grant:
    user: str  # without the prefix: "oss" or a module name
    configure: tuple[str, ...]
    write: tuple[str, ...]
    read: tuple[str, ...]
    publishes_to: tuple[str, ...]
    note: str


def publish_targets(flows: FlowCatalog) -> dict[str, set[str]]:
    """module -> the queues its runs of steps can lead it to publish to
    (docs/design/graph-and-routing.md, "Routing").

    A run's commit may dispatch: a retry or a give-back (its own queue); an alarm; after a normal
    success, the steps that wait for it; when a failure (or the end of draining) starts the
    rollback, the rollbacks then ready; after a rollback, the rollbacks of the steps before it.
    A flow with sub-flows is granted as one: any of its modules may end a child or a parent.
    """
    targets: dict[str, set[str]] = defaultdict(set)
    for definition in flows.task_types.values():
        if _has_subflows(definition.steps):
            _grant_as_one(flows, definition.name, targets)
            continue
        steps = definition.steps
        graph = _Graph(steps)
        for index, step in enumerate(steps):
            for phase, module in ((Phase.NORMAL, step.NormalModule), (Phase.ROLLBACK, step.RollbackModule)):
                if module is None:
                    continue
                mine = targets[module]
                mine.update({module_queue(module), ALARM_QUEUE})  # a retry or a give-back; alarms
                if phase is Phase.NORMAL:
                    mine.update(module_queue(steps[d].NormalModule) for d in graph.dependents[index])  # type: ignore[arg-type]
                    starts = [index, *graph.unrelated(index)]  # the rollback may start at any of them
                else:
                    starts = list(graph.after[index])
                for first in graph.first_rollbacks(starts):
                    mine.add(module_queue(steps[first].RollbackModule))  # type: ignore[arg-type]
    return targets


class _Graph:
    def __init__(self, steps: list[Step]):
        self.steps = steps
        self.after = [list(s.After) if s.After is not None else ([i - 1] if i else []) for i, s in enumerate(steps)]
        self.dependents: list[list[int]] = [[] for _ in steps]
        for index, before in enumerate(self.after):
            for b in before:
                self.dependents[b].append(index)

    def _closure(self, start: int, edges: list[list[int]]) -> set[int]:
        seen, todo = set(), list(edges[start])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(edges[current])
        return seen

    def unrelated(self, index: int) -> list[int]:
        """Steps that may run beside `index` (neither before nor after it): parallel branches."""
        related = self._closure(index, self.after) | self._closure(index, self.dependents) | {index}
        return [i for i in range(len(self.steps)) if i not in related]

    def first_rollbacks(self, starts: list[int]) -> set[int]:
        """The steps with a rollback reached from `starts` going back past steps without one."""
        found, todo, seen = set(), list(starts), set()
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if self.steps[current].RollbackModule is not None:
                found.add(current)
            else:
                todo.extend(self.after[current])
        return found


def _has_subflows(steps: list[Step]) -> bool:
    return any(step.Flow is not None for step in steps)


def _grant_as_one(flows: FlowCatalog, name: str, targets: dict[str, set[str]]) -> None:
    """Every module of a flow and of the sub-flows it runs may publish to every queue of them."""
    names, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in names or current not in flows:
            continue
        names.add(current)
        todo.extend(step.Flow for step in flows.get(current).steps if step.Flow is not None)
    modules = {
        module
        for n in names
        for step in flows.get(n).steps
        for module in (step.NormalModule, step.RollbackModule)
        if module is not None
    }
    for module in modules:
        targets[module].update({module_queue(m) for m in modules} | {ALARM_QUEUE})


def on_broker(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The broker's queues behind these names, under both queue types (BATON_QUEUE_TYPE): a
    quorum deployment has a queue per priority band, and during a move from classic queues
    both sets exist (docs/operations/cluster.md)."""
    return tuple(sorted({q for name in names for q in (name, *physical_queues(name, "quorum"))}))


def grants(flows: FlowCatalog, declare: str = "all") -> list[Grant]:
    modules = sorted(flows.modules())
    queues = sorted({module_queue(m) for m in modules} | {ALARM_QUEUE})
    every = on_broker(queues + [dead_letter_queue(q) for q in queues])
    targets = publish_targets(flows)
    result = [
        Grant(
            OSS_USER,
            every,
            (DEFAULT_EXCHANGE,),
            on_broker(queues),
            tuple(queues),
            "OSS and the sweeper: declare every queue, publish the first step of a task "
            "and re-dispatch any step",
        )
    ]
    for module in modules:
        consumed = (module_queue(module), *EXTRA_READS.get(module, ()))
        own = on_broker([*consumed, *(dead_letter_queue(q) for q in consumed)])
        result.append(
            Grant(
                module,
                every if declare == "all" else own,
                (DEFAULT_EXCHANGE,),
                on_broker(consumed),
                tuple(sorted(targets[module])),
                f"the {module} module",
            )
        )
    return result


def pattern(names: tuple[str, ...]) -> str:
    """An anchored regex matching exactly these names (RabbitMQ's are unanchored otherwise)."""
    return "^(" + "|".join(re.escape(n) for n in names) + ")$" if names else "^$"


def password_variable(user: str) -> str:
    return "RABBITMQ_PASSWORD_" + re.sub(r"[^A-Z0-9]", "_", user.upper())


def script(flows: FlowCatalog, vhost: str, prefix: str, declare: str, source: str) -> str:
    all_grants = grants(flows, declare)
    q = shlex.quote
    lines = [
        "#!/bin/sh",
        f"# Generated by deploy/rabbitmq-users.sh from {source}",
        f"# (vhost {vhost}, --declare {declare}). Run it where rabbitmqctl reaches the broker",
        "# (RABBITMQCTL names another command, e.g. 'docker compose exec -T rabbitmq rabbitmqctl'),",
        "# with each user's password in the environment.",
        "set -eu",
        'ctl() { ${RABBITMQCTL:-rabbitmqctl} "$@"; }',
        *(
            f': "${{{password_variable(g.user)}:?set the password of {prefix}{g.user}}}"'
            for g in all_grants
        ),
        f"ctl -q list_vhosts | grep -qxF {q(vhost)} || ctl -q add_vhost {q(vhost)}",
    ]
    for index, g in enumerate(all_grants):
        user, variable = q(prefix + g.user), password_variable(g.user)
        lines += [
            "",
            f"# {prefix}{g.user}: {g.note}.",
            f"#   consumes: {', '.join(g.read) if g.user != OSS_USER else '(nothing)'}",
            f"#   publishes to: {', '.join(g.publishes_to)}",
            "#   (through the default exchange, which RabbitMQ cannot restrict to these)",
            f"user_{index}() {{",
            f"  printf '%s\\n' \"${variable}\" | ctl -q add_user {user} 2>/dev/null \\",
            f"    || printf '%s\\n' \"${variable}\" | ctl -q change_password {user}",
            (
                f"  ctl -q set_permissions -p {q(vhost)} {user} {q(pattern(g.configure))} "
                f"{q(pattern(g.write))} {q(pattern(g.read))}"
            ),
            "}",
        ]
    lines += [
        "",
        "# The users are independent, and every rabbitmqctl call starts a VM: all at once.",
        'pids=""',
        *(f'user_{index} & pids="$pids $!"' for index in range(len(all_grants))),
        "failed=0",
        'for pid in $pids; do wait "$pid" || failed=1; done',
        "exit $failed",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rabbitmq-users.sh",
        description="Print the rabbitmqctl commands that give OSS and each module a RabbitMQ user.",
    )
    parser.add_argument("--flows", default="flows.yaml", help="the flows file (default flows.yaml)")
    parser.add_argument("--vhost", default="baton", help="the vhost (default baton)")
    parser.add_argument("--prefix", default="baton-", help="user names are PREFIX + oss | module")
    parser.add_argument(
        "--declare",
        choices=("all", "own"),
        default="all",
        help="which queues a module declares: all (the runtime today) or own",
    )
    args = parser.parse_args(argv)
    sys.stdout.write(
        script(load_flows(args.flows), args.vhost, args.prefix, args.declare, args.flows)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

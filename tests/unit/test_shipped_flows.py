"""The shipped flows.yaml: its task types, steps, parameter schemas, and that the built-in modules
serve exactly the commands it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import FlowError, UnknownTaskType
from common.flows import load_flows
from common.engine.document import BackoffPolicy, Step
from common.runtime.registry import load_registry

SHIPPED = Path(__file__).resolve().parents[2] / "flows.yaml"
BUILTIN = ("modules.resource.commands:registry", "modules.mysql.commands:registry", "modules.monitor.commands:registry")
BACKOFF = BackoffPolicy(Initial=1, Max=30, Multiplier=2, Jitter=0.2)


def step(name: str, normal: tuple[str, str, float, int], rollback: tuple[str, str, float, int]) -> Step:
    return Step(
        Name=name,
        NormalModule=normal[0], NormalCommand=normal[1], NormalTimeout=normal[2],
        NormalRetry=normal[3], NormalBackoff=BACKOFF,
        RollbackModule=rollback[0], RollbackCommand=rollback[1], RollbackTimeout=rollback[2],
        RollbackRetry=rollback[3], RollbackBackoff=BACKOFF,
    )  # fmt: skip


def test_shipped_flows_define_the_task_types_in_order() -> None:
    assert list(load_flows(SHIPPED).task_types) == [
        "create_mysql_instance", "delete_mysql_instance", "set_mysql_connection_limit", "create_mysql_cluster", "demo",
    ]


def test_create_mysql_instance_steps() -> None:
    flow = load_flows(SHIPPED).get("create_mysql_instance")
    assert flow.description.startswith("Reserve capacity")
    expected = [
        step("announce", ("monitor", "report_event", 10, 3), ("monitor", "report_event", 10, 3)),
        step("check_resource", ("resource", "check_resource", 10, 2), ("resource", "restore_resource", 10, 3)),
        step("init_instance", ("mysql", "init_instance", 120, 1), ("mysql", "clean_instance", 120, 3)),
        step("deduct_resource", ("resource", "deduct_resource", 10, 2), ("resource", "restore_resource", 10, 3)),
    ]
    for index, expected_step in enumerate(expected):  # a line: each step waits for the one before
        expected_step.After = [index - 1] if index else []
    assert flow.steps == expected


def test_create_mysql_instance_parameters_fill_defaults_and_refuse_bad_values() -> None:
    flow = load_flows(SHIPPED).get("create_mysql_instance")
    check = flow.validate({"name": "app_1"})
    assert check.ok and check.parameters == {
        "name": "app_1", "cpu": 1, "memory_mb": 1024, "storage_gb": 10, "access": "read_write",
    }
    assert flow.secret_parameters == ["password"]
    bad = flow.validate({"name": "app'1", "cpu": 0, "access": "root", "password": "short", "extra": 1})
    assert not bad.ok
    paths = {e.path for e in bad.errors}
    assert {"parameters.name", "parameters.cpu", "parameters.access", "parameters.password", "parameters.extra"} <= paths
    assert all("short" not in e.message for e in bad.errors)  # a secret is never echoed
    assert flow.validate({"name": "app", "_baton_faults": []}).ok  # reserved keys pass


def test_delete_mysql_instance_has_no_rollbacks() -> None:
    flow = load_flows(SHIPPED).get("delete_mysql_instance")
    assert [(s.Name, s.NormalModule, s.NormalCommand, s.has_rollback) for s in flow.steps] == [
        ("await_disconnect", "mysql", "await_disconnect", False),
        ("drop_instance", "mysql", "drop_instance", False),
        ("release_resource", "resource", "release_resource", False),
    ]
    assert flow.steps[0].MaxWait == 600 and flow.steps[1].MaxWait is None  # waits for clients: checks again
    assert flow.steps[1].NormalRetry == 2  # from the file's defaults
    assert not flow.validate({}).ok and flow.validate({"name": "app_1"}).ok


def test_set_mysql_connection_limit_rolls_the_limit_back() -> None:
    flow = load_flows(SHIPPED).get("set_mysql_connection_limit")
    assert [(s.NormalCommand, s.RollbackCommand) for s in flow.steps] == [
        ("set_connection_limit", "restore_connection_limit"),
        ("report_event", None),
    ]
    assert flow.validate({"name": "app", "max_connections": 5}).ok
    assert not flow.validate({"name": "app", "max_connections": -1}).ok


def test_demo_uses_every_module_with_noops() -> None:
    steps = load_flows(SHIPPED).get("demo").steps
    assert [(s.Name, s.NormalModule, s.NormalCommand, s.RollbackModule, s.RollbackCommand) for s in steps] == [
        ("demo_a", "resource", "noop", "resource", "noop_rollback"),
        ("demo_b", "mysql", "noop", "mysql", "noop_rollback"),
        ("demo_c", "monitor", "noop", "monitor", "noop_rollback"),
    ]
    assert steps[0].NormalTimeout == 60.0 and steps[0].RollbackRetry == 2


def test_the_builtin_modules_serve_exactly_what_the_file_names() -> None:
    catalog = load_flows(SHIPPED)
    served = {r.module: r.names() for r in map(load_registry, BUILTIN)}
    assert catalog.modules() == set(served)
    for module, commands in served.items():
        assert catalog.commands_of(module) == set(commands), module
    load_flows(SHIPPED, served)


def test_unknown_task_type_lists_the_known_ones() -> None:
    with pytest.raises(UnknownTaskType, match="known task types: create_mysql_instance, delete_mysql_instance"):
        load_flows(SHIPPED).get("create_postgres")


def test_a_module_checks_only_its_own_commands() -> None:
    # At start-up a module knows only itself: other modules are not its business.
    mysql = load_registry(BUILTIN[1])
    load_flows(SHIPPED, {"mysql": mysql.names()}, all_modules=False)
    with pytest.raises(FlowError) as caught:
        load_flows(SHIPPED, {"mysql": {"init_instance", "clean_instance"}}, all_modules=False)
    missing = {p.split('no command "')[1].split('"')[0] for p in caught.value.problems}
    assert missing == {"await_disconnect", "drop_instance", "set_connection_limit", "restore_connection_limit", "noop", "noop_rollback",
                       "init_replica", "clean_replica", "record_topology", "forget_topology"}


def test_create_mysql_cluster_is_a_primary_sub_flow_then_replicas_fanned_out_then_a_join() -> None:
    steps = load_flows(SHIPPED).get("create_mysql_cluster").steps
    assert [s.Name for s in steps] == ["primary", "add_replicas", "record_topology"]
    assert steps[0].Flow == "create_mysql_instance" and steps[0].FlowTemplate.TaskType == "create_mysql_instance"
    assert (steps[1].ForEach, steps[1].MaxParallel, steps[1].After) == ("replicas", 4, [0])
    assert steps[2].After == [0, 1] and steps[2].RollbackCommand == "forget_topology"

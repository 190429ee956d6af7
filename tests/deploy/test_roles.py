"""The container entry point starts every role: OSS, each module and the sweeper as separate local
processes (deploy/entrypoint.sh, exactly as the image runs it), on RabbitMQ with one broker user
per role (deploy/rabbitmq-users.sh) and a SQLite store. A task runs through them, submitted and
followed over the REST API, and /metrics of OSS, a module and the sweeper show it."""

from __future__ import annotations

import signal
import urllib.request

import pytest

from tests.deploy.support import (
    REPO,
    TOKENS,
    Roles,
    clean_env,
    grew,
    http,
    scrape,
    wait_task_final,
)
from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


@pytest.fixture(scope="module")
def deployment(broker_users, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("roles")
    ports = {name: free_port() for name in ("oss", "resource", "monitor", "sweeper")}
    common = {
        "BATON_STORE_URL": f"sqlite:///{workdir / 'baton.db'}",
        "BATON_FLOWS_PATH": str(REPO / "flows.yaml"),
        "BATON_LOG_FORMAT": "json",
        "BATON_SHUTDOWN_GRACE_SECONDS": "5",
        "BATON_SWEEP_INTERVAL_SECONDS": "0.5",
        "BATON_CONCURRENCY": "2",
    }
    roles = Roles(workdir)
    try:
        roles.start(
            "sweeper",
            ["sweeper"],
            clean_env(
                **common,
                BATON_BROKER_URL=broker_users["oss"],
                BATON_METRICS_PORT=str(ports["sweeper"]),
            ),
            ready="sweeper started",
        )
        # Then OSS and the modules side by side. A module with a user of its own may re-declare
        # the queues it publishes to but not create them: the sweeper did (deploy/README.md).
        launched = {
            "oss": roles.launch(
                "oss",
                ["oss"],
                clean_env(
                    **common,
                    BATON_BROKER_URL=broker_users["oss"],
                    BATON_OSS_PORT=str(ports["oss"]),
                    BATON_API_TOKENS=TOKENS,
                    BATON_OSS_SWEEPER="false",
                ),
            )
        }
        for module in ("resource", "mysql", "monitor"):
            metrics = {"BATON_METRICS_PORT": str(ports[module])} if module in ports else {}
            env = clean_env(**common, BATON_BROKER_URL=broker_users[module], **metrics)
            launched[module] = roles.launch(module, ["module", module], env)
        for name, role in launched.items():
            roles.await_ready(
                role, "Application startup complete" if name == "oss" else "module started"
            )
        base = f"http://127.0.0.1:{ports['oss']}"
        wait_until(lambda: http("GET", f"{base}/readyz", token=None)[0] == 200, 30, "OSS ready")
        yield {"base": base, "ports": ports, "roles": roles}
    finally:
        codes = roles.stop_all()
        print(roles.logs())
        # uvicorn shuts down gracefully on SIGTERM, then re-raises it: OSS "dies" of SIGTERM
        clean = {
            name: code in ((0, -signal.SIGTERM) if name == "oss" else (0,))
            for name, code in codes.items()
        }
        assert all(clean.values()), f"a role did not stop cleanly: {codes}"
        assert "Application shutdown complete" in roles.roles["oss"].log()


def run_demo_task(base: str) -> dict:
    status, body = http(
        "POST", f"{base}/api/v1/tasks", {"task_type": "demo", "labels": {"suite": "deploy"}}
    )
    assert status == 201, body
    return wait_task_final(base, body["task_id"])


def test_a_task_runs_through_the_separate_roles(deployment):
    base = deployment["base"]
    task = run_demo_task(base)
    assert task["TaskStatus"] == 0, task
    owners = {event.get("Actor", "") for event in task["History"] if event["Event"] == "claimed"}
    assert {o.split("@")[0] for o in owners} >= {"resource", "mysql", "monitor"}, owners
    status, page = http("GET", f"{base}/api/v1/tasks?task_type=demo&label=suite=deploy")
    assert status == 200 and task["TaskId"] in [item["TaskId"] for item in page["items"]]


def test_metrics_of_oss_a_module_and_the_sweeper_move(deployment):
    base, ports = deployment["base"], deployment["ports"]
    module_url = f"http://127.0.0.1:{ports['resource']}/metrics"
    monitor_url = f"http://127.0.0.1:{ports['monitor']}/metrics"
    before = {
        "oss": scrape(f"{base}/metrics"),
        "resource": scrape(module_url),
        "monitor": scrape(monitor_url),
    }
    assert run_demo_task(base)["TaskStatus"] == 0
    after = {
        "oss": scrape(f"{base}/metrics"),
        "resource": scrape(module_url),
        "monitor": scrape(monitor_url),
    }

    assert grew(before["oss"], after["oss"], "baton_tasks_created_total", task_type="demo") == 1
    assert (
        grew(
            before["oss"],
            after["oss"],
            "baton_api_requests_total",
            method="POST",
            route="/api/v1/tasks",
            status="201",
        )
        == 1
    )
    assert (
        grew(
            before["oss"],
            after["oss"],
            "baton_api_request_seconds_count",
            method="GET",
            route="/api/v1/tasks/{task_id}",
        )
        >= 1
    )
    step = {"module": "resource", "command": "noop", "phase": "normal", "outcome": "ok"}
    assert (
        grew(before["resource"], after["resource"], "baton_step_duration_seconds_count", **step)
        == 1
    )
    assert (
        grew(before["resource"], after["resource"], "baton_outbox_publish_lag_seconds_count") >= 1
    )
    # demo's last step runs on the monitor: it is the module that finished the task
    assert (
        grew(
            before["monitor"],
            after["monitor"],
            "baton_tasks_finished_total",
            task_type="demo",
            status="SUCCESS",
        )
        == 1
    )
    sweeper = (
        urllib.request.urlopen(
            f"http://127.0.0.1:{ports['sweeper']}/metrics", timeout=STATE_DEADLINE
        )
        .read()
        .decode()
    )
    assert "# TYPE baton_sweeper_actions_total counter" in sweeper

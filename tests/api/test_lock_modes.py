"""Lock modes through the API and the CLI, with the worked example of
docs/guide/locks-and-waits.md ("Lock modes") as the flows file: tasks whose modes share a key run
together, an incompatible one waits, the delete waits for every holder, and a backup asked after
a waiting resize does not overtake it. `baton submit` publishes to a real RabbitMQ vhost."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from common.relay.outbox import OutboxPublisher
from oss.cli import main
from tests.api.support import READER, Api, auth, open_api
from tests.support.doc_examples import blocks

PAGE = "docs/guide/locks-and-waits.md"
(FLOWS,) = blocks(PAGE, "Lock modes", "yaml")

pytestmark = pytest.mark.rabbitmq


@pytest.fixture
def api(tmp_path) -> Iterator[Api]:
    app, store, broker = open_api(tmp_path, flows=FLOWS)
    with TestClient(app) as client:
        yield Api(client, store, broker)
    store.close()
    broker.close()


def submit(api: Api, task_type: str) -> str:
    return api.create(task_type, parameters={"instance": "db1"})["task_id"]


def running(api: Api, task_id: str) -> bool:
    shown = api.get(f"/api/v1/tasks/{task_id}", token=READER).json()
    return shown["WaitingFor"] is None and shown["Lock"]["State"] == "held" and len(shown["Runs"]) == 1


def end(api: Api, task_id: str) -> None:
    """Its one step succeeds, as a module would finish it; the final change's release is flushed."""
    done = api.step(task_id)
    publisher = OutboxPublisher(api.store, api.broker, time.time)
    try:
        publisher.flush(done)
    finally:
        publisher.stop()


def test_compatible_modes_run_together_incompatible_ones_wait_and_the_delete_waits_for_all(api, tmp_path,
                                                                                            rabbitmq_url):
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
           "BATON_BROKER_URL": rabbitmq_url}
    cli = CliRunner()
    backup, resize = submit(api, "backup_instance"), submit(api, "resize_instance")
    assert running(api, backup) and running(api, resize)  # a backup and a resize share the instance
    shown = api.get(f"/api/v1/tasks/{resize}", token=READER).json()["Lock"]
    assert (shown["Key"], shown["Mode"], shown["Shares"], shown["Limit"]) == ("instance:db1", "resize", ["backup"], 10)

    for task_type, free in (("backup_instance", True), ("resize_instance", False)):  # the dry-run plan agrees
        planned = api.client.post("/api/v1/tasks", json={"task_type": task_type, "parameters": {"instance": "db1"},
                                                         "dry_run": True}, headers=auth()).json()
        assert [(lock["mode"], lock["free"]) for lock in planned["locks"]] == [(task_type.split("_")[0], free)]

    created = cli.invoke(main, ["submit", "resize_instance", "instance=db1"], env=env)  # two resizes may not
    assert created.exit_code == 0, created.output
    second_resize = created.stdout.split()[1]
    delete = submit(api, "delete_instance")
    late_backup = submit(api, "backup_instance")  # would share with both holders, but waits its turn
    assert api.get(f"/api/v1/tasks/{delete}").json()["Lock"]["Shares"] == []  # shares with nothing
    assert not any(running(api, t) for t in (second_resize, delete, late_backup))
    waiting = api.get(f"/api/v1/tasks/{second_resize}", token=READER).json()
    assert waiting["WaitingFor"]["Key"] == "instance:db1" and waiting["Lock"]["Mode"] == "resize"
    got = cli.invoke(main, ["get", second_resize], env=env)
    assert "waiting for lock instance:db1 (mode resize)" in got.stdout, got.output

    def members() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        (lock,) = api.get("/api/v1/locks", token=READER).json()["items"]
        return ([(h["task_id"], h["mode"]) for h in lock["holders"]], [(w["task_id"], w["mode"]) for w in lock["waiters"]])

    assert members() == ([(backup, "backup"), (resize, "resize")],
                         [(second_resize, "resize"), (delete, "delete"), (late_backup, "backup")])
    listed = cli.invoke(main, ["locks"], env=env)
    assert listed.exit_code == 0, listed.output
    assert "instance:db1  2/10 held, 3 waiting" in listed.stdout
    assert f"holder  {resize}  resize, for" in listed.stdout and f"waiting {delete}  delete, priority 0" in listed.stdout
    as_json = json.loads(cli.invoke(main, ["locks", "--json"], env=env).stdout)
    assert [w["mode"] for w in as_json[0]["waiters"]] == ["resize", "delete", "backup"]

    end(api, resize)  # its slot goes to the second resize, beside the backup
    assert running(api, second_resize) and not running(api, delete)
    held = cli.invoke(main, ["get", second_resize], env=env).stdout
    assert "lock instance:db1 (mode resize, limit 10): held" in held
    end(api, backup)
    assert not running(api, delete)  # the delete waits for every holder
    end(api, second_resize)
    assert running(api, delete) and not running(api, late_backup)
    assert members() == ([(delete, "delete")], [(late_backup, "backup")])
    end(api, delete)
    assert running(api, late_backup)
    end(api, late_backup)
    assert api.get("/api/v1/locks", token=READER).json()["items"] == []


def test_a_lock_naming_no_mode_is_exclusive_beside_declared_modes(tmp_path):
    flows = FLOWS + """
  migrate_instance:
    lock: {key: "instance:{instance}", limit: 10}
    parameters: {instance: {type: string, required: true}}
    steps:
      - name: migrate
        normal: {module: mysql, command: noop}
"""
    app, store, broker = open_api(tmp_path, flows=flows)
    with TestClient(app) as client:
        api = Api(client, store, broker)
        backup = submit(api, "backup_instance")
        migrate = submit(api, "migrate_instance")
        later_backup = submit(api, "backup_instance")
        assert running(api, backup) and not running(api, migrate) and not running(api, later_backup)
        lock = api.get(f"/api/v1/tasks/{migrate}").json()["Lock"]
        assert "Mode" not in lock and "Shares" not in lock  # exclusive: the task view of before modes
        end(api, backup)
        assert running(api, migrate) and not running(api, later_backup)
        end(api, migrate)
        assert running(api, later_backup)
    store.close()
    broker.close()

"""docs/guide/webhooks.md: its signature check verifies what baton signs, and its flows.yaml
example is a valid `notify`."""

from __future__ import annotations

import json

import yaml

from common.flows import parse_flows
from common.engine.document import NotifyTarget
from common.relay.webhook_sender import signature
from tests.support.doc_examples import page_blocks, REPO

PAGE = REPO / "docs" / "guide" / "webhooks.md"


def blocks(language: str) -> list[str]:
    return [b.code for b in page_blocks(PAGE) if b.lang == language]


def test_the_docs_signature_check_accepts_baton_signatures_and_nothing_else():
    [code] = blocks("python")
    namespace: dict = {}
    exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102 (our own docs)
    verify = namespace["verify"]
    body = b'{"Event":"succeeded","TaskId":"t1"}'
    assert verify("the-secret", body, signature("the-secret", body))
    assert not verify("the-secret", body.replace(b"succeeded", b"rolled_back"), signature("the-secret", body))
    assert not verify("another-secret", body, signature("the-secret", body))


def test_the_docs_notify_example_is_valid_flows_yaml():
    [example] = blocks("yaml")
    notify = yaml.safe_load(example)["task_types"]["create_mysql_instance"]["notify"]
    flows = parse_flows(yaml.safe_dump({"version": 1, "task_types": {"t": {
        "notify": notify, "steps": [{"name": "a", "normal": {"module": "m", "command": "c"}}]}}}), "flows.yaml")
    assert flows.get("t").notify == (NotifyTarget(Url=notify["url"], Events=notify["events"]),)


def test_the_docs_alarm_webhook_example_is_what_the_monitor_posts():
    from common.engine.document import Alarm
    from modules.monitor.webhook import alarm_payload

    [example] = [json.loads(b) for b in blocks("json") if '"baton.alarm"' in b]
    alarm = Alarm.model_validate(example["alarm"])
    assert alarm_payload(alarm) == example


def test_the_docs_event_example_has_the_fields_baton_posts():
    from common.engine.core.notifications import payload
    from common.engine.core.entries import Timing, create_task
    from tests.support.builders import make_step

    [example] = [json.loads(b) for b in blocks("json") if '"EventId"' in b]
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(1.0))
    assert set(payload(task, "succeeded", "id", None, 1.0)) == set(example)


def test_the_docs_payload_has_the_fields_baton_sends():
    from common.engine.core.notifications import payload
    from common.engine.states import TaskStatus
    from tests.support.builders import make_step
    from tests.unit.test_graph_transitions import new

    [example] = [b for b in blocks("json") if '"EventId"' in b]
    task = new([make_step("a")], {"name": "app_1", "admin_password": "correct-horse-battery"}, task_id="t1")
    task.SecretParameters = ["admin_password"]
    sent = payload(task, "succeeded", "t1:7:succeeded", TaskStatus.RUNNING, 1732370000.5)
    shown = json.loads(example.replace("...", ""))
    assert list(shown) == list(sent)
    assert shown["Parameters"]["admin_password"] == sent["Parameters"]["admin_password"] == "***"

"""README "Notifications": its signature check verifies what baton signs, and its flows.yaml
example is a valid `notify`."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from common.flows import parse_flows
from common.engine.document import NotifyTarget
from common.relay.webhooks import signature

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("## Notifications\n")
    return text[start:text.index("\n## ", start + 1)]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def test_the_readme_signature_check_accepts_baton_signatures_and_nothing_else():
    [code] = blocks("python")
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 (our own README)
    verify = namespace["verify"]
    body = b'{"Event":"succeeded","TaskId":"t1"}'
    assert verify("the-secret", body, signature("the-secret", body))
    assert not verify("the-secret", body.replace(b"succeeded", b"rolled_back"), signature("the-secret", body))
    assert not verify("another-secret", body, signature("the-secret", body))


def test_the_readme_notify_example_is_valid_flows_yaml():
    [example] = blocks("yaml")
    notify = yaml.safe_load(example)["task_types"]["create_mysql_instance"]["notify"]
    flows = parse_flows(yaml.safe_dump({"version": 1, "task_types": {"t": {
        "notify": notify, "steps": [{"name": "a", "normal": {"module": "m", "command": "c"}}]}}}), "flows.yaml")
    assert flows.get("t").notify == (NotifyTarget(Url=notify["url"], Events=notify["events"]),)

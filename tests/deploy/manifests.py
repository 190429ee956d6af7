"""Reading the deployment files the way Docker, Compose and Kubernetes would, and the facts of the
code they must agree with: settings, entry-point roles, modules, metric names."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from pydantic_settings import BaseSettings

from common.flows import load_flows
from common.settings import Settings
from modules.monitor.settings import MonitorSettings
from modules.mysql.settings import MysqlSettings
from modules.resource.settings import ResourceSettings
from oss.settings import OssSettings
from tests.deploy.support import REPO

DEPLOY = REPO / "deploy"
SETTINGS_CLASSES: tuple[type[BaseSettings], ...] = (
    Settings,
    OssSettings,
    ResourceSettings,
    MysqlSettings,
    MonitorSettings,
)
# Stand-ins for the values Compose interpolates from deploy/.env, in the shapes make writes.
COMPOSE_SECRETS = {
    "RABBITMQ_PASSWORD": "0123456789abcdef",
    "RABBITMQ_ERLANG_COOKIE": "0123456789abcdef01234567",
    "MARIADB_ROOT_PASSWORD": "0123456789abcdef",
    "BATON_API_TOKENS": "admin:0123456789abcdef0123456789abcdef:operator",
}
_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


def setting_names() -> dict[str, type[BaseSettings]]:
    """Every BATON_* variable a settings class reads -> the class."""
    names: dict[str, type[BaseSettings]] = {}
    for cls in SETTINGS_CLASSES:
        prefix = cls.model_config.get("env_prefix", "")
        for field in cls.model_fields:
            names.setdefault(f"{prefix}{field}".upper(), cls)
    return names


def flows_modules() -> set[str]:
    return load_flows(REPO / "flows.yaml").modules()


def entrypoint_roles() -> set[str]:
    """The roles deploy/entrypoint.sh dispatches on (the labels of its first `case`)."""
    text = (DEPLOY / "entrypoint.sh").read_text()
    block = text[
        text.index('case "$role" in') : text.index("esac\n", text.index('case "$role" in'))
    ]
    labels = re.findall(r"^\s{4}([a-z][a-z |-]*)\)", block, re.MULTILINE)
    return {label.strip() for group in labels for label in group.split("|")} - {
        "-h",
        "--help",
        "help",
    }


def load_yaml_docs(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?error}, from `variables`."""

    def one(match: re.Match) -> str:
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        if name in variables:
            return variables[name]
        if op == ":-":
            return arg
        raise AssertionError(f"${{{name}}} has no value and no default")

    return _INTERPOLATION.sub(one, value)


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Exactly these BATON_* variables in os.environ while the block runs."""
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith("BATON_")]:
        del os.environ[key]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def validate_settings(values: dict[str, str], role: list[str]) -> None:
    """Load every settings class the role loads at start, as it would: a bad value raises."""
    from common.settings import load_settings
    from modules.monitor.settings import load_monitor_settings
    from modules.mysql.settings import load_mysql_settings
    from modules.resource.settings import load_resource_settings
    from oss.settings import load_oss_settings

    loaders = {
        "resource": load_resource_settings,
        "mysql": load_mysql_settings,
        "monitor": load_monitor_settings,
    }
    with environment(values):
        load_settings()
        if role[0] in ("oss", "up"):
            load_oss_settings()
            load_resource_settings()  # where the inventory is, how long its claims are kept
        if role[0] == "module":
            loaders[role[1]]()


def dockerfile_instructions(path: Path = REPO / "Dockerfile") -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, line continuations joined, comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def env_pairs(arguments: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in shlex.split(arguments))


def k8s_env(
    container: dict[str, Any], configmaps: dict[str, dict], secrets: dict[str, dict]
) -> dict[str, str]:
    """The environment a container gets: envFrom ConfigMaps, then env (literal or Secret)."""
    values: dict[str, str] = {}
    for source in container.get("envFrom", []):
        values.update(configmaps[source["configMapRef"]["name"]])
    for item in container.get("env", []):
        if "value" in item:
            values[item["name"]] = item["value"]
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        secret = secrets.get(ref["name"], {})
        if ref["key"] in secret:
            values[item["name"]] = secret[ref["key"]]
        else:
            assert ref.get("optional"), (
                f"{item['name']}: no Secret {ref['name']} with key {ref['key']}"
            )
    return values

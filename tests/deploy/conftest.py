import os
import secrets
import subprocess
import uuid

import pytest

from tests.deploy.support import REPO
from tests.support.cluster import STATE_DEADLINE
from tests.support.vhosts import rabbitmq_vhost

USERS = ("oss", "resource", "mysql", "monitor")


@pytest.fixture(scope="module")
def rabbitmq_url():
    """An AMQP URL to a vhost of its own, for one test module; deleted afterwards."""
    with rabbitmq_vhost("baton-deploy") as url:
        yield url


@pytest.fixture(scope="session")
def broker_users():
    """OSS's and each module's RabbitMQ user on a vhost of their own, made by the commands
    deploy/rabbitmq-users.sh prints for flows.yaml; deleted afterwards (users are global).
    Shared by the tests of per-module users (rabbitmqctl takes a second or so per call).
    Yields user -> AMQP URL, and "vhost" -> the guest's URL of the vhost."""
    with rabbitmq_vhost("baton-deploy-users") as vhost_url:
        vhost = vhost_url.rsplit("/", 1)[1]
        prefix = f"baton-test-{uuid.uuid4().hex[:8]}-"
        passwords = {user: secrets.token_hex(12) for user in USERS}
        script = subprocess.run(
            [
                str(REPO / "deploy" / "rabbitmq-users.sh"),
                "--flows",
                str(REPO / "flows.yaml"),
                "--vhost",
                vhost,
                "--prefix",
                prefix,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        env = {
            **os.environ,
            **{f"RABBITMQ_PASSWORD_{user.upper()}": pw for user, pw in passwords.items()},
        }
        try:
            subprocess.run(
                ["sh", "-c", script],
                env=env,
                check=True,
                capture_output=True,
                timeout=STATE_DEADLINE,  # each rabbitmqctl call starts a VM: slow at load
            )
            host_part = vhost_url.split("@", 1)[1]
            yield {
                "vhost": vhost_url,
                **{u: f"amqp://{prefix}{u}:{pw}@{host_part}" for u, pw in passwords.items()},
            }
        finally:
            delete_users(*(prefix + user for user in USERS))


def delete_users(*users: str) -> None:
    """Side by side: each rabbitmqctl call starts a VM."""
    deleting = [
        subprocess.Popen(
            ["rabbitmqctl", "-q", "delete_user", user],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for user in users
    ]
    for process in deleting:
        process.wait(timeout=STATE_DEADLINE)

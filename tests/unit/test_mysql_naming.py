"""The mysql module's pure parts: which names pass, how grants are escaped, derived passwords."""

from __future__ import annotations

import re

import pytest
import yaml

from common.errors import CommandFailed
from common.instance_names import INSTANCE_NAME_PATTERN
from modules.mysql.naming import (
    access_from,
    connection_limit,
    derive_password,
    given_password,
    grant_database,
    instance_name,
    quote_identifier,
)
from modules.mysql.settings import parse_admin_url
from tests.support.cluster import REPO

HOSTILE = [
    "app'1", 'app"1', "app`1", "app%", "app%1", "app_%", "a b", "App1", "1app", "_app", "",
    "a" * 33, "appé", "аpp", "app\n", "app;drop", "app\\1", "app-1", "app.1", "app/*x*/",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_without_retry_and_never_echoed_whole(name: str) -> None:
    with pytest.raises(CommandFailed, match="not allowed") as refused:
        instance_name(name, "baton_meta")
    assert refused.value.retryable is False


@pytest.mark.parametrize("name", HOSTILE)
def test_the_flows_yaml_pattern_refuses_them_too(name: str) -> None:
    # Parameter validation at submission uses the pattern declared in flows.yaml (fullmatch).
    flows = yaml.safe_load((REPO / "flows.yaml").read_text())
    for task_type in ("create_mysql_instance", "delete_mysql_instance", "set_mysql_connection_limit"):
        pattern = flows["task_types"][task_type]["parameters"]["name"]["pattern"]
        assert pattern == INSTANCE_NAME_PATTERN
        assert re.fullmatch(pattern, name) is None


def test_over_long_names_are_cut_in_the_message() -> None:
    with pytest.raises(CommandFailed) as refused:
        instance_name("x" * 500, "baton_meta")
    assert len(str(refused.value)) < 200


@pytest.mark.parametrize("name", ["app", "a", "app_1", "a" * 32, "x9_y"])
def test_good_names_pass(name: str) -> None:
    assert instance_name(name, "baton_meta") == name


@pytest.mark.parametrize("name", ["mysql", "sys", "information_schema", "performance_schema", "test", "baton_meta", "baton_meta_x", "mine"])
def test_reserved_names_are_refused(name: str) -> None:
    with pytest.raises(CommandFailed, match="reserved"):
        instance_name(name, "mine")


def test_grant_database_escapes_wildcards_so_it_names_exactly_one() -> None:
    assert grant_database("app_1") == r"`app\_1`"
    assert grant_database("a%b_c") == r"`a\%b\_c`"
    assert quote_identifier("we`ird") == "`we``ird`"


def test_derived_passwords_are_stable_per_key_and_differ_across_keys_and_secrets() -> None:
    one = derive_password(b"secret", "task:2:normal")
    assert one == derive_password(b"secret", "task:2:normal")
    assert len(one) == 32 and one.isalnum() and one.isascii()
    assert one != derive_password(b"secret", "task:3:normal")
    assert one != derive_password(b"other", "task:2:normal")


def test_access_password_and_limit_parameters() -> None:
    assert access_from({}) == "read_write" and access_from({"access": "read_only"}) == "read_only"
    with pytest.raises(CommandFailed, match="access"):
        access_from({"access": "GRANT OPTION"})
    assert given_password({}) is None
    assert given_password({"password": "long enough 'pass'"}) == "long enough 'pass'"
    for bad in ("short", 12345678901234, "x" * 129, "pässwörd-long-enough", "tab\tinside-long"):
        with pytest.raises(CommandFailed, match="password"):
            given_password({"password": bad})
    assert connection_limit(0) == 0 and connection_limit(50) == 50
    for bad in (-1, True, "5", 100_001, 2.5):
        with pytest.raises(CommandFailed):
            connection_limit(bad)


def test_admin_url() -> None:
    address = parse_admin_url("mysql://admin:p%40ss@db.example:3307?unix_socket=/run/mysqld.sock")
    assert (address.host, address.port, address.user, address.password, address.unix_socket) == (
        "db.example", 3307, "admin", "p@ss", "/run/mysqld.sock")
    assert parse_admin_url("mysql://root@127.0.0.1").port == 3306

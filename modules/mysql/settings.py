"""The mysql module's settings (BATON_MYSQL_*): which server it provisions on, and how."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.errors import ConfigError
from common.config_sources import ConfigFileSources
from modules.mysql.naming import SCHEMA_NAME, USER_HOST


@dataclass(frozen=True)
class ServerAddress:
    host: str
    port: int
    user: str
    password: str | None
    unix_socket: str | None


class MysqlSettings(ConfigFileSources, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BATON_MYSQL_", extra="ignore")

    admin_url: SecretStr = Field(
        SecretStr("mysql://root@127.0.0.1:3306"),
        description=(
            "an account that may create databases and users (`?unix_socket=/path` for "
            "a socket)"
        ),
    )
    public_host: str | None = Field(
        None,
        description="host handed out to clients (default: the admin URL's host)",
    )
    public_port: int | None = Field(
        None, ge=1, le=65535,
        description="port handed out to clients (default: the admin URL's port)",
    )
    user_host: str = Field("%", description="host pattern of created users (`'name'@'<this>'`)")
    meta_schema: str = Field(
        "baton_meta",
        description="baton's own schema on the server: what it created",
    )
    password_secret: SecretStr | None = Field(
        None,
        description=(
            "the key generated passwords are derived from (default: a random key kept "
            "in the meta schema)"
        ),
    )
    connect_timeout_seconds: int = Field(
        10, ge=1, le=300,
        description="how long connecting to the server may take (1 to 300)",
    )
    # The commands that run on a thread of the module (reads) wait this long for a statement's
    # answer: a thread cannot be killed, so its waits must end by themselves.
    read_timeout_seconds: int = Field(
        30, ge=1, le=600,
        description="a statement of a command that runs on a module thread (a read) waits this long for its answer",
    )
    # Every change to an instance holds its lock (server.Server.instance_lock). A holder past this
    # is taken for frozen (a replica stopped mid-command): its session is killed, so it can never
    # resume its half-done change after a rollback undid it.
    lock_wait_seconds: int = Field(
        10, ge=1, le=600,
        description=(
            "a command waits this long for an instance's lock; then the holder is "
            "taken for frozen and its session is killed (its step retries; every baton"
            " session uses the admin account, which may always end its own sessions)"
        ),
    )
    # delete_mysql_instance waits for the instance's clients to disconnect: it checks this often,
    # holding no worker slot in between (a step answering "check again later").
    disconnect_check_seconds: float = Field(
        5.0, gt=0, le=3600,
        description=(
            "`delete_mysql_instance` checks this often whether the instance's clients "
            "have disconnected (holding no worker in between)"
        ),
    )

    @field_validator("user_host")
    @classmethod
    def _host_pattern(cls, value: str) -> str:
        if not USER_HOST.fullmatch(value):
            raise ValueError("must be a host name, address or pattern (letters, digits, . % _ : / -)")
        return value

    @field_validator("meta_schema")
    @classmethod
    def _schema(cls, value: str) -> str:
        if not SCHEMA_NAME.fullmatch(value):
            raise ValueError("must be a lowercase identifier")
        return value

    def server(self) -> ServerAddress:
        return parse_admin_url(self.admin_url.get_secret_value())

    @property
    def client_host(self) -> str:
        return self.public_host or self.server().host

    @property
    def client_port(self) -> int:
        return self.public_port or self.server().port


def parse_admin_url(url: str) -> ServerAddress:
    parts = urlsplit(url)
    if parts.scheme not in ("mysql", "mariadb"):
        raise ConfigError("BATON_MYSQL_ADMIN_URL must start with mysql:// (or mariadb://)")
    socket = parse_qs(parts.query).get("unix_socket", [None])[0]
    try:
        port = parts.port or 3306
    except ValueError:
        raise ConfigError("BATON_MYSQL_ADMIN_URL has a bad port") from None
    return ServerAddress(
        host=parts.hostname or "127.0.0.1",
        port=port,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password) if parts.password is not None else None,
        unix_socket=socket,
    )


def load_mysql_settings() -> MysqlSettings:
    try:
        settings = MysqlSettings()
        settings.server()  # a bad URL stops the module at start, not at its first command
        return settings
    except ValidationError as exc:
        problems = [
            f"BATON_MYSQL_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()
        ]  # the input is not echoed: it may be the admin URL with its password
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems)) from None

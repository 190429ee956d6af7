"""Settings of the OSS process (the REST API server): common Settings plus API tokens, limits,
and where to listen. Read from BATON_* variables like the rest.

BATON_API_TOKENS lists who may call the API, as `name:token:role` entries separated by commas:

    BATON_API_TOKENS="alice:9f2c...e1:operator,ci:5d1e...a4:submit,grafana:77ab...c0:read"

Each role may do what the one before it may, and more:
- `read`: read everything (tasks, task types, alarms);
- `submit`: also create tasks (the users who submit jobs and watch them);
- `operator`: also act on tasks (cancel, retry, retry-rollback, compensate) and alarms (ack).
The name is what the task history records as the actor of an operator action. A token is at
least 16 characters (use `openssl rand -hex 24`); with no tokens every API call is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pydantic import Field, SecretStr, ValidationError, field_validator

from common.access import ROLES, Role, Scope, at_least
from common.errors import ConfigError
from common.config_sources import config_problems, where_from
from common.settings import Settings
from oss.token_entries import json_entries

MIN_TOKEN_CHARS = 16
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_SECRET_FIELDS = frozenset({"api_tokens"})  # never echoed in a configuration error


@dataclass(frozen=True)
class ApiToken:
    name: str
    token: str = field(repr=False)
    role: Role  # a scoped token's: the highest of its namespaces' roles
    scope: Scope | None = None  # None: every task (unscoped)

    def may(self, role: Role) -> bool:
        return at_least(self.role, role)


def parse_tokens(text: str) -> tuple[ApiToken, ...]:
    """The entries of BATON_API_TOKENS. ValueError names the faulty entry, never its token."""
    if text.lstrip()[:1] in ("[", "{"):  # JSON (a lone object is refused as not a list)
        return _checked(json_entries(text))
    tokens: list[ApiToken] = []
    for number, entry in enumerate((e.strip() for e in text.split(",")), start=1):
        if not entry:
            continue
        name, _, rest = entry.partition(":")
        token, _, role = rest.rpartition(":")
        where = f"entry {number}" + (f" ({name})" if _NAME.fullmatch(name) else "")
        if not _NAME.fullmatch(name):
            raise ValueError(f"{where}: must be name:token:role, the name of letters, digits, _.@-")
        if role not in ROLES:
            raise ValueError(f"{where}: the role must be read, submit or operator")
        if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
            raise ValueError(f"{where}: the token must be {MIN_TOKEN_CHARS}+ characters, no spaces")
        if any(t.name == name for t in tokens):
            raise ValueError(f"{where}: the name is used twice")
        if any(t.token == token for t in tokens):
            raise ValueError(f"{where}: the token is used twice")
        tokens.append(ApiToken(name, token, role))  # type: ignore[arg-type]
    return tuple(tokens)


def _checked(entries: list[tuple[str, str, str | None, Scope | None]]) -> tuple[ApiToken, ...]:
    """The JSON form's entries, held to the rules of the short form (token length, no name or
    token twice)."""
    tokens: list[ApiToken] = []
    for number, (name, token, role, scope) in enumerate(entries, start=1):
        where = f"entry {number} ({name})"
        if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
            raise ValueError(f"{where}: token: must be {MIN_TOKEN_CHARS}+ characters, no spaces")
        if any(t.name == name for t in tokens):
            raise ValueError(f"{where}: name: used twice")
        if any(t.token == token for t in tokens):
            raise ValueError(f"{where}: token: used twice")
        top = role if scope is None else max((ns.role for ns in scope), key=ROLES.index)
        tokens.append(ApiToken(name, token, top, scope))  # type: ignore[arg-type]
    return tuple(tokens)


class OssSettings(Settings):
    api_tokens: SecretStr = Field(
        SecretStr(""),
        description=(
            "who may call the API: `name:token:role,...`, role `read`, `submit` or "
            "`operator`, tokens of 16+ characters; or a JSON list of entries, where a token may be "
            "limited to namespaces of task types and labels (docs/guide/access.md) (default: none: "
            "every API call but health gets 401 (`baton up` makes one up))"
        ),
    )
    max_body_bytes: int = Field(
        1_048_576, ge=1_024, le=64 * 1_048_576,
        description="larger request bodies get 413 (1 KiB to 64 MiB)",
    )
    oss_host: str = Field(
        "127.0.0.1",
        description="address the API listens on (default: `0.0.0.0` in the image)",
    )
    oss_port: int = Field(8080, ge=0, le=65_535, description="port the API listens on")
    oss_sweeper: bool = Field(True, description="run the sweeper and outbox relay inside OSS")
    metrics_public: bool = Field(
        True,
        description="serve OSS's `/metrics` without a token (counters only, no task data)",
    )
    event_poll_seconds: float = Field(
        0.2, gt=0, le=10,
        description="how often an event stream (`/tasks/{id}/events`) looks at its task",
    )

    @field_validator("api_tokens")
    @classmethod
    def _well_formed(cls, value: SecretStr) -> SecretStr:
        parse_tokens(value.get_secret_value())
        return value

    @property
    def tokens(self) -> tuple[ApiToken, ...]:
        return parse_tokens(self.api_tokens.get_secret_value())


def load_oss_settings(**overrides: object) -> OssSettings:
    """Like common.settings.load_settings, but a secret setting's value is never echoed."""
    try:
        return OssSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = config_problems(exc, secret=_SECRET_FIELDS)
        raise ConfigError(f"invalid configuration{where_from()}:\n  " + "\n  ".join(problems)) from None

"""Where settings come from, and how a refused one is reported.

BATON_CONFIG_FILE may name a file of settings as KEY=VALUE lines (the .env format of docker
compose and `kubectl create configmap --from-env-file`): a variable set in the environment wins
over the file. Every settings class (baton's and each module's) reads both the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import BaseSettings, DotEnvSettingsSource, PydanticBaseSettingsSource

from common.errors import ConfigError
from common.secrets.urls import mask_url_passwords, redacted_url

CONFIG_FILE_VARIABLE = "BATON_CONFIG_FILE"


def config_file() -> Path | None:
    """The file BATON_CONFIG_FILE names, or None when it is unset or empty."""
    value = os.environ.get(CONFIG_FILE_VARIABLE, "").strip()
    if not value:
        return None
    path = Path(value)
    if not path.is_file():
        raise ConfigError(f"{CONFIG_FILE_VARIABLE}: no such file (got {value!r})")
    return path


class ConfigFileSources:
    """Mixin of every settings class (modules' too): the environment, then BATON_CONFIG_FILE."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = config_file()
        if path is None:
            return init_settings, env_settings, file_secret_settings
        from_file = DotEnvSettingsSource(settings_cls, env_file=path)
        return init_settings, env_settings, from_file, file_secret_settings


def where_from() -> str:
    """For configuration errors: where the values came from."""
    path = os.environ.get(CONFIG_FILE_VARIABLE, "").strip()
    return f" (from the environment, then {CONFIG_FILE_VARIABLE}={path})" if path else ""


def config_problems(exc: ValidationError, prefix: str = "BATON_", secret: frozenset[str] = frozenset()) -> list[str]:
    """One line per refused setting: its variable, why, and the value given, never a secret's
    (the `secret` fields and webhooks: a webhook URL often carries a token) nor a URL's user,
    password or query (common.secrets.urls.redacted_url)."""
    problems = []
    for error in exc.errors():
        field = "_".join(str(p) for p in error["loc"])
        value = error.get("input")
        if field in secret or "webhook" in field:
            shown = ""
        elif isinstance(value, str):
            shown = f" (got {(redacted_url(value) if 'url' in field else mask_url_passwords(value))!r})"
        else:
            shown = f" (got {value!r})"
        problems.append(f"{prefix}{field.upper()}: {error['msg']}{shown}")
    return problems

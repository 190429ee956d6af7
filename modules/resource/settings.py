"""The resource module's own settings (BATON_RESOURCE_*), beside the common BATON_* ones."""

from __future__ import annotations

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.errors import ConfigError
from common.settings import ConfigFileSources, config_problems


class ResourceSettings(ConfigFileSources, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BATON_RESOURCE_", extra="ignore")

    # A reservation lapses if its task never deducts it (the task died, or was abandoned):
    # longer than check -> init -> deduct ever takes with their retries, short enough that lost
    # capacity comes back the same hour.
    reservation_ttl_seconds: float = Field(
        1800.0, gt=0,
        description="a reservation no task charged lapses after this long",
    )
    # BATON_RESOURCE_INVENTORY_URL is read by common.settings (Settings.inventory_url): the CLI
    # and the API use it too.


def load_resource_settings() -> ResourceSettings:
    try:
        return ResourceSettings()
    except ValidationError as exc:
        problems = config_problems(exc, prefix="BATON_RESOURCE_")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems)) from None

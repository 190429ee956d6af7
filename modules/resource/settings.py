"""The resource module's own settings (BATON_RESOURCE_*), beside the common BATON_* ones.

OSS, the sweeper, `baton hosts`, `baton reconcile` and the mysql module's reconciler read them
too, through the module's `inventory_settings` hook (modules/resource/hooks.py): every surface
finds the inventory where the module does, so they cannot disagree.
"""

from __future__ import annotations

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.errors import ConfigError
from common.config_sources import ConfigFileSources, config_problems, where_from


class ResourceSettings(ConfigFileSources, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BATON_RESOURCE_", extra="ignore")

    # A reservation lapses if its task never deducts it (the task died, or was abandoned):
    # longer than check -> init -> deduct ever takes with their retries, short enough that lost
    # capacity comes back the same hour.
    reservation_ttl_seconds: float = Field(
        1800.0, gt=0,
        description="a reservation no task charged lapses after this long",
    )
    inventory_url: str | None = Field(
        None,
        description=(
            "where the resource inventory lives: the resource module, `baton hosts`, "
            "`/api/v1/hosts` and `baton reconcile` all use it (default: beside the "
            "tasks, at `BATON_STORE_URL`)"
        ),
    )
    claim_retention_days: float = Field(
        0.0, ge=0,
        description=(
            "the sweeper forgets inventory claims closed this many days ago, once an "
            "hour; a forgotten claim's key could be reserved again (default: keep)"
        ),
    )

    def inventory_url_beside(self, store_url: str) -> str:
        """The inventory: its own URL if set, else beside the tasks (`store_url`)."""
        return self.inventory_url or store_url

    @property
    def claim_retention_seconds(self) -> float:
        """0: closed claims are kept."""
        return self.claim_retention_days * 86400


def load_resource_settings(**overrides: object) -> ResourceSettings:
    """Read the environment; a bad value stops the process with the variable and value named."""
    try:
        return ResourceSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = config_problems(exc, prefix="BATON_RESOURCE_")
        raise ConfigError(f"invalid configuration{where_from()}:\n  " + "\n  ".join(problems)) from None

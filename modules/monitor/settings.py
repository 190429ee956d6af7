"""The monitor's settings (BATON_MONITOR_*): where alarms are also sent."""

from __future__ import annotations

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.errors import ConfigError
from common.config_sources import ConfigFileSources


class MonitorSettings(ConfigFileSources, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BATON_MONITOR_", extra="ignore")

    # A secret: webhook URLs often carry a token in their path or query.
    webhook_url: SecretStr | None = Field(
        None,
        description=(
            "POST every new alarm as JSON here (http or https); see [Alarm "
            "webhook](../guide/webhooks.md#alarm-webhook) (default: none)"
        ),
    )
    webhook_timeout_seconds: float = Field(
        5.0, gt=0, le=60,
        description="one POST may take this long in all (connecting, sending, the whole answer)",
    )


def load_monitor_settings() -> MonitorSettings:
    try:
        settings = MonitorSettings()
    except ValidationError as exc:
        problems = [f"BATON_MONITOR_{'_'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors()]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems)) from None
    url = settings.webhook_url.get_secret_value() if settings.webhook_url else None
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError("BATON_MONITOR_WEBHOOK_URL must be an http:// or https:// URL")
    return settings

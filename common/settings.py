"""Every setting, read from BATON_* environment variables and validated at start.

BATON_CONFIG_FILE may name a file of the same settings (common/config_sources.py). Built once by each entry point and passed down: no import-time singleton.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from common.config_sources import CONFIG_FILE_VARIABLE, ConfigFileSources, config_file, config_problems, where_from
from common.errors import ConfigError
from common.input_limits import InputLimits
from common.store.urls import DEFAULT_STORE_URL

# A module's own settings class builds on these (docs/guide/modules.md): importable from here too.
__all__ = ["CONFIG_FILE_VARIABLE", "ConfigFileSources", "Settings", "config_file", "config_problems",
           "load_settings", "where_from"]

class Settings(ConfigFileSources, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BATON_", extra="ignore")

    broker_url: str = Field(
        "memory://",
        description=(
            "`amqp://user:pass@host:5672/vhost` (several nodes: comma-separated URLs, see "
            "[the cluster guide](../operations/cluster.md)); `memory://` is the in-process broker (one process only)"
        ),
    )
    # quorum: replicated queues, one per priority band (docs/operations/cluster.md). Ignored by memory://.
    queue_type: Literal["classic", "quorum"] = Field(
        "classic", description="RabbitMQ queue type: `classic` or `quorum` (replicated; see [the cluster guide](../operations/cluster.md))"
    )
    queue_delivery_limit: int = Field(
        20, ge=1, le=10_000, description="quorum: deliveries of one message without a settle before it is dead-lettered"
    )
    # Short, so that the broker closes a frozen process's connections (and hands the deliveries
    # it held to another replica) within seconds; see docs/operations/failure-recovery.md.
    broker_heartbeat_seconds: int = Field(
        3, ge=1, le=600,
        description=(
            "AMQP heartbeat timeout: the broker closes a frozen process's connection "
            "after 2 to 3 of these, and hands the deliveries it held to another "
            "replica"
        ),
    )
    store_url: str = Field(
        DEFAULT_STORE_URL,
        description=(
            "`sqlite:relative.db`, `sqlite:///abs/path.db`, `mongodb://...` (a replica"
            " set; durable by default, see [MongoDB](../operations/mongodb.md)), or "
            "`mongomock://` (in-memory, tests only)"
        ),
    )
    flows_path: str = Field("flows.yaml", description="the task types")
    # How many commands of each kind one module process runs at once (docs/design/runtime.md).
    process_slots: int = Field(
        0, ge=0, le=256,
        description=(
            "`process` commands one module process runs at once, a command process "
            "each ([Kinds of "
            "command](../guide/modules.md#kinds-of-command-process-thread-async)) "
            "(default: = `BATON_CONCURRENCY`)"
        ),
    )
    concurrency: int = Field(
        4, ge=1, le=256,
        description="the older name of `BATON_PROCESS_SLOTS` (default: `2` in `baton up`)",
    )
    thread_slots: int = Field(
        16, ge=1, le=1024,
        description="`thread` commands one module process runs at once",
    )
    async_slots: int = Field(
        1000, ge=1, le=100_000,
        description="`async` commands one module process runs at once",
    )
    store_threads: int = Field(
        0, ge=0, le=256,
        description=(
            "threads of a module process for claims and outcome commits "
            "(default: 2 with SQLite, whose writes in a process take turns; 8 with MongoDB, "
            "whose round trips wait on the network)"
        ),
    )
    stuck_threads_max: int = Field(
        4, ge=0,
        description=(
            "`thread` commands still running past their attempt's end before the "
            "module exits (status 1) to be restarted"
        ),
    )
    verify_limit: int = Field(
        3, ge=1, le=100,
        description=(
            "verifies of an unknown outcome (a timeout, a lost worker, a dead process) that may"
            " answer unknown before the attempt ends `OUTCOME_UNKNOWN`, for an operator"
        ),
    )
    prefetch: int = Field(
        0, ge=0,
        description=(
            "unacknowledged deliveries per consumer (default: = the slots of the kinds"
            " the module's commands use)"
        ),
    )
    lease_seconds: float = Field(
        30.0, gt=0,
        description="how long a claim holds without a heartbeat",
    )
    heartbeat_seconds: float = Field(
        0.0, ge=0,
        description="lease renewal period (default: = lease / 3)",
    )
    store_timeout_seconds: float = Field(
        0.0, ge=0,
        description=(
            "MongoDB: the longest one store call may take (server selection, "
            "connecting, the socket, the write concern); must be below the lease "
            "(default: = lease / 3)"
        ),
    )
    redeliver_after_seconds: float = Field(
        60.0, gt=0,
        description=(
            "re-publish a dispatch that nobody claimed for this long (then less and "
            "less often)"
        ),
    )
    sweep_interval_seconds: float = Field(1.0, gt=0, description="sweeper and outbox relay period")
    schedule_misfire_grace_seconds: float = Field(
        60.0, ge=0,
        description=(
            "a schedule's tick later than this counts as missed "
            "([Schedules](../guide/schedules.md))"
        ),
    )
    relay_grace_seconds: float = Field(
        5.0, ge=0,
        description=(
            "the relay re-publishes outbox entries older than this, and applies what an item "
            "record owes its step once it has owed it this long unchanged"
        ),
    )
    hold_limit_seconds: float = Field(
        300.0, gt=0,
        description=(
            "a delivery waiting this long for a free slot is given back, and consuming"
            " pauses until one frees; one waiting half as long goes before newer ones of any priority"
        ),
    )
    shutdown_grace_seconds: float = Field(
        30.0, ge=0,
        description=(
            "on SIGTERM, how long running steps may take to finish; after that they "
            "are stopped and released to another replica"
        ),
    )
    # The reconciler (modules/mysql/reconcile.py) in the sweeper process: off unless an interval is set, and
    # then a dry run (it logs what it would remove) unless BATON_RECONCILE_APPLY is true.
    reconcile_interval_seconds: float = Field(
        0.0, ge=0,
        description=(
            "run the reconciler this often in the sweeper process (`baton sweeper`, or"
            " OSS with its sweeper) (default: off)"
        ),
    )
    reconcile_apply: bool = Field(
        False,
        description=(
            "let that periodic reconciler remove what it finds; otherwise it only logs"
            " it (a dry run)"
        ),
    )
    task_history_retention_days: float = Field(
        0.0, ge=0,
        description=(
            "the sweeper deletes archived task events (older than a task document's "
            "newest) this many days old, once an hour (default: keep)"
        ),
    )
    module_heartbeat_seconds: float = Field(
        10.0, gt=0, le=3600,
        description=(
            "a module renews its announcement this often; three missed and it no "
            "longer counts as live"
        ),
    )
    unserved_alarm_seconds: float = Field(
        120.0, gt=0,
        description=(
            "a step waiting this long in a queue no live module serves raises an alarm"
            " (one per queue)"
        ),
    )
    # Notifications (common.relay.webhooks, docs/guide/webhooks.md): delivered by the sweeper.
    webhook_url: SecretStr | None = Field(
        None,
        description=(
            "the global webhook: every task's status changes, kept out of task "
            "documents ([Webhooks](../guide/webhooks.md))"
        ),
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description=(
            "the key of `X-Baton-Signature` (all webhooks, the monitor's alarm webhook"
            " too); unset: POSTs are unsigned"
        ),
    )
    webhook_events: str = Field(
        "",
        description="the global webhook's events, comma-separated (default: all)",
    )
    webhook_timeout_seconds: float = Field(
        5.0, gt=0, le=60,
        description="one POST may take this long in all (connecting, sending, the whole answer)",
    )
    webhook_backoff_max_seconds: float = Field(
        30.0, gt=0, le=3600,
        description="the longest wait between tries of a receiver that is down",
    )
    webhook_alarm_seconds: float = Field(
        900.0, gt=0,
        description="an event undelivered this long raises an alarm",
    )
    metrics_port: int = Field(
        0, ge=0, le=65535,
        description=(
            "serve this process's Prometheus `/metrics` on this port (modules, `baton "
            "sweeper`, `baton up`); OSS serves `/metrics` on its API port (default: "
            "off)"
        ),
    )
    fault_injection: bool = Field(
        False,
        description="honour `_baton_faults` in Parameters (tests and drills only)",
    )
    log_format: Literal["console", "json"] = Field(
        "console",
        description=(
            "`console` (readable) or `json` (one object per line, the lines of "
            "uvicorn, pika and the other libraries included, each with its `logger`) "
            "(default: `json` in the image)"
        ),
    )
    log_level: str = Field(
        "info",
        description=(
            "`debug`, `info`, `warning` or `error`; `debug` adds one access line per "
            "API request and the libraries' connection chatter (default: `warning` in "
            "`baton up`; `error` in the CLI's client commands: `submit`, `watch`, "
            "`hosts`..., which say in one line why they failed)"
        ),
    )
    # Limits on anything a client hands baton to store (common.input_limits): the same for every
    # task type and store. MongoDB refuses documents nested more than 100 levels.
    input_max_depth: int = Field(
        32, ge=1, le=64,
        description="nesting levels of parameters (and labels, command output); 1 to 64",
    )
    input_max_items: int = Field(
        10_000, ge=1,
        description="object keys and list items in one value, in all",
    )
    input_max_bytes: int = Field(
        256 * 1024, ge=1024, le=64 * 1024 * 1024,
        description=(
            "JSON size of one value (1 KiB to 64 MiB; a task holds about three copies "
            "of its parameters, and MongoDB takes 16 MiB a document)"
        ),
    )
    input_max_string: int = Field(64 * 1024, ge=1, description="characters in one string")
    # Read where each process wires its engine (common.engine.kinds.for_each.records.wire_records).
    item_records: bool = Field(
        True,
        description=(
            "`true`: a `for_each` step of commands keeps each item in a record of its own, so an item "
            "costs the same at 10,000 items as at 10 (see [large fan-outs](../fan-out.md)); `false` keeps "
            "every step's items inline in the task document. Set it the same in every process"
        ),
    )

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        if value.lower() not in {"debug", "info", "warning", "error"}:
            raise ValueError(f"must be one of debug, info, warning, error (got {value!r})")
        return value.lower()

    @field_validator("store_timeout_seconds")
    @classmethod
    def _store_timeout_below_lease(cls, value: float, info: ValidationInfo) -> float:
        # A call to a frozen store must fail while the claim still holds, so the module gives the
        # delivery back instead of outliving its lease.
        lease = info.data.get("lease_seconds")
        if value and lease is not None and value >= lease:
            raise ValueError(f"must be below BATON_LEASE_SECONDS ({lease:g})")
        return value

    @field_validator("webhook_events")
    @classmethod
    def _known_events(cls, value: str) -> str:
        names = _names(value)
        if not names:  # all events: nothing to check, and no reason to build every step kind
            return value
        from common.engine.views import EVENTS  # settings import nothing else of the engine

        unknown = [e for e in names if e not in EVENTS]
        if unknown:
            raise ValueError(f"unknown events {', '.join(unknown)} (known: {', '.join(EVENTS)})")
        return value

    @field_validator("webhook_url")
    @classmethod
    def _http_url(cls, value: SecretStr | None) -> SecretStr | None:
        # The value is never echoed: a webhook URL often carries a token.
        if value is not None and not value.get_secret_value().startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @property
    def webhook_event_names(self) -> list[str]:
        return _names(self.webhook_events)

    @property
    def input_limits(self) -> InputLimits:
        return InputLimits(self.input_max_depth, self.input_max_items, self.input_max_bytes, self.input_max_string)

    @property
    def effective_store_threads(self) -> int:
        """SQLite lets one thread of a process write at a time: more store threads than two only
        take turns for the GIL and that lock, which costs a module CPU on every step. A MongoDB
        store's threads mostly wait on round trips, so more of them overlap those waits."""
        if self.store_threads:
            return self.store_threads
        return 2 if self.store_url.partition(":")[0].lower() == "sqlite" else 8

    @property
    def effective_process_slots(self) -> int:
        return self.process_slots or self.concurrency

    def slots(self, kind: str) -> int:
        """How many commands of `kind` (process, thread, async) a module process runs at once."""
        return {"process": self.effective_process_slots, "thread": self.thread_slots, "async": self.async_slots}[kind]

    @property
    def broker_options(self) -> dict[str, object]:
        """What open_broker takes from the settings besides the URL and heartbeat."""
        return {"queue_type": self.queue_type, "delivery_limit": self.queue_delivery_limit}

    @property
    def effective_store_timeout(self) -> float:
        return self.store_timeout_seconds or self.lease_seconds / 3

    @property
    def module_ttl(self) -> float:
        """How old a module's last heartbeat may be while it still counts as live."""
        return self.module_heartbeat_seconds * 3

    @property
    def effective_heartbeat(self) -> float:
        return self.heartbeat_seconds or self.lease_seconds / 3


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def load_settings(**overrides: object) -> Settings:
    """Read the environment; a bad value stops the process with the variable and value named."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration{where_from()}:\n  " + "\n  ".join(config_problems(exc))) from None

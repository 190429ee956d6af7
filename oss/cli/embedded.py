"""`baton up`: all of baton in one process, to see it work on a bare machine.

OSS (the REST API, and the web console where it is installed), every module flows.yaml names,
the sweeper, the store (SQLite by default) and the in-process broker share this one process, or
RabbitMQ when BATON_BROKER_URL names one that answers. The modules run on the same ModuleRuntime
as a deployment, commands in child processes, with the same routing and messages: only the
transport between the parts is local.

It submits a demo task, shows its progress, prints where the API is (and an operator token for
this run when BATON_API_TOKENS names none), then serves until SIGTERM or Ctrl-C.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from common.background import BACKGROUND_MARGIN_SECONDS
from common.broker.factory import open_broker
from common.broker.port import Broker
from common.errors import EXIT_UNAVAILABLE, BatonError, ConfigError, InvalidParameters, StoreError
from common.flows import FlowCatalog, load_flows
from common.engine.views import settled, since
from common.engine.changes import wire_records
from common.stop_signals import stop_on_signals
from common.logging import configure_logging
from common.secrets.documents import mask_secrets
from common.tracing.setup import configure_tracing
from common.secrets.task_views import masked_task
from common.metrics import RuntimeMetrics
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.runtime.discovery import registry_ref
from common.store.side_stores import open_module_drains, open_module_registry
from common.runtime.registry import load_registry
from common.store.factory import open_store, sqlite_path
from common.store.tasks.port import TaskStore
from oss.cli.render import event_line, task_summary
from oss.services.tasks import TaskService
from oss.settings import OssSettings, load_oss_settings

Echo = Callable[[str], None]
EMBEDDED_CONCURRENCY = 2  # command processes per module unless BATON_CONCURRENCY says otherwise
FOLLOW_SECONDS = 60.0  # how long the demo task is followed before the API is announced anyway
DOUBLE_SIGNAL_SECONDS = 1.0  # a second signal sooner than this is the same request
TOKEN_NAME = "admin"
# Modules that consume more than their own queue (modules/<name>/__main__.py passes the same).
EXTRA_CONSUMERS = {"monitor": "modules.monitor.alarms:alarm_consumer"}


@dataclass(frozen=True)
class Options:
    host: str | None = None
    port: int | None = None
    task_type: str | None = "demo"  # None: submit nothing


def run_embedded(options: Options, echo: Echo, echo_err: Echo) -> int:
    """Exit status: 0 stopped cleanly, 1 a running step had to be stopped or a part failed,
    2 bad configuration, 5 the store cannot be reached or opened (nothing was started)."""
    stop = threading.Event()
    stop_on_signals(stop, second_exits_after=DOUBLE_SIGNAL_SECONDS)
    try:
        settings, token = embedded_settings(echo)
        configure_logging(settings.log_format, settings.log_level)
        configure_tracing("baton")  # OTEL_* (common/tracing/config.py)
        wire_records(settings)
        flows = load_flows(settings.flows_path, _known_commands(settings))
        _prepare_store(settings.store_url)
        store = open_store(settings.store_url, timeout_seconds=settings.effective_store_timeout)
        host = options.host or settings.oss_host
        listener = _listen(host, settings.oss_port if options.port is None else options.port)
    except BatonError as exc:  # ConfigError, FlowError, StoreError: say why, start nothing
        echo_err(f"baton: {exc}")
        return EXIT_UNAVAILABLE if isinstance(exc, StoreError) else 2
    broker = open_broker(settings.broker_url, settings.broker_heartbeat_seconds, **settings.broker_options)
    metrics = RuntimeMetrics()  # one registry for every module of the process (labelled by module)
    runtimes = [
        _runtime(name, settings, store, broker, flows, metrics) for name in sorted(flows.modules())
    ]
    service = TaskService(store, broker, flows, settings)
    server = ApiServer(settings, store, broker, flows, listener)
    started: list[ModuleRuntime] = []
    clean = True
    try:
        for runtime in runtimes:
            if stop.is_set():
                break
            runtime.start()
            started.append(runtime)
        metrics.serve(settings.metrics_port)
        server.start()
        if options.task_type and not stop.is_set():
            _demo(service, store, flows, options.task_type, stop, echo)
        if not stop.is_set():
            _announce(server.base_url, server.has_console, token, settings, echo)
        while not stop.wait(0.5):
            if not server.alive:
                echo_err("baton: the API server stopped unexpectedly")
                clean = False
                break
    except (BatonError, OSError) as exc:  # a part could not start: a queue refused, a port taken
        echo_err(f"baton: {exc}")
        clean = False
    finally:
        echo(
            f"stopping: the API, then the modules (running steps get up to "
            f"{settings.shutdown_grace_seconds:g}s to finish; Ctrl-C again stops at once)"
        )
        api_stopped = server.stop()
        clean = _stop_all(started, settings.shutdown_grace_seconds) and clean
        service.close()
        if api_stopped:  # its sweeper and reconciler have ended: nothing uses the store any more
            broker.close()
            store.close()
        echo("baton stopped" + ("" if clean else " (not cleanly: see the messages above)"))
    return 0 if clean else 1


def embedded_settings(echo: Echo) -> tuple[OssSettings, str | None]:
    """The settings of a deployment, with friendlier defaults for one process in a terminal.

    Only what the environment leaves unset changes: warnings-only logs (the progress lines say
    what happens), fewer command processes per module, and a fresh operator token.
    """
    loaded = load_oss_settings()
    overrides: dict[str, object] = {}
    if "log_level" not in loaded.model_fields_set:
        overrides["log_level"] = "warning"
    if "concurrency" not in loaded.model_fields_set:
        overrides["concurrency"] = EMBEDDED_CONCURRENCY
    token = None
    if not loaded.tokens:
        token = secrets.token_hex(24)
        overrides["api_tokens"] = f"{TOKEN_NAME}:{token}:operator"
    broker_url = choose_broker(loaded.broker_url, echo)
    if broker_url != loaded.broker_url:
        overrides["broker_url"] = broker_url
    # Keyword arguments win over the environment; every other value is read again from it.
    return (load_oss_settings(**overrides) if overrides else loaded), token


def choose_broker(url: str, echo: Echo) -> str:
    """RabbitMQ when the URL names one that accepts connections; the in-process broker otherwise.

    A broker that answers but refuses us (credentials, vhost) is a configuration error, not a
    reason to fall back: it stops start-up with the broker's words.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("amqp", "amqps"):
        return url
    host, port = (
        parts.hostname or "localhost",
        parts.port or (5671 if parts.scheme == "amqps" else 5672),
    )
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as exc:
        echo(
            f"RabbitMQ at {host}:{port} does not answer ({exc.strerror or exc}); "
            "using the in-process broker instead"
        )
        return "memory://"
    broker = open_broker(url)
    try:
        broker.ping()
    except BatonError as exc:
        raise ConfigError(
            f"BATON_BROKER_URL: RabbitMQ refused the connection: {mask_secrets(str(exc))}"
        ) from None
    finally:
        broker.close()
    return url


class ApiServer:
    """OSS's FastAPI app under uvicorn on a thread of its own: the main thread keeps the signals."""

    def __init__(
        self,
        settings: OssSettings,
        store: TaskStore,
        broker: Broker,
        flows: FlowCatalog,
        listener: socket.socket,
    ):
        import uvicorn

        from oss.api import create_app

        app = create_app(settings, store, broker, flows=flows)
        self.has_console = any(getattr(r, "path", "").startswith("/console") for r in app.routes)
        host, port = listener.getsockname()[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        self.base_url = f"http://{shown}:{port}" if ":" not in shown else f"http://[{shown}]:{port}"
        config = uvicorn.Config(
            app,
            log_config=None,  # its lines go through baton's logging (common.logging)
            log_level=settings.log_level,
            access_log=settings.log_level == "debug",
            timeout_graceful_shutdown=max(1, int(settings.shutdown_grace_seconds)),
        )
        self._server = uvicorn.Server(config)
        self._grace = settings.shutdown_grace_seconds
        self._listener = listener
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [listener]}, name="baton-api", daemon=True
        )

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the API server did not start on {self.base_url}")
            time.sleep(0.02)

    def stop(self) -> bool:
        """True once the server's thread ended (its lifespan joined the sweeper and reconciler)."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=settings_grace(self._grace))
        self._listener.close()
        return not self._thread.is_alive()


def settings_grace(grace: float) -> float:
    """How long the API's thread may take to stop: its requests' grace, then its background
    threads' (the lifespan joins them), each with a margin."""
    return 2 * grace + 2 * BACKGROUND_MARGIN_SECONDS


def _runtime(
    name: str,
    settings: OssSettings,
    store: TaskStore,
    broker: Broker,
    flows: FlowCatalog,
    metrics: RuntimeMetrics,
) -> ModuleRuntime:
    extra = None
    if name in EXTRA_CONSUMERS:
        extra = _load_attribute(EXTRA_CONSUMERS[name])(settings, store)
    return ModuleRuntime(
        registry_ref=registry_ref(name),
        settings=settings,
        store=store,
        broker=broker,
        queues_to_declare={module_queue(m) for m in flows.modules()},
        extra_consumers=extra,
        metrics=metrics,
        announce_to=open_module_registry(settings.store_url, timeout_seconds=settings.effective_store_timeout),
        drains=open_module_drains(settings.store_url, timeout_seconds=settings.effective_store_timeout),
    )


def _known_commands(settings: OssSettings) -> dict[str, frozenset[str]]:
    """Every module flows.yaml names must be a package under modules/ with a command registry."""
    names = load_flows(settings.flows_path).modules()
    known = {}
    for name in sorted(names):
        try:
            known[name] = load_registry(registry_ref(name)).names()
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"{settings.flows_path}: module {name!r} has no {registry_ref(name)} ({exc})"
            ) from None
    return known


def _load_attribute(ref: str) -> Callable[..., Mapping[str, Callable[[bytes], None]]]:
    """What a "package.module:attribute" reference names (the form of registry references)."""
    import importlib

    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _listen(host: str, port: int) -> socket.socket:
    """Bind now, before anything starts: a port in use is a clear error at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): set BATON_OSS_PORT "
            "(or --port) to a free port, or BATON_OSS_HOST to an address of this machine"
        ) from None
    listener.listen(128)
    return listener


def _prepare_store(url: str) -> None:
    if url.lower().startswith("sqlite:"):
        path = sqlite_path(url)
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"sqlite {path}: cannot create its folder: {exc}") from exc


def _demo(
    service: TaskService,
    store: TaskStore,
    flows: FlowCatalog,
    task_type: str,
    stop: threading.Event,
    echo: Echo,
) -> None:
    try:
        free_form = flows.get(task_type).parameter_schema is None
        task = service.submit(task_type, {"requested_by": "baton up"} if free_form else {}).task
    except InvalidParameters as exc:
        echo(f"{task_type} needs parameters the demo cannot make up ({exc}); submitting nothing")
        return
    except BatonError as exc:
        echo(f"could not submit the demo task: {exc}")
        return
    echo(f"submitted {task_type} task {task.TaskId}")
    seen, deadline = 0, time.monotonic() + FOLLOW_SECONDS
    while not stop.is_set():
        current = store.get(task.TaskId)
        if current is None:
            return
        task = masked_task(since(store, current, seen))
        for event in task.History:
            echo(event_line(task, event))
        seen = current.history_count
        if settled(task):
            echo(task_summary(task))
            return
        if time.monotonic() > deadline:
            echo(f"task {task.TaskId} is still running; follow it with `baton watch {task.TaskId}`")
            return
        stop.wait(0.05)


def _announce(
    base_url: str, has_console: bool, token: str | None, settings: OssSettings, echo: Echo
) -> None:
    echo("")
    echo(f"baton is up at {base_url}  (Ctrl-C to stop)")
    echo(f"  API:      {base_url}/api/v1  (OpenAPI docs: {base_url}/api/v1/docs)")
    if has_console:
        echo(f"  console:  {base_url}/console")
    echo(f"  metrics:  {base_url}/metrics")
    echo(f"  store:    {mask_secrets(settings.store_url)}")
    broker = (
        "in-process"
        if settings.broker_url.startswith("memory:")
        else mask_secrets(settings.broker_url)
    )
    echo(f"  broker:   {broker}")
    if token is not None:
        echo(f"  token:    {token}")
        echo(
            "            (role operator, made up for this run and shown only here; "
            "set BATON_API_TOKENS to choose your own)"
        )
        echo(
            f"  try:      curl -H 'Authorization: Bearer {token}' '{base_url}/api/v1/tasks?limit=5'"
        )


def _stop_all(runtimes: list[ModuleRuntime], grace: float) -> bool:
    """Stop the modules side by side, so the grace period is spent once, not once per module."""
    results: list[bool] = []
    threads = [threading.Thread(target=lambda r=r: results.append(r.stop(grace))) for r in runtimes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return all(results)

"""The Dockerfile, deploy/docker-compose.yml, deploy/k8s/ and the Grafana dashboard, checked
without a Docker engine or a cluster: they parse, and every role, module, setting, port, path
and metric they name exists in the code, with values the settings accept."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml

from common.metrics import RuntimeMetrics
from oss.api.metrics import ApiMetrics
from oss.api.routers.health import router as health_router
from tests.deploy.manifests import (
    COMPOSE_SECRETS,
    DEPLOY,
    dockerfile_instructions,
    entrypoint_roles,
    env_pairs,
    flows_modules,
    interpolate,
    k8s_env,
    load_yaml_docs,
    setting_names,
    validate_settings,
)
from tests.deploy.support import ENTRYPOINT, REPO, clean_env
from tests.support.cluster import STATE_DEADLINE

K8S = DEPLOY / "k8s"


def test_the_entry_point_has_every_role_and_refuses_what_it_does_not_know():
    assert entrypoint_roles() == {"oss", "module", "sweeper", "up", "baton"}
    env = clean_env()
    for args in ([], ["nonsense"], ["module"], ["module", "../etc"], ["module", "Resource"]):
        run = subprocess.run(
            [str(ENTRYPOINT), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=STATE_DEADLINE,  # a process start at load
            check=False,
        )
        assert run.returncode == 2, (args, run.stderr)
    run = subprocess.run(
        [str(ENTRYPOINT), "baton", "check-flows", str(REPO / "flows.yaml")],
        env=env,
        capture_output=True,
        text=True,
        timeout=STATE_DEADLINE,
        check=False,
    )
    assert run.returncode == 0 and ": ok," in run.stdout, run.stderr


def check_role(args: list[str]) -> None:
    assert args and args[0] in entrypoint_roles(), args
    if args[0] == "module":
        assert len(args) == 2 and (REPO / "modules" / args[1] / "__main__.py").exists(), args


def check_env_names(names) -> None:
    known = set(setting_names())
    unknown = sorted(n for n in names if n.startswith("BATON_") and n not in known)
    assert not unknown, f"not settings of baton: {unknown}"


# -- Dockerfile ----------------------------------------------------------------------------------


def test_dockerfile_builds_one_non_root_image_for_every_role():
    steps = dockerfile_instructions()
    froms = [args for keyword, args in steps if keyword == "FROM"]
    assert froms == ["python:3.11-slim"]
    user = [args for keyword, args in steps if keyword == "USER"][-1]
    assert user.split(":")[0] not in ("0", "root")
    runs = " ".join(args for keyword, args in steps if keyword == "RUN")
    assert "-c requirements.lock" in runs  # exact pins
    assert "compileall -q common oss modules" in runs  # the code's bytecode, which /app cannot take at run time
    workdir = PurePosixPath([args for keyword, args in steps if keyword == "WORKDIR"][-1])
    copied: dict[PurePosixPath, Path] = {}
    for keyword, args in steps:
        if keyword == "COPY":
            parts = [p for p in args.split() if not p.startswith("--")]
            *sources, target = parts
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: no such file"
                destination = (
                    workdir / target / Path(source).name
                    if target.endswith("/")
                    else workdir / target
                )
                copied[destination] = REPO / source
    entrypoint = json.loads([args for keyword, args in steps if keyword == "ENTRYPOINT"][-1])
    script = PurePosixPath(entrypoint[-1])
    assert copied.get(script) == ENTRYPOINT, f"{script} is not deploy/entrypoint.sh"
    assert (
        json.loads([args for keyword, args in steps if keyword == "CMD"][-1])[0]
        in entrypoint_roles()
    )
    env = {}
    for keyword, args in steps:
        if keyword == "ENV":
            env.update(env_pairs(args))
    check_env_names(env)
    baton_env = {k: v for k, v in env.items() if k.startswith("BATON_")}
    validate_settings(baton_env, ["up"])
    assert (
        PurePosixPath(env["BATON_FLOWS_PATH"]) == workdir / "flows.yaml"
        and workdir / "flows.yaml" in copied
    )
    exposed = {int(p) for keyword, args in steps if keyword == "EXPOSE" for p in args.split()}
    assert int(env["BATON_OSS_PORT"]) in exposed


def test_dockerignore_keeps_secrets_and_local_state_out():
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var", "deploy/.env"} <= set(ignored)


# -- docker compose ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def baton_services(compose: dict) -> dict[str, dict]:
    return {
        name: s for name, s in compose["services"].items() if "baton" in str(s.get("image", ""))
    }


def test_compose_runs_every_part_with_replicas(compose):
    services = compose["services"]
    assert {"mongo-1", "mongo-init", "rabbitmq-1", "oss", "sweeper", *flows_modules()} <= set(services)
    assert services["oss"]["deploy"]["replicas"] == 2
    for module in flows_modules():
        assert services[module]["command"] == ["module", module]
        assert services[module]["deploy"]["replicas"] >= 1
    for name, service in baton_services(compose).items():
        check_role(service["command"])
        assert (
            DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]
        ).resolve() == REPO / "Dockerfile"
        for dependency in service["depends_on"]:
            assert dependency in services, (name, dependency)


def test_compose_mongo_is_a_replica_set_and_rabbitmq_has_its_management_ui(compose):
    mongo, rabbitmq = compose["services"]["mongo-1"], compose["services"]["rabbitmq-1"]
    assert mongo["command"][mongo["command"].index("--replSet") + 1] == "rs0"
    assert "rs.initiate" in " ".join(compose["services"]["mongo-init"]["command"])
    assert "management" in rabbitmq["image"]
    assert any(str(p).endswith(":15672") for p in rabbitmq["ports"])
    for name, service in baton_services(compose).items():
        assert (
            "replicaSet=rs0" in service["environment"]["BATON_STORE_URL"]
            and "w=majority" in service["environment"]["BATON_STORE_URL"]
        )
        assert service["depends_on"]["mongo-init"]["condition"] == "service_completed_successfully", name


def test_compose_environment_is_real_settings_with_valid_values(compose):
    for name, service in baton_services(compose).items():
        env = {k: interpolate(str(v), COMPOSE_SECRETS) for k, v in service["environment"].items()}
        check_env_names(env)
        validate_settings(env, service["command"])
        # flows.yaml mounted where BATON_FLOWS_PATH says
        mounts = {
            PurePosixPath(m.split(":")[1]): DEPLOY / m.split(":")[0] for m in service["volumes"]
        }
        assert mounts[PurePosixPath(env["BATON_FLOWS_PATH"])].resolve() == REPO / "flows.yaml", name
        # the healthcheck and published ports are the ones the settings open
        probe = " ".join(service["healthcheck"]["test"])
        port = (
            env.get("BATON_OSS_PORT")
            if service["command"][0] == "oss"
            else env.get("BATON_METRICS_PORT")
        )
        assert port and f"127.0.0.1:{port}/" in probe, (name, probe)
        for published in service.get("ports", []):
            assert str(published).rsplit(":", 1)[1] == port, (name, published)
        # SIGTERM, then this long before SIGKILL: longer than the steps' grace period
        grace = float(env["BATON_SHUTDOWN_GRACE_SECONDS"])
        assert int(service["stop_grace_period"].rstrip("s")) > grace, name


# -- Kubernetes ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def k8s() -> dict[str, list[dict]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", "secrets.example.yaml"}
    assert listed == on_disk, "kustomization.yaml lists every manifest (secrets are made by hand)"
    docs = [doc for name in sorted(listed) for doc in load_yaml_docs(K8S / name)]
    kinds: dict[str, list[dict]] = {}
    for doc in docs + load_yaml_docs(K8S / "secrets.example.yaml"):
        kinds.setdefault(doc["kind"], []).append(doc)
    return kinds


def named(docs: list[dict]) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in docs}


def test_k8s_has_a_deployment_per_module_and_for_oss_and_a_service(k8s):
    deployments = named(k8s["Deployment"])
    args = {
        name: d["spec"]["template"]["spec"]["containers"][0]["args"]
        for name, d in deployments.items()
    }
    assert sorted(args.values()) == sorted(
        [["oss"], ["sweeper"], *(["module", m] for m in flows_modules())]
    )
    for name, deployment in deployments.items():
        check_role(args[name])
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items(), (
            name
        )
    service = named(k8s["Service"])["baton-oss"]
    oss = deployments["baton-oss"]
    assert (
        service["spec"]["selector"].items() <= oss["spec"]["template"]["metadata"]["labels"].items()
    )
    container_ports = {p["name"] for p in oss["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= container_ports


def test_k8s_flows_configmap_is_flows_yaml(k8s):
    configmap = named(k8s["ConfigMap"])["baton-flows"]
    assert configmap["data"]["flows.yaml"] == (REPO / "flows.yaml").read_text(), (
        "deploy/k8s/flows-configmap.yaml is stale: run `make k8s-flows`"
    )


def test_k8s_environment_probes_and_mounts_agree_with_the_code(k8s):
    configmaps = {name: cm["data"] for name, cm in named(k8s["ConfigMap"]).items()}
    secrets = {name: s["stringData"] for name, s in named(k8s["Secret"]).items()}
    health_paths = {route.path for route in health_router.routes}
    for name, deployment in named(k8s["Deployment"]).items():
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        env = k8s_env(container, configmaps, secrets)
        check_env_names(env)
        validate_settings(env, container["args"])
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        if container["args"] == ["oss"]:
            assert ports["http"] == int(env["BATON_OSS_PORT"])
            assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
            assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
            assert {"/healthz", "/readyz"} <= health_paths
        else:
            assert ports["metrics"] == int(env["BATON_METRICS_PORT"]), name
        for probe in ("livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["port"] in ports, (name, probe)
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert int(annotations["prometheus.io/port"]) in ports.values()
        # flows.yaml from its ConfigMap, where BATON_FLOWS_PATH looks
        flows_path = PurePosixPath(env["BATON_FLOWS_PATH"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        mount = next(
            m
            for m in container["volumeMounts"]
            if PurePosixPath(m["mountPath"]) == flows_path.parent
        )
        assert (
            volumes[mount["name"]]["configMap"]["name"] == "baton-flows"
            and flows_path.name == "flows.yaml"
        )
        assert pod["terminationGracePeriodSeconds"] > float(env["BATON_SHUTDOWN_GRACE_SECONDS"]), (
            name
        )
        assert pod["securityContext"]["runAsNonRoot"] is True


def test_k8s_broker_credentials_are_one_secret_key_per_role(k8s):
    seen = {}
    for name, deployment in named(k8s["Deployment"]).items():
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        broker = next(e for e in container["env"] if e["name"] == "BATON_BROKER_URL")
        seen[name] = broker["valueFrom"]["secretKeyRef"]["key"]
    for module in flows_modules():
        assert seen[f"baton-{module}"] == module
    assert seen["baton-oss"] == seen["baton-sweeper"] == "oss"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kustomize_builds_the_manifests():
    run = subprocess.run(
        ["kubectl", "kustomize", str(K8S)],
        capture_output=True,
        text=True,
        timeout=STATE_DEADLINE,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(run.stdout) if doc]
    assert kinds.count("Deployment") == 2 + len(flows_modules()) and "Service" in kinds


# -- Grafana -------------------------------------------------------------------------------------


def exposed_metrics() -> dict[str, set[str]]:
    """Every sample name the processes expose -> its label names (histograms add `le`)."""
    names: dict[str, set[str]] = {}
    for registry in (RuntimeMetrics().registry, ApiMetrics().registry):
        for collector in list(registry._collector_to_names):  # no public listing of collectors
            for family in collector.describe():
                labels = set(getattr(collector, "_labelnames", ()))
                suffixes = {
                    "counter": ("_total", "_created"),
                    "histogram": ("_bucket", "_count", "_sum", "_created"),
                }
                for suffix in suffixes.get(family.type, ("",)):
                    names[family.name + suffix] = labels | (
                        {"le"} if suffix == "_bucket" else set()
                    )
    return names


def test_the_grafana_dashboard_uses_metrics_the_code_exposes():
    dashboard = json.loads((DEPLOY / "grafana" / "baton-dashboard.json").read_text())
    exposed = exposed_metrics()
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10
    used = set()
    for expr in exprs:
        for metric in re.findall(r"\b(baton_[a-z_]+)\b", expr):
            assert metric in exposed, (
                f"{metric} is not exposed by common/metrics.py or oss/api/metrics.py"
            )
            used.add(metric.removesuffix("_bucket").removesuffix("_count").removesuffix("_total"))
            for group in re.findall(r"by \(([^)]*)\)", expr):
                labels = {label.strip() for label in group.split(",")}
                assert labels <= exposed[metric], f"{expr}: {labels - exposed[metric]}"
            for label in re.findall(r"(\w+)=~?\"", expr):
                assert label in exposed[metric], f"{expr}: no label {label}"
    # the metrics the dashboard needs: tasks created and finished, step durations, retries, timeouts, dead
    # letters, sweeper re-dispatches, outbox lag
    assert {
        "baton_tasks_created",
        "baton_tasks_finished",
        "baton_step_duration_seconds",
        "baton_step_retries",
        "baton_step_timeouts",
        "baton_dead_letters",
        "baton_sweeper_actions",
        "baton_outbox_publish_lag_seconds",
    } <= used
    datasources = {
        t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])
    }
    assert datasources == {"${datasource}"}

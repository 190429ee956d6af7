"""The deploy files run baton on clusters, checked without Docker or Kubernetes: a three-member
MongoDB replica set that an init step makes a set, three clustered RabbitMQ nodes for quorum
queues, and every baton process pointed at all of them with the URLs a failover needs."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from tests.deploy.manifests import COMPOSE_SECRETS, DEPLOY, interpolate, k8s_env, load_yaml_docs

K8S = DEPLOY / "k8s"
MEMBERS = 3


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def k8s() -> dict[str, dict[str, dict]]:
    """kind -> name -> document, over every manifest and the example Secrets."""
    kinds: dict[str, dict[str, dict]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            for doc in load_yaml_docs(path):
                kinds.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    return kinds


def check_store_url(url: str, hosts: list[str]) -> None:
    """All the members, the set's name, majority writes, retryable writes."""
    parts = urlsplit(url)
    assert parts.scheme == "mongodb", url
    assert parts.netloc.rsplit("@", 1)[-1].split(",") == [f"{h}:27017" for h in hosts], url
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query.get("replicaSet") == "rs0" and query.get("w") == "majority", url
    assert query.get("retryWrites") == "true", url


def check_broker_url(url: str, hosts: list[str]) -> None:
    nodes = url.split(",")
    assert [urlsplit(n).hostname for n in nodes] == hosts, url
    assert all(urlsplit(n).scheme == "amqp" and urlsplit(n).port == 5672 for n in nodes), url
    assert len({urlsplit(n).path for n in nodes}) == 1, "every node names the same vhost"


# -- docker compose ------------------------------------------------------------------------------


def baton_services(compose: dict) -> dict[str, dict]:
    return {n: s for n, s in compose["services"].items() if "baton" in str(s.get("image", ""))}


def test_compose_runs_a_three_member_replica_set_made_a_set_by_an_init_step(compose):
    services = compose["services"]
    members = [f"mongo-{n}" for n in range(1, MEMBERS + 1)]
    for name in members:
        member = services[name]
        assert member["hostname"] == name
        assert member["command"][member["command"].index("--replSet") + 1] == "rs0"
        assert "ping" in " ".join(member["healthcheck"]["test"])
    assert len({services[m]["volumes"][0].split(":")[0] for m in members}) == MEMBERS, "a volume each"
    init = services["mongo-init"]
    assert init["restart"] == "no"
    assert {m: {"condition": "service_healthy"} for m in members} == init["depends_on"]
    script = " ".join(init["command"])
    assert "rs.initiate" in script and "rs.status()" in script  # only the first time
    for name in members:
        assert f"host: '{name}:27017'" in script
    assert "db.hello().primary" in script  # done once there is a primary to write to


def test_compose_clusters_three_rabbitmq_nodes(compose):
    services = compose["services"]
    nodes = [f"rabbitmq-{n}" for n in range(1, MEMBERS + 1)]
    config = (DEPLOY / "rabbitmq" / "rabbitmq.conf").read_text()
    for number, name in enumerate(nodes, 1):
        node = services[name]
        assert node["hostname"] == name
        assert node["environment"]["RABBITMQ_ERLANG_COOKIE"].startswith("${RABBITMQ_ERLANG_COOKIE")
        mounts = dict(v.split(":", 1) for v in node["volumes"])
        assert mounts["./rabbitmq/rabbitmq.conf"].startswith("/etc/rabbitmq/conf.d/")
        assert f"cluster_formation.classic_config.nodes.{number} = rabbit@{name}" in config
    assert "classic_config" in config and "quorum_queue.initial_cluster_size = 3" in config
    assert "RABBITMQ_ERLANG_COOKIE" in (DEPLOY.parent / "Makefile").read_text(), "make up writes the cookie"


def test_compose_points_every_baton_process_at_every_member_and_node(compose):
    services = baton_services(compose)
    assert services
    for name, service in services.items():
        env = {k: interpolate(str(v), COMPOSE_SECRETS) for k, v in service["environment"].items()}
        check_store_url(env["BATON_STORE_URL"], [f"mongo-{n}" for n in range(1, MEMBERS + 1)])
        check_broker_url(env["BATON_BROKER_URL"], [f"rabbitmq-{n}" for n in range(1, MEMBERS + 1)])
        assert env["BATON_QUEUE_TYPE"] == "quorum", name
        assert service["depends_on"]["mongo-init"]["condition"] == "service_completed_successfully"
        for n in range(1, MEMBERS + 1):
            assert service["depends_on"][f"rabbitmq-{n}"]["condition"] == "service_healthy", name


# -- Kubernetes ----------------------------------------------------------------------------------


def test_k8s_runs_the_replica_set_and_its_init_job(k8s):
    service, members = k8s["Service"]["mongo"], k8s["StatefulSet"]["mongo"]
    assert service["spec"]["clusterIP"] == "None" and members["spec"]["serviceName"] == "mongo"
    assert members["spec"]["replicas"] == MEMBERS
    labels = members["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    container = members["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][container["args"].index("--replSet") + 1] == "rs0"
    script = " ".join(k8s["Job"]["mongo-init"]["spec"]["template"]["spec"]["containers"][0]["command"])
    for n in range(MEMBERS):
        assert f"host: 'mongo-{n}.mongo:27017'" in script  # the StatefulSet's stable names
    assert "rs.status()" in script and "db.hello().primary" in script


def test_k8s_clusters_three_rabbitmq_nodes(k8s):
    service, nodes = k8s["Service"]["rabbitmq"], k8s["StatefulSet"]["rabbitmq"]
    assert nodes["spec"]["replicas"] == MEMBERS and nodes["spec"]["serviceName"] == "rabbitmq"
    assert service["spec"]["publishNotReadyAddresses"] is True
    pod = nodes["spec"]["template"]["spec"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["RABBITMQ_NODENAME"]["value"] == "rabbit@$(MY_POD_NAME).rabbitmq"
    cookie = env["RABBITMQ_ERLANG_COOKIE"]["valueFrom"]["secretKeyRef"]
    assert "cookie" in k8s["Secret"][cookie["name"]]["stringData"]
    config = k8s["ConfigMap"]["rabbitmq-config"]["data"]["rabbitmq.conf"]
    for n in range(MEMBERS):
        assert f"= rabbit@rabbitmq-{n}.rabbitmq" in config
    assert {v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v} == {"rabbitmq-config"}


def test_k8s_points_every_baton_deployment_at_every_member_and_node(k8s):
    configmaps = {name: cm["data"] for name, cm in k8s["ConfigMap"].items()}
    secrets = {name: s["stringData"] for name, s in k8s["Secret"].items()}
    deployments = k8s["Deployment"]
    assert deployments
    for name, deployment in deployments.items():
        env = k8s_env(deployment["spec"]["template"]["spec"]["containers"][0], configmaps, secrets)
        check_store_url(env["BATON_STORE_URL"], [f"mongo-{n}.mongo" for n in range(MEMBERS)])
        check_broker_url(env["BATON_BROKER_URL"], [f"rabbitmq-{n}.rabbitmq" for n in range(MEMBERS)])
        assert env["BATON_QUEUE_TYPE"] == "quorum", name


def test_kustomization_applies_the_clusters(k8s):
    resources = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    assert {"mongo.yaml", "rabbitmq.yaml"} <= set(resources)

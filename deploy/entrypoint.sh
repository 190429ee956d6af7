#!/bin/sh
# The container's entry point (Dockerfile): one image, one role per container, chosen by argument.
#
#   oss            OSS: the REST API (and its sweeper unless BATON_OSS_SWEEPER=false)
#   module NAME    one module: resource, mysql, monitor, or another package under modules/
#   sweeper        the sweeper and outbox relay on their own (metrics on BATON_METRICS_PORT)
#   up             everything in one process, a demo task first (SQLite + in-process broker
#                  unless BATON_STORE_URL / BATON_BROKER_URL say otherwise)
#   baton ARGS     any baton command: baton check-flows, baton list --status 5, ...
#
# Every role is configured by BATON_* variables (docs/reference/configuration.md). The role's process
# replaces this shell (exec), so the SIGTERM of `docker stop` or the kubelet reaches it directly
# and it stops gracefully: within BATON_SHUTDOWN_GRACE_SECONDS, plus a few seconds.
set -eu

usage() {
    echo "usage: entrypoint.sh oss | module NAME | sweeper | up | baton ARGS..." >&2
    exit 2
}

[ "$#" -ge 1 ] || usage
role=$1
shift
case "$role" in
    oss) exec baton oss "$@" ;;
    sweeper) exec baton sweeper "$@" ;;
    up) exec baton up "$@" ;;
    baton) exec baton "$@" ;;
    module)
        [ "$#" -eq 1 ] || usage
        case "$1" in
            [a-z]*) ;;
            *) echo "entrypoint.sh: a module name is a lowercase identifier, not '$1'" >&2; exit 2 ;;
        esac
        case "$1" in
            *[!a-z0-9_]*) echo "entrypoint.sh: a module name is a lowercase identifier, not '$1'" >&2; exit 2 ;;
        esac
        exec python -m "modules.$1" ;;
    -h | --help | help) usage ;;
    *)
        echo "entrypoint.sh: unknown role '$role'" >&2
        usage ;;
esac

#!/bin/sh
# Print the rabbitmqctl commands that give OSS and each module a RabbitMQ user of its own,
# worked out from flows.yaml (deploy/README.md, "One RabbitMQ user per module"):
#
#   deploy/rabbitmq-users.sh --vhost baton > users.sh
#   RABBITMQ_PASSWORD_OSS=... RABBITMQ_PASSWORD_RESOURCE=... RABBITMQ_PASSWORD_MYSQL=... \
#     RABBITMQ_PASSWORD_MONITOR=... sh users.sh
#
# Options: --flows PATH, --vhost NAME, --prefix PREFIX (user names), --declare all|own.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-}
if [ -z "$python" ]; then
    if [ -x "$here/../.venv/bin/python" ]; then python="$here/../.venv/bin/python"; else python=python3; fi
fi
PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}" exec "$python" "$here/rabbitmq_permissions.py" "$@"

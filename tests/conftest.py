import pytest

from tests.support.services import rabbitmq_vhost


@pytest.fixture(scope="module")
def rabbitmq_url():
    """An AMQP URL to a vhost of its own, for one test module; deleted afterwards."""
    with rabbitmq_vhost() as url:
        yield url

"""Every call of the API, defined once for both clients (see baton_client/call.py)."""

from baton_client.calls.fleet import FleetCalls
from baton_client.calls.operations import OperationCalls
from baton_client.calls.tasks import TaskCalls


class Calls(TaskCalls, OperationCalls, FleetCalls):
    """The single-request calls; the clients add what takes several (wait, events, iter_*)."""

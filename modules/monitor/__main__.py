from common.runtime.main import run_module
from modules.monitor.alarms import alarm_consumer

run_module("modules.monitor.commands:registry", extra_consumers=alarm_consumer)

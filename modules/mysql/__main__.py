from common.runtime.main import run_module

run_module("modules.mysql.commands:registry")

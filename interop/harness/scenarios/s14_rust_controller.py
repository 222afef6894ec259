"""Scenario 14: brokers in controller mode with our standalone mqcontroller x3.

The scenario itself (the faults, the checks, the figures) is ctrlmode.Run, shared by 13-15; this file
picks the kind of controller group (ctrlgroup.py).
"""

from ..ctrlmode import Run

TITLE = "Controller mode: our mqcontroller x3"


def s14_rust_controller(env, c):
    Run(env, c, "rust").run()

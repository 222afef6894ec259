"""Scenario 13: brokers in controller mode with Apache's ControllerStartup x3, the reference.

The scenario itself (the faults, the checks, the figures) is ctrlmode.Run, shared by 13-15; this file
picks the kind of controller group (ctrlgroup.py).
"""

from ..ctrlmode import Run

TITLE = "Controller mode: Apache's ControllerStartup x3 (reference)"


def s13_java_controller(env, c):
    Run(env, c, "java").run()

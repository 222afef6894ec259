"""Scenario 15: brokers in controller mode with the nameservers under test with the controller embedded x3.

The scenario itself (the faults, the checks, the figures) is ctrlmode.Run, shared by 13-15; this file
picks the kind of controller group (ctrlgroup.py).
"""

from ..ctrlmode import Run

TITLE = "Controller mode: nameservers under test with enableControllerInNamesrv x3"


def s15_embedded_controller(env, c):
    Run(env, c, "embedded").run()

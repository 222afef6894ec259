"""The registry of the interop scenarios: number -> (title, function), and the order they run in.

One file per scenario, `sNN_<name>.py`, holding its TITLE, its function `sN_<name>(env, ctx)`
(which records named checks and figures in ctx, see checks.py) and the helpers only it uses.
Helpers shared by several scenarios live beside this package (output.py, topics.py, producer.py,
fixture.py); a scenario file imports from there, never from another scenario or from this registry.
"""

from . import (s01_registration, s02_flow, s03_admin, s04_failover, s05_two_namesrvs, s06_legacy, s07_go,
               s08_differential, s09_tls, s10_address_server, s11_rolling_replacement, s12_access_control,
               s13_java_controller, s14_rust_controller, s15_embedded_controller, s16_follow, s17_image)

SCENARIOS = {
    1: (s01_registration.TITLE, s01_registration.s1_registration),
    2: (s02_flow.TITLE, s02_flow.s2_flow),
    3: (s03_admin.TITLE, s03_admin.s3_admin),
    4: (s04_failover.TITLE, s04_failover.s4_failover),
    5: (s05_two_namesrvs.TITLE, s05_two_namesrvs.s5_two_namesrvs),
    6: (s06_legacy.TITLE, s06_legacy.s6_legacy),
    7: (s07_go.TITLE, s07_go.s7_go),
    8: (s08_differential.TITLE, s08_differential.s8_differential),
    9: (s09_tls.TITLE, s09_tls.s9_tls),
    10: (s10_address_server.TITLE, s10_address_server.s10_address_server),
    11: (s11_rolling_replacement.TITLE, s11_rolling_replacement.s11_rolling_replacement),
    12: (s12_access_control.TITLE, s12_access_control.s12_access_control),
    13: (s13_java_controller.TITLE, s13_java_controller.s13_java_controller),
    14: (s14_rust_controller.TITLE, s14_rust_controller.s14_rust_controller),
    15: (s15_embedded_controller.TITLE, s15_embedded_controller.s15_embedded_controller),
    16: (s16_follow.TITLE, s16_follow.s16_broker_follows_the_list),
    17: (s17_image.TITLE, s17_image.s17_container_image),
}

# Brokers in controller mode (ctrlmode.py): each starts a world of its own, with the controller-mode
# release's jars and our mqadmin.
CONTROLLER_MODE = (13, 14, 15)

# Scenario 4 kills broker-a, so it runs after the scenarios sharing the brokers (no broker restart
# needed). Scenarios 9, 12, 13-15, 16 and 17 use nameservers and brokers of their own (stopped when
# they end). Scenario 11 turns the Java nameserver `ref` into the SUT, so it runs after scenario 8,
# which compares the two.
RUN_ORDER = [1, 2, 3, 5, 6, 7, 8, 9, 10, 12, 11, 4, 13, 14, 15, 16, 17]

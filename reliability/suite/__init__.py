"""The fault-injection scenarios of reliability/run and what they share.

The interop harness (interop/harness: process groups, free ports, the raw remoting client, the
Java artifacts and the broker wrapper) is imported, not copied: its directory goes on the path
before any module of this package loads.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "interop"))

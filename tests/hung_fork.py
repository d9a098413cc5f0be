"""A child forked and left hung, as a library's helper forked from a worker can be (OpenVINO's
telemetry sender was): for the tests that a stopped worker leaves nothing running."""

import os
import time


def fork_a_hung_child() -> int:
    """Fork a child that sleeps for ten minutes, and return its process ID."""
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    return pid

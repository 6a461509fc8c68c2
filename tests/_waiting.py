"""Waiting on a condition that another thread makes true, never on how long it takes."""

import time


def wait_for(condition, timeout=60.0):
    """Return True once ``condition()`` is true; fail the test after ``timeout`` seconds
    (a bound on a stuck thread on a busy machine, not a measurement)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    raise AssertionError("condition not reached in time")

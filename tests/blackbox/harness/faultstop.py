"""The fault build's programs (make check-build: tests/fault/), stopped
at a named point and continued: a program run with MSGSPOOL_STOP set to
a point's name (lib/base/util.h, FAULT) stops itself there with SIGSTOP,
so that a test can run another process into that moment and then
continue it."""

import os
import signal
import time

from harness.env import CGI_DIR

__all__ = ["fault_program", "stopped_or_done", "cont", "end"]

WAIT = 30       # seconds for a process to stop itself, or to end


def fault_program(prog):
    """The fault build of prog (a CGI program, msgspoold, msgspool)."""
    p = CGI_DIR.parent / "tests" / "fault" / prog
    assert p.is_file(), f"{p}: the fault build is missing (make check-build)"
    return p


def _state(pid):
    """The state letter of process pid (T: stopped), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stopped_or_done(proc):
    """Wait until proc (a Popen) stops itself or exits: True when it
    stopped."""
    end = time.monotonic() + WAIT
    while proc.poll() is None and _state(proc.pid) != "T":
        assert time.monotonic() < end, \
            f"pid {proc.pid} neither stopped nor exited within {WAIT} s"
        time.sleep(0.01)
    return proc.poll() is None


def cont(proc):
    """Continue a stopped proc and wait for its end: (stdout, stderr)."""
    os.kill(proc.pid, signal.SIGCONT)
    return proc.communicate(timeout=WAIT)


def end(*procs):
    """Kill what is still running of procs (stopped or not)."""
    for p in procs:
        if p is not None and p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait()

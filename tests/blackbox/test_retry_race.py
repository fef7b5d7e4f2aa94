"""An operator's retry (msgspool retry ID, retry --failed) that a
client's cancel (DELETE /messages/{id}) lands in the middle of: the
message ends in exactly one state, and GET /messages/{id} says which
(msgspool(8), retry; msgspool-spool(5), Claims and recovery).  The
fault build of the CLI (make check-build: tests/fault/msgspool) stops at
a named point (MSGSPOOL_STOP, lib/base/util.h) while the DELETE runs."""

import json
import os
import subprocess

import pytest

from conftest import STATES, in_future
from harness.faultstop import cont, end, fault_program, stopped_or_done

# The retry's new file written in tmp/, not yet renamed into new/.
WRITTEN = "commit: written"
# The retry's new file in new/, the old one not yet removed.
RECORDED = "commit: recorded, the old not yet removed"

# GET's status of a message by the state its file is in.
STATUS = {"new": "queued", "cur": "sending", "sent": "sent"}


def _files(inst, msgid):
    return [(s, n) for s in STATES for n in inst.files(s)
            if n.startswith(msgid)]


def _message(srv, origin):
    """A message of acme's where a retry takes it from: failed/ (given
    up on, or canceled by its client) or deferred/ (scheduled)."""
    inst = srv.inst
    r = srv.sms(messageBody="raced",
                **({"sendAt": in_future(3600)} if origin == "scheduled"
                   else {}))
    assert r.status_code in (200, 202), r.text
    msgid = r.json()["smsId"]
    if origin == "failed":
        os.rename(inst.path("new", msgid), inst.path("failed", msgid))
    elif origin == "canceled":
        r = srv.request("DELETE", "/messages/" + msgid)
        assert r.status_code == 200, r.text
    want = "deferred" if origin == "scheduled" else "failed"
    assert _files(inst, msgid) == [(want, msgid + ".json")]
    return msgid


def _retry(inst, args, stop):
    env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
    env["MSGSPOOL_STOP"] = stop
    return subprocess.Popen([str(fault_program("msgspool")), "-c",
                             str(inst.conf), "retry"] + args, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _one_state(srv, msgid, why):
    """Exactly one file for msgid, and GET says what its state means."""
    files = _files(srv.inst, msgid)
    assert len(files) == 1, f"{msgid} in {len(files)} states: {files}; {why}"
    state = files[0][0]
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, f"{r.text}; {why}"
    doc = srv.inst.load(state, msgid)
    want = STATUS.get(state) or (
        ("retrying" if doc.get("attempts") else "scheduled")
        if state == "deferred" else
        "canceled" if doc.get("canceled") else "failed")
    assert r.json()["status"] == want, (files, r.json(), why)
    return state


@pytest.mark.parametrize("stop", [WRITTEN, RECORDED],
                         ids=["written", "recorded"])
@pytest.mark.parametrize("origin,args", [
    ("failed", ["ID"]), ("canceled", ["ID"]), ("scheduled", ["ID"]),
    ("failed", ["--failed"])],
    ids=["id-failed", "id-canceled", "id-scheduled", "all-failed"])
def test_cancel_while_a_retry_moves_the_message(srv, stop, origin, args):
    """The retry stops with its new file written (in tmp/, or in new/ with
    the old not yet removed); the DELETE runs; the retry goes on.  The
    retry holds the message while it moves it, as a daemon holds a claim:
    the DELETE is 409 (sending), and the message is then queued in new/
    alone, for a later DELETE to cancel."""
    inst = srv.inst
    msgid = _message(srv, origin)
    args = [msgid if a == "ID" else a for a in args]
    cli = _retry(inst, args, stop)
    try:
        assert stopped_or_done(cli), cli.communicate()
        r = srv.request("DELETE", "/messages/" + msgid)
        out, err = cont(cli)
    finally:
        end(cli)
    why = (f"retry {' '.join(args)} from {origin}, stopped at '{stop}': "
           f"the DELETE answered {r.status_code} {r.text}; the retry "
           f"exited {cli.returncode}, {out!r} {err!r}")
    state = _one_state(srv, msgid, why)
    assert cli.returncode == 0, why
    assert r.status_code == 409, why
    assert json.loads(r.text)["detail"].startswith("the message is sending"), \
        why
    assert state == "new", why
    r = srv.request("DELETE", "/messages/" + msgid)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    assert _files(inst, msgid) == [("failed", msgid + ".json")]

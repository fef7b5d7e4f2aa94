"""A client's cancel (DELETE /messages/{id}) that lands while msgspoold
records a failed try (cur/ to deferred/): the message ends in exactly one
state, canceled or retrying, and the reply and GET agree
(msgspool-spool(5), Claims and recovery).  The fault build (make
check-build: tests/fault/msgspoold and tests/fault/messages) stops each
process at a named point (MSGSPOOL_STOP, lib/base/util.h) so that the two
interleave exactly."""

import os
import signal
import subprocess


from conftest import STATES
from harness.faultstop import WAIT, end, fault_program, stopped_or_done

# msgspoold: the outcome written (deferred/ID), cur/ID not yet removed.
RECORDED = "commit: recorded, the old not yet removed"
# The cancel: deferred/ID renamed into cur/ID, not yet checked.
TAKEN = "take: renamed into cur/"
# A provider that fails for now: nothing listens on the discard port.
CONF = "[sms]\nprovider = http\nurl = http://127.0.0.1:9/\n"


def _daemon(inst, log):
    env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
    env["MSGSPOOL_STOP"] = RECORDED
    return subprocess.Popen([str(fault_program("msgspoold")), "-c", str(inst.conf),
                             "--once"], env=env, stdout=subprocess.DEVNULL,
                            stderr=log)


def _cancel_cgi(inst, msgid, stop):
    env = {"PATH": "/usr/bin:/bin", "MSGSPOOL_CONFIG": str(inst.conf),
           "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "DELETE",
           "REQUEST_URI": f"/messages/{msgid}",
           "SCRIPT_NAME": "/messages", "PATH_INFO": f"/{msgid}",
           "HTTP_X_API_KEY": inst.keys["acme"], "MSGSPOOL_STOP": stop}
    return subprocess.Popen([str(fault_program("messages"))], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _files(inst, msgid):
    return [(s, n) for s in STATES for n in inst.files(s)
            if n.startswith(msgid)]


def _recording(srv, tmp_path):
    """A message whose try failed, and msgspoold stopped in the middle of
    recording it: deferred/ID written, cur/ID (its claim) still there."""
    inst = srv.inst
    inst.write_conf(CONF)
    r = srv.sms(messageBody="raced")
    assert r.status_code in (200, 202), r.text
    msgid = r.json()["smsId"]
    log = open(tmp_path / "msgspoold.log", "wb")
    daemon = _daemon(inst, log)
    log.close()
    assert stopped_or_done(daemon), (tmp_path / "msgspoold.log").read_text()
    assert _files(inst, msgid) == [("deferred", msgid + ".json"),
                                   ("cur", msgid + ".json")]
    return msgid, daemon


def _resume(daemon, tmp_path):
    os.kill(daemon.pid, signal.SIGCONT)
    daemon.wait(timeout=WAIT)
    assert daemon.returncode == 0, (tmp_path / "msgspoold.log").read_text()


def _one_state(srv, msgid, status, why):
    """Exactly one file for msgid; GET agrees with the cancel's reply
    (200: canceled; 409: not canceled, so a retry, and canceled by a
    DELETE now)."""
    files = _files(srv.inst, msgid)
    assert len(files) == 1, (f"{msgid} in {len(files)} states after a "
                             f"cancel answered {status}: {files}; {why}")
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, r.text
    if status == 200:
        assert files[0][0] == "failed"
        assert r.json()["status"] == "canceled", r.json()
        return
    assert status == 409, why
    assert files[0][0] == "deferred"
    assert r.json()["status"] == "retrying", r.json()
    r = srv.request("DELETE", "/messages/" + msgid)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    assert _files(srv.inst, msgid) == [("failed", msgid + ".json")]


def test_cancel_while_the_daemon_records_a_retry(srv, tmp_path):
    """The DELETE, through the web server, lands while msgspoold has
    written deferred/ID and not yet removed cur/ID; then msgspoold goes
    on."""
    msgid, daemon = _recording(srv, tmp_path)
    try:
        r = srv.request("DELETE", "/messages/" + msgid)
        _resume(daemon, tmp_path)
    finally:
        end(daemon)
    _one_state(srv, msgid, r.status_code, r.text)


def test_daemon_removes_its_claim_while_a_cancel_holds_the_name(srv,
                                                               tmp_path):
    """The cancel renames deferred/ID into cur/ID and stops there; the
    daemon, continued, removes cur/ID (its claim, it thinks); the cancel,
    continued, finds the file gone.  Exactly one state must remain: the
    message is never lost."""
    msgid, daemon = _recording(srv, tmp_path)
    cgi = None
    try:
        cgi = _cancel_cgi(srv.inst, msgid, TAKEN)
        raced = stopped_or_done(cgi)
        _resume(daemon, tmp_path)
        if raced:
            os.kill(cgi.pid, signal.SIGCONT)
        out, err = cgi.communicate(timeout=WAIT)
    finally:
        end(daemon, cgi)
    head = out.split(b"\n", 1)[0].decode()
    assert head.startswith("Status: "), (out[:300], err)
    why = (f"the cancel {'was' if raced else 'was not'} stopped after its "
           f"rename into cur/; it answered {out[:300]!r}, stderr {err!r}")
    _one_state(srv, msgid, int(head.split()[1]), why)

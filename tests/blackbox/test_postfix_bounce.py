"""The email bounce chain with a real Postfix (msgspool-bounce(8)):

    msgspoold (smtp provider, [email] bounce-address = bounces@acme.example)
      -> a private Postfix on 127.0.0.1 (its smtpd is msgspool's smtp url)
      -> relayhost: an SMTP sink that answers 550 5.1.1 for one recipient
         and accepts the other
      -> Postfix's own bounce to the VERP address bounces+ID@acme.example
      -> Postfix's pipe transport, as conf/postfix-bounce.cf ships it
         (recipient_delimiter = +, transport_maps), runs msgspool-bounce
         -c CONFIG -r ${recipient} as the spool's user
      -> msgspoold --once applies the receipt
      -> GET /messages/{id}: undelivered with 5.1.1 for the rejected
         recipient, sent for the accepted one; the rejected address
         suppressed for the client (source bounce), so that its next
         email to it is refused.

Then a recipient the sink answers 451 4.3.0 for ever: Postfix keeps it
queued and, past delay_warning_time, sends its delay notice (Action
delayed, Status 4.3.0) the same way; msgspoold records it as an event of
the message, which stays sent, and suppresses nothing.

The pipe transport, the main.cf lines and the transport map are read from
conf/postfix-bounce.cf; only the paths, the user and the map's location are
changed.  Postfix refuses to run a pipe command as root or as its own user,
so the spool is handed to user nobody, as make install hands it to the
spool's user, and the command runs as nobody.  No web server is involved in
what is tested here: it runs under lighttpd only.  It needs root (Postfix
starts as root only) and the postfix package (make deps-test).
"""

import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from harness import postfix as postfix_instance
from conftest import (BIN_DIR, CONF_DIR, SANITIZER_MARKS, SERVER, Instance,
                      Server)
from doubles.smtp import SmtpSink

PIPE_USER = "nobody"
CHAIN_TIMEOUT = 60      # seconds from msgspoold's send to the pipe delivery
BAD = "bad@example.org"
GOOD = "good@example.org"
LATE = "late@example.org"
# Postfix's delay notice for what is still queued after this (main.cf);
# with the test instance's 1 s backoff (harness/postfix.py) it comes on
# the second try.
DELAY_WARNING = "delay_warning_time = 1s"


def _skip_reason():
    if SERVER != "lighttpd":
        return ("no web server involved: the Postfix bounce chain runs "
                "once, under lighttpd")
    why = postfix_instance.missing()
    if why:
        return why
    try:
        pwd.getpwnam(PIPE_USER)
    except KeyError:
        return "no user %s to run the pipe transport as" % PIPE_USER
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None,
                                reason=str(_skip_reason()))


# ------------------------------------------------ conf/postfix-bounce.cf

def shipped_snippet():
    """The example of conf/postfix-bounce.cf: (master.cf entry, [main.cf
    lines], [transport map lines]), each as its comment shows it."""
    path = CONF_DIR / "postfix-bounce.cf"
    blocks, cur = [], None
    for line in path.read_text().splitlines():
        body = line[1:] if line.startswith("#") else None
        if body is not None and body.startswith("   ") and body.strip():
            if cur is None:
                cur = []
                blocks.append(cur)
            cur.append(body)
        else:
            cur = None
    master = [b for b in blocks if re.search(r"\bpipe\s*$", b[0])]
    main = [b for b in blocks
            if all(re.match(r"\s*[a-z_]+\s*=", ln) for ln in b)]
    trans = [b for b in blocks
             if all(re.match(r"\s*\S+@\S+\s+\S+:\S*\s*$", ln) for ln in b)]
    assert len(master) == 1 and len(main) == 1 and len(trans) == 1, (
        f"{path}: expected one master.cf pipe entry, one block of main.cf "
        f"settings and one transport map in its example; found {blocks}")
    return (textwrap.dedent("\n".join(master[0])) + "\n",
            [ln.strip() for ln in main[0]], [ln.strip() for ln in trans[0]])


def _reachable_by_others(path):
    p = Path(path).resolve()
    if not p.stat().st_mode & stat.S_IXOTH:
        return False
    return all(d.stat().st_mode & stat.S_IXOTH for d in p.parents)


def _chown_tree(root, uid, gid):
    os.chown(root, uid, gid)
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            os.chown(os.path.join(d, n), uid, gid, follow_symlinks=False)


def _status(srv, mid):
    r = srv.get("/messages/" + mid)
    assert r.status_code == 200, r.text
    return r.json()


def _suppression(srv, address):
    """acme's suppression of address on email, or None (404)."""
    r = srv.get("/suppressions/email/" + address.replace("@", "%40"))
    assert r.status_code in (200, 404), r.text
    return r.json() if r.status_code == 200 else None


def _wait_piped(pf, sink, verp, service, what):
    """Until Postfix has delivered a bounce or notice to verp through the
    pipe transport (service), flushing its deferred queue meanwhile."""
    deadline = time.monotonic() + CHAIN_TIMEOUT
    flushed = 0.0
    while True:
        piped = [ln for ln in pf.deliveries(verp)
                 if f"relay={service}" in ln]
        if piped and "status=sent" in piped[-1]:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} piped to msgspool-bounce within "
                        f"{CHAIN_TIMEOUT}s; sink refused {sink.refused}")
        if pf.queued()["deferred"] and time.monotonic() - flushed > 2:
            pf.flush()
            flushed = time.monotonic()
        time.sleep(0.1)


# --------------------------------------------------------------- the test

def test_postfix_bounce_reaches_the_message():
    master_entry, main_lines, trans_lines = shipped_snippet()
    service = master_entry.split()[0]
    bounce_address = trans_lines[0].split()[0]          # bounces@acme.example
    local, domain = bounce_address.split("@")
    assert "${recipient}" in master_entry, master_entry
    assert "recipient_delimiter = +" in main_lines, main_lines
    pw = pwd.getpwnam(PIPE_USER)

    base = Path(tempfile.mkdtemp(prefix="msgspool-postfix-"))
    base.chmod(0o755)
    sink = server = pf = None
    ok = False
    try:
        inst = Instance(base / "inst")
        bounce_bin = BIN_DIR / "msgspool-bounce"
        assert bounce_bin.exists(), f"not built: {bounce_bin}"
        if not _reachable_by_others(bounce_bin):
            # The pipe user could not run it where it is: a copy it can.
            (base / "bin").mkdir(mode=0o755)
            bounce_bin = base / "bin" / "msgspool-bounce"
            shutil.copy2(BIN_DIR / "msgspool-bounce", bounce_bin)
            bounce_bin.chmod(0o755)

        # The shipped example, with this instance's paths and user.
        entry, n = re.subn(r"\buser=\S+", f"user={PIPE_USER}", master_entry)
        assert n == 1, master_entry
        entry, n = re.subn(r"\bargv=\S+", f"argv={bounce_bin}", entry)
        assert n == 1, master_entry
        entry, n = re.subn(r"(\s)-c\s+\S+", rf"\1-c {inst.conf}", entry)
        assert n == 1, master_entry
        maps, main = {}, []
        for ln in main_lines:
            m = re.match(r"(\w+)\s*=\s*hash:(\S+)$", ln)
            if m:
                name = os.path.basename(m.group(2))
                maps[name] = "\n".join(trans_lines) + "\n"
                ln = f"{m.group(1)} = hash:{{etc}}/{name}"
            main.append(ln)
        assert maps, f"no hash: map among {main_lines}"
        main.append(DELAY_WARNING)

        sink = SmtpSink().start()
        sink.script(BAD, [], then="reject")             # 550 5.1.1
        pf = postfix_instance.Postfix(
            base / "postfix", relayhost=f"[127.0.0.1]:{sink.port}",
            main="\n".join(main) + "\n", master=entry, maps=maps)
        pf.start()

        # msgspool sends through Postfix, from the VERP address.
        inst.write_conf(f"[email]\nprovider = smtp\n"
                        f"url = smtp://127.0.0.1:{pf.port}\nstarttls = no\n"
                        f"bounce-address = {bounce_address}\n")
        # The spool is the pipe user's, as make install makes it the
        # spool user's; everything else here runs as root and needs no
        # grant.
        _chown_tree(inst.spool, pw.pw_uid, pw.pw_gid)
        cp = subprocess.run([str(bounce_bin), "-c", str(inst.conf)],
                            input=b"", capture_output=True, timeout=30,
                            user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                            env={"PATH": "/usr/bin:/bin"})
        assert cp.returncode == 0, (
            f"{PIPE_USER} cannot run msgspool-bounce on this spool "
            f"(exit {cp.returncode}): {cp.stderr.decode(errors='replace')}")

        server = Server(inst, base / "run")
        r = server.post_json("/email/v1/deliver", {
            "from": "Acme <news@acme.example>", "subject": "Hello",
            "html": "<p>Hi</p>",
            "recipients": [{"to": BAD}, {"to": GOOD}]})
        assert r.status_code == 200, r.text
        recs = r.json()["recipients"]
        bad, good = recs[0]["messageId"], recs[1]["messageId"]
        assert bad and good, recs
        verp_bad = f"{local}+{bad}@{domain}"
        verp_good = f"{local}+{good}@{domain}"

        t0 = time.monotonic()
        inst.daemon_once()
        # Handed to Postfix; its bounce may be back, and applied by this
        # very run, before we look.
        assert _status(server, bad)["status"] in ("sent", "undelivered")
        assert _status(server, good)["status"] == "sent"

        # Postfix relays both; the sink refuses one; Postfix bounces it to
        # the VERP address and pipes its bounce to msgspool-bounce.
        receipts = inst.spool / "receipts"
        deadline = t0 + CHAIN_TIMEOUT
        flushed = 0.0
        while True:
            piped = [ln for ln in pf.deliveries(verp_bad)
                     if f"relay={service}" in ln]
            q = pf.queued()
            if piped and "status=sent" in piped[-1] and \
                    not any(q.values()) and sink.messages:
                break
            if time.monotonic() > deadline:
                pytest.fail(
                    f"no bounce piped to msgspool-bounce within "
                    f"{CHAIN_TIMEOUT}s; sink got {sink.messages}, refused "
                    f"{sink.refused}; receipts "
                    f"{sorted(os.listdir(receipts)) if receipts.exists() else None}"
                    "; Postfix's log and queue below")
            if q["deferred"] and time.monotonic() - flushed > 2:
                pf.flush()
                flushed = time.monotonic()
            time.sleep(0.1)
        chain = time.monotonic() - t0
        # Stored, or stored and applied already by the run above.
        assert (receipts.is_dir() and any(receipts.iterdir())) or \
            _status(server, bad)["status"] == "undelivered", \
            "Postfix delivered the bounce, but no receipt was stored"

        # What the sink saw: both from their own VERP address.
        got = sink.messages
        assert [(m.mail_from, m.rcpt_tos) for m in got] == \
            [(verp_good, [GOOD])], got
        assert [(x["mail_from"], x["rcpt"]) for x in sink.refused] == \
            [(verp_bad, BAD)], sink.refused
        # What Postfix logged: the rejected one bounced with the sink's
        # reply, the other sent, the bounce delivered through the pipe.
        assert any("status=bounced" in ln and "550 5.1.1" in ln
                   for ln in pf.deliveries(BAD)), pf.deliveries(BAD)
        assert any("status=sent" in ln for ln in pf.deliveries(GOOD)), \
            pf.deliveries(GOOD)
        assert not pf.deliveries(verp_good), pf.deliveries(verp_good)

        inst.daemon_once()
        st = _status(server, bad)
        assert st["status"] == "undelivered", st
        assert st["error"]["code"] == "5.1.1", st
        assert "550 5.1.1 no such user" in st["error"]["message"], st
        assert st["events"][-1]["status"] == "undelivered", st
        assert st["events"][-1]["source"] == "receipt", st
        st = _status(server, good)
        assert st["status"] == "sent", st
        assert st.get("error") is None, st
        assert not receipts.exists() or not any(receipts.iterdir()), \
            sorted(os.listdir(receipts))

        # The 5.1.1 bounce suppressed the address, for acme alone; acme's
        # next email to it is refused, the accepted one's is not.
        sup = _suppression(server, BAD)
        assert sup is not None and sup["source"] == "bounce", sup
        assert sup["reason"].startswith("bounce 5.1.1: "), sup
        assert "550 5.1.1 no such user" in sup["reason"], sup
        assert bad in sup["reason"], sup
        assert _suppression(server, GOOD) is None
        r = server.get("/suppressions/email/" + BAD.replace("@", "%40"),
                       client="other")
        assert r.status_code == 404, r.text
        r = server.post_json("/email/v1/deliver", {
            "from": "news@acme.example", "subject": "Again",
            "html": "<p>Hi</p>", "recipients": [{"to": BAD}, {"to": GOOD}]})
        assert r.status_code == 200, r.text
        recs = r.json()["recipients"]
        assert recs[0]["status"] == "error", recs
        assert recs[0]["error"] == "recipient: suppressed (bounce)", recs
        assert recs[1]["status"] == "queued", recs

        # A 4.x.x delay notice: an event, no suppression.
        sink.script(LATE, [], then="tempfail")          # 451 4.3.0
        r = server.post_json("/email/v1/deliver", {
            "from": "news@acme.example", "subject": "Later",
            "html": "<p>Hi</p>", "recipients": [{"to": LATE}]})
        assert r.status_code == 200, r.text
        late = r.json()["recipients"][0]["messageId"]
        inst.daemon_once()
        assert _status(server, late)["status"] == "sent"
        _wait_piped(pf, sink, f"{local}+{late}@{domain}", service,
                    "delay notice")
        assert any("status=deferred" in ln and "451 4.3.0" in ln
                   for ln in pf.deliveries(LATE)), pf.deliveries(LATE)
        inst.daemon_once()
        st = _status(server, late)
        assert st["status"] == "sent", st
        assert ("delayed", "receipt") in [(e["status"], e.get("source"))
                                          for e in st["events"]], st
        assert _suppression(server, LATE) is None

        new = server.cgi_stderr()
        for mark in SANITIZER_MARKS:
            assert mark not in new, new[-4000:]
        print(f"Postfix bounce chain: msgspoold's send to the pipe "
              f"delivery in {chain:.2f}s")
        ok = True
    finally:
        if not ok and server is not None:
            print(server.logs())
        if server is not None:
            server.stop()
        if pf is not None:
            if not ok:
                print(pf.diagnostics())
            pf.stop()
        if sink is not None:
            sink.stop()
        shutil.rmtree(base, ignore_errors=True)

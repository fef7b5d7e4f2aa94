"""msgspool erase ADDRESS [--client ID] (msgspool(8), erase;
msgspool-spool(5), Erasure): an address erased from the whole spool, as
a person may ask.  A spool that has lived: messages to the address sent
through Twilio (its receipts, index/ entries, an idempotency record) and
through the file provider (outbox/ copies), one scheduled, an inbound
message from it (doubles/twilio.py), webhook events of them all that a
client's URL did not take, a suppression of it, and messages to others.
After the erasure no file under the spool holds the address in any form,
nor the id of an erased message, but the suppressions; the others'
messages are whole; a message a daemon holds is left and reported."""

import base64
import fcntl
import json
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import BIN_DIR, ID_RE, in_future
from delivery_support import enqueue, make_doc, standin
from harness.faultstop import cont, end, fault_program, stopped_or_done
from harness.receiptsign import twilio_sig

__all__ = ["standin"]

PUBLIC = "https://msg.example.com"
ACME = "+15005550006"           # acme's number (inbound)
X = "+4915112345678"            # the person who asks
X_DIGITS = "4915112345678"
Y = "+4915112345679"            # another
SECRET = "whsec_" + base64.b64encode(b"erase test webhook secret, 32b").decode()
ANN = "ann@example.com"
SUMMARY = re.compile(r"^erased (\S+): (\d+) files? \((\d+) messages?, "
                     r"(\d+) inbound\), (\d+) list entr(?:y|ies)(.*)$")


def _closed_port():
    """A port nothing listens on: the webhooks fail, the events stay."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _conf(inst, standin):
    inst.write_conf(
        f"public-url = {PUBLIC}\n" + standin.twilio_config("sms") +
        "\n[ott.1]\nprovider = file\n" +
        f"\n[client.acme]\ninbound = {ACME}\n"
        f"webhook-url = http://127.0.0.1:{_closed_port()}/hook\n"
        f"webhook-secret = {SECRET}\n")


def _sms(srv, to, client="acme", headers=None, **fields):
    body = {"recipient": to, "messageBody": "Your table is ready"}
    body.update(fields)
    r = srv.post_json("/sms/v1/deliver", body, client=client,
                      headers=headers)
    assert r.status_code in (200, 202), r.text
    return r.json()["smsId"]


def _ott(srv, to):
    r = srv.post_json("/ott/v1/deliver", {"payload": [{
        "recipient": to, "templateID": "otp", "templateParameters": ["42"],
        "channelType": 1}]})
    assert r.status_code == 200, r.text
    (entry,) = r.json()
    assert entry["status"] == "queued", entry
    return entry["messageId"]


def _receipt(srv, standin, msgid, status):
    """Twilio's status callback of msgid, signed as Twilio signs it."""
    sid = srv.get("/messages/" + msgid).json()["providerMessageId"]
    params = {"AccountSid": standin.twilio_account_sid, "MessageSid": sid,
              "SmsSid": sid, "MessageStatus": status, "SmsStatus": status,
              "To": X, "From": standin.twilio_from,
              "ApiVersion": "2010-04-01"}
    r = srv.request("POST", f"/receipts/twilio?id={msgid}", client=None,
                    data=params, headers={
                        "X-Twilio-Signature": twilio_sig(
                            standin.twilio_auth_token,
                            f"{PUBLIC}/receipts/twilio?id={msgid}", params)})
    assert r.status_code == 200, r.text


def _erase(inst, *args, prog=None):
    env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
    cp = subprocess.run([str(prog or BIN_DIR / "msgspool"), "-c",
                         str(inst.conf), "erase"] + list(args), env=env,
                        capture_output=True, text=True, timeout=60)
    return cp


def _files(spool):
    """Every file under the spool: (path relative to it, bytes)."""
    for d, _, names in os.walk(spool):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    yield os.path.relpath(p, spool), f.read()


def _traces(spool, needles, keep=("suppressions/",)):
    """The files (and their names) holding any of needles, in any case,
    outside keep."""
    low = [n.lower().encode() for n in needles]
    return sorted(rel for rel, data in _files(spool)
                  if not rel.startswith(keep) and any(
                      n in data.lower() or n in rel.lower().encode()
                      for n in low))


def _erased(spool, ids):
    """The files that name an erased message: the suppressions aside, and
    of the clients' lists the lines only (a segment's name and its head
    name ids as the bounds of what it holds, msgspool-spool(5), Lists)."""
    out = _traces(spool, ids, keep=("suppressions/", "lists/"))
    for rel, data in _files(spool):
        if rel.startswith("lists/") and not rel.endswith("/head"):
            out += [rel for line in data.splitlines()
                    if any(i.encode() in line for i in ids)]
    return out


def _summary(out):
    m = SUMMARY.match(out.splitlines()[-1])
    assert m, out
    return m


def _listed(srv, ids, client="acme"):
    """Which of ids GET /messages lists (None: no list route yet)."""
    r = srv.get("/messages?limit=500", client=client)
    if r.status_code in (404, 405):
        return None
    assert r.status_code == 200, r.text
    got = {m["id"] for m in r.json()["messages"]}
    return {i for i in ids if i in got}


def test_erase_leaves_no_trace(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    # The person's messages, and others'.
    x_sent = _sms(srv, X)
    x_idem = _sms(srv, X, headers={"Idempotency-Key": "erase-test-1"})
    x_later = _sms(srv, X, sendAt=in_future(86400))
    x_ott = _ott(srv, X_DIGITS)
    y_sent = _sms(srv, Y)
    y_ott = _ott(srv, Y[1:])
    answer, _ = standin.twilio_incoming(srv.url("/receipts/twilio"),
                                        f"{PUBLIC}/receipts/twilio", X, ACME,
                                        "Yes, Tuesday is fine")
    assert answer.status == 200, answer
    inst.daemon_once()
    _receipt(srv, standin, x_sent, "delivered")
    _receipt(srv, standin, y_sent, "delivered")
    inst.daemon_once()
    _receipt(srv, standin, x_idem, "delivered")    # waiting in receipts/
    (x_in,) = [p[:-5] for p in os.listdir(inst.spool / "inbox")]
    r = srv.request("PUT", "/suppressions/sms/%2B4915112345678")
    assert r.status_code == 201, r.text
    xs = [x_sent, x_idem, x_later, x_ott, x_in]
    ys = [y_sent, y_ott]
    for m in xs + ys:
        assert srv.get("/messages/" + m).status_code == 200, m
    before = _traces(inst.spool, [X_DIGITS])
    for area in ("sent/", "deferred/", "inbox/", "outbox/", "events/"):
        assert any(p.startswith(area) for p in before), (area, before)
    # By an erased message's id alone.
    for area in ("receipts/", "index/", "idempotency/"):
        assert any(p.startswith(area) for p in _traces(inst.spool, xs)), \
            area
    listed = _listed(srv, xs + ys)

    cp = _erase(inst, X)
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr == ""
    lines = cp.stdout.splitlines()
    for line in (f"sent/{x_sent}.json", f"sent/{x_idem}.json",
                 f"deferred/{x_later}.json", f"sent/{x_ott}.json",
                 f"outbox/{x_ott}.json", f"inbox/{x_in}.json"):
        assert line in lines, (line, cp.stdout)
    assert any(re.match(r"^events/[0-9A-Z]{26}\.json$", s) for s in lines)
    assert any(re.match(r"^receipts/[0-9A-Z]{26}\.json$", s) for s in lines)
    assert any(s.startswith("index/") for s in lines)
    assert any(s.startswith("idempotency/") for s in lines)
    m = _summary(cp.stdout)
    assert m.group(1) == X
    assert int(m.group(3)) == 4 and int(m.group(4)) == 1, cp.stdout
    assert int(m.group(2)) == len(lines) - 1 - (
        1 if lines[-2].startswith("lists: ") else 0), cp.stdout
    assert m.group(6) == "", cp.stdout

    # Nothing holds the address, nor an erased message's id, but the
    # suppressions.
    assert _traces(inst.spool, [X_DIGITS]) == []
    assert _erased(inst.spool, xs) == []
    r = srv.get("/suppressions/sms/%2B4915112345678")
    assert r.status_code == 200 and r.json()["address"] == X, r.text
    for m in xs:
        r = srv.get("/messages/" + m)
        assert r.status_code == 404, (m, r.text)
    for m in ys:
        r = srv.get("/messages/" + m)
        assert r.status_code == 200, (m, r.text)
    assert (inst.spool / "outbox" / f"{y_ott}.json").is_file()
    if listed is not None:
        assert listed >= set(ys), listed
        assert _listed(srv, xs + ys) == set(ys)

    # Again: nothing left to erase, by either form of the number.
    cp = _erase(inst, X_DIGITS)
    assert (cp.returncode, cp.stdout, cp.stderr) == (
        0, f"nothing names {X}\n", ""), cp


def test_erase_email_in_any_case(srv):
    """An email address in any case; its message's attachment links,
    not the attachment another message sends too."""
    inst = srv.inst
    r = srv.post_json("/deliver", {
        "templateId": "welcome",
        "payload": [{"recipient": "Ann@Example.com",
                     "fields": {"first_name": "Ann", "account": "a-1"}},
                    {"recipient": "bob@example.com",
                     "fields": {"first_name": "Bob", "account": "b-1"}}],
        "attachments": [{"attachmentName": "terms.pdf",
                         "content": "JVBERi0xLjQKJSVFT0YK"}]})
    assert r.status_code == 200, r.text
    ann, bob = [e["messageId"] for e in r.json()["recipients"]]
    inst.daemon_once()
    assert (inst.spool / "outbox" / f"{ann}.eml").is_file()
    assert (inst.spool / "blobs" / f"{ann}.0").is_file()
    cp = _erase(inst, "ANN@example.COM")
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert f"sent/{ann}.json" in lines and f"outbox/{ann}.eml" in lines
    assert f"blobs/{ann}.0" in lines, cp.stdout
    assert _summary(cp.stdout).group(1) == "ANN@example.com"
    assert _traces(inst.spool, [ANN], keep=()) == []
    assert _erased(inst.spool, [ann]) == []
    assert srv.get("/messages/" + bob).status_code == 200
    assert (inst.spool / "outbox" / f"{bob}.eml").is_file()
    assert (inst.spool / "blobs" / f"{bob}.0").is_file()


def test_erase_one_client(srv):
    """--client: the other clients' messages to the address stay; an
    unknown client has nothing."""
    inst = srv.inst
    mine = _sms(srv, X)
    theirs = _sms(srv, X, client="other")
    inst.daemon_once()
    cp = _erase(inst, X, "--client", "nobody")
    assert (cp.returncode, cp.stdout) == (0, f"nothing names {X}\n"), cp
    cp = _erase(inst, "--client", "other", X)
    assert cp.returncode == 0, cp.stderr
    assert f"sent/{theirs}.json" in cp.stdout.splitlines()
    assert srv.get("/messages/" + theirs, client="other").status_code == 404
    assert srv.get("/messages/" + mine).status_code == 200
    assert _erased(inst.spool, [theirs]) == []


def test_a_held_message_is_left_and_reported(srv):
    """A message msgspoold holds in cur/ (its claim's lock) is looked at
    for a few seconds, then left whole and reported busy: exit 2.  Once
    let go, it goes."""
    inst = srv.inst
    doc = make_doc("sms", {"to": X, "body": "held"})
    held = enqueue(inst.spool, doc, state="new")
    os.rename(inst.spool / "new" / f"{held}.json",
              inst.spool / "cur" / f"{held}.json")
    other = _sms(srv, X)
    fd = os.open(inst.spool / "cur" / f"{held}.json", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        t0 = time.monotonic()
        cp = _erase(inst, X)
        took = time.monotonic() - t0
        assert cp.returncode == 2, (cp.stdout, cp.stderr)
        assert cp.stderr == (f"msgspool: erase: cur/{held}.json: msgspoold "
                             "is sending it; left, erase again later\n")
        assert f"new/{other}.json" in cp.stdout.splitlines()
        assert _summary(cp.stdout).group(6) == "; 1 busy, left"
        assert 4 <= took < 30, took
        assert (inst.spool / "cur" / f"{held}.json").is_file()
    finally:
        os.close(fd)
    cp = _erase(inst, X)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.splitlines()[0] == f"cur/{held}.json"
    assert _traces(inst.spool, [X_DIGITS]) == []


def test_a_daemon_never_sends_what_is_being_erased(srv):
    """The erasure holds a queued message's lock in cur/, as a cancel
    does: a daemon run meanwhile leaves it, and it never reaches the
    outbox (the fault build stops msgspool erase there)."""
    inst = srv.inst
    msgid = _sms(srv, X)
    env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
    env["MSGSPOOL_STOP"] = "erase: locked"
    p = subprocess.Popen([str(fault_program("msgspool")), "-c",
                          str(inst.conf), "erase", X], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert stopped_or_done(p), p.communicate()
        assert (inst.spool / "cur" / f"{msgid}.json").is_file()
        inst.daemon_once()
        assert (inst.spool / "cur" / f"{msgid}.json").is_file()
        assert list((inst.spool / "outbox").glob(msgid + "*")) == []
        out, err = cont(p)
    finally:
        end(p)
    assert p.returncode == 0, err
    assert f"new/{msgid}.json" in out.splitlines()
    assert inst.where(msgid) == []
    assert list((inst.spool / "outbox").glob(msgid + "*")) == []


@pytest.mark.parametrize("args,why", [
    ([], "usage: msgspool erase ADDRESS [--client ID]"),
    (["+49151"], "msgspool: erase: '+49151' is neither a phone number"),
    (["ann@"], "msgspool: erase: 'ann@' is neither a phone number"),
    (["+49 151 12345678"], "is neither a phone number"),
    ([X, "--client"], "usage: msgspool erase ADDRESS [--client ID]"),
    ([X, "--client", "a/b"], "msgspool: erase: 'a/b' is not a client id"),
    ([X, "--force"], "usage: msgspool erase ADDRESS [--client ID]"),
    ([X, Y], "usage: msgspool erase ADDRESS [--client ID]"),
])
def test_usage_errors(srv, args, why):
    """A bad address or argument: exit 1, one line on stderr, nothing
    removed."""
    msgid = _sms(srv, X)
    cp = _erase(srv.inst, *args)
    assert cp.returncode == 1, cp
    assert cp.stdout == ""
    assert len(cp.stderr.splitlines()) == 1 and why in cp.stderr, cp.stderr
    assert srv.inst.where(msgid) == ["new"]
    assert ID_RE.match(msgid)

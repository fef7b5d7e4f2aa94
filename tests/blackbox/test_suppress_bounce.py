"""Suppressions of source "bounce" (msgspool-spool(5), Suppressions;
msgspoold(8), Outcomes and Receipts): msgspoold suppresses a recipient
for the message's client when a provider says it can never be reached,
in its answer to an attempt or in a receipt:

  - email: a 5xx reply to RCPT TO from the SMTP relay (the SMTP sink),
    a bounce with Action failed and a 5.x.x Status (msgspool-bounce);
  - sms: Twilio 21610, 21211 and 21614 in the API's answer or in a
    status callback's ErrorCode (the Twilio stand-in), an SMSC's
    ESME_RINVDSTADR (the stand-in SMSC); voice: Twilio 21211.

Each shows in GET /suppressions/{channel}/{address} with source bounce,
and the client's next send to the address is refused at acceptance.  A
temporary failure never suppresses (450 to RCPT TO, a delayed or 4.x.x
bounce, ESME_RTHROTTLED, Twilio's 30003), nor does a permanent one that
speaks of something else (5.7.1 relay denied, 554 at DATA, Twilio 21408,
ESME_RSYSERR); one client's suppression never touches another's."""

import urllib.parse

import pytest

from conftest import assert_problem
from delivery_support import daemons  # noqa: F401 (fixture)
from doubles.smsc import ESME_RINVDSTADR, ESME_RTHROTTLED, Smsc
from doubles.smtp import SmtpSink
from doubles.standin import Standin
from harness.dsn import dsn, run_bounce
from openapi_check import check_reply

__all__ = ["daemons"]

# ESME_RSYSERR (SMPP 3.4, 5.1.3): permanent, and nothing of the address.
ESME_RSYSERR = 0x08


@pytest.fixture
def standin():
    with Standin() as s:
        yield s


@pytest.fixture
def sink():
    with SmtpSink() as s:
        yield s


@pytest.fixture
def smsc():
    with Smsc(system_id="acme", password="secret") as s:
        yield s


def _suppression(srv, channel, address, client="acme"):
    """GET /suppressions/{channel}/{address} as client: the object, or
    None on 404."""
    r = srv.get(f"/suppressions/{channel}/"
                + urllib.parse.quote(address, safe=""), client=client)
    check_reply(r)
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    return r.json()


def _bounced(srv, channel, address, client="acme"):
    """The suppression of address, which must be a bounce's."""
    sup = _suppression(srv, channel, address, client=client)
    assert sup is not None, f"{address} not suppressed on {channel} " \
        f"for {client}"
    assert sup["source"] == "bounce", sup
    assert sup["channel"] == channel, sup
    return sup


def _status(srv, mid, client="acme"):
    r = srv.get("/messages/" + mid, client=client)
    assert r.status_code == 200, r.text
    return r.json()


def _email(srv, *to, client="acme"):
    """POST /email/v1/deliver to each of to: the reply's recipients."""
    r = srv.post_json("/email/v1/deliver", {
        "from": "Acme <news@acme.example>", "subject": "Hello",
        "html": "<p>Hi</p>", "recipients": [{"to": t} for t in to]},
        client=client)
    assert r.status_code == 200, r.text
    return r.json()["recipients"]


def _email_refused(srv, to, client="acme"):
    got = _email(srv, to, client=client)
    assert got[0]["status"] == "error", got
    assert got[0]["error"] == "recipient: suppressed (bounce)", got


def _sms_refused(srv, to, client="acme"):
    r = srv.sms(recipient=to, client=client)
    p = assert_problem(r, 422)
    assert p["type"] == "urn:msgspool:problem:suppressed", p
    assert p["errors"] == {"recipient": ["suppressed (bounce)"]}, p


def _sms(srv, to, client="acme"):
    r = srv.sms(recipient=to, client=client)
    assert r.status_code == 202, r.text
    return r.json()["smsId"]


# ----------------------------------------------------------------- smtp

def test_smtp_550_to_rcpt_suppresses_the_address(srv, sink):
    """A 550 5.1.1 to RCPT TO: the message fails and its address is
    suppressed for acme's email (the domain compared in lower case);
    acme's next email to it is refused, other's goes."""
    inst = srv.inst
    inst.write_conf(sink.config("email"))
    bad, good = "Gone@Example.ORG", "here@example.org"
    sink.script(bad, [("rcpt", "550 5.1.1 <Gone@Example.ORG>: Recipient "
                       "address rejected: User unknown")])
    got = _email(srv, bad, good)
    mid, ok = got[0]["messageId"], got[1]["messageId"]
    inst.daemon_once()
    st = _status(srv, mid)
    assert st["status"] == "failed" and st["error"]["code"] == 550, st
    assert _status(srv, ok)["status"] == "sent"
    sup = _bounced(srv, "email", "Gone@example.org")
    assert sup["address"] == "Gone@example.org", sup
    assert "550 5.1.1" in sup["reason"] and mid in sup["reason"], sup
    # The other recipient, and the same address for another client: not.
    assert _suppression(srv, "email", good) is None
    assert _suppression(srv, "email", bad, client="other") is None
    _email_refused(srv, "Gone@example.ORG")
    got = _email(srv, bad, client="other")
    assert got[0]["status"] == "queued", got
    # The file msgspool-spool(5) describes, written durably.
    doc = inst.spool / "suppressions" / "acme" / "email" / \
        "Gone@example.org.json"
    assert doc.is_file()


def test_smtp_failures_that_do_not_suppress(srv, sink):
    """450 to RCPT TO (deferred), 554 5.7.1 relay denied to RCPT TO (the
    relay's policy, not the address), 554 at DATA (the content): none
    suppresses."""
    inst = srv.inst
    inst.write_conf(sink.config("email"))
    busy, relay, data = ("busy@example.org", "far@example.net",
                         "spam@example.org")
    sink.script(busy, [("rcpt", "450 4.2.1 mailbox busy, try later")],
                then=("rcpt", "450 4.2.1 mailbox busy, try later"))
    sink.script(relay, [("rcpt", "554 5.7.1 <far@example.net>: Relay "
                         "access denied")])
    sink.script(data, ["data-reject"])
    got = _email(srv, busy, relay, data)
    inst.daemon_once()
    st = [_status(srv, g["messageId"]) for g in got]
    assert st[0]["status"] == "retrying", st[0]
    assert st[1]["status"] == "failed" and st[1]["error"]["code"] == 554
    assert st[2]["status"] == "failed" and st[2]["error"]["code"] == 554
    for addr in (busy, relay, data):
        assert _suppression(srv, "email", addr) is None, addr
    assert not (inst.spool / "suppressions" / "acme" / "email").exists() \
        or list((inst.spool / "suppressions" / "acme" / "email")
                .iterdir()) == []
    got = _email(srv, busy, relay, data)
    assert [g["status"] for g in got] == ["queued"] * 3, got


# --------------------------------------------------------------- bounces

def _sent_email(srv, to):
    mid = _email(srv, to)[0]["messageId"]
    srv.inst.daemon_once()
    assert _status(srv, mid)["status"] == "sent"
    return mid


def test_a_5xx_bounce_suppresses_the_address(srv):
    """A DSN with Action failed and Status 5.1.1 (msgspool-bounce):
    undelivered, and the address suppressed for acme's email with the
    status and diagnostic; not for other."""
    inst = srv.inst
    to = "bob@example.org"
    mid = _sent_email(srv, to)
    cp = run_bounce(inst, dsn("failed", "5.1.1", "550 5.1.1 <bob@example.org>"
                              ": Recipient address rejected: User unknown",
                              rcpt=to), "-r", f"bounces+{mid}@acme.example")
    assert cp.returncode == 0, cp.err
    cp = inst.daemon_once()
    assert _status(srv, mid)["status"] == "undelivered"
    sup = _bounced(srv, "email", to)
    assert sup["reason"].startswith("bounce 5.1.1: 550 5.1.1"), sup
    assert "User unknown" in sup["reason"] and mid in sup["reason"], sup
    assert f"{to} suppressed for acme on email (bounce)" in cp.err, cp.err
    assert _suppression(srv, "email", to, client="other") is None
    _email_refused(srv, to)
    assert _email(srv, to, client="other")[0]["status"] == "queued"
    # The same bounce again changes nothing, and the suppression stays.
    cp = run_bounce(inst, dsn("failed", "5.1.1", "550 again", rcpt=to),
                    "-r", f"bounces+{mid}@acme.example")
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    assert _bounced(srv, "email", to) == sup


@pytest.mark.parametrize("action,status", [
    ("delayed", "4.4.1"),           # a delay: an event only
    ("failed", "4.4.7"),            # given up after temporary failures
    ("failed", "5.7.1"),            # refused by policy (spam, DMARC)
])
def test_bounces_that_do_not_suppress(srv, action, status):
    inst = srv.inst
    to = "carol@example.org"
    mid = _sent_email(srv, to)
    cp = run_bounce(inst, dsn(action, status, f"{status[0]}50 {status} "
                              "no luck", rcpt=to),
                    "-r", f"bounces+{mid}@acme.example")
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    st = _status(srv, mid)
    assert st["status"] == ("sent" if action == "delayed" else
                            "undelivered"), st
    assert _suppression(srv, "email", to) is None
    assert _email(srv, to)[0]["status"] == "queued"


# --------------------------------------------------------------- twilio

@pytest.mark.parametrize("code", [21610, 21211, 21614])
def test_twilio_refusal_suppresses_the_number(srv, standin, code):
    """Twilio answers the send 400 with one of its codes for a number
    that cannot be reached (21610 unsubscribed, 21211 invalid, 21614 not
    a mobile): failed, the number suppressed for acme's sms."""
    inst = srv.inst
    inst.write_conf(standin.twilio_config("sms"))
    num = "+4915112399%03d" % (code % 1000)
    standin.script(num, [("status", 400, code, f"Twilio says {code}")])
    mid = _sms(srv, num)
    inst.daemon_once()
    assert standin.violations == [], standin.violations
    st = _status(srv, mid)
    assert st["status"] == "failed" and st["error"]["code"] == code, st
    sup = _bounced(srv, "sms", num)
    assert f"Twilio error {code}" in sup["reason"], sup
    assert _suppression(srv, "sms", num, client="other") is None
    # Only sms: the number may still be called.
    assert _suppression(srv, "voice", num) is None
    _sms_refused(srv, num)
    _sms(srv, num, client="other")


def test_twilio_other_errors_do_not_suppress(srv, standin):
    """21408 (no permission for the region: the account's), a 500 and a
    429 (temporary): none suppresses."""
    inst = srv.inst
    inst.write_conf(standin.twilio_config("sms"))
    region, down, slow = "+4915112398001", "+4915112398002", \
        "+4915112398003"
    standin.script(region, [("status", 403, 21408, "no permission")])
    standin.script(down, [("500",)])
    standin.script(slow, [("429", 1)])
    mids = [_sms(srv, n) for n in (region, down, slow)]
    inst.daemon_once()
    st = [_status(srv, m)["status"] for m in mids]
    assert st == ["failed", "retrying", "retrying"], st
    for n in (region, down, slow):
        assert _suppression(srv, "sms", n) is None, n
        _sms(srv, n)


def test_twilio_call_to_an_invalid_number_suppresses_voice(srv, standin):
    """A call Twilio refuses with 21211 (not a valid number): the number
    is suppressed for acme's voice, and only voice."""
    inst = srv.inst
    inst.write_conf(standin.twilio_config("voice"))
    num = "+4915112397001"
    standin.script(num, [("status", 400, 21211,
                          f"Invalid 'To' Phone Number: {num}")])
    r = srv.post_json("/voice/v1/deliver", {"recipient": num,
                                            "message": "Hello"})
    assert r.status_code == 202, r.text
    cid = r.json()["callId"]
    inst.daemon_once()
    assert _status(srv, cid)["status"] == "failed"
    _bounced(srv, "voice", num)
    assert _suppression(srv, "sms", num) is None
    r = srv.post_json("/voice/v1/deliver", {"recipient": num,
                                            "message": "Hello"})
    p = assert_problem(r, 422)
    assert p["errors"] == {"recipient": ["suppressed (bounce)"]}, p
    _sms(srv, num)


@pytest.mark.parametrize("code,suppressed", [("21614", True),
                                             ("21610", True),
                                             ("30003", False)])
def test_twilio_callback_error_code(srv, standin, daemons, code,
                                    suppressed):
    """Twilio's status callback, failed with its ErrorCode: 21614 and
    21610 suppress the number, 30003 (unreachable handset, for now) does
    not; the message is undelivered either way."""
    if srv.kind == "busybox":
        pytest.skip("busybox httpd serves /cgi-bin/receipts/twilio only: "
                    "no public URL of the route to give Twilio")
    inst = srv.inst
    public = srv.url("").rstrip("/")
    inst.write_conf(f"public-url = {public}\n" +
                    standin.twilio_config("sms"))
    standin.twilio_callbacks = [("failed", code)]
    num = "+4915112396%s" % code[-3:]
    mid = _sms(srv, num)
    daemons.once(inst.conf)
    got = standin.wait_callbacks(1)
    assert [c for _, c in got] == [200], got
    daemons.once(inst.conf)
    st = _status(srv, mid)
    assert st["status"] == "undelivered", st
    assert st["error"]["code"] == code, st
    if suppressed:
        sup = _bounced(srv, "sms", num)
        assert f"Twilio error {code}" in sup["reason"], sup
        _sms_refused(srv, num)
    else:
        assert _suppression(srv, "sms", num) is None
        _sms(srv, num)
    assert _suppression(srv, "sms", num, client="other") is None


# ----------------------------------------------------------------- smpp

def test_smsc_invalid_destination_suppresses_the_number(srv, smsc):
    """ESME_RINVDSTADR in the submit_sm_resp: failed, the number
    suppressed for acme's sms; ESME_RTHROTTLED (temporary) and
    ESME_RSYSERR (the SMSC's own trouble) do not suppress."""
    inst = srv.inst
    inst.write_conf(smsc.config())
    bad, busy, broken = "+4915112395001", "+4915112395002", \
        "+4915112395003"
    smsc.script(bad.lstrip("+"), [ESME_RINVDSTADR])
    smsc.script(busy.lstrip("+"), [ESME_RTHROTTLED] * 20)
    smsc.script(broken.lstrip("+"), [ESME_RSYSERR])
    mids = [_sms(srv, n) for n in (bad, busy, broken)]
    inst.daemon_once()
    assert smsc.violations == [], smsc.violations
    st = [_status(srv, m) for m in mids]
    assert [s["status"] for s in st] == ["failed", "retrying", "failed"], st
    sup = _bounced(srv, "sms", bad)
    assert "ESME_RINVDSTADR" in sup["reason"], sup
    assert _suppression(srv, "sms", bad, client="other") is None
    for n in (busy, broken):
        assert _suppression(srv, "sms", n) is None, n
    _sms_refused(srv, bad)
    _sms(srv, bad, client="other")
    _sms(srv, broken)

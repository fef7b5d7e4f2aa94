"""msgspool-bounce: an RFC 3464 bounce on stdin, found by its VERP return
path or by the Message-ID msgspool set, recorded as a receipt that
msgspoold applies (msgspool-spool(5)); the exit status per sysexits."""

from conftest import BIN_DIR
from delivery_support import daemons  # noqa: F401 (fixture)
from harness.dsn import dsn as _dsn, returned_headers as _returned_headers, \
    returned_message as _returned_message, run_bounce as _bounce

__all__ = ["daemons"]


def _send_email(srv, to="bob@example.org"):
    r = srv.post_json("/email/v1/deliver", {
        "from": "Acme <news@acme.example>", "subject": "Hello",
        "html": "<p>Hi</p>", "recipients": [{"to": to}]})
    assert r.status_code == 200, r.text
    mid = r.json()["recipients"][0]["messageId"]
    srv.inst.daemon_once()
    assert srv.get("/messages/" + mid).json()["status"] == "sent"
    return mid


def test_verp_bounce_makes_it_undelivered(srv):
    inst = srv.inst
    mid = _send_email(srv)
    cp = _bounce(inst, _dsn("failed", "5.1.1", "550 5.1.1 <bob@example.org>"
                            ": Recipient address rejected: User unknown"),
                 "-r", f"bounces+{mid}@acme.example")
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    st = srv.get("/messages/" + mid).json()
    assert st["status"] == "undelivered", st
    assert st["error"]["code"] == "5.1.1"
    assert "User unknown" in st["error"]["message"]
    assert st["events"][-1]["source"] == "receipt"


def test_bounce_found_by_message_id(srv):
    inst = srv.inst
    mid = _send_email(srv)
    cp = _bounce(inst, _dsn("failed", "5.2.2", "552 mailbox full",
                            returned=_returned_message(mid)))
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    assert srv.get("/messages/" + mid).json()["status"] == "undelivered"


def test_bounce_with_returned_headers_and_delayed(srv):
    inst = srv.inst
    mid = _send_email(srv)
    hdrs = _returned_headers(mid)
    cp = _bounce(inst, _dsn("delayed", "4.4.1", "connect timed out",
                            returned=hdrs))
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    st = srv.get("/messages/" + mid).json()
    assert st["status"] == "sent"            # delayed is an event only
    assert "delayed" in [e["status"] for e in st["events"]]
    cp = _bounce(inst, _dsn("delivered", "2.0.0", "250 ok", returned=hdrs))
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    assert srv.get("/messages/" + mid).json()["status"] == "delivered"


def test_not_ours_is_exit_0_and_nothing_stored(srv):
    inst = srv.inst
    cp = _bounce(inst, _dsn("failed", "5.1.1", "550 no"),
                 "-r", "bounces+01M8500000000000000000GHST@acme.example")
    assert cp.returncode == 0, cp.err
    cp = _bounce(inst, b"Subject: not a report\n\nhello\n")
    assert cp.returncode == 0, cp.err
    receipts = inst.spool / "receipts"
    assert not receipts.exists() or list(receipts.iterdir()) == []


def test_bounce_for_an_sms_is_not_ours(srv):
    """A bounce is for email: one whose VERP address or returned
    Message-ID names an SMS (sent, or still queued) is not ours: exit 0,
    a log line, nothing stored, and the SMS stays as it was."""
    inst = srv.inst
    sent = srv.sms(recipient="+4915112340076").json()["smsId"]
    inst.daemon_once()
    queued = srv.sms(recipient="+4915112340077").json()["smsId"]
    for sid, data, args in (
            (sent, _dsn("failed", "5.1.1", "550 no"),
             ["-r", f"bounces+{sent}@acme.example"]),
            (sent, _dsn("failed", "5.1.1", "550 no",
                        returned=_returned_message(sent)), []),
            (queued, _dsn("failed", "5.1.1", "550 no"),
             ["-r", f"bounces+{queued}@acme.example"])):
        cp = _bounce(inst, data, *args)
        assert cp.returncode == 0, cp.err
        receipts = inst.spool / "receipts"
        assert not receipts.exists() or list(receipts.iterdir()) == []
        assert [ln for ln in cp.err.splitlines()
                if sid in ln and "not ours" in ln], cp.err
    inst.daemon_once()
    for sid in (sent, queued):
        st = srv.get("/messages/" + sid).json()
        assert st["status"] == "sent", st
        assert [e for e in st["events"] if e.get("source") == "receipt"] \
            == [], st["events"]


def test_usage_and_bad_config(srv, tmp_path):
    cp = srv.inst._run([BIN_DIR / "msgspool-bounce", "-x"], input=b"")
    assert cp.returncode == 64
    cp = srv.inst._run([BIN_DIR / "msgspool-bounce", "-c",
                        tmp_path / "nope.conf"], input=b"")
    assert cp.returncode == 78


def test_smtp_sends_from_the_verp_address(srv, daemons):
    """With bounce-address, MAIL FROM names the message; the From header
    stays the sender's."""
    from doubles.smtp import SmtpSink

    inst = srv.inst
    with SmtpSink() as sink:
        inst.write_conf(sink.config("email", starttls="no") +
                        "bounce-address = bounces@acme.example\n")
        r = srv.post_json("/email/v1/deliver", {
            "from": "news@acme.example", "subject": "Hello",
            "html": "<p>Hi</p>", "recipients": [{"to": "bob@example.org"}]})
        assert r.status_code == 200, r.text
        mid = r.json()["recipients"][0]["messageId"]
        daemons.once(inst.conf)
        got = sink.wait_for(1)
    assert got[0].mail_from == f"bounces+{mid}@acme.example"
    assert "news@acme.example" in got[0].message["From"]
    # Its bounce comes back to that address and finds it.
    cp = _bounce(inst, _dsn("failed", "5.1.1", "550 no such user"),
                 "-r", got[0].mail_from)
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    assert srv.get("/messages/" + mid).json()["status"] == "undelivered"

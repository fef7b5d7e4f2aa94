"""
msgspoold's providers and its outcome policy (msgspoold(8), README
"Delivery" and "The spool"), against the test doubles: SmtpSink for
email, Standin for Twilio (Messages and Calls), the WhatsApp Cloud API
and the generic webhook.  Messages are queued through the real HTTP API
(at least one test per channel) or as spool files written the way the
CGI programs write them.  The daemon running (its concurrency, timing
and signals): test_delivery_daemon.py.
"""

import base64
import datetime
import email.utils
import os
import re
import struct
import time
import zlib

import pytest

from conftest import utcnow
from delivery_support import (assert_sent, daemons, enqueue, inst, load,
                              make_doc, queue_ott, queue_sms, run_cli,
                              standin, timestamp, where)
from doubles.smtp import SmtpSink
from doubles.standin import DEFAULT_TWILIO_FROM, DEFAULT_WA_TOKEN

__all__ = ["daemons", "inst", "standin"]   # the fixtures, imported for pytest

BACKOFF_MIN, BACKOFF_MAX = 48, 72   # first backoff: 60 s +-20 %


def png_1x1():
    """A valid 1x1 PNG."""
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", idat) + chunk(b"IEND", b""))


PDF = (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
       b"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\n"
       b"trailer\n<< /Root 1 0 R >>\n%%EOF\n")


def b64(data):
    return base64.b64encode(data).decode("ascii")


def assert_deferred(spool, msgid, lo, hi, since, attempts=1):
    """msgid is in deferred/ with attempts, a lastError, a nextAttempt
    lo..hi seconds after its attempt, and the file's mtime at nextAttempt.
    since is a time.time() taken before the daemon ran: the attempt was
    made between since and now, whatever the time the daemon and this
    check took (a sanitizer build's exit, a busy machine)."""
    assert where(spool, msgid) == ["deferred"], where(spool, msgid)
    doc = load(spool, "deferred", msgid)
    assert doc["attempts"] == attempts, doc
    assert isinstance(doc["lastError"], str) and doc["lastError"], doc
    due = timestamp(doc["nextAttempt"])
    now = time.time()
    assert lo <= due - since and due - now <= hi, (
        "due %.1fs after the run began, %.1fs from now; want %s..%s" % (
            due - since, due - now, lo, hi), doc)
    mtime = os.stat(spool / "deferred" / (msgid + ".json")).st_mtime
    assert abs(mtime - due) < 1.0, (mtime, doc["nextAttempt"])
    return doc


def assert_failed(spool, msgid, attempts=1):
    assert where(spool, msgid) == ["failed"], where(spool, msgid)
    doc = load(spool, "failed", msgid)
    assert doc["attempts"] == attempts, doc
    assert isinstance(doc["lastError"], str) and doc["lastError"], doc
    return doc


# --------------------------------------------------------------- SMTP

@pytest.mark.parametrize("starttls", ["no", "try"])
def test_smtp_email_via_api(srv, daemons, starttls):
    inst = srv.inst
    with SmtpSink(username="mailer", password="s3cret-pw") as sink:
        inst.write_conf(sink.config("email", starttls=starttls))
        subject_tmpl = ("Grüße, {{name}}: Ihre Bestellung über 5 € ist "
                        "unterwegs 🚚 — Nr. {{order}}")
        png = png_1x1()
        text = b"line one\nline two \xc3\xa4\n"
        r = srv.post_json("/email/v1/deliver", {
            "from": "ACME Shop <shop@acme.example>",
            "subject": subject_tmpl,
            "html": "<html><body><p>Hallo {{name}},</p>"
                    "<p>Bestellung {{order}} ist unterwegs.</p>"
                    "</body></html>",
            "recipients": [{"to": "kunde@example.org",
                            "fields": {"name": "Tom & <Jerry>",
                                       "order": "A-42"}}],
            "attachments": [
                {"attachmentName": "report.pdf", "content": b64(PDF)},
                {"attachmentName": "pixel.png", "content": b64(png)},
                {"attachmentName": "notes.txt", "content": b64(text)},
            ],
        }, client="acme")
        assert r.status_code == 200, r.text
        res = r.json()
        assert res["overallStatus"] == "success", res
        mid = res["recipients"][0]["messageId"]
        queued = load(inst.spool, "new", mid)["message"]

        daemons.once(inst.conf)
        got = sink.wait_for(1, timeout=5)
        assert len(got) == 1, got
        m = got[0]

    subject = ("Grüße, Tom & <Jerry>: Ihre Bestellung über 5 € ist "
               "unterwegs 🚚 — Nr. A-42")
    assert m.mail_from == "shop@acme.example"
    assert m.rcpt_tos == ["kunde@example.org"]
    assert any(a["success"] and a["login"] == "mailer"
               for a in sink.auth_attempts), sink.auth_attempts
    msg = m.message
    # Headers.
    assert msg["Subject"] == subject, msg["Subject"]
    # On the wire: RFC 2047 encoded words, never 8-bit header bytes.
    raw_head = m.data.split(b"\r\n\r\n", 1)[0]
    assert all(b < 0x80 for b in raw_head), raw_head
    raw_subject = re.search(rb"(?mi)^Subject:[ \t]*(\S+)", raw_head)
    assert raw_subject and raw_subject.group(1).upper().startswith(
        b"=?UTF-8?"), raw_head
    assert msg["From"].addresses[0].addr_spec == "shop@acme.example"
    assert msg["From"].addresses[0].display_name == "ACME Shop"
    assert msg["To"].addresses[0].addr_spec == "kunde@example.org"
    assert msg["Date"] is not None
    sent_at = email.utils.parsedate_to_datetime(str(msg["Date"]))
    assert abs((sent_at - utcnow()).total_seconds()) < 300, msg["Date"]
    msgid_hdr = msg["Message-ID"]
    assert msgid_hdr and msgid_hdr.startswith("<") and \
        msgid_hdr.endswith(">") and "@" in msgid_hdr, msgid_hdr
    # Bodies.
    html = msg.get_body(preferencelist=("html",))
    assert html is not None, msg
    h = html.get_content()
    assert "Hallo Tom &amp; &lt;Jerry&gt;," in h, h
    assert "<Jerry>" not in h
    plain = msg.get_body(preferencelist=("plain",))
    assert plain is not None and plain.get_content_type() == "text/plain"
    p = plain.get_content()
    assert "Tom & <Jerry>" in p, p
    assert "A-42" in p and "<p>" not in p, p
    # Attachments: bytes, names and types as queued.
    atts = {name: (ctype, data) for name, ctype, data in m.attachments}
    assert set(atts) == {"report.pdf", "pixel.png", "notes.txt"}, atts.keys()
    assert atts["report.pdf"] == ("application/pdf", PDF)
    assert atts["pixel.png"] == ("image/png", png)
    assert atts["notes.txt"][1] == text
    for a in queued["attachments"]:
        assert atts[a["name"]][0] == a["contentType"].split(";")[0], a
    # The spool file.
    assert_sent(inst.spool, mid)


def test_smtp_reject_fails_and_tempfail_defers(srv, daemons):
    inst = srv.inst
    with SmtpSink(username="mailer", password="pw") as sink:
        inst.write_conf(sink.config("email", starttls="no"))
        sink.script("nobody@example.org", ["reject"])       # 550 at RCPT
        sink.script("busy@example.org", ["tempfail"])       # 451 at RCPT
        r = srv.post_json("/deliver", {
            "from": "shop@acme.example", "subject": "Hi", "html": "<p>x</p>",
            "payload": [{"recipient": "nobody@example.org"},
                        {"recipient": "busy@example.org"},
                        {"recipient": "fine@example.org"}]})
        assert r.status_code == 200, r.text
        ids = {e["recipient"]: e["messageId"]
               for e in r.json()["recipients"]}
        since = time.time()
        daemons.once(inst.conf)
        got = sink.wait_for(1, timeout=5)
        assert [m.rcpt_tos for m in got] == [["fine@example.org"]]
    assert_sent(inst.spool, ids["fine@example.org"])
    doc = assert_failed(inst.spool, ids["nobody@example.org"])
    assert "550" in doc["lastError"], doc
    assert doc["nextAttempt"] is None, doc
    doc = assert_deferred(inst.spool, ids["busy@example.org"], BACKOFF_MIN - 2,
                          BACKOFF_MAX + 2, since)
    assert "451" in doc["lastError"], doc


def test_smtp_reject_reason_is_the_servers_text(inst, daemons):
    # README: "any other 4xx (SMTP 5xx) -> failed/ with the provider's
    # reason": the relay's own words, not only its code.
    with SmtpSink() as sink:
        inst.write_conf(sink.config("email", starttls="no"))
        sink.script("gone@example.org", [("rcpt", "550 5.1.1 mailbox "
                                          "gone-away-xyz unknown")])
        mid = enqueue(inst.spool, make_doc("email", {
            "from": "shop@acme.example", "to": "gone@example.org",
            "subject": "Hi", "html": "<p>x</p>", "text": "x",
            "attachments": []}))
        daemons.once(inst.conf)
    doc = assert_failed(inst.spool, mid)
    assert "550" in doc["lastError"], doc
    assert "gone-away-xyz" in doc["lastError"], doc["lastError"]


# ------------------------------------------------------------- Twilio

def test_twilio_sms_via_api(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.twilio_config("sms"))
    body = "Grüße & <tags> 😀 \"quoted\" + percent %20 = done"
    r = srv.sms(recipient="+4915112340001", messageBody=body)
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    daemons.once(inst.conf)
    reqs = standin.wait_for(1, timeout=5, api="twilio")
    assert standin.violations == [], standin.violations
    assert len(reqs) == 1, reqs
    rec = reqs[0]
    assert rec["api"] == "twilio.messages"
    assert rec["form"] == {"To": "+4915112340001",
                           "From": DEFAULT_TWILIO_FROM, "Body": body}, \
        rec["form"]
    assert rec["auth"]["scheme"] == "basic"
    assert rec["auth"]["username"] == standin.twilio_account_sid
    doc = assert_sent(inst.spool, sid)
    assert doc["providerReply"]["sid"] == rec["response"]["sid"], doc
    assert doc["providerReply"]["sid"].startswith("SM")


def test_twilio_voice_say_and_play_via_api(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.twilio_config("voice"))
    r = srv.post_json("/voice/v1/deliver", {
        "recipient": "+4915112340002",
        "message": "Ihr Code ist 1 2 3 & <fertig> \"jetzt\"",
        "language": "de-DE"})
    assert r.status_code == 202, r.text
    say_id = r.json()["callId"]
    audio = "https://media.example.com/msg.mp3?a=1&b=<2>"
    r = srv.post_json("/voice/v1/deliver", {
        "recipient": "+4915112340003", "audioUrl": audio,
        "callerId": "+4930123456"})
    assert r.status_code == 202, r.text
    play_id = r.json()["callId"]
    daemons.once(inst.conf)
    reqs = standin.wait_for(2, timeout=5, api="twilio.calls")
    assert standin.violations == [], standin.violations
    by_to = {rec["form"]["To"]: rec for rec in reqs}
    say = by_to["+4915112340002"]
    assert say["form"]["From"] == DEFAULT_TWILIO_FROM
    assert say["twiml"] == {"verb": "Say",
                            "text": "Ihr Code ist 1 2 3 & <fertig> \"jetzt\"",
                            "attrib": {"language": "de-DE"}}, say["twiml"]
    play = by_to["+4915112340003"]
    assert play["form"]["From"] == "+4930123456"
    assert play["twiml"] == {"verb": "Play", "text": audio,
                             "attrib": {}}, play["twiml"]
    for msgid, rec in ((say_id, say), (play_id, play)):
        doc = assert_sent(inst.spool, msgid)
        assert doc["providerReply"]["sid"] == rec["response"]["sid"]
        assert doc["providerReply"]["sid"].startswith("CA")


@pytest.mark.parametrize("step", ["400", "429", "500", "drop"])
def test_twilio_outcome_policy(inst, standin, daemons, step):
    inst.write_conf(standin.twilio_config("sms"))
    to = "+4915112340010"
    standin.script(to, [{"400": ("status", 400), "429": ("429", 120),
                         "500": ("500",), "drop": ("drop",)}[step]])
    msgid = queue_sms(inst.spool, to, "policy " + step)
    since = time.time()
    daemons.once(inst.conf)
    reqs = standin.wait_for(1, timeout=5, api="twilio")
    assert standin.violations == [], standin.violations
    assert len(reqs) == 1, [r["outcome"] for r in reqs]
    if step == "400":
        doc = assert_failed(inst.spool, msgid)
        assert ("The 'To' number %s is not a valid phone number." % to) \
            in doc["lastError"], doc
        assert doc["nextAttempt"] is None, doc
    elif step == "429":
        doc = assert_deferred(inst.spool, msgid, 115, 122, since)
        assert "429" in doc["lastError"], doc
    else:
        doc = assert_deferred(inst.spool, msgid, BACKOFF_MIN - 2,
                              BACKOFF_MAX + 2, since)
        if step == "500":
            assert "500" in doc["lastError"], doc
    # Not due: another run sends nothing.
    daemons.once(inst.conf)
    assert len(standin.requests) == 1
    assert where(inst.spool, msgid) == [("failed" if step == "400" else
                                         "deferred")]


def test_retry_by_hand_then_sent(inst, standin, daemons):
    inst.write_conf(standin.twilio_config("sms"))
    a, b = "+4915112340020", "+4915112340021"
    standin.script(a, [("500",)])           # then ok
    # then ok; the account's error (not 21211, the stand-in's default,
    # which suppresses the number, so that no retry would send it)
    standin.script(b, [("status", 400, 21606, "The From phone number is "
                        "not a valid, SMS-capable inbound phone number")])
    da = queue_sms(inst.spool, a, "retry deferred")
    db = queue_sms(inst.spool, b, "retry failed")
    daemons.once(inst.conf)
    assert where(inst.spool, da) == ["deferred"]
    assert where(inst.spool, db) == ["failed"]
    cp = run_cli(inst.conf, "retry", da)
    assert cp.returncode == 0, cp.stderr
    cp = run_cli(inst.conf, "retry", "--failed")
    assert cp.returncode == 0, cp.stderr
    assert where(inst.spool, da) == ["new"]
    assert where(inst.spool, db) == ["new"]
    daemons.once(inst.conf)
    for msgid in (da, db):
        doc = assert_sent(inst.spool, msgid, attempts=2)
        assert doc["providerReply"]["sid"].startswith("SM"), doc
    assert [r["outcome"] for r in standin.requests].count("ok") == 2
    assert standin.violations == []


def test_max_age_turns_a_temporary_failure_final(inst, standin, daemons):
    inst.write_conf("max-age = 1s\n" + standin.twilio_config("sms"))
    old, fresh_to = "+4915112340030", "+4915112340031"
    standin.script(old, [("500",)])
    msgid = queue_sms(inst.spool, old, "too old",
                      created=utcnow() - datetime.timedelta(hours=1))
    daemons.once(inst.conf)
    doc = assert_failed(inst.spool, msgid)
    assert "500" in doc["lastError"], doc
    assert standin.violations == []
    # The same failure of a young message (default max-age) defers it.
    inst.write_conf(standin.twilio_config("sms"))
    standin.script(fresh_to, [("500",)])
    young = queue_sms(inst.spool, fresh_to, "young")
    daemons.once(inst.conf)
    assert where(inst.spool, young) == ["deferred"]


# ----------------------------------------------------------- WhatsApp

ORDER_TMPL = ("Name: Order update\nParameters: 3\nLanguage: de_DE\n"
              "Provider-Template: order_update_v2\n\n"
              "Hallo {{1}}, Bestellung {{2}} kommt am {{3}}.\n")


def test_whatsapp_via_api(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.whatsapp_config(1))
    order = inst.templates / "acme" / "ott" / "order.tmpl"
    order.write_text(ORDER_TMPL)
    try:
        r = srv.post_json("/ott/v1/deliver", {"payload": [
            {"recipient": "4915112340040", "templateID": "otp",
             "templateParameters": ["123456"], "channelType": 1},
            {"recipient": "4915112340041", "templateID": "order",
             "templateParameters": ["Anna", "A-42 ü", "Montag"],
             "channelType": 1}]})
    finally:
        order.unlink()
    assert r.status_code == 200, r.text
    res = r.json()
    assert [e["status"] for e in res] == ["queued", "queued"], res
    ids = {e["recipient"]: e["messageId"] for e in res}
    daemons.once(inst.conf)
    reqs = standin.wait_for(2, timeout=5, api="whatsapp")
    assert standin.violations == [], standin.violations
    by_to = {rec["json"]["to"]: rec for rec in reqs}
    assert set(by_to) == set(ids), by_to.keys()
    otp = by_to["4915112340040"]
    assert otp["template"] == {"name": "otp_code", "language": "en",
                               "parameters": ["123456"]}, otp["template"]
    upd = by_to["4915112340041"]
    assert upd["template"] == {"name": "order_update_v2",
                               "language": "de_DE",
                               "parameters": ["Anna", "A-42 ü", "Montag"]}, \
        upd["template"]
    for to, rec in by_to.items():
        assert rec["auth"] == {"scheme": "bearer", "token": DEFAULT_WA_TOKEN}
        assert rec["json"]["messaging_product"] == "whatsapp"
        assert rec["json"]["type"] == "template"
        doc = assert_sent(inst.spool, ids[to])
        assert doc["providerReply"]["wamid"] == \
            rec["response"]["messages"][0]["id"], doc
        assert doc["providerReply"]["wamid"].startswith("wamid.")


def test_whatsapp_graph_error_fails(inst, standin, daemons):
    inst.write_conf(standin.whatsapp_config(1))
    to = "4915112340042"
    standin.script(to, [("status", 400)])
    msgid = queue_ott(inst.spool, to, provider_template="otp_code",
                      parameters=["99"], body="Your code is 99")
    daemons.once(inst.conf)
    reqs = standin.wait_for(1, timeout=5, api="whatsapp")
    assert standin.violations == [], standin.violations
    assert reqs[0]["template"]["name"] == "otp_code"
    doc = assert_failed(inst.spool, msgid)
    assert "Recipient phone number not in allowed list" in \
        doc["lastError"], doc


# ------------------------------------------------------------ webhook

def test_http_webhook_headers_and_body(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.hook_config(
        "sms", headers=["Authorization: Bearer s3cret-hook",
                        "X-Tenant: acme-eu"]))
    r = srv.sms(recipient="+4915112340050", messageBody="hook ü")
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    daemons.once(inst.conf)
    reqs = standin.wait_for(1, timeout=5, api="hook")
    assert standin.violations == [], standin.violations
    rec = reqs[0]
    assert rec["method"] == "POST"
    assert rec["headers"].get("Authorization") == "Bearer s3cret-hook"
    assert rec["headers"].get("X-Tenant") == "acme-eu"
    assert rec["headers"].get("Content-Type").startswith("application/json")
    assert rec["json"] == {"id": sid, "channel": "sms", "client": "acme",
                           "message": {"to": "+4915112340050",
                                       "body": "hook ü"}}, rec["json"]
    doc = assert_sent(inst.spool, sid)
    assert doc["providerReply"]["provider"] == "http", doc

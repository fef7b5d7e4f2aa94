"""
Tests of the test doubles themselves: the provider stand-in (standin.py),
the SMTP sink (doubles/smtp.py) and the SMSC (doubles/smsc.py). No msgspool
program is involved.
"""

import os
import re
import shutil
import socket
import smtplib
import ssl
import struct
import subprocess
import threading
import time
from email.message import EmailMessage

import pytest
import requests

from doubles.smtp import OPENSSL, SmtpSink
from doubles.standin import Standin

T = 5  # seconds: every client request and every wait is bounded by this

TO = "+4915112345678"
WA_TO = "4915112345678"


@pytest.fixture(scope="module")
def server():
    with Standin() as s:
        yield s


@pytest.fixture(autouse=True)
def fresh(server):
    server.reset()
    yield


def twilio_post(server, resource, data, auth=None, **kw):
    url = "%s/2010-04-01/Accounts/%s/%s.json" % (
        server.twilio_base, server.twilio_account_sid, resource)
    if auth is None:
        auth = (server.twilio_account_sid, server.twilio_auth_token)
    return requests.post(url, data=data, auth=auth, timeout=T, **kw)


def sms(server, to=TO, body="Hello from msgspool", **kw):
    data = {"To": to, "From": server.twilio_from, "Body": body}
    return twilio_post(server, "Messages", data, **kw)


def wa_post(server, doc, token=None, phone_id=None):
    url = "%s/%s/messages" % (server.whatsapp_base,
                              phone_id or server.whatsapp_phone_number_id)
    return requests.post(url, json=doc, timeout=T, headers={
        "Authorization": "Bearer " + (token or server.whatsapp_token)})


def wa_template(to=WA_TO, params=("Ada", "1234")):
    tpl = {"name": "otp_code", "language": {"code": "en_US"}}
    if params:
        tpl["components"] = [{"type": "body", "parameters": [
            {"type": "text", "text": p} for p in params]}]
    return {"messaging_product": "whatsapp", "recipient_type": "individual",
            "to": to, "type": "template", "template": tpl}


# -- Twilio ----------------------------------------------------------------

def test_twilio_message_success_shape(server):
    r = sms(server, body="Grüße 😀")
    assert r.status_code == 201, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    j = r.json()
    assert re.fullmatch(r"SM[0-9a-f]{32}", j["sid"])
    assert j["account_sid"] == server.twilio_account_sid
    assert j["to"] == TO and j["from"] == server.twilio_from
    assert j["body"] == "Grüße 😀"
    assert j["status"] == "queued"
    assert j["num_segments"] == "1"
    assert j["direction"] == "outbound-api"
    assert j["api_version"] == "2010-04-01"
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} "
                        r"\d{2}:\d{2}:\d{2} \+0000", j["date_created"])
    assert j["uri"] == "/2010-04-01/Accounts/%s/Messages/%s.json" % (
        server.twilio_account_sid, j["sid"])
    [rec] = server.sent("twilio")
    assert rec["api"] == "twilio.messages"
    assert rec["form"] == {"To": TO, "From": server.twilio_from,
                           "Body": "Grüße 😀"}
    assert rec["auth"] == {"scheme": "basic",
                           "username": server.twilio_account_sid,
                           "password": server.twilio_auth_token}
    assert rec["outcome"] == "ok" and rec["status"] == 201
    assert server.violations == []


def test_twilio_long_body_segments(server):
    r = sms(server, body="x" * 161)
    assert r.status_code == 201 and r.json()["num_segments"] == "2"
    r = sms(server, body="x" * 1601)
    assert r.status_code == 400 and r.json()["code"] == 21617


def test_twilio_wrong_auth_is_401_and_violation(server):
    r = sms(server, auth=(server.twilio_account_sid, "wrong"))
    assert r.status_code == 401
    assert r.json() == {"code": 20003, "message": "Authenticate",
                        "more_info": "https://www.twilio.com/docs/errors/20003",
                        "status": 401}
    assert "WWW-Authenticate" in r.headers
    [v] = server.violations
    assert v["api"] == "twilio.messages" and "credentials" in v["reason"]
    # Another account's path with our credentials, and no auth at all.
    url = "%s/2010-04-01/Accounts/AC%s/Messages.json" % (
        server.twilio_base, "f" * 32)
    r = requests.post(url, data={"To": TO, "From": server.twilio_from,
                                 "Body": "x"}, timeout=T,
                      auth=(server.twilio_account_sid,
                            server.twilio_auth_token))
    assert r.status_code == 401
    r = requests.post(url, data={"To": TO}, timeout=T)
    assert r.status_code == 401
    assert len(server.violations) == 3
    assert server.sent() == []


def test_twilio_missing_body_is_400_and_violation(server):
    r = twilio_post(server, "Messages", {"To": TO,
                                         "From": server.twilio_from})
    assert r.status_code == 400
    j = r.json()
    assert j["code"] == 21602 and j["status"] == 400
    assert j["more_info"] == "https://www.twilio.com/docs/errors/21602"
    [v] = server.violations
    assert "body is required" in v["reason"].lower()


def test_twilio_violations_to_and_content_type(server):
    # '+' not percent-encoded arrives as a space: not E.164.
    url = "%s/2010-04-01/Accounts/%s/Messages.json" % (
        server.twilio_base, server.twilio_account_sid)
    r = requests.post(url, data="To=+4915112345678&From=%2B15005550006&"
                      "Body=hi", timeout=T,
                      headers={"Content-Type":
                               "application/x-www-form-urlencoded"},
                      auth=(server.twilio_account_sid,
                            server.twilio_auth_token))
    assert r.status_code == 400 and r.json()["code"] == 21211
    r = requests.post(url, json={"To": TO, "From": "+15005550006",
                                 "Body": "hi"}, timeout=T,
                      auth=(server.twilio_account_sid,
                            server.twilio_auth_token))
    assert r.status_code == 400
    r = requests.get(url, timeout=T, auth=(server.twilio_account_sid,
                                           server.twilio_auth_token))
    assert r.status_code == 405
    r = requests.post(server.twilio_base + "/2010-04-01/Messages.json",
                      timeout=T)
    assert r.status_code == 404 and r.json()["code"] == 20404
    reasons = [v["reason"] for v in server.violations]
    assert len(reasons) == 4
    assert "Content-Type" in reasons[1]


def test_twilio_call_twiml(server):
    twiml = ('<?xml version="1.0" encoding="UTF-8"?><Response>'
             '<Say language="de-DE">Ihr Code ist 1 2 3 4</Say></Response>')
    data = {"To": TO, "From": server.twilio_from, "Twiml": twiml}
    r = twilio_post(server, "Calls", data)
    assert r.status_code == 201, r.text
    j = r.json()
    assert re.fullmatch(r"CA[0-9a-f]{32}", j["sid"])
    assert j["status"] == "queued" and j["to"] == TO
    [rec] = server.sent("twilio.calls")
    assert rec["twiml"] == {"verb": "Say", "text": "Ihr Code ist 1 2 3 4",
                            "attrib": {"language": "de-DE"}}
    play = "<Response><Play>https://cdn.example/a.mp3</Play></Response>"
    assert twilio_post(server, "Calls", dict(data, Twiml=play)) \
        .status_code == 201
    for bad in ("<Response><Say>a</Say>",                       # not XML
                "<Response><Say>a</Say><Say>b</Say></Response>",  # two
                "<Response><Play>http://x.example/a.mp3</Play></Response>",
                "<Reply><Say>a</Say></Reply>",
                "<Response></Response>"):
        r = twilio_post(server, "Calls", dict(data, Twiml=bad))
        assert r.status_code == 400 and r.json()["code"] == 12100, bad
    r = twilio_post(server, "Calls", {"To": TO, "From": server.twilio_from})
    assert r.status_code == 400 and r.json()["code"] == 21205
    assert len(server.violations) == 6
    assert len(server.sent("twilio.calls")) == 2


def test_scripted_429_gives_retry_after(server):
    server.script(TO, [("429", 7), ("status", 400), "ok"])
    r = sms(server)
    assert r.status_code == 429
    assert r.headers["Retry-After"] == "7"
    assert r.json()["code"] == 20429 and r.json()["status"] == 429
    r = sms(server)
    assert r.status_code == 400 and r.json()["code"] == 21211
    assert sms(server).status_code == 201
    assert sms(server).status_code == 201          # script used up: ok
    assert [q["outcome"] for q in server.requests] == \
        ["error", "error", "ok", "ok"]
    assert server.violations == []
    # Another recipient is not affected by the script.
    server.script(TO, [("500",), ("503", 3)])
    assert sms(server, to="+4915199999999").status_code == 201
    assert sms(server).status_code == 500
    r = sms(server)
    assert r.status_code == 503 and r.headers["Retry-After"] == "3"


# -- failure modes: every request fails, whatever the scripts say -----------

@pytest.mark.parametrize("mode,retry_after,status,code", [
    ("500", None, 500, 20500), ("503", 5, 503, 20503),
    ("429", None, 429, 20429), ("429", 3, 429, 20429),
    ("400", None, 400, 21211)])
def test_failing_answers_as_twilio(server, mode, retry_after, status, code):
    server.script(TO, ["ok"])                   # overridden by the mode
    server.failing(mode, retry_after=retry_after)
    r = sms(server)
    assert r.status_code == status, r.text
    j = r.json()
    assert j["code"] == code and j["status"] == status, j
    assert j["more_info"] == "https://www.twilio.com/docs/errors/%d" % code
    if code == 21211:
        assert j["message"] == \
            "The 'To' number %s is not a valid phone number." % TO
    want = retry_after if retry_after is not None else \
        (1 if mode == "429" else None)
    assert r.headers.get("Retry-After") == (None if want is None
                                            else str(want))
    # The webhook answers with its own body.
    r = requests.post(server.hook_url, json={"to": TO}, timeout=T)
    assert r.status_code == status and r.json()["ok"] is False
    assert server.attempts == 2
    assert [q["outcome"] for q in server.requests] == ["error", "error"]
    server.failing(None)
    assert sms(server).status_code == 201
    assert server.violations == []


def test_failing_close_cuts_every_connection(server):
    server.failing("close")
    with pytest.raises(requests.ConnectionError):
        sms(server)
    with pytest.raises(requests.ConnectionError):
        requests.post(server.hook_url, json={"to": TO}, timeout=T)
    assert server.attempts == 2
    assert [q["outcome"] for q in server.requests] == ["close", "close"]
    server.failing(None)
    assert sms(server).status_code == 201
    assert server.attempts == 3


def test_failing_close_cuts_a_kept_alive_connection(server):
    with requests.Session() as s:
        auth = (server.twilio_account_sid, server.twilio_auth_token)
        url = "%s/2010-04-01/Accounts/%s/Messages.json" % (
            server.twilio_base, server.twilio_account_sid)
        data = {"To": TO, "From": server.twilio_from, "Body": "x"}
        assert s.post(url, data=data, auth=auth, timeout=T).status_code \
            == 201
        server.failing("close")
        with pytest.raises(requests.ConnectionError):
            s.post(url, data=data, auth=auth, timeout=T)
    assert [q["outcome"] for q in server.requests] == ["ok", "close"]


def test_failing_hang_never_answers(server):
    server.failing("hang")
    t0 = time.monotonic()
    with pytest.raises(requests.Timeout):
        requests.post("%s/2010-04-01/Accounts/%s/Messages.json" % (
            server.twilio_base, server.twilio_account_sid),
            data={"To": TO, "From": server.twilio_from, "Body": "x"},
            auth=(server.twilio_account_sid, server.twilio_auth_token),
            timeout=0.5)
    assert time.monotonic() - t0 < T
    # Recorded when it came, while it hangs.
    [rec] = server.requests
    assert rec["outcome"] == "hang" and rec["recipient"] == TO
    assert server.in_flight == 1
    server.failing(None)                # the hanging one is closed
    deadline = time.monotonic() + T
    while server.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.in_flight == 0
    assert sms(server).status_code == 201
    assert server.attempts == 2


def test_failing_modes_are_checked(server):
    for bad in ("404", "drop", 500, ("503", 2)):
        with pytest.raises(ValueError):
            server.failing(bad)
    with pytest.raises(ValueError):
        server.failing("500", retry_after=2)


def test_refused_port():
    from doubles.ports import RefusedPort
    with RefusedPort() as down:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", down.port), timeout=T)
        # Held: nobody else is given it.
        other = socket.socket()
        with pytest.raises(OSError):
            other.bind(("127.0.0.1", down.port))
        other.close()
        assert down.url("/hook") == "http://127.0.0.1:%d/hook" % down.port


def test_scripted_drop_closes_connection(server):
    server.script(TO, [("drop",)])
    with pytest.raises(requests.ConnectionError):
        sms(server)
    assert server.requests[-1]["outcome"] == "drop"
    assert sms(server).status_code == 201


def test_delay_and_keep_alive(server):
    server.script(TO, [("delay", 0.4)])
    t0 = time.monotonic()
    with requests.Session() as s:
        auth = (server.twilio_account_sid, server.twilio_auth_token)
        url = "%s/2010-04-01/Accounts/%s/Messages.json" % (
            server.twilio_base, server.twilio_account_sid)
        data = {"To": TO, "From": server.twilio_from, "Body": "x"}
        assert s.post(url, data=data, auth=auth, timeout=T).status_code \
            == 201
        assert time.monotonic() - t0 >= 0.4
        assert s.post(url, data=data, auth=auth, timeout=T).status_code \
            == 201
    a, b = server.requests
    assert a["connection"] == b["connection"]       # one kept-alive socket
    assert a["http_version"] == "HTTP/1.1"


def test_delay_all_and_wait_for(server):
    # Long enough that the short wait below has ended before the answer
    # even when this thread is slow to get to it.
    server.delay_all = 1.5
    results = []
    th = threading.Thread(target=lambda: results.append(sms(server)))
    th.start()
    with pytest.raises(AssertionError):
        server.wait_for(1, timeout=0.1)
    got = server.wait_for(1, timeout=T, api="twilio", ok=True)
    th.join(T)
    assert len(got) == 1 and results[0].status_code == 201


@pytest.mark.skipif(shutil.which("curl") is None, reason="no curl")
def test_libcurl_expect_100_continue(server):
    url = "%s/2010-04-01/Accounts/%s/Messages.json" % (
        server.twilio_base, server.twilio_account_sid)
    body = "é" * 1600
    out = subprocess.run(
        ["curl", "-sS", "--http1.1", "-m", str(T), "-u",
         "%s:%s" % (server.twilio_account_sid, server.twilio_auth_token),
         "-H", "Expect: 100-continue",
         "--data-urlencode", "To=" + TO,
         "--data-urlencode", "From=" + server.twilio_from,
         "--data-urlencode", "Body=" + body,
         "-w", "\\n%{http_code}", url],
        capture_output=True, text=True, timeout=T + 5)
    assert out.stdout.rsplit("\n", 1)[1] == "201", out
    assert server.sent()[0]["form"]["Body"] == body


# -- WhatsApp ---------------------------------------------------------------

def test_whatsapp_template_success(server):
    r = wa_post(server, wa_template())
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["messaging_product"] == "whatsapp"
    assert j["contacts"] == [{"input": WA_TO, "wa_id": WA_TO}]
    assert j["messages"][0]["id"].startswith("wamid.")
    [rec] = server.sent("whatsapp")
    assert rec["json"]["template"]["name"] == "otp_code"
    assert rec["template"] == {"name": "otp_code", "language": "en_US",
                               "parameters": ["Ada", "1234"]}
    assert rec["auth"] == {"scheme": "bearer", "token": server.whatsapp_token}
    # No parameters: components may be absent.
    assert wa_post(server, wa_template(params=())).status_code == 200
    assert server.violations == []


def test_whatsapp_malformed_is_violation(server):
    bad = wa_template()
    del bad["messaging_product"]
    r = wa_post(server, bad)
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == 100 and err["type"] == "OAuthException"
    assert "fbtrace_id" in err
    bad = wa_template()
    del bad["template"]["language"]
    r = wa_post(server, bad)
    assert r.status_code == 400 and r.json()["error"]["code"] == 131008
    r = wa_post(server, wa_template(params=("two\nlines",)))
    assert r.status_code == 400 and r.json()["error"]["code"] == 132018
    r = wa_post(server, wa_template(to="+49 151 123"))
    assert r.status_code == 400
    r = wa_post(server, wa_template(), token="nope")
    assert r.status_code == 401 and r.json()["error"]["code"] == 190
    r = wa_post(server, wa_template(), phone_id="999")
    assert r.status_code == 400 and r.json()["error"]["error_subcode"] == 33
    assert len(server.violations) == 6
    assert "messaging_product" in server.violations[0]["reason"]
    assert server.sent() == []


def test_whatsapp_scripted_errors(server):
    server.script(WA_TO, [("status", 400), ("429", 2), ("503",)])
    r = wa_post(server, wa_template())
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == 131030
    assert err["message"] == \
        "(#131030) Recipient phone number not in allowed list"
    assert err["error_data"]["messaging_product"] == "whatsapp"
    r = wa_post(server, wa_template())
    assert r.status_code == 429 and r.headers["Retry-After"] == "2"
    assert r.json()["error"]["code"] == 130429
    assert wa_post(server, wa_template()).status_code == 503
    assert wa_post(server, wa_template()).status_code == 200
    assert server.violations == []


# -- webhook ------------------------------------------------------------------

def test_webhook_records_headers(server):
    doc = {"id": "01J0000000000000000000000", "channel": "sms",
           "message": {"to": TO, "body": "hi"}}
    r = requests.post(server.hook_url, json=doc, timeout=T,
                      headers={"X-Hook-Secret": "s3", "User-Agent": "t/1"})
    assert r.status_code == 200 and r.json() == {"ok": True}
    [rec] = server.sent("hook")
    assert rec["headers"]["x-hook-secret"] == "s3"
    assert rec["headers"]["X-HOOK-SECRET"] == "s3"
    assert rec["json"] == doc and rec["recipient"] == TO
    server.script(TO, [("503", 4)])
    r = requests.post(server.hook_url, json=doc, timeout=T)
    assert r.status_code == 503 and r.headers["Retry-After"] == "4"
    r = requests.post(server.hook_url, data="[1]", timeout=T,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert len(server.violations) == 1


def test_config_sections(server):
    text = server.twilio_config("voice")
    assert text.startswith("[voice]\nprovider = twilio\n")
    assert "api-base = %s\n" % server.twilio_base in text
    assert "phone-number-id = %s\n" % server.whatsapp_phone_number_id in \
        server.whatsapp_config(3)
    assert server.errors == []


# -- SMTP -------------------------------------------------------------------

@pytest.fixture(scope="module")
def sink():
    with SmtpSink(username="mailer", password="s3cret") as s:
        yield s


def multipart(to="ada@example.org", attachment=b"\x00\x01PDF\xff" * 100):
    msg = EmailMessage()
    msg["From"] = "hello@acme.example"
    msg["To"] = to
    msg["Subject"] = "Welcome, Ada! – Grüße"
    msg.set_content("Hello Ada\n")
    msg.add_alternative("<p>Hello <b>Ada</b></p>\n", subtype="html")
    msg.add_attachment(attachment, maintype="application",
                       subtype="octet-stream", filename="invoice.bin")
    return msg


def test_smtp_auth_multipart_attachment(sink):
    sink.reset()
    blob = os.urandom(3000)
    with smtplib.SMTP(sink.host, sink.port, timeout=T) as c:
        c.ehlo()
        assert "PLAIN" in c.esmtp_features.get("auth", "")
        c.login("mailer", "s3cret")
        refused = c.send_message(multipart(attachment=blob))
    assert refused == {}
    [m] = sink.wait_for(1, timeout=T)
    assert m.mail_from == "hello@acme.example"
    assert m.rcpt_tos == ["ada@example.org"]
    assert m.login == "mailer"
    assert m.subject == "Welcome, Ada! – Grüße"
    assert m.message.get_content_type() == "multipart/mixed"
    assert [p.get_content_type() for p in m.message.walk()] == [
        "multipart/mixed", "multipart/alternative", "text/plain",
        "text/html", "application/octet-stream"]
    assert m.body(("plain",)) == "Hello Ada\n"
    assert m.attachments == [("invoice.bin", "application/octet-stream",
                              blob)]
    assert m.data.startswith(b"From: ") or b"\r\nSubject:" in m.data
    assert sink.auth_attempts[-1]["success"] is True


def test_smtp_requires_auth_and_checks_password(sink):
    with smtplib.SMTP(sink.host, sink.port, timeout=T) as c:
        with pytest.raises(smtplib.SMTPAuthenticationError):
            c.login("mailer", "wrong")
        with pytest.raises(smtplib.SMTPSenderRefused):
            c.sendmail("a@example.org", ["b@example.org"], b"Subject: x\n\nx")


def test_smtp_scripted_refusals(sink):
    sink.reset()
    sink.script("nobody@example.org", ["reject"])
    sink.script("busy@example.org", ["tempfail"])
    sink.script("spam@example.org", ["data-reject"])
    with smtplib.SMTP(sink.host, sink.port, timeout=T) as c:
        c.login("mailer", "s3cret")
        with pytest.raises(smtplib.SMTPRecipientsRefused) as e:
            c.sendmail("a@example.org", ["nobody@example.org"], b"x")
        code, text = e.value.recipients["nobody@example.org"]
        assert code == 550 and text == b"5.1.1 no such user"
        refused = c.sendmail("a@example.org",
                             ["busy@example.org", "ok@example.org"],
                             b"Subject: two\r\n\r\nbody\r\n")
        assert refused == {"busy@example.org": (451, b"4.3.0 try again")}
        with pytest.raises(smtplib.SMTPDataError) as e:
            c.sendmail("a@example.org", ["spam@example.org"],
                       b"Subject: spam\r\n\r\nbody\r\n")
        assert e.value.smtp_code == 554
        # Scripts used up: everyone is accepted now.
        c.sendmail("a@example.org", ["nobody@example.org"],
                   b"Subject: later\r\n\r\nbody\r\n")
    msgs = sink.wait_for(2, timeout=T)
    assert [m.rcpt_tos for m in msgs] == [["ok@example.org"],
                                          ["nobody@example.org"]]
    assert [r["stage"] for r in sink.refused] == ["rcpt", "rcpt", "data"]


def test_smtp_failing_modes():
    with SmtpSink() as sink:
        sink.script("x@example.org", ["reject"])
        sink.failing("tempfail")            # over the script
        with smtplib.SMTP(sink.host, sink.port, timeout=T) as c:
            with pytest.raises(smtplib.SMTPRecipientsRefused) as e:
                c.sendmail("a@example.org", ["x@example.org"], b"x")
            assert e.value.recipients["x@example.org"][0] == 451
        sink.failing("close")
        with pytest.raises((smtplib.SMTPServerDisconnected,
                            ConnectionError)):
            smtplib.SMTP(sink.host, sink.port, timeout=T)
        sink.failing("hang")
        t0 = time.monotonic()
        with pytest.raises(smtplib.SMTPServerDisconnected,
                           match="timed out"):
            smtplib.SMTP(sink.host, sink.port, timeout=0.5)
        assert time.monotonic() - t0 < T
        assert sink.attempts == 3
        sink.failing(None)
        with smtplib.SMTP(sink.host, sink.port, timeout=T) as c:
            c.sendmail("a@example.org", ["y@example.org"],
                       b"Subject: ok\r\n\r\nbody\r\n")
        sink.wait_for(1, timeout=T)
        assert sink.attempts == 4
        assert [r["reply"][:3] for r in sink.refused] == ["451"]


@pytest.mark.skipif(OPENSSL is None, reason="no openssl command")
def test_smtp_starttls_and_smtps():
    with SmtpSink(username="u", password="p", tls="starttls",
                  require_starttls=True) as sink:
        ctx = ssl.create_default_context(cafile=sink.cafile)
        with smtplib.SMTP(sink.host, sink.port, timeout=T) as c:
            c.starttls(context=ctx)
            c.login("u", "p")
            c.send_message(multipart())
        [m] = sink.wait_for(1, timeout=T)
        assert m.tls is True
        assert "starttls = yes" in sink.config()
    with SmtpSink(tls="smtps") as sink:
        ctx = ssl.create_default_context(cafile=sink.cafile)
        with smtplib.SMTP_SSL(sink.host, sink.port, timeout=T,
                              context=ctx) as c:
            c.send_message(multipart())
        [m] = sink.wait_for(1, timeout=T)
        assert m.tls is True and sink.url.startswith("smtps://")


@pytest.mark.skipif(shutil.which("curl") is None, reason="no curl")
def test_smtp_with_libcurl(sink, tmp_path):
    """libcurl (what msgspoold uses) speaks to the sink: AUTH without TLS
    under --ssl (STARTTLS 'try'), and a scripted 550 fails the transfer."""
    sink.reset()
    eml = tmp_path / "m.eml"
    eml.write_bytes(b"From: a@example.org\r\nTo: b@example.org\r\n"
                    b"Subject: via curl\r\n\r\nhello\r\n")

    def curl(rcpt):
        return subprocess.run(
            ["curl", "-sS", "--ssl", "-m", str(T), "--url", sink.url,
             "--mail-from", "a@example.org", "--mail-rcpt", rcpt,
             "-u", "mailer:s3cret", "-T", str(eml)],
            capture_output=True, text=True, timeout=T + 5)
    out = curl("b@example.org")
    assert out.returncode == 0, out.stderr
    [m] = sink.wait_for(1, timeout=T)
    assert m.subject == "via curl" and m.login == "mailer"
    assert m.body() == "hello\n"
    sink.script("gone@example.org", ["reject"])
    out = curl("gone@example.org")
    assert out.returncode == 55, out     # CURLE_SEND_ERROR: RCPT failed
    assert sink.refused[-1]["reply"] == "550 5.1.1 no such user"


# ------------------------------------------------------------ the SMSC
# A raw ESME (socket and struct here, not msgspool's libsmpp34) against
# doubles/smsc.py: what it accepts, what it calls a violation.

def _smpp_pdu(cid, seq, body=b"", status=0):
    return struct.pack(">IIII", 16 + len(body), cid, status, seq) + body


def _smpp_read(sock):
    head = b""
    while len(head) < 16:
        chunk = sock.recv(16 - len(head))
        assert chunk, "the SMSC closed the connection"
        head += chunk
    length, cid, status, seq = struct.unpack(">IIII", head)
    body = b""
    while len(body) < length - 16:
        body += sock.recv(length - 16 - len(body))
    return cid, status, seq, body


def _bind_body(system_id="acme", password="secret", version=0x34):
    return (system_id.encode() + b"\0" + password.encode() + b"\0" + b"\0" +
            bytes([version, 0, 0]) + b"\0")


def _submit_body(dest="4915112345678", esm=0, reg=1, coding=0, sm=b"hi"):
    return (b"\0" + bytes([5, 0]) + b"ACME\0" + bytes([1, 1]) +
            dest.encode() + b"\0" + bytes([esm, 0, 0]) + b"\0\0" +
            bytes([reg, 0, coding, 0, len(sm)]) + sm)


@pytest.fixture
def smsc():
    from doubles.smsc import Smsc
    with Smsc(system_id="acme", password="secret") as s:
        yield s


def _esme(smsc):
    sock = socket.create_connection(("127.0.0.1", smsc.port), timeout=T)
    return sock


def test_smsc_bind_submit_receipt(smsc):
    smsc.receipts = "tlv"
    with _esme(smsc) as sock:
        sock.sendall(_smpp_pdu(0x09, 1, _bind_body()))
        assert _smpp_read(sock)[:3] == (0x80000009, 0, 1)
        sock.sendall(_smpp_pdu(0x04, 2, _submit_body(sm=b"\x00\x1b\x65")))
        cid, status, seq, body = _smpp_read(sock)
        assert (cid, status, seq) == (0x80000004, 0, 2)
        mid = body.rstrip(b"\0").decode()
        # The receipt: deliver_sm, esm_class 0x04, its TLVs name the id.
        cid, status, seq, body = _smpp_read(sock)
        assert cid == 0x00000005 and b"id:%s " % mid.encode() in body
        assert struct.pack(">HH", 0x001E, len(mid) + 1) + \
            mid.encode() + b"\0" in body
    assert smsc.violations == []
    [f] = smsc.submits
    assert f["text"] == "@€" and f["message_id"] == mid


@pytest.mark.parametrize("what,pdus,status", [
    ("submit before bind", [(0x04, _submit_body())], 0x04),
    ("interface_version", [(0x09, _bind_body(version=0x33))], 0x08),
    ("registered_delivery", [(0x09, _bind_body()),
                             (0x04, _submit_body(reg=0))], 0x07),
    ("UDH", [(0x09, _bind_body()),
             (0x04, _submit_body(esm=0x40, sm=b"\x05\x00\x03\x01hi"))],
     0x43),
    ("not a septet", [(0x09, _bind_body()),
                      (0x04, _submit_body(sm=b"\x80"))], 0x08),
    ("odd UCS-2", [(0x09, _bind_body()),
                   (0x04, _submit_body(coding=8, sm=b"\x00"))], 0x08),
    ("destination", [(0x09, _bind_body()),
                     (0x04, _submit_body(dest="12ab"))], 0x0B),
])
def test_smsc_violations(smsc, what, pdus, status):
    with _esme(smsc) as sock:
        for seq, (cid, body) in enumerate(pdus, 1):
            sock.sendall(_smpp_pdu(cid, seq, body))
            got = _smpp_read(sock)
        assert got[1] == status, (what, got)
    assert len(smsc.violations) == 1, smsc.violations


def test_smsc_wrong_password(smsc):
    with _esme(smsc) as sock:
        sock.sendall(_smpp_pdu(0x09, 1, _bind_body(password="nope")))
        cid, status, seq, body = _smpp_read(sock)
        assert (cid, status, body) == (0x80000009, 0x0E, b"")
    # Refusing a bind is behaviour, not a violation.
    assert smsc.violations == []
    assert smsc.binds == [{"system_id": "acme", "password": "nope",
                           "accepted": False}]


def test_smsc_failing_refuse_bind(smsc):
    smsc.failing("refuse-bind")
    with _esme(smsc) as sock:
        sock.sendall(_smpp_pdu(0x09, 1, _bind_body()))
        assert _smpp_read(sock) == (0x80000009, 0x0D, 1, b"")
    smsc.failing(None)
    with _esme(smsc) as sock:
        sock.sendall(_smpp_pdu(0x09, 1, _bind_body()))
        assert _smpp_read(sock)[:2] == (0x80000009, 0)
    assert [b["accepted"] for b in smsc.binds] == [False, True]
    assert smsc.violations == []


def test_smsc_failing_unbind_and_unbind(smsc):
    with _esme(smsc) as sock:
        sock.sendall(_smpp_pdu(0x09, 1, _bind_body()))
        _smpp_read(sock)
        smsc.failing("unbind")
        sock.sendall(_smpp_pdu(0x04, 2, _submit_body()))
        cid, status, seq, body = _smpp_read(sock)     # no submit_sm_resp
        assert (cid, status, body) == (0x00000006, 0, b"")
        sock.sendall(_smpp_pdu(0x80000006, seq))
        assert sock.recv(16) == b""                     # closed
    assert smsc.attempts == 1 and smsc.submits[0]["unbound"]
    smsc.failing(None)
    with _esme(smsc) as sock:
        sock.sendall(_smpp_pdu(0x09, 1, _bind_body()))
        _smpp_read(sock)
        smsc.wait_for(lambda: smsc.bound_sessions(), T, "a bound session")
        smsc.unbind()                                   # at any time
        cid, status, seq, body = _smpp_read(sock)
        assert cid == 0x00000006
        sock.sendall(_smpp_pdu(0x80000006, seq))
        assert sock.recv(16) == b""
    assert smsc.violations == []

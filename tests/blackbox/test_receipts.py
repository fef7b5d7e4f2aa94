"""Delivery receipts: /receipts/{twilio,whatsapp,http} through the real web
server, signed as the providers sign (harness/receiptsign.py, with Python's hmac,
not the project's code), stored in receipts/ and applied by msgspoold to
GET /messages/{id} (conf/openapi.yaml; msgspool-spool(5)).  The replies
of the receipts program are also checked against conf/openapi.yaml
(openapi_check)."""

import base64
import json
import time
import urllib.parse

import pytest

from conftest import parse_time
from delivery_support import daemons  # noqa: F401 (fixture)
from openapi_check import check_reply
from doubles.standin import Standin
from harness.receiptsign import meta_sig, stdwh_sig, twilio_sig

__all__ = ["daemons"]

PUBLIC = "https://msg.example.com"
HTTP_SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef01234567").decode()


@pytest.fixture
def standin():
    with Standin() as s:
        yield s


def _status(srv, msgid):
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, r.text
    return r.json()


def _receipts(inst):
    d = inst.spool / "receipts"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


# ---------------------------------------------------------------- twilio

def _twilio_post(srv, standin, msgid, params, sig=None, query=None):
    query = f"id={msgid}" if query is None else query
    url = f"{PUBLIC}/receipts/twilio" + (f"?{query}" if query else "")
    if sig is None:
        sig = twilio_sig(standin.twilio_auth_token, url, params)
    path = "/receipts/twilio" + (f"?{query}" if query else "")
    r = srv.request("POST", path, client=None,
                    data=urllib.parse.urlencode(params),
                    headers={"Content-Type":
                             "application/x-www-form-urlencoded",
                             "X-Twilio-Signature": sig})
    check_reply(r)
    return r


def _twilio_sent(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(f"public-url = {PUBLIC}\n" + standin.twilio_config())
    r = srv.sms(recipient="+4915112340077", messageBody="receipt me")
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    daemons.once(inst.conf)
    reqs = standin.wait_for(1, timeout=5, api="twilio")
    assert standin.violations == [], standin.violations
    # msgspool asked Twilio to report to us, naming the message.
    form = reqs[0]["form"]
    assert form["StatusCallback"] == f"{PUBLIC}/receipts/twilio?id={sid}"
    st = _status(srv, sid)
    assert st["status"] == "sent" and st["provider"] == "twilio"
    return sid, st["providerMessageId"]


def _twilio_params(standin, msg_sid, status, **extra):
    p = {"AccountSid": standin.twilio_account_sid, "MessageSid": msg_sid,
         "SmsSid": msg_sid, "MessageStatus": status, "SmsStatus": status,
         "To": "+4915112340077", "From": standin.twilio_from,
         "ApiVersion": "2010-04-01"}
    p.update(extra)
    return p


def test_twilio_delivered(srv, standin, daemons):
    sid, msg_sid = _twilio_sent(srv, standin, daemons)
    assert msg_sid and msg_sid.startswith("SM")
    # As Twilio does: every step, one of them twice.
    for status in ("sent", "delivered", "delivered"):
        r = _twilio_post(srv, standin, sid,
                         _twilio_params(standin, msg_sid, status))
        assert r.status_code == 200, r.text
    daemons.once(srv.inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "delivered", st
    assert st["completedAt"] is not None
    got = [(e["status"], e.get("source")) for e in st["events"]]
    assert got.count(("delivered", "receipt")) == 1, got
    assert _receipts(srv.inst) == []


def test_twilio_queued_accepted_sending_are_events_only(srv, standin,
                                                       daemons):
    """Twilio's queued, accepted and sending are kept in the message's
    events, each once, and move nothing; no client event is made."""
    sid, msg_sid = _twilio_sent(srv, standin, daemons)
    for status in ("queued", "accepted", "sending", "sending"):
        r = _twilio_post(srv, standin, sid,
                         _twilio_params(standin, msg_sid, status))
        assert r.status_code == 200, r.text
        assert r.json()["stored"] == 1, r.text
    daemons.once(srv.inst.conf)
    r = srv.get("/messages/" + sid)
    check_reply(r)
    st = r.json()
    assert st["status"] == "sent" and st["completedAt"] is None, st
    got = [e["status"] for e in st["events"] if e.get("source") == "receipt"]
    assert got == ["queued", "accepted", "sending"], st["events"]
    assert st["updatedAt"] == st["events"][-1]["at"], st
    assert _receipts(srv.inst) == []
    # Still moved forward by a receipt that says something.
    r = _twilio_post(srv, standin, sid,
                     _twilio_params(standin, msg_sid, "delivered"))
    assert r.status_code == 200, r.text
    daemons.once(srv.inst.conf)
    assert _status(srv, sid)["status"] == "delivered"


def test_twilio_undelivered_with_error(srv, standin, daemons):
    sid, msg_sid = _twilio_sent(srv, standin, daemons)
    r = _twilio_post(srv, standin, sid, _twilio_params(
        standin, msg_sid, "undelivered", ErrorCode="30003",
        ErrorMessage="Unreachable destination handset"))
    assert r.status_code == 200, r.text
    daemons.once(srv.inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "undelivered"
    assert st["error"]["code"] == "30003", st


def test_twilio_bad_signature_is_403_and_stores_nothing(srv, standin,
                                                        daemons):
    sid, msg_sid = _twilio_sent(srv, standin, daemons)
    params = _twilio_params(standin, msg_sid, "delivered")
    for sig in ("", "bm90IGEgc2lnbmF0dXJl",
                twilio_sig("wrong token", f"{PUBLIC}/receipts/twilio?id="
                            + sid, params)):
        r = _twilio_post(srv, standin, sid, params, sig=sig)
        assert r.status_code == 403, (sig, r.status_code, r.text)
        assert r.headers["Content-Type"].startswith(
            "application/problem+json")
    # Signed for another message than the URL says: refused too.
    r = _twilio_post(srv, standin, sid, params, sig=twilio_sig(
        standin.twilio_auth_token, f"{PUBLIC}/receipts/twilio", params))
    assert r.status_code == 403
    assert _receipts(srv.inst) == []
    daemons.once(srv.inst.conf)
    assert _status(srv, sid)["status"] == "sent"


def test_receipt_before_its_outcome_waits(srv, standin, daemons):
    """A receipt for a message whose send is not recorded yet is kept
    and applied once it is."""
    inst = srv.inst
    inst.write_conf(f"public-url = {PUBLIC}\n" + standin.twilio_config())
    sid = srv.sms(recipient="+4915112340078").json()["smsId"]
    r = _twilio_post(srv, standin, sid,
                     _twilio_params(standin, "SM" + "0" * 32, "delivered"))
    assert r.status_code == 200, r.text
    assert len(_receipts(inst)) == 1
    daemons.once(inst.conf)
    daemons.once(inst.conf)
    assert _status(srv, sid)["status"] == "delivered"
    assert _receipts(inst) == []


def test_receipt_for_unknown_message_is_dropped(srv, standin):
    srv.inst.write_conf(f"public-url = {PUBLIC}\n" + standin.twilio_config())
    ghost = "01M8500000000000000000GHST"
    r = _twilio_post(srv, standin, ghost,
                     _twilio_params(standin, "SM" + "1" * 32, "delivered"))
    assert r.status_code == 200, r.text
    assert r.json()["dropped"] == 1
    assert _receipts(srv.inst) == []


# -------------------------------------------------------------- whatsapp

APP_SECRET = "meta-app-secret"
VERIFY = "verify-me-please"


def _wa_conf(standin):
    return (standin.whatsapp_config(1) + f"app-secret = {APP_SECRET}\n"
            f"verify-token = {VERIFY}\n")


def test_whatsapp_handshake(srv, standin):
    srv.inst.write_conf(_wa_conf(standin))
    q = {"hub.mode": "subscribe", "hub.verify_token": VERIFY,
         "hub.challenge": "1158201444"}
    r = srv.get("/receipts/whatsapp?" + urllib.parse.urlencode(q),
                client=None)
    assert r.status_code == 200, r.text
    check_reply(r)
    assert r.text == "1158201444"
    assert r.headers["Content-Type"].startswith("text/plain")
    q["hub.verify_token"] = "not it"
    r = srv.get("/receipts/whatsapp?" + urllib.parse.urlencode(q),
                client=None)
    assert r.status_code == 403
    check_reply(r)


def _wa_body(standin, statuses):
    return json.dumps({"object": "whatsapp_business_account", "entry": [{
        "id": "102290129340398", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881",
                         "phone_number_id":
                         standin.whatsapp_phone_number_id},
            "statuses": statuses}}]}]}).encode()


def _wa_post(srv, body, secret=APP_SECRET):
    sig = meta_sig(secret, body)
    r = srv.request("POST", "/receipts/whatsapp", client=None, data=body,
                    headers={"Content-Type": "application/json",
                             "X-Hub-Signature-256": sig})
    check_reply(r)
    return r


def test_whatsapp_read_never_goes_back(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(_wa_conf(standin))
    r = srv.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": "4915112340090", "templateID": "otp",
         "templateParameters": ["4711"], "channelType": 1}]})
    assert r.status_code == 200, r.text
    mid = r.json()[0]["messageId"]
    daemons.once(inst.conf)
    st = _status(srv, mid)
    assert st["status"] == "sent" and st["provider"] == "whatsapp"
    wamid = st["providerMessageId"]
    assert wamid.startswith("wamid.")
    ts = str(int(time.time()))
    late = str(int(time.time()) + 5)
    # Out of order and twice: read first, then delivered, then read.
    body = _wa_body(standin, [
        {"id": wamid, "status": "read", "timestamp": ts,
         "recipient_id": "4915112340090"},
        {"id": wamid, "status": "delivered", "timestamp": late,
         "recipient_id": "4915112340090"}])
    assert _wa_post(srv, body, secret="wrong").status_code == 403
    assert _receipts(inst) == []
    r = _wa_post(srv, body)
    assert r.status_code == 200, r.text
    assert r.json()["stored"] == 2
    daemons.once(inst.conf)
    st = _status(srv, mid)
    assert st["status"] == "read", st
    kinds = [e["status"] for e in st["events"]]
    assert "delivered" in kinds and "read" in kinds, kinds
    # Completed when it was read; the late delivered is the last event.
    assert parse_time(st["completedAt"]).timestamp() == int(ts), st
    assert parse_time(st["updatedAt"]).timestamp() == int(late), st


# ------------------------------------------------------------------ http

def test_http_receipt_signed_per_standard_webhooks(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.hook_config("sms") +
                    f"receipt-secret = {HTTP_SECRET}\n")
    sid = srv.sms(recipient="+4915112340079").json()["smsId"]
    daemons.once(inst.conf)
    assert _status(srv, sid)["status"] == "sent"
    body = json.dumps({"id": sid, "status": "undelivered",
                       "error": {"code": "E42", "message": "no route"}}
                      ).encode()
    ts = str(int(time.time()))
    hdrs = {"Content-Type": "application/json", "webhook-id": "msg_1",
            "webhook-timestamp": ts}
    # Wrong key, stale timestamp: 403.
    bad = dict(hdrs, **{"webhook-signature": stdwh_sig(
        "whsec_" + base64.b64encode(b"x" * 24).decode(), "msg_1", ts,
        body)})
    assert srv.request("POST", "/receipts/http", client=None, data=body,
                       headers=bad).status_code == 403
    old = str(int(time.time()) - 3600)
    stale = dict(hdrs, **{"webhook-timestamp": old, "webhook-signature":
                          stdwh_sig(HTTP_SECRET, "msg_1", old, body)})
    assert srv.request("POST", "/receipts/http", client=None, data=body,
                       headers=stale).status_code == 403
    good = dict(hdrs, **{"webhook-signature": "v1,bm9wZQ== " +
                         stdwh_sig(HTTP_SECRET, "msg_1", ts, body)})
    r = srv.request("POST", "/receipts/http", client=None, data=body,
                    headers=good)
    assert r.status_code == 200, r.text
    daemons.once(inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "undelivered"
    assert st["error"] == {"code": "E42", "message": "no route"}


def test_http_receipt_by_the_providers_id(srv, daemons):
    """An http receipt may name the message by the id the provider gave
    in its reply, even one that looks like a message id (a ULID)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Provider(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        ids = []

        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.dumps({"id": Provider.ids.pop(0)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        inst = srv.inst
        inst.write_conf("[sms]\nprovider = http\nurl = http://127.0.0.1:%d/"
                        "\nreceipt-secret = %s\n" % (server.server_address[1],
                                                      HTTP_SECRET))
        for pid in ("prov-4711", "01ARZ3NDEKTSV4RRFFQ69G5FAV"):
            Provider.ids.append(pid)
            sid = srv.sms(recipient="+4915112340079").json()["smsId"]
            daemons.once(inst.conf)
            st = _status(srv, sid)
            assert st["status"] == "sent" and st["providerMessageId"] == pid
            body = json.dumps({"id": pid, "status": "delivered"}).encode()
            ts = str(int(time.time()))
            r = srv.request("POST", "/receipts/http", client=None, data=body,
                            headers={"Content-Type": "application/json",
                                     "webhook-id": "msg_" + pid,
                                     "webhook-timestamp": ts,
                                     "webhook-signature": stdwh_sig(
                                         HTTP_SECRET, "msg_" + pid, ts,
                                         body)})
            assert r.status_code == 200, r.text
            assert r.json() == {"stored": 1, "dropped": 0}, r.text
            daemons.once(inst.conf)
            assert _status(srv, sid)["status"] == "delivered", pid
    finally:
        server.shutdown()
        server.server_close()


def test_unknown_provider_is_404(srv):
    r = srv.request("POST", "/receipts/pigeon", client=None, data=b"x",
                    headers={"Content-Type": "text/plain"})
    assert r.status_code == 404
    check_reply(r)


def test_twilio_stand_in_calls_back_as_twilio_does(srv, standin, daemons):
    """The stand-in posts Twilio's own callbacks to the StatusCallback
    msgspool gave it: in an odd order, one twice; the message ends
    delivered, each callback answered 200."""
    if srv.kind == "busybox":
        pytest.skip("busybox httpd serves /cgi-bin/receipts/twilio only: "
                    "no public URL of the route to give Twilio")
    inst = srv.inst
    public = srv.url("").rstrip("/")
    inst.write_conf(f"public-url = {public}\n" + standin.twilio_config())
    standin.twilio_callbacks = ["queued", "delivered", "sent", "delivered"]
    sid = srv.sms(recipient="+4915112340081").json()["smsId"]
    daemons.once(inst.conf)
    got = standin.wait_callbacks(4)
    assert [code for _, code in got] == [200] * 4, got
    daemons.once(inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "delivered", st
    receipts = [e["status"] for e in st["events"]
                if e.get("source") == "receipt"]
    # Applied in the order they came, each once; queued is an event
    # only, and a late "sent" is kept as an event and moves nothing back.
    assert receipts == ["queued", "delivered", "sent"], st["events"]

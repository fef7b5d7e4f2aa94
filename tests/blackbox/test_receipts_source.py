"""Which receipts may change which message (msgspool-spool(5), Receipts):
a receipt changes only a message that its provider sent, by the attempt
that sent it, on a channel that provider's receipts speak of; read only
an OTT message.  Any other receipt is dropped by msgspoold with a log
line saying why (the provider had its 2xx already): the message keeps
its status and its client gets no event.  Bounces: test_bounce.py."""

import base64
import json
import time
import urllib.parse

from delivery_support import daemons, enqueue, make_doc, new_id  # noqa: F401
from doubles.standin import Standin
from harness.receiptsign import meta_sig, stdwh_sig, twilio_sig

import pytest

__all__ = ["daemons"]

PUBLIC = "https://msg.example.com"
HTTP_SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef01234567").decode()
HOOK_SECRET = "whsec_" + base64.b64encode(b"webhook secret of acme, 32 b!!!"
                                          ).decode()
APP_SECRET = "meta-app-secret"


@pytest.fixture
def standin():
    with Standin() as s:
        yield s


def _client_hook(standin):
    """acme's webhooks go to the stand-in, under /hook/events."""
    return (f"\n[client.acme]\nwebhook-url = {standin.url('/hook/events')}\n"
            f"webhook-secret = {HOOK_SECRET}\n")


def _events(srv, standin, msgid):
    """The types of the events of msgid, sent to the stand-in or still in
    the spool's events areas."""
    got = [r["json"]["type"] for r in standin.requests
           if r["path"] == "/hook/events" and isinstance(r.get("json"), dict)
           and r["json"].get("data", {}).get("id") == msgid]
    for area in ("events", "events-failed"):
        d = srv.inst.spool / area
        for p in sorted(d.iterdir()) if d.is_dir() else []:
            ev = json.loads(p.read_bytes())
            if ev["data"]["id"] == msgid:
                got.append(ev["type"])
    return got


def _status(srv, msgid):
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, r.text
    return r.json()


def _receipt_events(st):
    return [e["status"] for e in st["events"] if e.get("source") == "receipt"]


def _receipts(inst):
    d = inst.spool / "receipts"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _http_receipt(srv, msgid, status):
    body = json.dumps({"id": msgid, "status": status}).encode()
    ts = str(int(time.time()))
    wid = "msg_" + new_id()
    r = srv.request("POST", "/receipts/http", client=None, data=body,
                    headers={"Content-Type": "application/json",
                             "webhook-id": wid, "webhook-timestamp": ts,
                             "webhook-signature": stdwh_sig(HTTP_SECRET, wid,
                                                            ts, body)})
    assert r.status_code == 200, r.text
    return r.json()


def _twilio_receipt(srv, standin, msgid, params):
    query = f"id={msgid}"
    sig = twilio_sig(standin.twilio_auth_token,
                     f"{PUBLIC}/receipts/twilio?{query}", params)
    r = srv.request("POST", f"/receipts/twilio?{query}", client=None,
                    data=urllib.parse.urlencode(params),
                    headers={"Content-Type":
                             "application/x-www-form-urlencoded",
                             "X-Twilio-Signature": sig})
    assert r.status_code == 200, r.text
    return r.json()


def _twilio_params(standin, sid, status):
    return {"AccountSid": standin.twilio_account_sid, "MessageSid": sid,
            "MessageStatus": status, "To": "+4915112340077",
            "From": standin.twilio_from, "ApiVersion": "2010-04-01"}


def _dropped(daemon, msgid, why):
    """The daemon's log line saying the receipt for msgid was dropped,
    and why."""
    lines = [ln for ln in daemon.log().splitlines()
             if msgid in ln and "dropped" in ln]
    assert len(lines) == 1 and why in lines[0], daemon.log()


def _send_sms(srv, daemons, to):
    r = srv.sms(recipient=to, messageBody="receipt me")
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    daemons.once(srv.inst.conf)
    return sid


def _send_ott(srv, daemons, to):
    r = srv.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": to, "templateID": "otp",
         "templateParameters": ["4711"], "channelType": 1}]})
    assert r.status_code == 200, r.text
    mid = r.json()[0]["messageId"]
    daemons.once(srv.inst.conf)
    return mid


def test_file_sms_takes_no_http_read(srv, standin, daemons):
    """An SMS the file provider wrote is no http provider's: a signed
    /receipts/http saying read leaves it sent, and acme hears of no
    message.read."""
    inst = srv.inst
    inst.write_conf(standin.hook_config("voice") +
                    f"receipt-secret = {HTTP_SECRET}\n" + _client_hook(standin))
    sid = _send_sms(srv, daemons, "+4915112340070")
    st = _status(srv, sid)
    assert st["status"] == "sent" and st["provider"] == "file", st
    standin.wait_for(1, api="hook")     # its message.sent
    assert _http_receipt(srv, sid, "read") == {"stored": 1, "dropped": 0}
    d = daemons.once(inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "sent" and st["completedAt"] is None, st
    assert _receipt_events(st) == [], st["events"]
    assert _events(srv, standin, sid) == ["message.sent"]
    assert _receipts(inst) == []
    _dropped(d, sid, "sent by file")


def test_http_sms_is_never_read(srv, standin, daemons):
    """The http provider's receipts apply to what it sent, but read only
    to an OTT message: an SMS it sent stays as it was on read, and is
    still delivered by its delivered."""
    inst = srv.inst
    inst.write_conf(standin.hook_config("sms") +
                    f"receipt-secret = {HTTP_SECRET}\n" + _client_hook(standin))
    sid = _send_sms(srv, daemons, "+4915112340071")
    assert _status(srv, sid)["provider"] == "http"
    assert _http_receipt(srv, sid, "read")["stored"] == 1
    d = daemons.once(inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "sent" and _receipt_events(st) == [], st
    assert _receipts(inst) == []
    _dropped(d, sid, "read")
    assert _http_receipt(srv, sid, "delivered")["stored"] == 1
    daemons.once(inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "delivered", st
    assert _receipt_events(st) == ["delivered"], st["events"]
    assert "message.read" not in _events(srv, standin, sid)


def test_http_ott_is_read(srv, standin, daemons):
    """read is for OTT: one the http provider sent takes it."""
    inst = srv.inst
    inst.write_conf(standin.hook_config("ott.1") +
                    f"receipt-secret = {HTTP_SECRET}\n")
    mid = _send_ott(srv, daemons, "4915112340072")
    assert _status(srv, mid)["provider"] == "http"
    assert _http_receipt(srv, mid, "read")["stored"] == 1
    daemons.once(inst.conf)
    st = _status(srv, mid)
    assert st["status"] == "read", st
    assert _receipt_events(st) == ["read"], st["events"]


def test_twilio_receipt_for_whatsapp_message_dropped(srv, standin, daemons):
    """A Twilio callback naming an OTT message that WhatsApp sent is
    dropped; WhatsApp's own receipt still moves it."""
    inst = srv.inst
    inst.write_conf(f"public-url = {PUBLIC}\n" + standin.twilio_config() +
                    standin.whatsapp_config(1) +
                    f"app-secret = {APP_SECRET}\n" + _client_hook(standin))
    mid = _send_ott(srv, daemons, "4915112340073")
    st = _status(srv, mid)
    assert st["status"] == "sent" and st["provider"] == "whatsapp", st
    wamid = st["providerMessageId"]
    assert _twilio_receipt(srv, standin, mid, _twilio_params(
        standin, "SM" + "2" * 32, "undelivered")) == {"stored": 1,
                                                      "dropped": 0}
    d = daemons.once(inst.conf)
    st = _status(srv, mid)
    assert st["status"] == "sent" and _receipt_events(st) == [], st
    assert "message.undelivered" not in _events(srv, standin, mid)
    assert _receipts(inst) == []
    _dropped(d, mid, "sent by whatsapp")
    body = json.dumps({"object": "whatsapp_business_account", "entry": [{
        "id": "102290129340398", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881",
                         "phone_number_id":
                         standin.whatsapp_phone_number_id},
            "statuses": [{"id": wamid, "status": "read",
                          "timestamp": str(int(time.time())),
                          "recipient_id": "4915112340073"}]}}]}]}).encode()
    r = srv.request("POST", "/receipts/whatsapp", client=None, data=body,
                    headers={"Content-Type": "application/json",
                             "X-Hub-Signature-256": meta_sig(APP_SECRET,
                                                             body)})
    assert r.status_code == 200 and r.json()["stored"] == 1, r.text
    daemons.once(inst.conf)
    assert _status(srv, mid)["status"] == "read"


def test_twilio_voice_call_receipt_applies(srv, standin, daemons):
    """Twilio's receipts speak of calls too: a call it placed is
    delivered by its completed."""
    inst = srv.inst
    inst.write_conf(f"public-url = {PUBLIC}\n" +
                    standin.twilio_config("voice"))
    r = srv.post_json("/voice/v1/deliver", {"recipient": "+4915112340074",
                                            "message": "Hello"})
    assert r.status_code == 202, r.text
    cid = r.json()["callId"]
    daemons.once(inst.conf)
    st = _status(srv, cid)
    assert st["status"] == "sent" and st["provider"] == "twilio", st
    params = {"AccountSid": standin.twilio_account_sid,
              "CallSid": st["providerMessageId"], "CallStatus": "completed",
              "To": "+4915112340074", "From": standin.twilio_from,
              "ApiVersion": "2010-04-01"}
    assert _twilio_receipt(srv, standin, cid, params)["stored"] == 1
    daemons.once(inst.conf)
    assert _status(srv, cid)["status"] == "delivered"


def test_receipt_of_an_earlier_attempts_provider_dropped(srv, standin,
                                                         daemons):
    """A message whose first attempt went to Twilio (and failed for now)
    and which the http provider then sent is the http provider's: a
    Twilio callback for it is dropped, an http receipt applies."""
    inst = srv.inst
    inst.write_conf(f"public-url = {PUBLIC}\n" + standin.hook_config("sms") +
                    f"receipt-secret = {HTTP_SECRET}\n" +
                    standin.twilio_config("voice"))
    doc = make_doc("sms", {"to": "+4915112340075", "body": "hello"})
    doc.update({"attempts": 1, "lastError": "HTTP 503",
                "providerReply": {"provider": "twilio", "status": 503},
                "events": [{"status": "queued", "at": doc["created"]},
                           {"status": "retrying", "at": doc["created"]}]})
    sid = enqueue(inst.spool, doc, state="deferred")
    daemons.once(inst.conf)
    st = _status(srv, sid)
    assert st["status"] == "sent" and st["provider"] == "http", st
    assert _twilio_receipt(srv, standin, sid, _twilio_params(
        standin, "SM" + "3" * 32, "delivered"))["stored"] == 1
    d = daemons.once(inst.conf)
    assert _status(srv, sid)["status"] == "sent"
    _dropped(d, sid, "sent by http")
    assert _http_receipt(srv, sid, "delivered")["stored"] == 1
    daemons.once(inst.conf)
    assert _status(srv, sid)["status"] == "delivered"

"""conf/openapi.yaml against real replies: a request to every route, each
reply checked with openapi_check.check_reply (the document itself:
test_openapi.py).

Needs Debian's python3-yaml and python3-jsonschema.
"""

import base64
import hashlib
import hmac
import json
import shutil
import time
import urllib.parse

import pytest

pytest.importorskip("yaml", reason="apt-get install python3-yaml")
pytest.importorskip("jsonschema", reason="apt-get install python3-jsonschema")

from conftest import FRONT, RECIPIENT, in_future, parse_time  # noqa: E402
import openapi_check as oc  # noqa: E402
from openapi_check import check_reply, check_response  # noqa: E402
from harness.routes import PATHS, SOME_ID, op  # noqa: E402

OTT_CONF = "\n[ott.1]\nprovider = file\n"


# ================================================== real requests

@pytest.fixture
def live(srv):
    """The shared server; its config, keys and spool restored afterwards
    (some tests here change them)."""
    yield srv
    srv.inst.reset()


def b64(data):
    return base64.b64encode(data).decode()


def checked(r, status):
    """check_reply, and the status this test meant to provoke."""
    body = check_reply(r)
    assert r.status_code == status, f"{r.status_code}: {r.text[:500]}"
    return body


def test_live_every_request_example_is_accepted(live):
    """Each request example of the document, sent as it is, gets a 2xx
    that matches the document.  (The receipts' examples need the
    provider's signature: test_live_receipt_examples sends them.)"""
    live.inst.write_conf(OTT_CONF)
    n = 0
    for m, p in oc.operations():
        # The receipts' need a signature, the unsubscribe's a token, the
        # console's a session (test_console.py sends its forms).
        if op(m, p)["x-cgi-program"] in ("receipts", "unsubscribe",
                                         "console"):
            continue
        rb = op(m, p).get("requestBody")
        for mt in (rb or {}).get("content", {}).values():
            for name, ex in mt.get("examples", {}).items():
                if m == "POST":
                    r = live.post_json(p, ex["value"])
                elif FRONT == "busybox":
                    # It passes a PUT's body without its length: 411.
                    continue
                else:
                    r = live.request(m, _concrete(p),
                                     json=ex["value"])
                check_reply(r)
                assert 200 <= r.status_code < 300, (p, name, r.text[:500])
                n += 1
    assert n >= 9


def _concrete(path):
    """A templated path with a concrete value in each parameter."""
    return path.replace("{channel}", "sms").replace(
        "{address}", "%2B4915112345678")


@pytest.mark.parametrize("path", list(PATHS))
def test_live_other_methods_are_405_with_allow(live, path):
    methods = PATHS[path]
    # A templated path is asked for with a concrete value (the program
    # answers 405 before it looks at the id or the provider).
    concrete = path.replace("{id}", SOME_ID).replace("{provider}", "twilio")
    concrete = concrete.replace("{token}", "bm8.dG9rZW4")
    concrete = _concrete(concrete)
    others = [m for m in ("GET", "POST", "PUT", "DELETE", "OPTIONS")
              if m not in methods]
    for other in others:
        r = live.request(other, concrete)
        checked(r, 405)
        assert r.headers["Allow"] == ", ".join(methods), other


def test_live_ping(live):
    assert checked(live.get("/ping", client=None), 200) == "pong"
    checked(live.get("/ping", api_key="not a key"), 200)
    checked(live.post_json("/ping", {}, client=None), 405)


def test_live_templates(live):
    got = checked(live.get("/templates"), 200)
    assert got and got == sorted(got, key=lambda t: t["createdDate"])
    assert checked(live.get("/templates", client="mailer"), 200) == []
    checked(live.get("/templates", client=None), 401)
    checked(live.get("/templates", api_key="wrong"), 401)
    checked(live.get("/templates", client="gone"), 403)


def test_live_ott(live):
    live.inst.write_conf(OTT_CONF)
    out = checked(live.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": "4915112345678", "templateID": "otp",
         "templateParameters": ["123456"], "channelType": 1},
        {"recipient": "4915112345678", "templateID": "otp",
         "templateParameters": ["1"], "channelType": 9},
        {"recipient": "+4915112345678", "templateID": "otp",
         "channelType": 1},
        {"recipient": "4915112345678", "templateID": "nosuch",
         "templateParameters": [], "channelType": 1},
        "not an object",
    ]}), 200)
    assert [e["status"] for e in out] == ["queued"] + ["error"] * 4
    assert out[4]["recipient"] is None
    checked(live.post_json("/ott/v1/deliver", {"payload": []}), 400)
    checked(live.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": "4915112345678", "templateID": "otp",
         "channelType": 1}]}, client="mailer"), 403)
    checked(live.post_json("/ott/v1/deliver", {"payload": []},
                          content_type="text/plain"), 415)


def test_live_sms(live):
    body = {"recipient": RECIPIENT, "messageBody": "hi"}
    checked(live.post_json("/sms/v1/deliver", body), 202)
    out = checked(live.post_json("/sms/v1/deliver",
                                dict(body, sendAt=in_future(3600))), 200)
    assert out["status"] == "Scheduled"
    checked(live.post_json("/sms/v1/deliver", dict(body, sendAt=None)), 202)
    checked(live.post_json("/sms/v1/deliver",
                          dict(body, recipient="+0123456789")), 400)
    checked(live.post_json("/sms/v1/deliver", dict(body, extra=1)), 400)
    checked(live.post_raw("/sms/v1/deliver", b"{not json"), 400)
    checked(live.post_json("/sms/v1/deliver", body, api_key="wrong"), 401)
    checked(live.post_json("/sms/v1/deliver", body, client="mailer"), 403)
    checked(live.post_raw("/sms/v1/deliver", b" " * (1024 * 1024 + 1)), 413)
    checked(live.post_json("/sms/v1/deliver", body,
                          content_type="text/plain"), 415)


def test_live_sms_without_content_length_is_411(live):
    key = live.inst.keys["acme"]
    status, hdrs, body = live.raw(
        ("POST /sms/v1/deliver HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         f"X-API-KEY: {key}\r\nContent-Type: application/json\r\n"
         "Connection: close\r\n\r\n").encode())
    check_response("POST", "/sms/v1/deliver", status, hdrs, body)
    assert status == 411


def test_live_sms_batch(live):
    out = checked(live.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": RECIPIENT, "messageBody": "now"},
        {"recipient": RECIPIENT, "messageBody": "later",
         "sendAt": in_future(3600)},
        {"recipient": "12345", "messageBody": "bad"},
        {"recipient": 5, "messageBody": ""},
    ]}), 200)
    assert [e["status"] for e in out] == ["Queued", "Scheduled", "error",
                                          "error"]
    checked(live.post_json("/sms/v1/deliver/batch", {"messages": []}), 400)
    checked(live.post_json("/sms/v1/deliver/batch", [1]), 400)


def test_live_voice(live):
    out = checked(live.post_json("/voice/v1/deliver", {
        "recipient": RECIPIENT, "message": "hello", "callerId": "+15005550006",
        "language": "en-US"}), 202)
    assert set(out) == {"callId", "status"}
    out = checked(live.post_json("/voice/v1/deliver", {
        "campaignName": "spring", "recipients": [RECIPIENT, RECIPIENT, "x", 7],
        "audioUrl": "https://cdn.example.com/a.mp3",
        "sendAt": in_future(3600)}), 202)
    assert (out["accepted"], out["rejected"]) == (1, 3)
    assert "sendAt" in out
    checked(live.post_json("/voice/v1/deliver", {
        "recipient": RECIPIENT, "message": "hi",
        "audioUrl": "https://cdn.example.com/a.mp3"}), 400)
    checked(live.post_json("/voice/v1/deliver", {
        "recipient": RECIPIENT, "message": "hi"}, client="smsonly"), 403)


@pytest.mark.parametrize("path", ["/deliver", "/email/v1/deliver"])
def test_live_email_both_shapes_on_both_routes(live, path):
    out = checked(live.post_json(path, {
        "templateId": "welcome", "subject": "ignored",
        "payload": [{"recipient": "ann@example.com",
                     "fields": {"first_name": "Ann"}},
                    {"recipient": "bob@example.org"},
                    {"recipient": "not an address"}],
        "attachments": [{"attachmentName": "a.txt",
                         "content": b64(b"hello\n")}]}), 200)
    assert out["overallStatus"] == "partial" and out["errors"]
    assert set(out) == {"overallStatus", "errors", "recipients"}
    out = checked(live.post_json(path, {
        "html": "<p>Hi {{name}}</p>", "subject": "Hi {{name}}",
        "from": "Shop <shop@acme.example>",
        "recipients": [{"to": "ann@example.com", "fields": {"name": "Ann"}},
                       {"to": "bob@example.org"}]}), 200)
    assert out["overallStatus"] == "partial" and out["errors"] is None
    assert out["templateId"] is None and "to" in out["recipients"][0]


def test_live_email_errors(live):
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "html": "<p>x</p>",
        "payload": [{"recipient": "ann@example.com"}]}), 400)
    r = live.post_json("/deliver", {
        "templateId": "nosuch", "payload": [{"recipient": "ann@example.com"}]})
    assert checked(r, 400)["type"] == "urn:msgspool:problem:unknown-template"
    checked(live.post_json("/email/v1/deliver", {
        "templateId": "welcome", "recipients": []}), 400)
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com"}],
        "attachments": [{"attachmentName": "a.txt", "content": "!!"}]}), 400)
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com"}]},
        client="smsonly"), 403)
    checked(live.post_json("/email/v1/deliver", {}, client=None), 401)
    # An attachment over max-attachment is a 413 of the program itself.
    live.inst.write_conf("max-attachment = 1K\n")
    r = live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com"}],
        "attachments": [{"attachmentName": "a.bin",
                         "content": b64(b"x" * 2048)}]})
    assert checked(r, 413)["type"] == "urn:msgspool:problem:invalid-field"


def test_live_attachments_upload(live):
    r = live.post_json("/email/v1/attachments", {
        "attachmentName": "hello.txt", "content": b64(b"Hello, world\n")})
    out = checked(r, 201)
    assert r.headers["Deprecation"] == "true"
    # The upload stands in for content in an email of the same client.
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com",
                                              "fields": {"first_name": "A"}}],
        "attachments": [{"attachmentId": out["attachmentId"]}]}), 200)
    r = live.post_json("/email/v1/attachments", {
        "attachmentName": "x.txt", "content": "not base64!"})
    checked(r, 400)
    assert r.headers.get("Deprecation") == "true"
    checked(live.post_json("/email/v1/attachments", {
        "attachmentName": "a/b", "content": ""}), 400)
    checked(live.post_json("/email/v1/attachments", {
        "attachmentName": "x.txt", "content": ""}, client="smsonly"), 403)
    live.inst.write_conf("max-attachment = 1K\n")
    r = live.post_json("/email/v1/attachments", {
        "attachmentName": "big.bin", "content": b64(b"x" * 2048)})
    checked(r, 413)
    assert r.headers.get("Deprecation") == "true"


def test_live_messages(live):
    """GET and DELETE /messages/{id}: every status the program gives."""
    sid = checked(live.sms(), 202)["smsId"]
    st = checked(live.get("/messages/" + sid), 200)
    assert (st["id"], st["status"]) == (sid, "queued")
    later = checked(live.sms(sendAt=in_future(3600)), 200)["smsId"]
    st = checked(live.get("/messages/" + later), 200)
    assert st["status"] == "scheduled"
    assert parse_time(st["nextAttemptAt"]) == parse_time(st["sendAt"])
    st = checked(live.request("DELETE", "/messages/" + later), 200)
    assert st["status"] == "canceled"
    assert [e["status"] for e in st["events"]] == ["scheduled", "canceled"]
    # Canceled already: the same answer.
    assert checked(live.request("DELETE", "/messages/" + later),
                   200)["status"] == "canceled"
    assert checked(live.get("/messages/" + later), 200)["status"] == \
        "canceled"
    live.inst.daemon_once()
    st = checked(live.get("/messages/" + sid), 200)
    assert st["status"] == "sent" and st["provider"] == "file"
    p = checked(live.request("DELETE", "/messages/" + sid), 409)
    assert p["type"] == "urn:msgspool:problem:not-cancelable"
    # Another client's message does not exist for this one.
    for method in ("GET", "DELETE"):
        for path in ("/messages/" + SOME_ID, "/messages/" + sid):
            client = "acme" if path.endswith(SOME_ID) else "mailer"
            p = checked(live.request(method, path, client=client), 404)
            assert p["type"] == "urn:msgspool:problem:not-found"
        p = checked(live.request(method, "/messages/nope"), 400)
        assert p["type"] == "urn:msgspool:problem:invalid-id"
        checked(live.request(method, "/messages/" + sid, client=None), 401)
        checked(live.request(method, "/messages/" + sid, api_key="wrong"),
                401)
        checked(live.request(method, "/messages/" + sid, client="gone"),
                403)
    assert live.inst.where(sid) == ["sent"]


# The receipts' request examples name this Twilio account and this
# WhatsApp number: the config below has sections for them, with the
# secrets the tests sign with.
PUBLIC = "https://msg.example.com"
TWILIO_SID = "AC0123456789abcdef0123456789abcdef"
TWILIO_TOKEN = "twilio-auth-token"
WA_PHONE = "106540352242922"
WA_SECRET = "meta-app-secret"
WA_VERIFY = "verify-me-please"
HTTP_SECRET = "whsec_" + b64(b"0123456789abcdef01234567")
RECEIPTS_CONF = f"""public-url = {PUBLIC}

[sms]
provider = twilio
account-sid = {TWILIO_SID}
auth-token = {TWILIO_TOKEN}
from = +15005550006

[ott.1]
provider = whatsapp
phone-number-id = {WA_PHONE}
token = not-used-here
app-secret = {WA_SECRET}
verify-token = {WA_VERIFY}

[voice]
provider = http
url = http://127.0.0.1:9/not-used-here
receipt-secret = {HTTP_SECRET}
"""


def _twilio_receipt(live, params, query="", token=TWILIO_TOKEN):
    """POST params as Twilio does, signed (computed here with hmac)."""
    q = f"?{query}" if query else ""
    data = f"{PUBLIC}/receipts/twilio{q}" + "".join(
        k + params[k] for k in sorted(params))
    sig = b64(hmac.new(token.encode(), data.encode(), hashlib.sha1).digest())
    return live.request("POST", "/receipts/twilio" + q, client=None,
                        data=urllib.parse.urlencode(params),
                        headers={"Content-Type":
                                 "application/x-www-form-urlencoded",
                                 "X-Twilio-Signature": sig})


def _whatsapp_receipt(live, body, secret=WA_SECRET):
    sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return live.request("POST", "/receipts/whatsapp", client=None, data=body,
                        headers={"Content-Type": "application/json",
                                 "X-Hub-Signature-256": "sha256=" + sig})


def _http_receipt(live, body, secret=HTTP_SECRET, ts=None):
    ts = str(int(time.time())) if ts is None else ts
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"msg_1.{ts}.".encode() + body, hashlib.sha256)
    return live.request("POST", "/receipts/http", client=None, data=body,
                        headers={"Content-Type": "application/json",
                                 "webhook-id": "msg_1",
                                 "webhook-timestamp": ts,
                                 "webhook-signature": "v1," +
                                 b64(mac.digest())})


@pytest.fixture
def receipts(live):
    """The live server configured for receipts; receipts/ and the inbound
    messages kept emptied after (nothing here runs the daemon that would
    apply or hand them)."""
    live.inst.write_conf(RECEIPTS_CONF)
    yield live
    for area in ("receipts", "inbox", "inbox-new"):
        shutil.rmtree(live.inst.spool / area, ignore_errors=True)


def test_live_receipt_examples(receipts):
    """Each request example of POST /receipts/{provider}, signed as its
    provider signs, is taken (200) as the document says."""
    live = receipts
    content = op("POST", "/receipts/{provider}")["requestBody"]["content"]
    n = 0
    for name, ex in content["application/x-www-form-urlencoded"][
            "examples"].items():
        out = checked(_twilio_receipt(live, ex["value"]), 200)
        if name == "twilioIncoming":
            # A message people sent: kept, answered with empty TwiML.
            assert "<Response/>" in out, name
        else:
            # Matched later through the provider's id: stored.
            assert out == {"stored": 1, "dropped": 0}, name
        n += 1
    for name, ex in content["application/json"]["examples"].items():
        body = json.dumps(ex["value"]).encode()
        if name.startswith("whatsapp"):
            out = checked(_whatsapp_receipt(live, body), 200)
            value = ex["value"]["entry"][0]["changes"][0]["value"]
            want = {"stored": len(value.get("statuses", [])), "dropped": 0}
            if value.get("messages"):
                want["received"] = len(value["messages"])
            assert out == want, name
        elif name == "httpInbound":
            out = checked(_http_receipt(live, body), 200)
            assert out == {"stored": 0, "dropped": 0, "received": 1}, name
        else:
            assert name.startswith("http"), name
            out = checked(_http_receipt(live, body), 200)
            # SOME_ID is no message of this spool: dropped.
            assert out == {"stored": 0, "dropped": 1}, name
        n += 1
    assert n >= 7


def test_live_receipts(receipts):
    """/receipts/{provider}: every status the program gives, but 500 and
    503 (test_live_503_and_500)."""
    live = receipts
    params = {"AccountSid": TWILIO_SID, "MessageStatus": "delivered",
              "MessageSid": "SM" + "0" * 32}
    # Twilio: the message id in the query; an unknown one is dropped.
    assert checked(_twilio_receipt(live, params, query="id=" + SOME_ID),
                   200) == {"stored": 0, "dropped": 1}
    # A call's ringing tells nothing: not stored.
    assert checked(_twilio_receipt(live, {
        "AccountSid": TWILIO_SID, "CallStatus": "ringing",
        "CallSid": "CA" + "0" * 32}), 200) == {"stored": 0, "dropped": 0}
    for r in (_twilio_receipt(live, params, token="wrong"),
              _twilio_receipt(live, dict(params, AccountSid="AC" + "1" * 32)),
              live.request("POST", "/receipts/twilio", client=None,
                           data=urllib.parse.urlencode(params))):
        p = checked(r, 403)
        assert p["type"] == "urn:msgspool:problem:bad-signature"
    # WhatsApp: a wrong app secret; not JSON.
    body = json.dumps(op("POST", "/receipts/{provider}")["requestBody"][
        "content"]["application/json"]["examples"]["whatsappRead"][
        "value"]).encode()
    checked(_whatsapp_receipt(live, body, secret="wrong"), 403)
    checked(_whatsapp_receipt(live, b"not json"), 403)
    # http: a wrong secret, a stale timestamp; signed but not a receipt.
    ok = json.dumps({"id": SOME_ID, "status": "delivered"}).encode()
    checked(_http_receipt(live, ok, secret="whsec_" + b64(b"x" * 24)), 403)
    checked(_http_receipt(live, ok, ts=str(int(time.time()) - 3600)), 403)
    for bad in ({"id": SOME_ID}, {"id": SOME_ID, "status": "queued"}, []):
        p = checked(_http_receipt(live, json.dumps(bad).encode()), 400)
        assert p["type"] == "urn:msgspool:problem:invalid-field"
    assert not (live.inst.spool / "receipts").is_dir() or \
        list((live.inst.spool / "receipts").iterdir()) == []
    # The WhatsApp handshake.
    q = {"hub.mode": "subscribe", "hub.verify_token": WA_VERIFY,
         "hub.challenge": "1158201444"}
    r = live.get("/receipts/whatsapp?" + urllib.parse.urlencode(q),
                 client=None)
    assert checked(r, 200) == "1158201444"
    for wrong in (dict(q, **{"hub.verify_token": "not it"}),
                  dict(q, **{"hub.mode": "unsubscribe"}),
                  {"hub.challenge": "1"}):
        checked(live.get("/receipts/whatsapp?" +
                         urllib.parse.urlencode(wrong), client=None), 403)
    # GET elsewhere: 405 allowing POST; an unknown provider: 404.
    for name in ("twilio", "http"):
        r = live.get(f"/receipts/{name}?" + urllib.parse.urlencode(q),
                     client=None)
        checked(r, 405)
        assert r.headers["Allow"] == "POST"
    for method in ("GET", "POST"):
        p = checked(live.request(method, "/receipts/pigeon", client=None,
                                 data=b"x" if method == "POST" else None),
                    404)
        assert p["type"] == "urn:msgspool:problem:not-found"
    # 64 KiB at most; a Content-Length is needed.
    p = checked(live.post_raw("/receipts/http", b" " * (64 * 1024 + 1),
                              client=None), 413)
    assert p["type"] == "urn:msgspool:problem:payload-too-large"
    status, hdrs, body = live.raw(
        b"POST /receipts/twilio HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Connection: close\r\n\r\n")
    check_response("POST", "/receipts/twilio", status, hdrs, body)
    assert status == 411


def test_live_503_and_500(live):
    """A spool directory missing is 503 with Retry-After; an unreadable
    keys file is 500 (the live fixture restores both for the next test)."""
    (live.inst.spool / "new").rmdir()
    r = live.post_json("/sms/v1/deliver",
                      {"recipient": RECIPIENT, "messageBody": "hi"})
    checked(r, 503)
    assert r.headers["Retry-After"].isdigit()
    for method in ("GET", "DELETE"):
        r = live.request(method, "/messages/" + SOME_ID)
        checked(r, 503)
        assert r.headers["Retry-After"].isdigit()
    for r in (live.request("POST", "/receipts/twilio", client=None,
                           data=b"x"),
              live.get("/receipts/whatsapp?hub.mode=subscribe",
                       client=None)):
        checked(r, 503)
        assert r.headers["Retry-After"].isdigit()
    (live.inst.spool / "new").mkdir(mode=0o700)
    live.inst.keys_file.unlink()
    checked(live.get("/templates"), 500)
    checked(live.post_json("/voice/v1/deliver",
                          {"recipient": RECIPIENT, "message": "x"}), 500)
    checked(live.post_json("/email/v1/attachments",
                          {"attachmentName": "a", "content": ""}), 500)
    for method in ("GET", "DELETE"):
        checked(live.request(method, "/messages/" + SOME_ID), 500)
    # The receipts need no keys file: an unreadable config instead.
    live.inst.conf.write_text("this is not a config line\n")
    checked(live.request("POST", "/receipts/http", client=None, data=b"x"),
            500)
    checked(live.get("/receipts/whatsapp?hub.mode=subscribe", client=None),
            500)
    checked(live.get("/ping", client=None), 200)

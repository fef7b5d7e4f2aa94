"""A client's own reference of each message it sends (conf/openapi.yaml,
MessageReference): taken on every send route beside the recipient, kept
in the message's file (msgspool-spool(5), The document), given back in
GET /messages/{id} and in the data of webhook events; and the status
object's direction and route (MessageStatus).

A reference is 1 to 128 characters (code points), none a control
character (U+0000 to U+001F, U+007F to U+009F); null counts as absent.
A bad one is a 400 naming it on a one-message route, and fails its
entry alone in a batch (an email recipient's of another type than a
string: a 400, as for its address)."""

import json

import pytest

from channels_support import (OTT_CONF, ok_json, ott_templates,  # noqa: F401
                              spooled)
from conftest import RECIPIENT, assert_nothing_queued, assert_problem
from delivery_support import daemons  # noqa: F401 (fixture)
from openapi_check import check_reply
from test_webhooks import SECRET as HOOK_SECRET, receiver  # noqa: F401

__all__ = ["daemons", "receiver", "ott_templates"]

R2 = "+4915112345679"
R3 = "+4915112345670"
ANN, BOB = "ann@example.com", "bob@example.org"
FROM = "hello@acme.example"

# 128 characters of 2, 3 and 4 bytes in UTF-8, and one of each range's
# neighbours that is no control character.
GOOD = ["r", "order-1001", "é" * 128, "€" * 128, "\U0001F600" * 128,
        "x" * 128, "Ann's order #7 (two boxes)", "\u00a0nbsp", "a\u00a0b",
        " leading and trailing "]
# (value, what the error says)
BAD = [("", "empty"), ("x" * 129, "at most 128"), ("é" * 129, "at most 128"),
       ("a\nb", "control"), ("a\tb", "control"), ("a\u0007b", "control"),
       ("a\u007fb", "control"), ("a\u0085b", "control"),
       ("a\u009fb", "control"), ("\u0000", "NUL"), ("a\rb", "control"),
       (5, "string"), ({"id": "x"}, "string"), (["x"], "string"),
       (True, "string")]
BAD_IDS = ["empty", "129", "129-multibyte", "LF", "TAB", "BEL", "DEL",
           "NEL", "U+009F", "NUL", "CR", "number", "object", "array", "bool"]


def _status(srv, msgid):
    """GET /messages/{id}, checked against conf/openapi.yaml."""
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, r.text
    check_reply(r)
    return r.json()


def _utf8(srv, path, body):
    """POST body as UTF-8 JSON, its characters as they are (not \\u
    escapes, as json.dumps would write them)."""
    return srv.post_raw(path, json.dumps(body, ensure_ascii=False).encode())


def _sms_batch(srv, *entries):
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": list(entries)})
    check_reply(r)
    return ok_json(r, 200)


def _ott(srv, *entries):
    r = srv.post_json("/ott/v1/deliver", {"payload": list(entries)})
    check_reply(r)
    return ok_json(r, 200)


def _ott_entry(recipient="4915112345678", channel=3, **extra):
    e = {"recipient": recipient, "templateID": "order_update",
         "templateParameters": ["Ann", "A-1001"], "channelType": channel}
    e.update(extra)
    return e


def _voice(srv, body):
    r = srv.post_json("/voice/v1/deliver", body)
    check_reply(r)
    return r


def _email(srv, path, items, **extra):
    key = "payload" if path == "/deliver" else "recipients"
    body = {"html": "<p>Hi</p>", "subject": "Hi", "from": FROM, key: items}
    body.update(extra)
    r = srv.post_json(path, body)
    check_reply(r)
    return r


@pytest.fixture
def routes(srv, ott_templates):  # noqa: F811
    """The shared server with [ott.1] and [ott.3] configured and acme's
    OTT templates in place."""
    srv.inst.write_conf(OTT_CONF)
    yield srv
    srv.inst.write_conf()


# ------------------------------------------------ stored and given back

def test_every_route_keeps_the_reference(routes, daemons):
    srv = routes
    sent = {}   # message id -> (reference or None, channel, route)

    r = srv.sms(reference="sms-1")
    assert r.status_code == 202, r.text
    sent[r.json()["smsId"]] = ("sms-1", "sms", "sms")

    out = _sms_batch(srv, {"recipient": RECIPIENT, "messageBody": "a",
                           "reference": "batch-1"},
                     {"recipient": R2, "messageBody": "b"},
                     {"recipient": R3, "messageBody": "c",
                      "reference": None})
    for e, ref in zip(out, ("batch-1", None, None)):
        assert e["status"] == "Queued", out
        sent[e["smsId"]] = (ref, "sms", "sms")

    out = _ott(srv, _ott_entry(reference="ott-3"),
               _ott_entry(channel=1, reference="ott-1"), _ott_entry())
    for e, (ref, route) in zip(out, (("ott-3", "ott.3"), ("ott-1", "ott.1"),
                                     (None, "ott.3"))):
        assert e["status"] == "queued", out
        sent[e["messageId"]] = (ref, "ott", route)

    r = _voice(srv, {"recipient": RECIPIENT, "message": "hi",
                     "reference": "call-1"})
    assert r.status_code == 202, r.text
    sent[r.json()["callId"]] = ("call-1", "voice", "voice")

    # A campaign's reference is every call's but one that gives its own.
    r = _voice(srv, {"campaignName": "Spring", "message": "hi",
                     "reference": "spring",
                     "recipients": [RECIPIENT,
                                    {"recipient": R2, "reference": "own"},
                                    {"recipient": R3, "reference": None}]})
    out = ok_json(r, 202)
    assert out["accepted"] == 3, out
    assert [c["recipient"] for c in out["calls"]] == [RECIPIENT, R2, R3]
    for c, ref in zip(out["calls"], ("spring", "own", "spring")):
        sent[c["callId"]] = (ref, "voice", "voice")

    for path, addr in (("/deliver", "recipient"),
                       ("/email/v1/deliver", "to")):
        out = ok_json(_email(srv, path, [{addr: ANN, "reference": "mail-1"},
                                         {addr: BOB}]), 200)
        assert out["overallStatus"] == "success", out
        for e, ref in zip(out["recipients"], ("mail-1", None)):
            sent[e["messageId"]] = (ref, "email", "email")

    assert len(sent) == 15
    for msgid, (ref, channel, _) in sent.items():
        doc = spooled(srv.inst, "new", msgid, channel)
        assert doc.get("reference") == ref, doc
        assert "route" not in doc, doc
        st = _status(srv, msgid)
        assert st["reference"] == ref, st
        assert st["direction"] == "outbound", st
        assert st["route"] is None, st

    srv.inst.daemon_once()
    for msgid, (ref, channel, route) in sent.items():
        st = _status(srv, msgid)
        assert st["status"] == "sent" and st["provider"] == "file", st
        assert (st["reference"], st["route"]) == (ref, route), st
        doc = json.loads(srv.inst.path("sent", msgid).read_bytes())
        assert doc.get("reference") == ref and doc["route"] == route, doc


@pytest.mark.parametrize("ref", GOOD, ids=range(len(GOOD)))
def test_any_text_of_1_to_128_characters(srv, ref):
    for r in (srv.sms(reference=ref),
              _utf8(srv, "/sms/v1/deliver", {"recipient": RECIPIENT,
                                             "messageBody": "hi",
                                             "reference": ref})):
        assert r.status_code == 202, r.text
        msgid = r.json()["smsId"]
        assert _status(srv, msgid)["reference"] == ref
        doc = spooled(srv.inst, "new", msgid, "sms")
        assert doc["reference"] == ref, doc


def test_webhook_event_carries_reference_direction_route(srv, receiver,
                                                         daemons):
    srv.inst.write_conf(f"\n[client.acme]\nwebhook-url = {receiver.url}\n"
                        f"webhook-secret = {HOOK_SECRET}\n")
    r = srv.sms(reference="order-1001")
    assert r.status_code == 202, r.text
    msgid = r.json()["smsId"]
    daemons.once(srv.inst.conf)
    got = receiver.wait(1)
    assert got[0]["verified"], got[0]["headers"]
    body = json.loads(got[0]["body"])
    assert body["type"] == "message.sent", body
    data = body["data"]
    assert data["id"] == msgid and "events" not in data, data
    assert data["reference"] == "order-1001", data
    assert data["direction"] == "outbound" and data["route"] == "sms", data
    st = _status(srv, msgid)
    del st["events"]
    assert data == st


# ---------------------------------------------------------- bad values

@pytest.mark.parametrize("ref,why", BAD, ids=BAD_IDS)
def test_bad_reference_one_sms_is_400(srv, ref, why):
    r = srv.sms(reference=ref)
    check_reply(r)
    p = assert_problem(r, 400, "reference")
    assert why in " ".join(p["errors"]["reference"]), p
    assert list(p["errors"]) == ["reference"], p
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("ref,why", BAD, ids=BAD_IDS)
def test_bad_reference_fails_its_entry_alone(routes, ref, why):
    srv = routes
    out = _sms_batch(srv, {"recipient": RECIPIENT, "messageBody": "a",
                           "reference": "good"},
                     {"recipient": R2, "messageBody": "b", "reference": ref})
    assert out[0]["status"] == "Queued", out
    assert out[1]["status"] == "error" and out[1]["smsId"] is None, out
    assert out[1]["error"].startswith("reference: ") and \
        why in out[1]["error"], out

    out = _ott(srv, _ott_entry(reference=ref), _ott_entry())
    assert out[0]["status"] == "error" and "reference: " in out[0]["error"] \
        and why in out[0]["error"], out
    assert out[1]["status"] == "queued", out

    # A campaign recipient with a reference of its own.
    out = ok_json(_voice(srv, {"campaignName": "C", "message": "hi",
                               "recipients": [{"recipient": RECIPIENT,
                                               "reference": ref}, R2]}), 202)
    assert [c["status"] for c in out["calls"]] == ["error", "queued"], out
    assert out["calls"][0]["recipient"] == RECIPIENT, out
    assert out["calls"][0]["error"].startswith("recipients[0].reference: "), \
        out
    assert out["accepted"] == 1 and out["rejected"] == 1, out
    assert len(srv.inst.files("new")) == 3


@pytest.mark.parametrize("ref,why", BAD, ids=BAD_IDS)
def test_bad_reference_of_a_call_or_campaign_is_400(srv, ref, why):
    for body in ({"recipient": RECIPIENT, "message": "hi", "reference": ref},
                 {"campaignName": "C", "message": "hi", "recipients": [R2],
                  "reference": ref}):
        p = assert_problem(_voice(srv, body), 400, "reference")
        assert why in " ".join(p["errors"]["reference"]), p
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("path,addr", [("/deliver", "recipient"),
                                       ("/email/v1/deliver", "to")])
@pytest.mark.parametrize("ref,why", BAD, ids=BAD_IDS)
def test_bad_reference_of_an_email_recipient(srv, path, addr, ref, why):
    r = _email(srv, path, [{addr: ANN, "reference": ref}, {addr: BOB}])
    if not isinstance(ref, str) or "\0" in ref:
        # Of another type, or with a NUL, as an address would be: a 400.
        key = "payload" if path == "/deliver" else "recipients"
        assert_problem(r, 400, f"{key}[0].reference")
        assert_nothing_queued(srv.inst)
        return
    out = ok_json(r, 200)
    assert out["overallStatus"] == "partial", out
    first, second = out["recipients"]
    assert first["status"] == "error" and first["messageId"] is None, out
    assert first["error"].startswith("reference: ") and why in first["error"]
    assert second["status"] == "queued", out
    assert srv.inst.files("new") == [second["messageId"] + ".json"]


def test_campaign_recipient_objects_are_checked(srv):
    out = ok_json(_voice(srv, {"campaignName": "C", "message": "hi",
                               "recipients": [
                                   {"recipient": RECIPIENT, "ref": "x"},
                                   {"reference": "no number"},
                                   {"recipient": "12345"},
                                   {"recipient": R2},
                                   R2, 42]}), 202)
    calls = out["calls"]
    assert [c["status"] for c in calls] == \
        ["error", "error", "error", "queued", "error", "error"], out
    assert "recipients[0].ref: is not a known field" in calls[0]["error"]
    assert "recipients[1].recipient: is required" in calls[1]["error"]
    assert calls[2]["error"].startswith("recipients[2].recipient: ")
    assert calls[3]["recipient"] == R2
    # The same number, once as an object and once as a string.
    assert "duplicate" in calls[4]["error"], calls[4]
    assert calls[5]["recipient"] is None, calls[5]


# ------------------------------------------------------------ and else

def test_idempotency_key_covers_the_reference(srv):
    def post(ref):
        return srv.post_json("/sms/v1/deliver", {
            "recipient": RECIPIENT, "messageBody": "hi", "reference": ref},
            headers={"Idempotency-Key": "ref-1"})
    first = post("order-1")
    assert first.status_code == 202, first.text
    again = post("order-1")
    assert again.status_code == 202 and again.json() == first.json()
    assert again.headers.get("Idempotent-Replay") == "true"
    check_reply(again)
    other = post("order-2")
    check_reply(other)
    assert_problem(other, 422)
    assert srv.inst.files("new") == [first.json()["smsId"] + ".json"]


def test_route_after_a_temporary_failure(srv):
    """An attempt that failed names the route that tried it: an http
    provider on a port where nothing listens is retrying, route sms."""
    srv.inst.write_conf("\n[sms]\nprovider = http\n"
                        "url = http://127.0.0.1:9/hook\n")
    r = srv.sms(reference="again")
    assert r.status_code == 202, r.text
    msgid = r.json()["smsId"]
    srv.inst.daemon_once()
    st = _status(srv, msgid)
    assert st["status"] == "retrying", st
    assert st["route"] == "sms" and st["reference"] == "again", st


def test_found_by_its_reference(routes):
    """GET /messages?reference= lists the messages of every route that
    carry it, exactly (MessageList)."""
    srv = routes
    ref = "Bestellung-é 7"
    want = {srv.sms(reference=ref).json()["smsId"]}
    srv.sms(reference=ref + " ")
    srv.sms()
    out = _sms_batch(srv, {"recipient": R2, "messageBody": "b",
                           "reference": ref})
    want.add(out[0]["smsId"])
    want.add(_ott(srv, _ott_entry(reference=ref))[0]["messageId"])
    want.add(_voice(srv, {"recipient": R3, "message": "hi",
                          "reference": ref}).json()["callId"])
    out = ok_json(_email(srv, "/email/v1/deliver",
                         [{"to": ANN, "reference": ref}, {"to": BOB}]), 200)
    want.add(out["recipients"][0]["messageId"])
    r = srv.get("/messages", params={"reference": ref})
    check_reply(r)
    got = ok_json(r, 200)
    assert {m["id"] for m in got["messages"]} == want, got
    assert all(m["reference"] == ref for m in got["messages"]), got
    assert got["next"] is None, got


def test_route_of_a_test_key_and_of_a_refused_message(routes):
    """A test key's message, never handed to a provider, names its
    channel's section as a live key's would; a
    message failed because its recipient was suppressed after it was
    queued reached no provider and names no route."""
    srv = routes
    cp = srv.inst.cli("key", "add", "sandbox", "*", "--test")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    try:
        r = srv.post_json("/voice/v1/deliver", {
            "recipient": RECIPIENT, "message": "hi",
            "reference": "sandbox-1"}, api_key=key)
        sandbox = ok_json(r, 202)["callId"]
        queued = srv.sms(recipient=R2, reference="late").json()["smsId"]
        r = srv.request("PUT", "/suppressions/sms/%2B" + R2[1:])
        assert r.status_code == 201, r.text
        srv.inst.daemon_once()
        r = srv.get("/messages/" + sandbox, api_key=key)
        check_reply(r)
        st = ok_json(r, 200)
        assert st["provider"] == "test" and st["route"] == "voice", st
        assert st["reference"] == "sandbox-1", st
        st = _status(srv, queued)
        assert st["status"] == "failed", st
        assert st["error"]["code"] == "suppressed", st
        assert st["route"] is None and st["reference"] == "late", st
    finally:
        srv.inst.write_keys()

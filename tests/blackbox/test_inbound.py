"""Inbound messages (msgspool-spool(5) inbox/; msgspoold(8), Inbound
messages; conf/openapi.yaml, /receipts/{provider} and InboundMessage):
what people send to a client's numbers, posted by the stand-ins as
Twilio and Meta post it (doubles/twilio.py, whatsapp.py), signed by the
http provider per Standard Webhooks, delivered by the stand-in SMSC
(doubles/smsc.py) as mobile-originated deliver_sm.  Each is kept once in
inbox/, owned by the client whose [client.ID] inbound key lists its
number, handed to it by msgspoold (message.received, signed), readable
at GET /messages/{id} by its owner alone, and listed by msgspool list
--inbound."""

import base64
import json
import os
import threading
import time
import urllib.parse

import pytest

from conftest import Instance, ID_RE, parse_time, utcnow
from delivery_support import EVENTUALLY, daemons, run_cli, wait_until
from doubles.smsc import ESME_ROK, Smsc
from doubles.standin import Standin
from doubles.whatsapp import (WA_DISPLAY_NUMBER, wa_button, wa_interactive,
                              wa_location, wa_media, wa_text)
from harness.receiptsign import stdwh_sig, twilio_sig
from openapi_check import check_reply, check_response
from test_webhooks import SECRET as HOOK_SECRET, receiver

__all__ = ["daemons", "receiver"]

PUBLIC = "https://msg.example.com"
APP_SECRET = "meta-app-secret"
HTTP_SECRET = "whsec_" + base64.b64encode(b"inbound http secret, 24b+").decode()
ACME = "+15005550006"                   # the stand-in's Twilio number
ACME_WA = "+" + WA_DISPLAY_NUMBER       # and its WhatsApp business number
OTHER = "+4930901820"
NOBODY = "+4930900000"                  # no client's
PHONE = "+4915112345678"                # a person


@pytest.fixture
def standin():
    with Standin() as s:
        yield s


def _clients(hook=None, events=None):
    s = f"\n[client.acme]\ninbound = {ACME}, {ACME_WA}\n"
    if hook is not None:
        s += f"webhook-url = {hook}\nwebhook-secret = {HOOK_SECRET}\n"
        if events is not None:
            s += f"webhook-events = {events}\n"
    return s + f"\n[client.other]\ninbound = {OTHER}\n"


def _conf(inst, standin, hook=None, events=None, extra=""):
    inst.write_conf(
        f"public-url = {PUBLIC}\n" + standin.twilio_config() +
        standin.whatsapp_config(1) + f"app-secret = {APP_SECRET}\n"
        f"\n[ott.2]\nprovider = http\nurl = {standin.hook_url}\n"
        f"receipt-secret = {HTTP_SECRET}\n" + extra + _clients(hook, events))


def _inbox(inst):
    """The inbound documents kept, by id."""
    d = inst.spool / "inbox"
    out = {}
    for p in sorted(d.iterdir()) if d.is_dir() else []:
        doc = json.loads(p.read_bytes())
        assert p.name == doc["id"] + ".json", p.name
        out[doc["id"]] = doc
    return out


def _area(inst, area):
    d = inst.spool / area
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _the_one(inst):
    docs = _inbox(inst)
    assert len(docs) == 1, docs
    return next(iter(docs.values()))


def _twilio(srv, standin, body, frm=PHONE, to=ACME, **kw):
    answer, _ = standin.twilio_incoming(srv.url("/receipts/twilio"),
                                        f"{PUBLIC}/receipts/twilio", frm,
                                        to, body, **kw)
    return answer


def _http(srv, body, secret=HTTP_SECRET, msg_id="msg_inbound_1"):
    raw = json.dumps(body).encode()
    ts = str(int(time.time()))
    return srv.request("POST", "/receipts/http", client=None, data=raw,
                       headers={"Content-Type": "application/json",
                                "webhook-id": msg_id,
                                "webhook-timestamp": ts,
                                "webhook-signature": stdwh_sig(
                                    secret, msg_id, ts, raw)})


def _object(doc):
    """The inbound object of a kept document, as a client gets it."""
    return {k: doc[k] for k in (
        "id", "direction", "channel", "from", "to", "text", "type",
        "receivedAt", "provider", "providerMessageId", "media")}


# ---------------------------------------------------------------- twilio

def test_twilio_incoming_kept_owned_and_answered_with_empty_twiml(
        srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    before = utcnow()
    answer = _twilio(srv, standin, "Yes, Tuesday at 10 is fine")
    assert answer.status == 200, answer
    assert answer.content_type == "text/xml", answer
    assert b"<Response/>" in answer.body, answer
    check_response("POST", "/receipts/twilio", answer.status,
                   answer.headers, answer.body)
    assert standin.violations == [], standin.violations
    doc = _the_one(inst)
    assert ID_RE.match(doc["id"])
    assert doc["client"] == "acme"
    assert _object(doc) == {
        "id": doc["id"], "direction": "inbound", "channel": "sms",
        "from": PHONE, "to": ACME, "text": "Yes, Tuesday at 10 is fine",
        "type": "text", "receivedAt": doc["receivedAt"],
        "provider": "twilio", "providerMessageId":
        doc["providerMessageId"], "media": []}
    assert doc["providerMessageId"].startswith("SM")
    assert abs((parse_time(doc["receivedAt"]) - before).total_seconds()) < 5
    # Written durably before the answer, noted for msgspoold, never a
    # receipt and never a message to send.
    assert _area(inst, "inbox-new") == [doc["id"] + ".json"]
    assert _area(inst, "receipts") == []
    for state in ("tmp", "new", "deferred"):
        assert inst.files(state) == []
    mode = (inst.spool / "inbox" / (doc["id"] + ".json")).stat().st_mode
    assert mode & 0o7137 == 0, oct(mode)


def test_twilio_incoming_with_media(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    media = [("https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/"
              "MM1/Media/ME1", "image/jpeg"),
             ("https://api.twilio.com/2010-04-01/Accounts/AC1/Messages/"
              "MM1/Media/ME2", "audio/amr")]
    answer = _twilio(srv, standin, "", media=media)
    assert answer.status == 200, answer
    doc = _the_one(inst)
    assert doc["media"] == [u for u, _ in media]
    assert doc["text"] == "" and doc["type"] == "text"


def test_twilio_delivered_again_is_kept_once(srv, standin):
    """Twilio retries a webhook it thinks failed: the same MessageSid,
    again and at once, two of them side by side."""
    inst = srv.inst
    _conf(inst, standin)
    sid = "SM" + "7" * 32
    for _ in range(2):
        assert _twilio(srv, standin, "once", sid=sid).status == 200
    got = []
    threads = [threading.Thread(target=lambda: got.append(
        _twilio(srv, standin, "once", sid=sid).status)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [200] * 3, got
    doc = _the_one(inst)
    assert doc["providerMessageId"] == sid
    assert standin.violations == [], standin.violations


def test_twilio_bad_incoming_is_400_and_keeps_nothing(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    cases = [({"From": None}, "From"), ({"To": ""}, "To"),
             ({"MessageSid": None, "SmsSid": None, "SmsMessageSid": None},
              "MessageSid"),
             ({"NumMedia": "x"}, "NumMedia"), ({"NumMedia": "11"},
                                               "NumMedia"),
             ({"NumMedia": "2", "MediaUrl0": "https://m.example/1"},
              "MediaUrl1")]
    for change, path in cases:
        form = {"MessageSid": "SM" + "1" * 32, "SmsSid": "SM" + "1" * 32,
                "AccountSid": standin.twilio_account_sid, "From": PHONE,
                "To": ACME, "Body": "x", "NumMedia": "0",
                "ApiVersion": "2010-04-01"}
        form.update(change)
        form = {k: v for k, v in form.items() if v is not None}
        r = srv.request(
            "POST", "/receipts/twilio", client=None,
            data=urllib.parse.urlencode(form),
            headers={"Content-Type": "application/x-www-form-urlencoded",
                     "X-Twilio-Signature": twilio_sig(
                         standin.twilio_auth_token,
                         f"{PUBLIC}/receipts/twilio", form)})
        check_reply(r)
        p = r.json()
        assert r.status_code == 400 and path in p["errors"], (change, p)
    assert _inbox(inst) == {} and _area(inst, "inbox-new") == []
    # Signed with another token: 403 as any receipt.
    with Standin(twilio_auth_token="another token") as forger:
        answer = _twilio(srv, forger, "forged")
    assert answer.status == 403, answer
    assert _inbox(inst) == {}


# -------------------------------------------------------------- whatsapp

def test_whatsapp_messages_of_every_type_beside_statuses(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    frm = PHONE.lstrip("+")
    msgs = [wa_text(frm, "Hello there"),
            wa_button(frm, "Stop promotions"),
            wa_interactive(frm, "Tuesday"),
            wa_interactive(frm, "Large", kind="list_reply"),
            wa_media(frm, "image", "1234567890123456", caption="a cat"),
            wa_media(frm, "document", "6543210987654321",
                     mime="application/pdf"),
            wa_location(frm)]
    status = {"id": "wamid.unknown", "status": "delivered",
              "timestamp": str(int(time.time())),
              "recipient_id": frm}
    answer, _ = standin.whatsapp_incoming(srv.url("/receipts/whatsapp"),
                                          APP_SECRET, msgs, [status])
    assert answer.status == 200, answer
    check_response("POST", "/receipts/whatsapp", answer.status,
                   answer.headers, answer.body)
    assert answer.json() == {"stored": 1, "dropped": 0, "received": 7}
    assert standin.violations == [], standin.violations
    by_wamid = {d["providerMessageId"]: d for d in _inbox(inst).values()}
    assert len(by_wamid) == 7
    want = [("text", "Hello there", []), ("button", "Stop promotions", []),
            ("interactive", "Tuesday", []), ("interactive", "Large", []),
            ("image", None, ["1234567890123456"]),
            ("document", None, ["6543210987654321"]),
            ("location", None, [])]
    for m, (kind, text, media) in zip(msgs, want):
        d = by_wamid[m["id"]]
        assert (d["type"], d["text"], d["media"]) == (kind, text, media), d
        assert (d["channel"], d["provider"], d["from"], d["to"],
                d["client"]) == ("ott", "whatsapp", frm, ACME_WA, "acme")
        assert d["receivedAt"] == time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(m["timestamp"])))
    assert len(_area(inst, "receipts")) == 1


def test_whatsapp_repeated_and_out_of_order_kept_once(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    frm = PHONE.lstrip("+")
    first = wa_text(frm, "first", timestamp=str(int(time.time()) - 60))
    second = wa_text(frm, "second")
    post = srv.url("/receipts/whatsapp")
    for batch in ([second], [first, second], [first], [second, first]):
        answer, _ = standin.whatsapp_incoming(post, APP_SECRET, batch)
        assert answer.status == 200, answer
        assert answer.json()["received"] == len(batch)
    docs = sorted(_inbox(inst).values(), key=lambda d: d["receivedAt"])
    assert [d["text"] for d in docs] == ["first", "second"], docs
    assert len(_area(inst, "inbox-new")) == 2


def test_whatsapp_bad_message_is_400_and_keeps_nothing(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    frm = PHONE.lstrip("+")
    good = wa_text(frm, "fine")
    for bad, where in (({k: v for k, v in wa_text(frm, "x").items()
                         if k != "from"}, "messages[1].from"),
                       (dict(wa_text(frm, "x"), text={}),
                        "messages[1].text.body"),
                       (dict(wa_text("+49x", "x")), "messages[1].from")):
        answer, _ = standin.whatsapp_incoming(
            srv.url("/receipts/whatsapp"), APP_SECRET, [good, bad])
        assert answer.status == 400, answer
        p = answer.json()
        assert any(k.endswith(where) for k in p["errors"]), (where, p)
    answer, _ = standin.whatsapp_incoming(
        srv.url("/receipts/whatsapp"), APP_SECRET, [good],
        display_number="not a number")
    assert answer.status == 400, answer
    assert "metadata.display_phone_number" in answer.json()["errors"]
    # The 400s were Meta's to retry: the stand-in lists each.
    assert len(standin.violations) == 4
    assert _inbox(inst) == {}


# ------------------------------------------------------------------ http

def test_http_inbound_kept_once_by_its_id(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    body = {"type": "inbound", "from": "4915112345678", "to": OTHER,
            "text": "Ja, bitte", "id": "in-42", "at": "2026-01-02T03:04:05Z"}
    for n in range(2):
        r = _http(srv, body, msg_id=f"msg_{n}")
        check_reply(r)
        assert r.status_code == 200, r.text
        assert r.json() == {"stored": 0, "dropped": 0, "received": 1}
    doc = _the_one(inst)
    assert doc["client"] == "other"
    assert _object(doc) == {
        "id": doc["id"], "direction": "inbound", "channel": "ott",
        "from": "4915112345678", "to": OTHER, "text": "Ja, bitte",
        "type": "text", "receivedAt": "2026-01-02T03:04:05Z",
        "provider": "http", "providerMessageId": "in-42", "media": []}
    # Without an id each delivery is a message of its own.
    body = {"type": "inbound", "from": "x", "to": OTHER, "text": "no id"}
    assert _http(srv, body).status_code == 200
    assert _http(srv, body).status_code == 200
    assert len(_inbox(inst)) == 3


def test_http_inbound_on_an_sms_section_is_sms(srv, standin):
    inst = srv.inst
    inst.write_conf(f"public-url = {PUBLIC}\n[sms]\nprovider = http\n"
                    f"url = {standin.hook_url}\n"
                    f"receipt-secret = {HTTP_SECRET}\n" + _clients())
    r = _http(srv, {"type": "inbound", "from": PHONE, "to": ACME,
                    "text": "hi"})
    assert r.status_code == 200, r.text
    doc = _the_one(inst)
    assert (doc["channel"], doc["client"]) == ("sms", "acme")


@pytest.mark.parametrize("body,path", [
    ({"from": PHONE, "text": "x"}, "to"),
    ({"to": ACME, "text": "x"}, "from"),
    ({"from": PHONE, "to": ACME}, "text"),
    ({"from": PHONE, "to": ACME, "text": 5}, "text"),
    ({"from": PHONE, "to": ACME, "text": "x", "at": "yesterday"}, "at"),
    ({"from": PHONE, "to": ACME, "text": "x", "id": ""}, "id"),
    ({"from": "a\nb", "to": ACME, "text": "x"}, "from"),
])
def test_http_bad_inbound_is_400(srv, standin, body, path):
    _conf(srv.inst, standin)
    r = _http(srv, dict(body, type="inbound"))
    check_reply(r)
    assert r.status_code == 400, r.text
    assert path in r.json()["errors"], r.text
    assert _inbox(srv.inst) == {}


# --------------------------------------------------- owners and clients

def test_get_by_its_owner_only_and_no_cancel(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    assert _twilio(srv, standin, "for acme").status == 200
    doc = _the_one(inst)
    r = srv.get("/messages/" + doc["id"])
    check_reply(r)
    assert r.status_code == 200, r.text
    assert r.json() == _object(doc)
    for client in ("other", "smsonly"):
        r = srv.get("/messages/" + doc["id"], client=client)
        check_reply(r)
        assert r.status_code == 404, (client, r.text)
    r = srv.request("DELETE", "/messages/" + doc["id"])
    check_reply(r)
    assert r.status_code == 409, r.text
    assert "inbound" in r.json()["detail"]
    assert srv.request("DELETE", "/messages/" + doc["id"],
                       client="other").status_code == 404
    assert _the_one(inst) == doc


def test_message_received_webhook_signed_and_delivered(srv, standin,
                                                       receiver, daemons):
    inst = srv.inst
    _conf(inst, standin, hook=receiver.url)
    assert _twilio(srv, standin, "Call me back").status == 200
    # other owns OTHER and has no webhook: nothing for it.
    assert _http(srv, {"type": "inbound", "from": PHONE, "to": OTHER,
                       "text": "not acme's"}).status_code == 200
    daemons.once(inst.conf)
    got = receiver.wait(1)
    assert len(receiver.deliveries()) == 1
    d = got[0]
    assert d["verified"], d["headers"]
    body = json.loads(d["body"])
    assert body["type"] == "message.received", body
    mine = [x for x in _inbox(inst).values() if x["client"] == "acme"]
    assert body["data"] == _object(mine[0])
    assert body["data"] == srv.get("/messages/" + mine[0]["id"]).json()
    # Handed once: the notes are gone, the messages stay.
    assert _area(inst, "inbox-new") == [] and len(_inbox(inst)) == 2
    daemons.once(inst.conf)
    assert len(receiver.deliveries()) == 1


def test_received_left_out_of_webhook_events(srv, standin, receiver,
                                             daemons):
    _conf(srv.inst, standin, hook=receiver.url, events="sent,delivered")
    assert _twilio(srv, standin, "quiet").status == 200
    daemons.once(srv.inst.conf)
    assert _area(srv.inst, "events") == [] and receiver.deliveries() == []
    assert _area(srv.inst, "inbox-new") == []


def test_a_number_no_client_owns(srv, standin, receiver, daemons):
    """Kept, logged, listed for the operator, handed to no client."""
    inst = srv.inst
    _conf(inst, standin, hook=receiver.url)
    assert _twilio(srv, standin, "wrong number?", to=NOBODY).status == 200
    doc = _the_one(inst)
    assert doc["client"] is None and doc["to"] == NOBODY
    d = daemons.once(inst.conf)
    assert "no client's inbound key lists " + NOBODY in d.log(), d.log()
    assert receiver.deliveries() == [] and _area(inst, "events") == []
    assert _area(inst, "inbox-new") == [] and len(_inbox(inst)) == 1
    for client in ("acme", "other"):
        assert srv.get("/messages/" + doc["id"],
                       client=client).status_code == 404
    cp = run_cli(inst.conf, "list", "--inbound")
    assert cp.returncode == 0, cp.stderr
    line = [ln for ln in cp.stdout.splitlines() if ln.startswith(doc["id"])]
    assert len(line) == 1, cp.stdout
    for word in ("sms", PHONE, NOBODY, "(none)", "wrong number?"):
        assert word in line[0], line
    assert cp.stdout.rstrip().endswith("1 inbound message"), cp.stdout
    cp = run_cli(inst.conf, "show", doc["id"])
    assert cp.returncode == 0, cp.stderr
    shown = json.loads(cp.stdout)
    assert shown["state"] == "inbox" and shown["status"] == "received"
    assert shown["text"] == "wrong number?" and shown["client"] is None


def test_config_refuses_a_number_of_two_clients_or_no_number(srv,
                                                            daemons):
    for extra in ("\n[client.acme]\ninbound = +4930901820\n"
                  "[client.other]\ninbound = +4930901820\n",
                  "\n[client.acme]\ninbound = 030901820x\n",
                  "\n[client.acme]\ninbound = +12\n"):
        srv.inst.write_conf(extra)
        d = daemons.start(srv.inst.conf, once=True)
        assert d.wait(20) == 1, extra
        assert "inbound" in d.log(), d.log()


def test_pruned_after_retention(srv, standin, daemons):
    inst = srv.inst
    _conf(inst, standin, extra="")
    assert _twilio(srv, standin, "old").status == 200
    daemons.once(inst.conf)
    doc = _the_one(inst)
    old = time.time() - 8 * 86400
    os.utime(inst.spool / "inbox" / (doc["id"] + ".json"), (old, old))
    assert _twilio(srv, standin, "new").status == 200
    daemons.once(inst.conf)
    assert [d["text"] for d in _inbox(inst).values()] == ["new"]
    assert srv.get("/messages/" + doc["id"]).status_code == 404


# ------------------------------------------------------------------ smpp

@pytest.fixture
def smsc():
    with Smsc(system_id="acme", password="secret") as s:
        yield s


def _smpp_daemon(inst, smsc, daemons):
    inst.write_conf(smsc.config() + _clients())
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: smsc.bound_sessions(), EVENTUALLY, "a bind")
    return d


@pytest.mark.parametrize("coding,text", [
    ("gsm", "Hello @ £5 {ok} €"),
    ("ucs2", "Привет 😀"),
    ("latin1", "Grüße, café"),
])
def test_smpp_mobile_originated(tmp_path, smsc, daemons, coding, text):
    inst = Instance(tmp_path / "inst")
    _smpp_daemon(inst, smsc, daemons)
    seqs = smsc.send_mo(PHONE, ACME, text, coding=coding)
    assert smsc.wait_mo(seqs) == [ESME_ROK]
    doc = _the_one(inst)
    assert (doc["from"], doc["to"], doc["text"], doc["channel"],
            doc["provider"], doc["providerMessageId"], doc["client"]) == (
        PHONE, ACME, text, "sms", "smpp", None, "acme"), doc
    assert smsc.violations == []


def test_smpp_a_name_and_a_short_code_kept_as_they_came(tmp_path, smsc,
                                                        daemons):
    """An alphanumeric sender (TON 5) and a short code (TON 3) are no
    E.164 numbers: kept as they came; the short code no client lists."""
    inst = Instance(tmp_path / "inst")
    _smpp_daemon(inst, smsc, daemons)
    seqs = smsc.send_mo("ACME Info", "4567", "Your parcel is here",
                        source_ton=5, dest_ton=3)
    assert smsc.wait_mo(seqs) == [ESME_ROK]
    doc = _the_one(inst)
    assert (doc["from"], doc["to"], doc["client"]) == ("ACME Info", "4567",
                                                       None), doc


def test_smpp_parts_in_any_order_joined_once(tmp_path, smsc, daemons):
    inst = Instance(tmp_path / "inst")
    _smpp_daemon(inst, smsc, daemons)
    # 400 septets: parts of 153, 153 and 94, the third sent twice.
    text = "".join("part %02d of a long reply. " % i for i in range(16))
    assert len(text) == 400
    seqs = smsc.send_mo(PHONE, OTHER, text, order=[2, 0, 2, 1])
    assert smsc.wait_mo(seqs) == [ESME_ROK] * 4
    wait_until(lambda: len(_inbox(inst)) == 1 and
               _area(inst, "inbox-parts") == [], EVENTUALLY,
               what="the parts joined, and let go")
    doc = _the_one(inst)
    assert doc["text"] == text and doc["client"] == "other", doc
    assert "parts" not in doc
    # UCS-2 with a 16-bit reference, a character in two units.
    text = "😀 Привет! " * 12
    seqs = smsc.send_mo(PHONE, OTHER, text, coding="ucs2", udh16=True,
                        order=[1, 0])
    assert smsc.wait_mo(seqs) == [ESME_ROK] * 2
    wait_until(lambda: len(_inbox(inst)) == 2, EVENTUALLY,
               what="the UCS-2 parts joined")
    assert text in [d["text"] for d in _inbox(inst).values()]


def test_smpp_parts_survive_a_restart(tmp_path, smsc, daemons):
    inst = Instance(tmp_path / "inst")
    d = _smpp_daemon(inst, smsc, daemons)
    whole = "".join("chunk %02d of many. " % i for i in range(10))
    seqs = smsc.send_mo(PHONE, ACME, whole, ref=7, order=[0])
    assert smsc.wait_mo(seqs) == [ESME_ROK]
    assert len(_area(inst, "inbox-parts")) == 1 and _inbox(inst) == {}
    assert d.stop() == 0
    daemons.start(inst.conf)
    smsc.wait_for(lambda: len(smsc.bound_sessions()) == 1, EVENTUALLY,
                  "a bind again")
    seqs = smsc.send_mo(PHONE, ACME, whole, ref=7, order=[1])
    assert smsc.wait_mo(seqs) == [ESME_ROK]
    # The whole is kept before its parts go: wait for both.
    wait_until(lambda: len(_inbox(inst)) == 1 and
               _area(inst, "inbox-parts") == [], EVENTUALLY,
               what="the parts of both sessions joined, and let go")
    assert _the_one(inst)["text"] == whole


def test_smpp_a_missing_part_kept_without_it_after_its_time(
        tmp_path, smsc, daemons, monkeypatch):
    """A message one of whose three parts never comes: kept as it is once
    its first part has waited (MSGSPOOL_SMPP_PARTS_WAIT, here 2 s; 10
    minutes by default), the gap noted."""
    monkeypatch.setenv("MSGSPOOL_SMPP_PARTS_WAIT", "2")
    inst = Instance(tmp_path / "inst")
    d = _smpp_daemon(inst, smsc, daemons)
    text = "".join("piece %02d. " % i for i in range(40))
    seqs = smsc.send_mo(PHONE, ACME, text, order=[2, 0])
    assert smsc.wait_mo(seqs) == [ESME_ROK] * 2
    t0 = time.monotonic()
    assert len(_area(inst, "inbox-parts")) == 2
    wait_until(lambda: len(_inbox(inst)) == 1, EVENTUALLY,
               what="the incomplete message kept")
    assert time.monotonic() - t0 >= 0.9, "kept before its parts waited"
    wait_until(lambda: _area(inst, "inbox-parts") == [], EVENTUALLY,
               what="its parts let go")
    doc = _the_one(inst)
    assert doc["parts"] == {"total": 3, "missing": [2]}, doc
    assert doc["text"].startswith("piece 00.") and doc["text"].endswith(
        "piece 39. "), doc["text"]
    d.wait_log("kept without 1 of them")

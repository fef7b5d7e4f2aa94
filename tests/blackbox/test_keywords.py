"""Keywords of inbound messages (msgspool-spool(5), Keywords;
msgspool.conf(5), stop-keywords and the rest; msgspoold(8), Inbound
messages): an inbound SMS or WhatsApp text that is, trimmed, case-folded
and with its inner blanks one space, one of its client's stop keywords
suppresses its sender (source "stop") for the client that owns the
number, a start keyword lifts a stop, a help keyword changes nothing,
and the client's replies are queued as its own SMS, the stop's going
although the number is now suppressed.  The inbound messages come as the
providers send them: Twilio's and WhatsApp's webhooks (doubles/twilio.py,
whatsapp.py), the http provider's signed body (harness/receiptsign.py),
an SMSC's deliver_sm (doubles/smsc.py)."""

import base64
import json
import time

import pytest

from conftest import Instance
from delivery_support import EVENTUALLY, daemons, wait_until
from doubles.smsc import ESME_ROK, Smsc
from doubles.standin import Standin
from doubles.whatsapp import WA_DISPLAY_NUMBER, wa_text
from harness.receiptsign import stdwh_sig
from openapi_check import check_reply

__all__ = ["daemons"]

PUBLIC = "https://msg.example.com"
APP_SECRET = "meta-app-secret"
HTTP_SECRET = "whsec_" + base64.b64encode(b"keyword http secret, 24b+").decode()
ACME = "+15005550006"                   # acme's Twilio number
ACME_WA = "+" + WA_DISPLAY_NUMBER       # and its WhatsApp business number
OTHER = "+4930901820"                   # other's number
NOBODY = "+4930900000"                  # no client's
PHONE = "+4915112345678"                # a person
ENC = "%2B4915112345678"


@pytest.fixture
def standin():
    with Standin() as s:
        yield s


def _conf(inst, standin, acme="", other="", sms=""):
    """Twilio's and WhatsApp's inbound through sections of voice and
    ott.1, SMS by the file provider (what it would send in
    spool/outbox/) unless sms gives another [sms]."""
    inst.write_conf(
        f"public-url = {PUBLIC}\n" + standin.twilio_config("voice") +
        standin.whatsapp_config(1) + f"app-secret = {APP_SECRET}\n" + sms +
        f"\n[client.acme]\ninbound = {ACME}, {ACME_WA}\n" + acme +
        f"\n[client.other]\ninbound = {OTHER}\n" + other)


def _twilio(srv, standin, body, frm=PHONE, to=ACME, sid=None):
    answer, _ = standin.twilio_incoming(srv.url("/receipts/twilio"),
                                        f"{PUBLIC}/receipts/twilio", frm,
                                        to, body, sid=sid)
    assert answer.status == 200, answer
    return answer


def _http(srv, body, msg_id="msg_kw_1"):
    raw = json.dumps(body).encode()
    ts = str(int(time.time()))
    r = srv.request("POST", "/receipts/http", client=None, data=raw,
                    headers={"Content-Type": "application/json",
                             "webhook-id": msg_id, "webhook-timestamp": ts,
                             "webhook-signature": stdwh_sig(
                                 HTTP_SECRET, msg_id, ts, raw)})
    assert r.status_code == 200, r.text
    return r


def _sup(srv, channel, addr, client="acme"):
    """The suppression of addr, or None."""
    r = srv.get(f"/suppressions/{channel}/{addr.replace('+', '%2B')}",
                client=client)
    check_reply(r)
    assert r.status_code in (200, 404), r.text
    return r.json() if r.status_code == 200 else None


def _all_sups(inst):
    """Every suppression file: (client, channel, address)."""
    d = inst.spool / "suppressions"
    return sorted((p.parent.parent.name, p.parent.name, p.name[:-5])
                  for p in d.glob("*/*/*.json")) if d.is_dir() else []


def _replies(inst):
    """The replies msgspoold queued, in any state: id -> (state, doc)."""
    out = {}
    for state in ("new", "deferred", "cur", "sent", "failed"):
        for mid in inst.ids(state):
            doc = inst.load(state, mid)
            if "inReplyTo" in doc:
                out[mid] = (state, doc)
    return out


def _inbox_ids(inst):
    d = inst.spool / "inbox"
    return sorted(p.name[:-5] for p in d.iterdir()) if d.is_dir() else []


def _handled(inst):
    d = inst.spool / "inbox-new"
    return not d.is_dir() or not any(d.iterdir())


# ------------------------------------------------------------- matching

def test_matching_case_blanks_every_default_and_longer_texts(srv, standin):
    """Each text from a number of its own: what suppresses and what
    does not, through Twilio and the http provider alike."""
    inst = srv.inst
    _conf(inst, standin, sms=f"[sms]\nprovider = http\nurl = "
          f"{standin.hook_url}\nreceipt-secret = {HTTP_SECRET}\n")
    stops = ["STOP", "stop", "Stop", "  sToP \t", "STOPALL", "stop all",
             "Stop   All", "UNSUBSCRIBE", "cancel", "End", "QUIT", "revoke",
             "OptOut", "opt out", "OPT\u00a0OUT", "\tOPT \n OUT "]
    none = ["STOP please", "please stop", "STOP.", "STOP!", "stopp",
            "S T O P", "opt-out", "Don't stop", "stop stop", "", "END it",
            "HELP", "INFO", "START", "YES", "Yes, Tuesday at 10 is fine"]
    texts = stops + none
    numbers = ["+49151000%05d" % i for i in range(len(texts))]
    for n, (num, text) in enumerate(zip(numbers, texts)):
        if n % 2:
            _twilio(srv, standin, text, frm=num)
        else:
            _http(srv, {"type": "inbound", "from": num, "to": ACME,
                        "text": text, "id": f"in-{n}"}, msg_id=f"m{n}")
    assert standin.violations == []
    inst.daemon_once()
    assert _handled(inst)
    got = {a for c, ch, a in _all_sups(inst)}
    assert got == set(numbers[:len(stops)]), (
        [texts[numbers.index(a)] for a in got ^ set(numbers[:len(stops)])])
    for num, text in zip(numbers, stops):
        s = _sup(srv, "sms", num)
        assert s["source"] == "stop" and s["channel"] == "sms", s
        assert s["reason"].endswith(")") and "inbound message" in \
            s["reason"], s
    # Only sms: the default stop-channels; no reply without stop-reply.
    assert {ch for c, ch, a in _all_sups(inst)} == {"sms"}
    assert _replies(inst) == {}


# ------------------------------------------------ stop, start and help

def test_stop_then_a_send_is_refused_and_a_batch_entry_alone(srv,
                                                             standin):
    inst = srv.inst
    _conf(inst, standin)
    _twilio(srv, standin, "STOP")
    # Before msgspoold acts, nothing is suppressed yet.
    assert _sup(srv, "sms", PHONE) is None
    inst.daemon_once()
    sup = _sup(srv, "sms", PHONE)
    assert sup["source"] == "stop" and sup["address"] == PHONE, sup
    assert _inbox_ids(inst)[0] in sup["reason"], sup
    r = srv.sms(recipient=PHONE)
    check_reply(r)
    assert r.status_code == 422, r.text
    assert r.json()["errors"] == {"recipient": ["suppressed (stop)"]}
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": PHONE, "messageBody": "a"},
        {"recipient": "+4915112345679", "messageBody": "b"}]})
    check_reply(r)
    assert r.status_code == 200, r.text
    first, second = r.json()
    assert first["status"] == "error" and "suppressed (stop)" in \
        first["error"], first
    assert second["status"] == "Queued", second
    # Voice is another channel: an SMS stop leaves it by default.
    assert _sup(srv, "voice", PHONE) is None


def test_start_lifts_a_stop_only(srv, standin):
    inst = srv.inst
    _conf(inst, standin, acme="stop-channels = sms, voice\n")
    _twilio(srv, standin, "STOP")
    inst.daemon_once()
    assert _sup(srv, "sms", PHONE)["source"] == "stop"
    assert _sup(srv, "voice", PHONE)["source"] == "stop"
    r = srv.post_json("/voice/v1/deliver", {"recipient": PHONE,
                                            "message": "hello"})
    assert r.status_code == 422, r.text
    _twilio(srv, standin, " Start ")
    inst.daemon_once()
    assert _sup(srv, "sms", PHONE) is None
    assert _sup(srv, "voice", PHONE) is None
    r = srv.sms(recipient=PHONE)
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "Queued"
    # A START lifts a stop, never another source's suppression.
    other = "+4915100000077"
    cp = inst.cli("suppress", "add", "acme", "sms", other)
    assert cp.returncode == 0, cp.err
    _twilio(srv, standin, "UNSTOP", frm=other)
    inst.daemon_once()
    assert _sup(srv, "sms", other)["source"] == "manual"
    assert srv.sms(recipient=other).status_code == 422


def test_help_changes_nothing(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    _twilio(srv, standin, "HELP")
    _twilio(srv, standin, "info", frm="+4915100000088")
    inst.daemon_once()
    assert _all_sups(inst) == []
    _twilio(srv, standin, "STOP")
    inst.daemon_once()
    _twilio(srv, standin, "help")
    inst.daemon_once()
    assert _all_sups(inst) == [("acme", "sms", PHONE)]
    assert _sup(srv, "sms", PHONE)["source"] == "stop"


# -------------------------------------------------------------- replies

REPLIES = ("stop-reply = ACME: you will get no more messages. Reply START "
           "to resume.\nstart-reply = ACME: welcome back.\n"
           "help-reply = ACME: help at acme.example, STOP to stop.\n")


def _reply_of(inst, keyword):
    got = [(mid, st, doc) for mid, (st, doc) in _replies(inst).items()
           if doc["inReplyTo"]["keyword"] == keyword]
    assert len(got) == 1, _replies(inst)
    return got[0]


def test_replies_queued_as_the_clients_sms(srv, standin):
    inst = srv.inst
    # A receiver nobody listens at: the client's events wait in events/.
    secret = "whsec_" + base64.b64encode(b"k" * 32).decode()
    _conf(inst, standin, acme=REPLIES + "webhook-url = http://127.0.0.1:9/"
          f"hook\nwebhook-secret = {secret}\n")
    _twilio(srv, standin, "HELP")
    inst.daemon_once()
    mid, state, doc = _reply_of(inst, "help")
    (inbound,) = _inbox_ids(inst)
    assert doc["inReplyTo"] == {"id": inbound, "keyword": "help"}
    assert doc["client"] == "acme" and doc["channel"] == "sms"
    assert doc["message"] == {"to": PHONE, "from": ACME,
                              "body": "ACME: help at acme.example, STOP "
                                      "to stop."}
    # An ordinary message of the client: its id, status, events.
    r = srv.get("/messages/" + mid)
    check_reply(r)
    assert r.status_code == 200, r.text
    st = r.json()
    assert (st["id"], st["channel"], st["recipient"], st["status"]) == (
        mid, "sms", PHONE, "sent"), st
    assert [e["status"] for e in st["events"]] == ["queued", "sent"]
    assert srv.get("/messages/" + mid, client="other").status_code == 404
    (out,) = inst.outbox_for(mid)
    assert json.loads(out.read_bytes())["message"]["body"].startswith(
        "ACME: help")
    # Its client's webhook events, as for any of its messages: the
    # inbound message's, and the reply's message.sent.
    events = [json.loads(p.read_text()) for p in
              (inst.spool / "events").iterdir()]
    assert sorted(e["type"] for e in events) == ["message.received",
                                                 "message.sent"], events
    sent = [e for e in events if e["type"] == "message.sent"][0]
    assert sent["client"] == "acme" and sent["data"]["id"] == mid
    _twilio(srv, standin, "YES")
    inst.daemon_once()
    mid, state, doc = _reply_of(inst, "start")
    assert state == "sent" and doc["message"]["body"] == \
        "ACME: welcome back."


def test_the_stop_confirmation_goes_although_suppressed(srv, standin):
    """A message queued before the STOP fails, suppressed, never handed
    to the provider; the confirmation goes; a HELP afterwards gets no
    reply, as the client's own message would be refused."""
    inst = srv.inst
    _conf(inst, standin, acme=REPLIES)
    before = srv.sms(recipient=PHONE).json()["smsId"]
    later = srv.sms(recipient=PHONE, sendAt="2099-01-01T00:00:00Z"
                    ).json()["smsId"]
    _twilio(srv, standin, "Stop")
    inst.daemon_once()
    assert _sup(srv, "sms", PHONE)["source"] == "stop"
    st = srv.get("/messages/" + before).json()
    assert st["status"] == "failed", st
    assert st["error"]["code"] == "suppressed", st
    assert inst.outbox_for(before) == []
    mid, state, doc = _reply_of(inst, "stop")
    assert state == "sent", state
    (out,) = inst.outbox_for(mid)
    sent = json.loads(out.read_bytes())
    assert sent["message"]["to"] == PHONE
    assert sent["message"]["body"].startswith("ACME: you will get no more")
    assert srv.get("/messages/" + mid).json()["status"] == "sent"
    # The scheduled one fails too once due.
    assert inst.cli("retry", later).returncode == 0
    inst.daemon_once()
    assert srv.get("/messages/" + later).json()["error"]["code"] == \
        "suppressed"
    assert inst.outbox_for(later) == []
    # A help reply to a number that stopped is not queued.
    _twilio(srv, standin, "HELP")
    d = inst.daemon_once()
    assert "no help reply" in d.err, d.err
    assert [k for _, (_, doc) in _replies(inst).items()
            for k in [doc["inReplyTo"]["keyword"]]] == ["stop"]


def test_a_reply_by_twilio_comes_from_the_number_written_to(srv, standin):
    inst = srv.inst
    _conf(inst, standin, acme=REPLIES, sms=standin.twilio_config("sms"))
    _twilio(srv, standin, "STOP")
    inst.daemon_once()
    reqs = standin.wait_for(1, timeout=EVENTUALLY, api="twilio")
    assert len(reqs) == 1, reqs
    form = reqs[0]["form"]
    assert (form["To"], form["From"]) == (PHONE, ACME), form
    assert form["Body"].startswith("ACME: you will get no more")
    assert standin.violations == []


def test_a_stop_delivered_twice_is_one_suppression_and_one_reply(
        srv, standin):
    inst = srv.inst
    _conf(inst, standin, acme=REPLIES)
    sid = "SM" + "5" * 32
    _twilio(srv, standin, "STOP", sid=sid)
    _twilio(srv, standin, "STOP", sid=sid)
    assert len(_inbox_ids(inst)) == 1
    inst.daemon_once()
    _twilio(srv, standin, "STOP", sid=sid)
    inst.daemon_once()
    assert len(_inbox_ids(inst)) == 1
    assert len(_replies(inst)) == 1
    assert _all_sups(inst) == [("acme", "sms", PHONE)]


def test_acting_again_after_a_crash_neither_repeats_nor_loses(srv,
                                                              standin):
    """A daemon that died after queueing the reply, before it removed
    the note, acts again: the suppression is there and the reply found
    by its id; one that died before queueing it queues it then."""
    inst = srv.inst
    _conf(inst, standin, acme=REPLIES)
    _twilio(srv, standin, "STOP")
    (inbound,) = _inbox_ids(inst)
    note = inst.spool / "inbox-new" / (inbound + ".json")
    kept = note.read_bytes()
    inst.daemon_once()
    (mid,) = _replies(inst)
    sup = _sup(srv, "sms", PHONE)
    # Died before the note went: it is there again.
    note.write_bytes(kept)
    inst.daemon_once()
    assert _handled(inst)
    assert list(_replies(inst)) == [mid]
    assert _sup(srv, "sms", PHONE) == sup
    assert len(inst.outbox_for(mid)) == 1
    # Died after the suppression, before the reply: the reply comes.
    for state in ("sent",):
        inst.path(state, mid).unlink()
    for p in inst.outbox_for(mid):
        p.unlink()
    note.write_bytes(kept)
    inst.daemon_once()
    assert list(_replies(inst)) == [mid]
    assert len(inst.outbox_for(mid)) == 1


# ----------------------------------------------------- clients, numbers

def test_one_clients_stop_never_touches_another(srv, standin):
    inst = srv.inst
    _conf(inst, standin)
    _twilio(srv, standin, "STOP", to=ACME)
    _twilio(srv, standin, "STOP", frm="+4915100000099", to=OTHER)
    inst.daemon_once()
    assert _all_sups(inst) == [("acme", "sms", PHONE),
                               ("other", "sms", "+4915100000099")]
    assert _sup(srv, "sms", PHONE, client="other") is None
    r = srv.sms(client="other", recipient=PHONE)
    assert r.status_code == 202, r.text
    assert srv.sms(recipient="+4915100000099").status_code == 202
    assert srv.sms(client="other",
                   recipient="+4915100000099").status_code == 422
    inst.daemon_once()
    assert srv.get("/messages/" + r.json()["smsId"],
                   client="other").json()["status"] == "sent"


def test_a_number_no_client_owns_acts_on_nothing(srv, standin):
    inst = srv.inst
    _conf(inst, standin, acme=REPLIES)
    _twilio(srv, standin, "STOP", to=NOBODY)
    d = inst.daemon_once()
    assert _handled(inst) and len(_inbox_ids(inst)) == 1
    assert _all_sups(inst) == [] and _replies(inst) == {}
    assert "no client's inbound key lists " + NOBODY in d.err
    assert srv.sms(recipient=PHONE).status_code == 202


def test_custom_keywords_from_the_config(srv, standin):
    inst = srv.inst
    _conf(inst, standin, acme="stop-keywords = ARR\u00caT, STOP\n"
                              "start-keywords = REPRENDRE\n"
                              "help-keywords = AIDE\n"
                              "help-reply = ACME: aide.\n")
    a, b = "+4915100000011", "+4915100000012"
    _twilio(srv, standin, "arr\u00eat", frm=a)
    _twilio(srv, standin, "END", frm=b)       # not acme's any more
    _twilio(srv, standin, "Aide")
    inst.daemon_once()
    assert _all_sups(inst) == [("acme", "sms", a)]
    assert _reply_of(inst, "help")[2]["message"]["body"] == "ACME: aide."
    _twilio(srv, standin, "START", frm=a)     # not a start keyword here
    inst.daemon_once()
    assert _sup(srv, "sms", a) is not None
    _twilio(srv, standin, "reprendre", frm=a)
    inst.daemon_once()
    assert _sup(srv, "sms", a) is None


@pytest.mark.parametrize("extra,key", [
    ("stop-keywords =\n", "stop-keywords"),
    ("stop-keywords = STOP,,END\n", "stop-keywords"),
    ("start-keywords = START, HELP\n", "start-keywords"),
    ("stop-reply =\n", "stop-reply"),
    ("help-reply = " + "x" * 1601 + "\n", "help-reply"),
    ("stop-channels = voice\n", "stop-channels"),
    ("stop-channels = sms, email\n", "stop-channels"),
])
def test_bad_values_refused_naming_the_key(srv, standin, daemons, extra,
                                           key):
    _conf(srv.inst, standin, acme=extra)
    d = daemons.start(srv.inst.conf, once=True)
    assert d.wait(20) == 1, d.log()
    assert f"config: [client.acme] {key}:" in d.log(), d.log()


# --------------------------------------------------- WhatsApp and SMPP

def test_whatsapp_stop_suppresses_ott_and_replies_by_no_channel(srv,
                                                                standin):
    inst = srv.inst
    _conf(inst, standin, acme=REPLIES)
    frm = PHONE.lstrip("+")
    answer, _ = standin.whatsapp_incoming(srv.url("/receipts/whatsapp"),
                                          APP_SECRET,
                                          [wa_text(frm, " STOP ")])
    assert answer.status == 200, answer
    d = inst.daemon_once()
    assert _all_sups(inst) == [("acme", "ott", frm)]
    assert _sup(srv, "ott", frm)["source"] == "stop"
    assert _replies(inst) == {}
    assert "replies go by SMS only" in d.err, d.err
    r = srv.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": frm, "templateID": "otp", "templateParameters":
         ["1234"], "channelType": 1}]})
    check_reply(r)
    assert r.status_code == 200 and r.json()[0]["status"] == "error", \
        r.text
    # SMS is another channel: still open.
    assert srv.sms(recipient=PHONE).status_code == 202


@pytest.fixture
def smsc():
    with Smsc(system_id="acme", password="secret") as s:
        yield s


def test_smpp_stop_suppresses_and_confirms_over_the_session(tmp_path, smsc,
                                                            daemons):
    inst = Instance(tmp_path / "inst")
    inst.write_conf(smsc.config() + f"\n[client.acme]\ninbound = {ACME}\n"
                    + REPLIES)
    daemons.start(inst.conf)
    smsc.wait_for(lambda: smsc.bound_sessions(), EVENTUALLY, "a bind")
    seqs = smsc.send_mo(PHONE, ACME, "Stop All")
    assert smsc.wait_mo(seqs) == [ESME_ROK]
    smsc.wait_for(lambda: len(smsc.submits) == 1, EVENTUALLY,
                  "the confirmation submitted")
    sub = smsc.submits[0]
    assert sub["destination_addr"] == PHONE.lstrip("+"), sub
    assert sub["text"].startswith("ACME: you will get no more"), sub
    sups = _all_sups(inst)
    assert sups == [("acme", "sms", PHONE)], sups
    assert smsc.violations == []

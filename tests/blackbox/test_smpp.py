"""
The smpp provider (msgspool.conf(5), "The smpp provider"; msgspoold(8))
against a stand-in SMSC written from the SMPP 3.4 specification
(doubles/smsc.py), which checks every PDU msgspoold sends field by field: the
bind, submits in GSM 03.38 (with its extension table) and UCS-2, parts
with their UDH, the window, enquire_link, throttling, a session dropped
mid-window, delivery receipts in both forms, unbind on SIGTERM, and the
session's state in `msgspool status`.
"""

import json
import os
import signal
import time

import pytest

from conftest import Instance
from delivery_support import (EVENTUALLY, Inotify, daemons, enqueue, load,
                              make_doc, queue_sms, run_cli, wait_until, where)
from doubles.smsc import (ESME_RINVDSTADR, ESME_RMSGQFUL, ESME_RTHROTTLED, Smsc)

__all__ = ["daemons"]   # the fixture, imported for pytest


@pytest.fixture
def inst(tmp_path):
    return Instance(tmp_path / "inst")


@pytest.fixture
def smsc():
    with Smsc(system_id="acme", password="secret") as s:
        yield s


def _conf(inst, smsc, **kw):
    inst.write_conf(smsc.config(**kw))


def _sent(inst, msgid):
    assert where(inst.spool, msgid) == ["sent"], where(inst.spool, msgid)
    return load(inst.spool, "sent", msgid)


def _number(i):
    return "+49151%08d" % i


def _submits_to(smsc, number):
    with smsc.lock:
        return [f for f in smsc.submits
                if f["destination_addr"] == number.lstrip("+")]


# ---------------------------------------------------------------- bind

def test_bind_wrong_password_refused(inst, smsc):
    _conf(inst, smsc, password="wrong")
    msgid = queue_sms(inst.spool, _number(1), "hello")
    cp = inst.daemon_once()
    assert smsc.binds == [{"system_id": "acme", "password": "wrong",
                           "accepted": False}]
    assert smsc.submits == []
    # A refused bind is temporary: an operator fixes the password.
    assert where(inst.spool, msgid) == ["deferred"]
    doc = load(inst.spool, "deferred", msgid)
    assert "ESME_RINVPASWD" in doc["lastError"], doc["lastError"]
    assert "ESME_RINVPASWD" in cp.err
    assert smsc.violations == []


def test_bind_and_gsm_text(inst, smsc):
    _conf(inst, smsc)
    text = "Hello @ £5, ok? Ça va: ÄÖÜ äöü ß Δ"
    msgid = queue_sms(inst.spool, _number(2), text)
    inst.daemon_once()
    assert smsc.violations == []
    assert smsc.binds == [{"system_id": "acme", "password": "secret",
                           "accepted": True}]
    [f] = smsc.submits
    assert f["data_coding"] == 0 and f["esm_class"] == 0
    assert f["udh"] is None
    assert f["text"] == text
    # One septet per character, unpacked.
    assert len(f["short_message"]) == len(text)
    assert f["destination_addr"] == _number(2)[1:]
    assert (f["dest_addr_ton"], f["dest_addr_npi"]) == (1, 1)
    assert (f["source_addr"], f["source_addr_ton"],
            f["source_addr_npi"]) == ("ACME", 5, 0)
    assert f["registered_delivery"] == 1
    doc = _sent(inst, msgid)
    reply = doc["providerReply"]
    assert reply["provider"] == "smpp"
    assert reply["messageId"] == f["message_id"]
    assert reply["parts"] == 1 and reply["partIds"] == [f["message_id"]]
    assert reply["dataCoding"] == 0
    # Unbound at exit.
    assert len(smsc.unbinds) == 1


def test_extended_gsm(inst, smsc):
    _conf(inst, smsc)
    text = "Price: 5€ {a|b} [x] ~\\^"
    msgid = queue_sms(inst.spool, _number(3), text)
    inst.daemon_once()
    assert smsc.violations == []
    [f] = smsc.submits
    assert f["data_coding"] == 0 and f["text"] == text
    # Each of the ten characters of the extension table: escape + septet.
    assert len(f["short_message"]) == len(text) + 9
    assert f["short_message"].count(b"\x1b") == 9
    assert _sent(inst, msgid)["providerReply"]["parts"] == 1


def test_ucs2(inst, smsc):
    _conf(inst, smsc)
    text = "Привет, мир! 😀 çà"
    msgid = queue_sms(inst.spool, _number(4), text)
    inst.daemon_once()
    assert smsc.violations == []
    [f] = smsc.submits
    assert f["data_coding"] == 8 and f["esm_class"] == 0
    assert f["text"] == text
    assert f["short_message"] == text.encode("utf-16-be")
    assert _sent(inst, msgid)["providerReply"]["dataCoding"] == 8


@pytest.mark.parametrize("text,coding,parts", [
    ("0123456789" * 40, 0, 3),                  # 400 septets: 153+153+94
    ("Ж" * 150, 8, 3),                          # 150 units: 67+67+16
])
def test_three_parts(inst, smsc, text, coding, parts):
    _conf(inst, smsc)
    msgid = queue_sms(inst.spool, _number(5), text)
    inst.daemon_once()
    assert smsc.violations == []
    subs = sorted(smsc.submits, key=lambda f: f["udh"]["part"])
    assert len(subs) == parts
    assert {f["data_coding"] for f in subs} == {coding}
    assert {f["esm_class"] for f in subs} == {0x40}
    assert {f["udh"]["ref"] for f in subs} == {subs[0]["udh"]["ref"]}
    assert [(f["udh"]["part"], f["udh"]["total"]) for f in subs] == \
        [(i + 1, parts) for i in range(parts)]
    assert "".join(f["text"] for f in subs) == text
    reply = _sent(inst, msgid)["providerReply"]
    assert reply["parts"] == parts
    assert reply["partIds"] == [f["message_id"] for f in subs]
    assert reply["messageId"] == subs[0]["message_id"]


# ---------------------------------------------------------------- window

def test_window_never_exceeded(inst, smsc):
    smsc.latency = 0.05
    _conf(inst, smsc, window=3)
    ids = [queue_sms(inst.spool, _number(100 + i), "m%d" % i)
           for i in range(20)]
    inst.daemon_once()
    assert smsc.violations == []
    assert smsc.max_outstanding == 3
    assert len(smsc.accepted()) == 20
    for msgid in ids:
        _sent(inst, msgid)


def test_throughput_cap(inst, smsc):
    _conf(inst, smsc, throughput=20)
    for i in range(10):
        queue_sms(inst.spool, _number(150 + i), "t%d" % i)
    t0 = time.monotonic()
    inst.daemon_once()
    # 10 submits at 20 a second take 0.45 s at least.
    assert time.monotonic() - t0 >= 0.45
    assert len(smsc.accepted()) == 10 and smsc.violations == []


# ---------------------------------------------------------------- errors

def test_throttled_and_queue_full_temporary_others_permanent(inst, smsc):
    _conf(inst, smsc)
    smsc.script(_number(20), [ESME_RTHROTTLED])
    smsc.script(_number(21), [ESME_RMSGQFUL])
    smsc.script(_number(22), [ESME_RINVDSTADR])
    t = queue_sms(inst.spool, _number(20), "throttled")
    q = queue_sms(inst.spool, _number(21), "full")
    p = queue_sms(inst.spool, _number(22), "bad number")
    inst.daemon_once()
    assert smsc.violations == []
    for msgid, name in ((t, "ESME_RTHROTTLED"), (q, "ESME_RMSGQFUL")):
        assert where(inst.spool, msgid) == ["deferred"]
        doc = load(inst.spool, "deferred", msgid)
        assert name in doc["lastError"] and doc["nextAttempt"]
    assert where(inst.spool, p) == ["failed"]
    assert "ESME_RINVDSTADR" in load(inst.spool, "failed", p)["lastError"]


def test_throttled_pauses_the_session(inst, smsc, daemons):
    """After ESME_RTHROTTLED the session submits nothing for a second:
    the rest would be throttled too."""
    _conf(inst, smsc)
    smsc.script(_number(24), [ESME_RTHROTTLED])
    first = queue_sms(inst.spool, _number(24), "throttled")
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: _submits_to(smsc, _number(24)), EVENTUALLY,
                  "the throttled submit")
    second = queue_sms(inst.spool, _number(25), "after the pause")
    wait_until(lambda: where(inst.spool, second) == ["sent"], EVENTUALLY,
               what="the second sent")
    [a] = _submits_to(smsc, _number(24))
    [b] = _submits_to(smsc, _number(25))
    assert b["at"] - a["at"] >= 0.9
    assert where(inst.spool, first) == ["deferred"]
    assert d.stop() == 0


def test_accepted_without_message_id(inst, smsc):
    """An SMSC that accepts without an id: sent all the same (it will be
    delivered), with no providerMessageId for receipts to find."""
    _conf(inst, smsc)
    smsc.script(_number(26), ["noid"])
    msgid = queue_sms(inst.spool, _number(26), "no id")
    cp = inst.daemon_once()
    reply = _sent(inst, msgid)["providerReply"]
    assert reply.get("messageId") is None and reply["partIds"] == [""]
    assert "accepted without a message_id" in cp.err
    assert smsc.violations == []


def test_message_id_not_ascii_not_kept(inst, smsc):
    """An id msgspool could neither store as JSON text nor match a receipt
    to (a byte that is not printable ASCII): the parts were accepted, so
    the message is sent, whole, with that part's id left empty; never
    retried (that would send it twice)."""
    _conf(inst, smsc)
    smsc.script(_number(27), ["ok", "badid", "badid"])
    msgid = queue_sms(inst.spool, _number(27), "y" * 400)
    cp = inst.daemon_once()
    reply = _sent(inst, msgid)["providerReply"]
    ids = [f["message_id"] for f in _submits_to(smsc, _number(27))]
    assert reply["parts"] == 3 and len(reply["partIds"]) == 3
    assert reply["partIds"] == [ids[0], "", ""] and reply["messageId"] == ids[0]
    assert "not printable ASCII" in cp.err
    assert len(ids) == 3 and smsc.violations == []
    # The first part's id is the bad one: sent all the same, no messageId.
    smsc.script(_number(28), ["badid"])
    msgid = queue_sms(inst.spool, _number(28), "z")
    inst.daemon_once()
    reply = _sent(inst, msgid)["providerReply"]
    assert reply.get("messageId") is None and reply["partIds"] == [""]
    assert len(_submits_to(smsc, _number(28))) == 1


def test_host_name_looked_up(inst, smsc):
    """host may be a name (looked up without blocking msgspoold's loop);
    one that does not resolve fails the session with the resolver's
    reason, and the message waits in deferred/."""
    inst.write_conf(smsc.config().replace("host = 127.0.0.1",
                                          "host = localhost"))
    msgid = queue_sms(inst.spool, _number(29), "by name")
    inst.daemon_once()
    _sent(inst, msgid)
    inst.write_conf(smsc.config().replace("host = 127.0.0.1",
                                          "host = no-such-host.invalid"))
    msgid = queue_sms(inst.spool, _number(30), "nowhere")
    cp = inst.daemon_once(check=False)
    assert where(inst.spool, msgid) == ["deferred"]
    assert "no-such-host.invalid" in cp.err
    assert _submits_to(smsc, _number(30)) == []


def test_retry_sends_only_the_parts_not_accepted(inst, smsc):
    """A part refused for now defers the message; the next attempt sends
    only the parts the SMSC did not accept, with the same reference, so
    the phone gets each part once and can join them."""
    _conf(inst, smsc, window=1)
    text = "".join(chr(ord("a") + i % 26) for i in range(400))
    smsc.script(_number(31), ["ok", ESME_RTHROTTLED])
    msgid = queue_sms(inst.spool, _number(31), text)
    inst.daemon_once()
    assert where(inst.spool, msgid) == ["deferred"]
    reply = load(inst.spool, "deferred", msgid)["providerReply"]
    first = _submits_to(smsc, _number(31))
    assert [f["udh"]["part"] for f in first] == [1, 2]
    assert reply["partIds"] == [first[0]["message_id"], None, None]
    run_cli(inst.conf, "retry", msgid)
    inst.daemon_once()
    subs = _submits_to(smsc, _number(31))[2:]
    assert [f["udh"]["part"] for f in subs] == [2, 3]
    assert {f["udh"]["ref"] for f in first + subs} == {first[0]["udh"]["ref"]}
    assert first[0]["text"] + "".join(f["text"] for f in subs) == text
    reply = _sent(inst, msgid)["providerReply"]
    assert reply["parts"] == 3
    assert reply["partIds"] == [first[0]["message_id"]] + [
        f["message_id"] for f in subs]
    assert reply["messageId"] == first[0]["message_id"]
    assert smsc.violations == []


def test_part_refused_fails_the_message(inst, smsc):
    _conf(inst, smsc)
    smsc.script(_number(23), ["ok", ESME_RINVDSTADR])
    msgid = queue_sms(inst.spool, _number(23), "x" * 400)
    inst.daemon_once()
    assert where(inst.spool, msgid) == ["failed"]
    # The third part is not sent once the second was refused (the window
    # may have let it go first: then it was answered too).
    assert len(_submits_to(smsc, _number(23))) in (2, 3)


def test_session_dropped_mid_window(inst, smsc, daemons):
    """The SMSC drops the session with submits unanswered: they are
    temporary failures, sent again on the next session; no message is
    lost and at most the window is sent twice."""
    window = 5
    smsc.latency = 0.02
    smsc.drop_after = 7
    _conf(inst, smsc, window=window)
    ids = [queue_sms(inst.spool, _number(200 + i), "d%d" % i)
           for i in range(20)]
    d = daemons.start(inst.conf)
    wait_until(lambda: all(where(inst.spool, m) == ["sent"] for m in ids),
               EVENTUALLY, what="every message sent")
    assert d.stop() == 0
    assert smsc.violations == []
    assert smsc.drops == 1
    with smsc.lock:
        total = len(smsc.submits)
    resent = total - len(ids)
    assert 1 <= resent <= window, resent
    # Each message accepted, its last acceptance the one recorded; one
    # accepted twice is one whose answer the drop lost (within the window).
    twice = 0
    for msgid, i in zip(ids, range(20)):
        acc = [f for f in _submits_to(smsc, _number(200 + i))
               if "message_id" in f]
        assert 1 <= len(acc) <= 2
        twice += len(acc) - 1
        assert _sent(inst, msgid)["providerReply"]["messageId"] == \
            acc[-1]["message_id"]
    assert twice <= resent
    assert len([b for b in smsc.binds if b["accepted"]]) == 2


# ---------------------------------------------------------------- link

def test_enquire_link_both_ways(inst, smsc, daemons):
    _conf(inst, smsc, enquire_link=1)
    queue_sms(inst.spool, _number(30), "keep me company")
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: len(smsc.accepted()) == 1, EVENTUALLY, "a submit")
    # msgspoold asks every second ...
    smsc.wait_for(lambda: smsc.enquire_links >= 2, 10, "enquire_link")
    # ... and answers the SMSC's.
    seq = smsc.send_enquire_link()
    smsc.wait_for(lambda: seq in smsc.enquire_answers, 5,
                  "enquire_link_resp")
    assert d.stop() == 0
    assert smsc.violations == []


# ---------------------------------------------------------------- receipts

def _receipt_status(inst, msgid):
    doc = load(inst.spool, "sent", msgid)
    return doc.get("receiptStatus", "sent")


@pytest.mark.parametrize("form", ["tlv", "text"])
def test_receipts_before_outcome_recorded(inst, smsc, daemons, form):
    """The SMSC sends each receipt right after the submit_sm_resp,
    before msgspoold has recorded the outcome."""
    smsc.receipts = form
    smsc.receipt_stat[_number(41)[1:]] = "UNDELIV"
    _conf(inst, smsc)
    ok = queue_sms(inst.spool, _number(40), "to be delivered")
    bad = queue_sms(inst.spool, _number(41), "not to be delivered")
    d = daemons.start(inst.conf)
    wait_until(lambda: where(inst.spool, ok) == ["sent"] and
               where(inst.spool, bad) == ["sent"] and
               _receipt_status(inst, ok) == "delivered" and
               _receipt_status(inst, bad) == "undelivered", EVENTUALLY,
               what="both receipts applied")
    doc = load(inst.spool, "sent", bad)
    assert doc["receiptError"]["message"].startswith("SMSC receipt "
                                                     "stat:UNDELIV")
    ev = [e for e in load(inst.spool, "sent", ok)["events"]
          if e.get("source") == "receipt"]
    assert [e["status"] for e in ev] == ["delivered"]
    # Every deliver_sm answered, with ESME_ROK.
    smsc.wait_for(lambda: len(smsc.deliver_resps) == 2, 5, "answers")
    assert {s for _, s in smsc.deliver_resps} == {0}
    assert d.stop() == 0
    assert smsc.violations == []


def test_receipts_after_outcome_and_parts(inst, smsc, daemons):
    """Receipts sent later: a message in three parts is delivered when
    the last part's receipt says so; one part undelivered makes another
    undelivered at once."""
    _conf(inst, smsc)
    three = queue_sms(inst.spool, _number(50), "y" * 400)
    two = queue_sms(inst.spool, _number(51), "z" * 200)
    d = daemons.start(inst.conf)
    wait_until(lambda: where(inst.spool, three) == ["sent"] and
               where(inst.spool, two) == ["sent"], EVENTUALLY, what="sent")
    ids3 = load(inst.spool, "sent", three)["providerReply"]["partIds"]
    ids2 = load(inst.spool, "sent", two)["providerReply"]["partIds"]
    assert len(ids3) == 3 and len(ids2) == 2
    smsc.send_receipt(ids3[0], "DELIVRD", "tlv")
    smsc.send_receipt(ids3[2], "DELIVRD", "text")
    smsc.send_receipt(ids2[1], "EXPIRED", "text")
    wait_until(lambda: _receipt_status(inst, two) == "undelivered",
               EVENTUALLY, what="undelivered")
    # Two of its three parts' receipts applied, yet not delivered.
    wait_until(lambda: {ids3[0], ids3[2]} <= set(
        load(inst.spool, "sent", three).get("partStatus", {})),
               EVENTUALLY, what="the receipts of parts 1 and 3 applied")
    assert _receipt_status(inst, three) == "sent"
    smsc.send_receipt(ids3[1], "DELIVRD", "tlv")
    wait_until(lambda: _receipt_status(inst, three) == "delivered",
               EVENTUALLY, what="delivered")
    doc = load(inst.spool, "sent", three)
    assert set(doc["partStatus"]) == set(ids3)
    assert d.stop() == 0
    assert smsc.violations == []


def test_resumed_message_delivered_with_the_earlier_parts_receipt(
        inst, smsc, daemons):
    """The receipt of a part accepted by an attempt that then failed
    waits while its message is deferred; once the next attempt sends the
    other parts, all three receipts make the message delivered."""
    _conf(inst, smsc, window=1)
    smsc.script(_number(52), ["ok", ESME_RTHROTTLED])
    msgid = queue_sms(inst.spool, _number(52), "w" * 400)
    d = daemons.start(inst.conf)
    wait_until(lambda: where(inst.spool, msgid) == ["deferred"], EVENTUALLY,
               what="deferred")
    [first] = load(inst.spool, "deferred", msgid)["providerReply"][
        "partIds"][:1]
    smsc.send_receipt(first, "DELIVRD", "tlv")
    # Read while its message is not sent yet (and kept: the delivered
    # below needs it): stored in receipts/, then opened by msgspoold's
    # scan, every second while it waits (a read before the watch began is
    # followed by another).
    receipts = inst.spool / "receipts"
    wait_until(lambda: receipts.is_dir() and os.listdir(receipts),
               EVENTUALLY, what="the receipt stored")
    [name] = os.listdir(receipts)
    with Inotify(receipts, Inotify.IN_OPEN) as watch:
        wait_until(lambda: any(n == name for _, n in watch.read()),
                   EVENTUALLY, what="the receipt read by msgspoold")
    run_cli(inst.conf, "retry", msgid)
    wait_until(lambda: where(inst.spool, msgid) == ["sent"], EVENTUALLY,
               what="sent")
    ids = load(inst.spool, "sent", msgid)["providerReply"]["partIds"]
    assert ids[0] == first and len(ids) == 3
    for pid in ids[1:]:
        smsc.send_receipt(pid, "DELIVRD", "text")
    wait_until(lambda: _receipt_status(inst, msgid) == "delivered",
               EVENTUALLY, what="delivered")
    assert set(load(inst.spool, "sent", msgid)["partStatus"]) == set(ids)
    assert d.stop() == 0
    assert smsc.violations == []


def test_receipt_after_restart(inst, smsc, daemons):
    """msgspoold binds at start, with nothing to send: a receipt for a
    message a former run sent still finds it."""
    _conf(inst, smsc)
    msgid = queue_sms(inst.spool, _number(55), "sent yesterday")
    daemons.once(inst.conf)
    pmid = _sent(inst, msgid)["providerReply"]["messageId"]
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: smsc.bound_sessions(), EVENTUALLY, "a bind")
    smsc.send_receipt(pmid, "DELIVRD", "text")
    wait_until(lambda: _receipt_status(inst, msgid) == "delivered",
               EVENTUALLY, what="the receipt applied")
    assert d.stop() == 0
    assert len(smsc.unbinds) == 2 and smsc.violations == []


def test_mobile_originated_is_acknowledged(inst, smsc, daemons):
    _conf(inst, smsc)
    queue_sms(inst.spool, _number(60), "hi")
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: len(smsc.accepted()) == 1, EVENTUALLY, "submit")
    # A deliver_sm that is no receipt (esm_class 0): an SMS from a phone,
    # kept in inbox/ (test_inbound.py) before it is answered.
    s = smsc.bound_sessions()[-1]
    from doubles import smsc as smscmod
    body = (smscmod.cstr("") + bytes([1, 1]) + smscmod.cstr("4915100000060")
            + bytes([5, 0]) + smscmod.cstr("ACME") + bytes([0, 0, 0]) +
            smscmod.cstr("") + smscmod.cstr("") + bytes([0, 0, 0, 0, 2]) +
            b"hi")
    s.send(smscmod.pdu(smscmod.DELIVER_SM, 0, 0x60000001, body))
    smsc.wait_for(lambda: (0x60000001, 0) in smsc.deliver_resps, 5,
                  "deliver_sm_resp")
    [kept] = os.listdir(inst.spool / "inbox")
    doc = json.loads((inst.spool / "inbox" / kept).read_bytes())
    assert (doc["from"], doc["to"], doc["text"]) == ("+4915100000060",
                                                     "ACME", "hi"), doc
    assert d.stop() == 0
    assert smsc.violations == []


# ---------------------------------------------------------------- stop

def test_unbind_on_sigterm_after_inflight(inst, smsc, daemons):
    smsc.latency = 1.0
    _conf(inst, smsc, window=10)
    ids = [queue_sms(inst.spool, _number(70 + i), "s%d" % i)
           for i in range(5)]
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: sum(s.outstanding for s in smsc.sessions) == 5,
                  EVENTUALLY, "five submits in flight")
    d.signal(signal.SIGTERM)
    assert d.wait(10) == 0
    # Every submit answered before the unbind, and recorded.
    assert len(smsc.unbinds) == 1
    assert smsc.unbinds[0][1] == 0
    for msgid in ids:
        _sent(inst, msgid)
    assert smsc.violations == []


def test_cli_shows_session(inst, smsc, daemons):
    _conf(inst, smsc, window=7)
    cp = run_cli(inst.conf, "status")
    assert cp.returncode == 0 and "no session yet" in cp.stdout
    queue_sms(inst.spool, _number(80), "status")
    d = daemons.start(inst.conf)
    smsc.wait_for(lambda: len(smsc.accepted()) == 1, EVENTUALLY, "submit")

    def bound():
        out = run_cli(inst.conf, "status").stdout
        return "bound since" in out and "window 0/7 in use" in out and out
    out = wait_until(bound, EVENTUALLY, what="msgspool status: bound")
    assert "smpp [sms] 127.0.0.1:%d as acme" % smsc.port in out
    assert "bound since" in run_cli(inst.conf, "list").stdout
    assert d.stop() == 0
    out = run_cli(inst.conf, "status").stdout
    assert "stopped" in out, out

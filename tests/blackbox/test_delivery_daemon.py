"""
msgspoold running (msgspoold(8), README "Delivery"), against the Standin
test double: its concurrency limit and connection reuse, a message sent
within seconds of its request or when it is due, a short Retry-After
honoured, an outcome recorded while a slow send runs, and its signals
(SIGTERM waits for the send in flight, SIGHUP rereads the config and
keeps the spool).  The providers and the outcome policy: test_delivery.py.
"""

import signal
import threading
import time

import pytest

from conftest import Instance, in_future, parse_time
from delivery_support import (EVENTUALLY, assert_sent, daemons, inst, load,
                              queue_sms, queue_voice, standin, timestamp,
                              wait_until, where)

__all__ = ["daemons", "inst", "standin"]   # the fixtures, imported for pytest


# -------------------------------------------------------- concurrency

class Sampler:
    """Samples standin.in_flight from a thread; max is the peak seen."""

    def __init__(self, standin):
        self.standin = standin
        self.max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.max = max(self.max, self.standin.in_flight)
            time.sleep(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


@pytest.mark.parametrize("channels", ["sms", "sms+voice"])
def test_concurrency_limit_and_connection_reuse(inst, standin, daemons,
                                                channels):
    # concurrency = 4: never more than 4 transfers at once (one channel
    # takes at most 3 of them).  "sms+voice" has two routes, so the total
    # limit is what holds it.
    conf = "concurrency = 4\n" + standin.twilio_config("sms")
    if channels == "sms+voice":
        conf += standin.twilio_config("voice")
    inst.write_conf(conf)
    standin.delay_all = 0.5
    ids = []
    for i in range(20):
        if channels == "sms+voice" and i % 2:
            ids.append(queue_voice(inst.spool, "+49151123402%02d" % i,
                                   say="call %d" % i))
        else:
            ids.append(queue_sms(inst.spool, "+49151123401%02d" % i,
                                 "c%d" % i))
    t0 = time.monotonic()
    with Sampler(standin) as sampler:
        daemons.once(inst.conf, timeout=30)
    elapsed = time.monotonic() - t0
    reqs = standin.requests
    conns = {r["connection"] for r in reqs}
    print("concurrency (%s): max in flight %d, %.2fs for %d requests on %d "
          "connections" % (channels, sampler.max, elapsed, len(reqs),
                           len(conns)))
    assert standin.violations == [], standin.violations
    assert len(reqs) == 20
    for msgid in ids:
        assert_sent(inst.spool, msgid)
    assert 2 <= sampler.max <= 4, sampler.max
    # One at a time, 20 * 0.5 s take 10 s at least; four at once about
    # 2.5 s, but a busy machine or a sanitizer build adds to each send.
    assert elapsed < 9.5, elapsed
    assert len(conns) < len(reqs), conns    # keep-alive connections reused


# ------------------------------------------------- the running daemon

def test_daemon_sends_api_message_within_two_seconds(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.twilio_config("sms"))
    d = daemons.start(inst.conf)
    d.wait_idle()       # its start done: the message must wake it
    r = srv.sms(recipient="+4915112340060", messageBody="wake up")
    t_queued = time.time()
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    rec = standin.wait_for(1, timeout=EVENTUALLY, api="twilio")[0]
    assert rec["time"] - t_queued < 2.0, rec["time"] - t_queued
    wait_until(lambda: where(inst.spool, sid) == ["sent"], EVENTUALLY,
               what="sent/" + sid)
    assert d.stop() == 0
    assert standin.violations == []


def test_daemon_sends_scheduled_message_when_due(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf(standin.twilio_config("sms"))
    d = daemons.start(inst.conf)
    d.wait_idle()
    at = in_future(4)
    due = parse_time(at).timestamp()
    r = srv.sms(recipient="+4915112340061", messageBody="later", sendAt=at)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "Scheduled"
    sid = r.json()["smsId"]
    assert where(inst.spool, sid) == ["deferred"]
    # Nothing before it is due, then sent within a few seconds of it.
    try:
        rec = standin.wait_for(1, timeout=due + 4 - time.time(),
                               api="twilio")[0]
    except AssertionError:
        pytest.fail("the scheduled message (due %s) was not sent within 4s "
                    "of its time; spool: %s" % (at, where(inst.spool, sid)))
    assert rec["time"] >= due - 0.05, (rec["time"], due)
    wait_until(lambda: where(inst.spool, sid) == ["sent"], EVENTUALLY,
               what="sent/" + sid)
    assert d.stop() == 0


def test_daemon_honours_a_short_retry_after(inst, standin, daemons):
    # 429 with Retry-After: 2 -> deferred/ due in 2 s; the running daemon
    # tries again when it is due, not at its next periodic scan.
    inst.write_conf(standin.twilio_config("sms"))
    to = "+4915112340065"
    standin.script(to, [("429", 2)])
    d = daemons.start(inst.conf)
    msgid = queue_sms(inst.spool, to, "rate limited")
    first = standin.wait_for(1, timeout=EVENTUALLY, api="twilio")[0]
    wait_until(lambda: where(inst.spool, msgid) == ["deferred"], EVENTUALLY,
               what="deferred/" + msgid)
    doc = load(inst.spool, "deferred", msgid)
    due = timestamp(doc["nextAttempt"])
    assert due - first["time"] <= 3.5, doc
    try:
        standin.wait_for(2, timeout=due + 4 - time.time(), api="twilio")
    except AssertionError:
        pytest.fail("not retried within 4s of its nextAttempt %s; spool: %s"
                    % (doc["nextAttempt"], where(inst.spool, msgid)))
    wait_until(lambda: where(inst.spool, msgid) == ["sent"], EVENTUALLY,
               what="sent/" + msgid)
    assert load(inst.spool, "sent", msgid)["attempts"] == 2
    assert d.stop() == 0


def test_sigterm_waits_for_the_send_in_flight(inst, standin, daemons):
    inst.write_conf(standin.twilio_config("sms"))
    to = "+4915112340062"
    standin.script(to, [("delay", 2.0)])
    d = daemons.start(inst.conf)
    msgid = queue_sms(inst.spool, to, "slow one")
    wait_until(lambda: standin.in_flight >= 1, EVENTUALLY, what="the request")
    t0 = time.monotonic()
    d.signal(signal.SIGTERM)
    rc = d.wait(2.0 + 5)
    took = time.monotonic() - t0
    assert rc == 0, d.log()
    assert took >= 1.0, took              # it did wait for the reply
    assert took <= 2.0 + 4, took
    reqs = standin.requests
    assert len(reqs) == 1 and reqs[0]["outcome"] == "ok", reqs
    doc = assert_sent(inst.spool, msgid)
    assert doc["providerReply"]["sid"] == reqs[0]["response"]["sid"]


def test_an_outcome_does_not_wait_for_a_slow_send(inst, standin, daemons):
    """A finished send waits for others to share its write (msgspoold(8)),
    but only briefly: a quick message is recorded sent while a slow one,
    started first, is still in flight."""
    inst.write_conf(standin.twilio_config("sms"))
    slow = "+4915112340063"
    standin.script(slow, [("delay", 4.0)])
    d = daemons.start(inst.conf)
    slow_id = queue_sms(inst.spool, slow, "slow one")
    wait_until(lambda: standin.in_flight >= 1, EVENTUALLY, what="the request")
    quick_id = queue_sms(inst.spool, "+4915112340064", "quick one")
    wait_until(lambda: where(inst.spool, quick_id) == ["sent"], 3.0,
               what="sent/" + quick_id)
    assert standin.in_flight >= 1           # the slow one still runs
    assert where(inst.spool, slow_id) == ["cur"]
    wait_until(lambda: where(inst.spool, slow_id) == ["sent"], EVENTUALLY,
               what="sent/" + slow_id)
    assert d.stop() == 0


def test_sighup_keeps_the_spool(tmp_path, daemons):
    """A reload that names another spool is refused, saying why: the
    daemon goes on with the old config and the spool it started with."""
    inst = Instance(tmp_path / "inst")
    other = Instance(tmp_path / "other")
    inst.write_conf()
    d = daemons.start(inst.conf)
    d.wait_log("started")
    text = inst.conf.read_text()
    assert str(inst.spool) in text
    inst.conf.write_text(text.replace(str(inst.spool), str(other.spool)))
    d.signal(signal.SIGHUP)
    d.wait_log("a reload keeps the spool")
    msgid = queue_sms(inst.spool, "+4915112340065", "still here")
    wait_until(lambda: where(inst.spool, msgid) == ["sent"], EVENTUALLY,
               what="sent/" + msgid)
    assert len(inst.outbox_for(msgid)) == 1
    assert "reloaded" not in d.log()
    assert d.stop() == 0


def test_sighup_rereads_the_config(srv, standin, daemons):
    inst = srv.inst
    inst.write_conf()                      # [sms] absent: the file provider
    d = daemons.start(inst.conf)
    d.wait_log("started")
    r = srv.sms(recipient="+4915112340063", messageBody="to the file")
    assert r.status_code == 202, r.text
    first = r.json()["smsId"]
    wait_until(lambda: where(inst.spool, first) == ["sent"], EVENTUALLY,
               what="sent/" + first)
    assert len(inst.outbox_for(first)) == 1
    inst.write_conf(standin.hook_config("sms"))
    d.signal(signal.SIGHUP)
    d.wait_log("reloaded")
    r = srv.sms(recipient="+4915112340064", messageBody="to the hook")
    assert r.status_code == 202, r.text
    second = r.json()["smsId"]
    rec = standin.wait_for(1, timeout=EVENTUALLY, api="hook")[0]
    assert rec["json"]["id"] == second
    wait_until(lambda: where(inst.spool, second) == ["sent"], EVENTUALLY,
               what="sent/" + second)
    assert inst.outbox_for(second) == []
    assert load(inst.spool, "sent", second)["providerReply"]["provider"] == \
        "http"
    assert d.stop() == 0
    assert standin.violations == []

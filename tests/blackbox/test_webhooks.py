"""Webhooks to clients (msgspool.conf(5) [client.ID]; msgspoold(8), Webhooks): events of a
client's messages POSTed, signed per Standard Webhooks, to the client's
webhook-url by msgspoold; retried on the schedule (a short one through
the test-only MSGSPOOL_WEBHOOK_SCHEDULE), stopped by a 410, kept for the
operator when given up (msgspool events), never in the way of messages.

The receiver here checks signatures with Python's hmac and base64, not
the project's code."""

import base64
import hashlib
import hmac
import json
import shutil
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import CROCKFORD, in_future, parse_time
from delivery_support import daemons, wait_until  # noqa: F401 (fixture)
from doubles.standin import Standin

__all__ = ["daemons"]

SECRET = "whsec_" + base64.b64encode(b"webhook secret of acme, 32 b!!!"
                                     ).decode()
PUBLIC = "https://msg.example.com"


def _verify(secret, msg_id, ts, body, header):
    """Standard Webhooks 1.0: one of the space-separated v1,SIG is
    base64(HMAC-SHA256(base64-decoded secret, id.ts.body))."""
    key = base64.b64decode(secret[len("whsec_"):])
    want = base64.b64encode(hmac.new(
        key, msg_id.encode() + b"." + ts.encode() + b"." + body,
        hashlib.sha256).digest()).decode()
    return any(p.startswith("v1,") and hmac.compare_digest(p[3:], want)
               for p in header.split(" "))


class Receiver:
    """A webhook endpoint on 127.0.0.1: records each POST (headers, body,
    whether its signature verifies with secret) and answers by the next
    entry of plan: an int status ("ok" is 200), ("retry-after", status,
    seconds), "sleep" (hangs for 30 s, or until close), or "drop" (closes
    the connection).  When plan runs out it answers 200."""

    def __init__(self, secret=SECRET):
        self.secret = secret
        self.plan = []
        self.got = []
        self.lock = threading.Lock()
        self.closing = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                h = {k.lower(): v for k, v in self.headers.items()}
                with owner.lock:
                    step = owner.plan.pop(0) if owner.plan else 200
                    owner.got.append({
                        "headers": h, "body": body, "at": time.monotonic(),
                        "verified": _verify(
                            owner.secret, h.get("webhook-id", ""),
                            h.get("webhook-timestamp", ""), body,
                            h.get("webhook-signature", ""))})
                if step == "sleep":
                    owner.closing.wait(30)
                    return
                if step == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                hdrs = {}
                if isinstance(step, tuple):
                    _, step, ra = step
                    hdrs["Retry-After"] = str(ra)
                self.send_response(step)
                for k, v in hdrs.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # close() waits for the loop to see its shutdown: at most a poll.
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d/hook" % self.server.server_address[1]

    def deliveries(self):
        with self.lock:
            return list(self.got)

    def wait(self, n, timeout=30):
        return wait_until(lambda: len(self.got) >= n and self.deliveries(),
                          timeout, what="%d webhook deliveries" % n)

    def close(self):
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def hooks(srv):
    """srv with its spool's events areas emptied before and after."""
    def clean():
        for a in ("events", "events-failed"):
            shutil.rmtree(srv.inst.spool / a, ignore_errors=True)
    clean()
    yield srv
    clean()


def _client_conf(url, events=None, secret=SECRET, secret_file=None,
                 client="acme"):
    s = f"\n[client.{client}]\nwebhook-url = {url}\n"
    if secret_file is not None:
        s += f"webhook-secret-file = {secret_file}\n"
    else:
        s += f"webhook-secret = {secret}\n"
    if events is not None:
        s += f"webhook-events = {events}\n"
    return s


def _area(srv, area):
    d = srv.inst.spool / area
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def _send(srv, **kw):
    r = srv.sms(**kw)
    assert r.status_code in (200, 202), r.text
    return r.json()["smsId"]


def _status(srv, msgid):
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, r.text
    st = r.json()
    del st["events"]
    return st


def _check(d, srv, msgid, kind):
    """A delivery of a message.KIND event for msgid, signed and shaped as
    msgspoold(8) Webhooks says; its body."""
    h = d["headers"]
    assert h["content-type"] == "application/json", h
    assert len(h["webhook-id"]) == 26 and all(c in CROCKFORD
                                              for c in h["webhook-id"]), h
    assert abs(int(h["webhook-timestamp"]) - time.time()) < 60, h
    assert d["verified"], h
    body = json.loads(d["body"])
    assert sorted(body) == ["data", "timestamp", "type"], body
    assert body["type"] == "message." + kind, body
    assert body["data"]["id"] == msgid and body["data"]["status"] == kind
    assert body["data"] == _status(srv, msgid), body
    return body


def test_sent_and_canceled(hooks, receiver, daemons):
    srv = hooks
    srv.inst.write_conf(_client_conf(receiver.url))
    sent = _send(srv)
    later = _send(srv, sendAt=in_future(3600))
    daemons.once(srv.inst.conf)
    got = receiver.wait(1)
    assert len(got) == 1
    _check(got[0], srv, sent, "sent")
    assert _area(srv, "events") == []
    r = srv.request("DELETE", "/messages/" + later)
    assert r.status_code == 200, r.text
    # Stored before it is due, by the CGI program.
    assert len(_area(srv, "events")) == 1
    daemons.once(srv.inst.conf)
    got = receiver.wait(2)
    _check(got[1], srv, later, "canceled")
    assert got[0]["headers"]["webhook-id"] != got[1]["headers"]["webhook-id"]
    assert _area(srv, "events") == [] and _area(srv, "events-failed") == []


def test_filter_and_other_clients(hooks, receiver, daemons):
    srv = hooks
    srv.inst.write_conf(_client_conf(receiver.url, events="canceled,failed"))
    _send(srv)
    _send(srv, client="other")      # no webhook at all
    later = _send(srv, sendAt=in_future(3600))
    daemons.once(srv.inst.conf)
    assert _area(srv, "events") == []
    assert srv.request("DELETE", "/messages/" + later).status_code == 200
    daemons.once(srv.inst.conf)
    got = receiver.wait(1)
    # --once ends with its transfers answered, and the receiver records a
    # POST before it answers: what came is all that comes.
    assert len(receiver.deliveries()) == 1
    _check(got[0], srv, later, "canceled")


def test_retries_keep_the_id_and_honour_retry_after(hooks, receiver,
                                                    daemons, monkeypatch):
    srv = hooks
    monkeypatch.setenv("MSGSPOOL_WEBHOOK_SCHEDULE", "1,1,1")
    srv.inst.write_conf(_client_conf(receiver.url))
    receiver.plan = [500, "drop", ("retry-after", 503, 3)]
    d = daemons.start(srv.inst.conf)
    msgid = _send(srv)
    got = receiver.wait(4)
    ids = {g["headers"]["webhook-id"] for g in got}
    assert len(ids) == 1, ids
    assert all(g["verified"] for g in got)
    assert [json.loads(g["body"]) for g in got[1:]] == \
        [json.loads(got[0]["body"])] * 3
    # Retry-After: 3 was honoured over the schedule's second.
    assert got[3]["at"] - got[2]["at"] >= 2.5, got
    wait_until(lambda: _area(srv, "events") == [], 10, what="events/ empty")
    assert _area(srv, "events-failed") == []
    _check(got[3], srv, msgid, "sent")
    assert d.stop() == 0


def _events_due(srv):
    """Whether every event in events/ is due: its nextAttempt (whole
    seconds) has come."""
    for name in _area(srv, "events"):
        try:
            ev = json.loads((srv.inst.spool / "events" / name).read_bytes())
        except FileNotFoundError:
            continue
        if ev.get("nextAttempt") and \
                parse_time(ev["nextAttempt"]).timestamp() > time.time():
            return False
    return True


def _once_until(daemons, srv, receiver, n, runs=4):
    """msgspoold --once until the receiver has n deliveries: a try that
    fails on the way (the receiver, loaded, closing a connection unread)
    is tried again by the next run once it is due, as the daemon would
    after its wait."""
    for _ in range(runs):
        daemons.once(srv.inst.conf)
        if len(receiver.deliveries()) >= n:
            break
        wait_until(lambda: _events_due(srv), 10,
                   what="the events tried again due")
    return receiver.wait(n, timeout=5)


def test_410_stops_and_operator_resends(hooks, receiver, daemons,
                                        monkeypatch):
    srv = hooks
    monkeypatch.setenv("MSGSPOOL_WEBHOOK_SCHEDULE", "1,1,1")
    srv.inst.write_conf(_client_conf(receiver.url))
    receiver.plan = [410]
    msgid = _send(srv)
    daemons.once(srv.inst.conf)
    got = receiver.wait(1)
    failed = _area(srv, "events-failed")
    assert _area(srv, "events") == [] and len(failed) == 1
    evid = got[0]["headers"]["webhook-id"]
    assert failed == [evid + ".json"]
    # Given up, not retried (the schedule's 1 s): kept with no next try,
    # and nothing left in events/ for a daemon to send again.
    kept = json.loads((srv.inst.spool / "events-failed" / failed[0])
                      .read_bytes())
    assert kept["nextAttempt"] is None, kept
    daemons.once(srv.inst.conf)
    assert len(receiver.deliveries()) == 1      # stopped at once
    cp = srv.inst.cli("events")
    assert cp.returncode == 0, cp.err
    line = [ln for ln in cp.out.splitlines() if ln.startswith(evid)]
    assert line and "acme" in line[0] and "message.sent" in line[0] and \
        "HTTP 410" in line[0], cp.out
    assert "1 failed event" in cp.out
    cp = srv.inst.cli("events", "resend", evid)
    assert cp.returncode == 0, cp.err
    assert _area(srv, "events-failed") == [] and \
        _area(srv, "events") == [evid + ".json"]
    got = _once_until(daemons, srv, receiver, 2)
    assert got[1]["headers"]["webhook-id"] == evid
    _check(got[1], srv, msgid, "sent")
    assert _area(srv, "events") == []
    cp = srv.inst.cli("events", "resend", "0" * 26)
    assert cp.returncode != 0


def test_exhausted_tries_are_kept_then_resent_all(hooks, receiver, daemons,
                                                  monkeypatch):
    srv = hooks
    monkeypatch.setenv("MSGSPOOL_WEBHOOK_SCHEDULE", "1")
    srv.inst.write_conf(_client_conf(receiver.url))
    receiver.plan = [500] * 4
    d = daemons.start(srv.inst.conf)
    _send(srv)
    _send(srv)
    wait_until(lambda: len(_area(srv, "events-failed")) == 2, 20,
               what="two events given up")
    assert len(receiver.deliveries()) == 4      # 1 + 1 retry each
    assert d.stop() == 0
    cp = srv.inst.cli("events")
    assert cp.out.count("HTTP 500") == 2 and "2 failed events" in cp.out
    cp = srv.inst.cli("events", "resend", "--all")
    assert cp.returncode == 0 and "2 events resent" in cp.out, cp.out
    _once_until(daemons, srv, receiver, 6)
    assert _area(srv, "events") == [] and _area(srv, "events-failed") == []


def test_without_webhook_urls_events_are_read_once_a_config(
        hooks, receiver, daemons, monkeypatch):
    """With no client's webhook-url, msgspoold(8) reads events/ at start
    and at SIGHUP only (giving up what is there), not every second."""
    srv = hooks
    monkeypatch.setenv("MSGSPOOL_WEBHOOK_SCHEDULE", "1")
    srv.inst.write_conf(_client_conf(receiver.url))
    receiver.plan = [500] * 2
    d = daemons.start(srv.inst.conf)
    _send(srv)
    wait_until(lambda: len(_area(srv, "events-failed")) == 1, 20,
               what="the event given up")
    assert d.stop() == 0
    srv.inst.write_conf("")
    # Resent before the start: the scan at start gives it up again, and
    # once it has, that scan is done.
    cp = srv.inst.cli("events", "resend", "--all")
    assert cp.returncode == 0 and "1 event resent" in cp.out, cp.out
    d = daemons.start(srv.inst.conf)
    wait_until(lambda: len(_area(srv, "events-failed")) == 1 and
               _area(srv, "events") == [], 20,
               what="the event given up by the scan at start")
    cp = srv.inst.cli("events", "resend", "--all")
    assert cp.returncode == 0 and "1 event resent" in cp.out, cp.out
    # The passage of time is the point: nothing may happen.  A scan every
    # second, as with a webhook-url (msgspoold(8) Webhooks), would have
    # given it up within 2 s (its seconds are whole ones).
    time.sleep(2.5)
    assert len(_area(srv, "events")) == 1, "events/ read with no webhook-url"
    d.signal(signal.SIGHUP)
    # Given up is written to events-failed/ before events/ lets it go:
    # wait for both.
    wait_until(lambda: len(_area(srv, "events-failed")) == 1 and
               _area(srv, "events") == [], 20,
               what="the event given up after the reload")
    assert len(receiver.deliveries()) == 2
    assert d.stop() == 0


@pytest.mark.parametrize("dead", ["sleep", "refused"])
def test_dead_endpoint_never_delays_messages(hooks, receiver, daemons,
                                             monkeypatch, dead):
    srv = hooks
    if dead == "sleep":
        url = receiver.url
        receiver.plan = ["sleep"] * 100
    else:
        url = "http://127.0.0.1:%d/hook" % _closed_port()
    srv.inst.write_conf("concurrency = 4\n" + _client_conf(url))
    d = daemons.start(srv.inst.conf)
    first = [_send(srv) for _ in range(3)]
    if dead == "sleep":
        receiver.wait(1)        # its one slot hangs now
    ids = first + [_send(srv) for _ in range(12)]
    t0 = time.monotonic()
    wait_until(lambda: all(srv.inst.where(i) == ["sent"] for i in ids), 10,
               what="every message sent while the webhook hangs")
    assert time.monotonic() - t0 < 8
    if dead == "sleep":
        # One transfer at a time for webhooks at concurrency 4.
        assert len(receiver.deliveries()) == 1
    assert d.stop() == 0


@pytest.mark.parametrize("hanging", [["acme"], ["acme", "other"]])
def test_a_hanging_receiver_delays_only_its_own_client(hooks, daemons,
                                                       hanging):
    """msgspoold(8) Webhooks: each client has its own share of the webhook
    transfers.  The receivers of the clients in hanging take every POST
    and never answer (each try holds its transfer for 15 s), and they have
    20 events due each; smsonly's event still goes out within seconds,
    theirs still waiting, at the default concurrency (4 webhook
    transfers)."""
    srv = hooks
    hung = {c: Receiver() for c in hanging}
    ok = Receiver()
    try:
        conf = "".join(_client_conf(r.url, client=c) for c, r in hung.items())
        srv.inst.write_conf(conf + _client_conf(ok.url, client="smsonly"))
        for r in hung.values():
            r.plan = ["sleep"] * 100
        d = daemons.start(srv.inst.conf)
        for c in hanging:
            for _ in range(20):
                _send(srv, client=c)
        n = 20 * len(hanging)
        wait_until(lambda: len(_area(srv, "events")) == n, 20,
                   what="the %d events of %s stored" % (n, hanging))
        for r in hung.values():
            r.wait(1, timeout=10)       # its transfers hang now
        t0 = time.monotonic()
        msgid = _send(srv, client="smsonly")
        got = ok.wait(1, timeout=10)
        delay = got[0]["at"] - t0
        assert delay < 10, delay
        body = json.loads(got[0]["body"])
        assert body["type"] == "message.sent" and \
            body["data"]["id"] == msgid, body
        # Theirs still wait, none answered.
        wait_until(lambda: len(_area(srv, "events")) == n, 5,
                   what="only the %d events of %s left" % (n, hanging))
        assert d.stop() == 0
    finally:
        for r in list(hung.values()) + [ok]:
            r.close()


def _closed_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_once_is_bounded_by_the_timeout(hooks, receiver, daemons):
    srv = hooks
    srv.inst.write_conf(_client_conf(receiver.url))
    receiver.plan = ["sleep"]
    _send(srv)
    t0 = time.monotonic()
    daemons.once(srv.inst.conf, timeout=40)
    assert time.monotonic() - t0 < 25
    assert len(_area(srv, "events")) == 1       # due again later


def test_webhook_secret_makes_a_working_secret(hooks, receiver, daemons,
                                               tmp_path):
    srv = hooks
    path = tmp_path / "acme-webhook"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    srv.inst.write_conf(_client_conf(receiver.url, secret_file=path))
    cp = srv.inst.cli("webhook-secret", "acme")
    assert cp.returncode == 0, cp.err
    new = cp.out.strip()
    assert new.startswith("whsec_") and new != SECRET
    assert len(base64.b64decode(new[6:])) >= 24
    assert path.read_text().strip() == new
    assert path.stat().st_mode & 0o077 == 0
    receiver.secret = new
    msgid = _send(srv)
    daemons.once(srv.inst.conf)
    _check(receiver.wait(1)[0], srv, msgid, "sent")
    # Only an inline secret, or no client section: refused.
    srv.inst.write_conf(_client_conf(receiver.url))
    cp = srv.inst.cli("webhook-secret", "acme")
    assert cp.returncode != 0 and "webhook-secret-file" in cp.err
    assert srv.inst.cli("webhook-secret", "nobody").returncode != 0
    assert srv.inst.cli("webhook-secret", "bad/id").returncode != 0


def test_bad_client_sections_stop_the_daemon(hooks, daemons):
    srv = hooks
    for extra in (_client_conf("ftp://x.example/"),
                  _client_conf("http://x.example/", secret="whsec_c2hvcnQ="),
                  _client_conf("http://x.example/", events="sent,queued"),
                  "\n[client.a/b]\nwebhook-url = http://x.example/\n",
                  "\n[nonsense]\n"):
        srv.inst.write_conf(extra)
        d = daemons.start(srv.inst.conf, once=True)
        assert d.wait(20) == 1, extra


# -------------------------------------------------------------- receipts

def _twilio_sig(token, url, params):
    data = url + "".join(k + params[k] for k in sorted(params))
    return base64.b64encode(hmac.new(token.encode(), data.encode(),
                                     hashlib.sha1).digest()).decode()


def test_receipts_make_delivered_events(hooks, receiver, daemons):
    srv = hooks
    with Standin() as standin:
        srv.inst.write_conf(f"public-url = {PUBLIC}\n" +
                            standin.twilio_config() +
                            _client_conf(receiver.url,
                                         events="delivered,undelivered"))
        msgid = _send(srv, recipient="+4915112340077")
        daemons.once(srv.inst.conf)
        msg_sid = _status(srv, msgid)["providerMessageId"]
    assert _area(srv, "events") == []           # sent is filtered out
    for status in ("sent", "delivered", "delivered"):
        params = {"AccountSid": standin.twilio_account_sid,
                  "MessageSid": msg_sid, "SmsSid": msg_sid,
                  "MessageStatus": status, "SmsStatus": status,
                  "To": "+4915112340077", "From": standin.twilio_from,
                  "ApiVersion": "2010-04-01"}
        url = f"{PUBLIC}/receipts/twilio?id={msgid}"
        r = srv.request("POST", f"/receipts/twilio?id={msgid}", client=None,
                        data="&".join(f"{k}={v.replace('+', '%2B')}"
                                      for k, v in params.items()),
                        headers={"Content-Type":
                                 "application/x-www-form-urlencoded",
                                 "X-Twilio-Signature": _twilio_sig(
                                     standin.twilio_auth_token, url,
                                     params)})
        assert r.status_code == 200, r.text
    daemons.once(srv.inst.conf)
    got = receiver.wait(1)
    # --once has ended with its transfers answered: nothing more comes.
    assert len(receiver.deliveries()) == 1      # once, not per receipt
    _check(got[0], srv, msgid, "delivered")

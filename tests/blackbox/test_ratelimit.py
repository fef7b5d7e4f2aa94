"""Per-client rate limits ([client.ID] rate, msgspool.conf(5)): counted
in messages across every process serving the client, the IETF RateLimit
headers on each reply, 429 with Retry-After and nothing queued over it.
Each reply is also checked against conf/openapi.yaml (openapi_check)."""

import json
import re
import threading
import time

import requests

from conftest import RECIPIENT, assert_problem, fresh_window
from openapi_check import check_reply


def _limit(srv, rate, client="acme", extra=""):
    srv.inst.write_conf(f"{extra}[client.{client}]\nrate = {rate}\n")
    fresh_window(rate)


def _sms(srv, client="acme"):
    r = srv.sms(client=client, recipient=RECIPIENT, messageBody="x")
    check_reply(r)
    return r


def _remaining(r):
    m = re.fullmatch(r'"msgs";r=(\d+);t=(\d+)', r.headers["RateLimit"])
    assert m, r.headers["RateLimit"]
    return int(m.group(1)), int(m.group(2))


def test_headers_and_429(srv):
    _limit(srv, "3/min")
    for left in (2, 1, 0):
        r = _sms(srv)
        assert r.status_code == 202, r.text
        assert r.headers["RateLimit-Policy"] == '"msgs";q=3;w=60'
        rem, t = _remaining(r)
        assert rem == left and 0 < t <= 60
    r = _sms(srv)
    assert_problem(r, 429)
    assert 1 <= int(r.headers["Retry-After"]) <= 60
    assert _remaining(r)[0] == 0
    assert len(srv.inst.files("new")) == 3


def test_batch_over_what_remains_is_refused_whole(srv):
    _limit(srv, "4/h")
    assert _sms(srv).status_code == 202
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": RECIPIENT, "messageBody": str(i)} for i in range(4)]})
    assert_problem(r, 429)
    check_reply(r)
    assert len(srv.inst.files("new")) == 1
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": RECIPIENT, "messageBody": str(i)} for i in range(3)]})
    assert r.status_code == 200, r.text
    check_reply(r)
    assert _remaining(r)[0] == 0
    assert len(srv.inst.files("new")) == 4


def test_clients_are_independent_and_unlimited_have_no_headers(srv):
    _limit(srv, "1/min", client="acme")
    assert _sms(srv).status_code == 202
    assert _sms(srv).status_code == 429
    r = _sms(srv, client="other")
    assert r.status_code == 202
    assert "RateLimit" not in r.headers
    assert "RateLimit-Policy" not in r.headers


def test_parallel_clients_never_exceed_the_limit(srv):
    _limit(srv, "10/h")
    codes = []
    replies = []
    lock = threading.Lock()

    url = srv.url("/sms/v1/deliver")
    hdrs = {"X-API-KEY": srv.inst.keys["acme"],
            "Content-Type": "application/json"}
    body = json.dumps({"recipient": RECIPIENT, "messageBody": "x"})

    def worker():
        # A session of its own: the server's one is not for threads.
        with requests.Session() as s:
            for _ in range(5):
                r = None
                # busybox httpd refuses connections under load (a slow
                # sanitizer build): try again, a bounded number of times.
                for attempt in range(20):
                    try:
                        r = s.post(url, data=body, headers=dict(
                            hdrs, Connection="close"), timeout=30)
                        break
                    except requests.ConnectionError:
                        time.sleep(0.05 * (attempt + 1))
                c = r.status_code if r is not None else "dropped"
                with lock:
                    codes.append(c)
                    if r is not None:
                        replies.append(r)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    # Never more than the limit, whatever the interleaving; and the
    # limit is reached (30 tries, a dropped connection at most now and
    # then).
    assert len(srv.inst.files("new")) == 10, codes
    assert codes.count(202) <= 10, codes
    assert set(codes) <= {202, 429, "dropped"}, codes
    assert codes.count("dropped") == 0, codes
    for r in replies:
        check_reply(r)


def test_bad_rate_is_a_server_error_and_stops_the_daemon(srv):
    _limit(srv, "ten a minute")
    r = _sms(srv)
    assert r.status_code == 500
    assert "RateLimit" not in r.headers
    cp = srv.inst.daemon_once(check=False)
    assert cp.returncode == 1
    assert "rate" in cp.err


# One body of each send route (conf/openapi.yaml), with how many messages
# it counts: an entry, a recipient or a call each.
SENDS = [
    ("/sms/v1/deliver", {"recipient": RECIPIENT, "messageBody": "x"}, 1),
    ("/sms/v1/deliver/batch", {"messages": [
        {"recipient": RECIPIENT, "messageBody": "a"},
        {"recipient": RECIPIENT, "messageBody": "b"}]}, 2),
    ("/ott/v1/deliver", {"payload": [
        {"recipient": "4915112345678", "templateID": "otp",
         "templateParameters": ["123456"], "channelType": 1}]}, 1),
    ("/voice/v1/deliver", {"recipient": RECIPIENT, "message": "hi"}, 1),
    ("/voice/v1/deliver", {"campaignName": "c", "message": "hi",
                           "recipients": [RECIPIENT, "+4915112345679"]}, 2),
    ("/deliver", {"templateId": "welcome", "payload": [
        {"recipient": "ann@example.com", "fields": {"first_name": "Ann"}}]},
     1),
    ("/email/v1/deliver", {"templateId": "welcome", "recipients": [
        {"to": "ann@example.com", "fields": {"first_name": "Ann"}},
        {"to": "bob@example.org", "fields": {"first_name": "Bob"}}]}, 2),
]


def test_every_send_route_counts_and_answers_as_documented(srv):
    """Each send route takes its messages from one shared rate, carries
    the RateLimit headers on its success and is 429 over the limit, each
    reply as conf/openapi.yaml has it; the upload counts nothing."""
    total = sum(n for _, _, n in SENDS)
    _limit(srv, f"{total}/h", extra="[ott.1]\nprovider = file\n")
    left = total
    for path, body, n in SENDS:
        r = srv.post_json(path, body)
        check_reply(r)
        assert r.status_code in (200, 202), (path, r.text)
        left -= n
        assert r.headers["RateLimit-Policy"] == f'"msgs";q={total};w=3600'
        assert _remaining(r)[0] == left, path
    queued = len(srv.inst.files("new"))
    assert queued == total
    for path, body, _ in SENDS:
        r = srv.post_json(path, body)
        check_reply(r)
        assert_problem(r, 429)
        assert r.json()["type"] == "urn:msgspool:problem:rate-limited"
        assert _remaining(r)[0] == 0
    assert len(srv.inst.files("new")) == queued
    # The upload is no message: neither counted nor refused, but a
    # limited client's POST, so it tells the rate.
    r = srv.post_json("/email/v1/attachments", {
        "attachmentName": "a.txt", "content": "aGkK"})
    check_reply(r)
    assert r.status_code == 201, r.text
    assert r.headers["RateLimit-Policy"] == f'"msgs";q={total};w=3600'
    assert _remaining(r)[0] == 0


def test_replies_that_end_before_the_count_tell_the_rate(srv):
    """Every reply to a limited client's POST carries the headers, one
    refused before its messages are counted too (bad JSON, 415, 413, a
    bad Idempotency-Key, the upload), and takes nothing."""
    _limit(srv, "5/h", extra="max-body = 1K\n")
    assert _sms(srv).status_code == 202
    path = "/sms/v1/deliver"
    for r, status in (
            (srv.post_raw(path, b'{"recipient": '), 400),
            (srv.post_json(path, {"recipient": RECIPIENT,
                                  "messageBody": "x"},
                           content_type="text/plain"), 415),
            (srv.post_json(path, {"recipient": RECIPIENT,
                                  "messageBody": "x" * 2000}), 413),
            (srv.post_json(path, {"recipient": RECIPIENT,
                                  "messageBody": "x"},
                           headers={"Idempotency-Key": '"a'}), 400),
            (srv.post_json("/email/v1/attachments", {
                "attachmentName": "a.txt", "content": "aGkK"}), 201)):
        check_reply(r)
        assert r.status_code == status, r.text
        assert r.headers["RateLimit-Policy"] == '"msgs";q=5;w=3600', status
        assert _remaining(r)[0] == 4, status
    assert len(srv.inst.files("new")) == 1
    # A client without a rate still gets none.
    r = srv.post_raw(path, b"{", client="other")
    assert_problem(r, 400)
    assert "RateLimit" not in r.headers

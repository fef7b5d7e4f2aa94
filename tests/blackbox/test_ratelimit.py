"""Per-client rate limits ([client.ID] rate, msgspool.conf(5)): counted
in messages across every process serving the client, the IETF RateLimit
headers on each reply, 429 with Retry-After and nothing queued over it."""

import json
import re
import threading

import requests

from conftest import RECIPIENT, assert_problem


def _limit(srv, rate, client="acme"):
    srv.inst.write_conf(f"[client.{client}]\nrate = {rate}\n")


def _sms(srv, client="acme"):
    return srv.sms(client=client, recipient=RECIPIENT, messageBody="x")


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
    assert len(srv.inst.files("new")) == 1
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": RECIPIENT, "messageBody": str(i)} for i in range(3)]})
    assert r.status_code == 200, r.text
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
    lock = threading.Lock()

    url = srv.url("/sms/v1/deliver")
    hdrs = {"X-API-KEY": srv.inst.keys["acme"],
            "Content-Type": "application/json"}
    body = json.dumps({"recipient": RECIPIENT, "messageBody": "x"})

    def worker():
        # A session of its own: the server's one is not for threads.
        with requests.Session() as s:
            for _ in range(5):
                try:
                    c = s.post(url, data=body, headers=dict(
                        hdrs, Connection="close"), timeout=30).status_code
                except requests.ConnectionError:
                    c = "dropped"       # busybox under load, at times
                with lock:
                    codes.append(c)

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
    assert codes.count("dropped") <= 5, codes


def test_bad_rate_is_a_server_error_and_stops_the_daemon(srv):
    _limit(srv, "ten a minute")
    r = _sms(srv)
    assert r.status_code == 500
    cp = srv.inst.daemon_once(check=False)
    assert cp.returncode == 1
    assert "rate" in cp.err

"""HEAD wherever GET is allowed (RFC 9110 9.3.2; conf/openapi.yaml): the
status and headers GET would get, Content-Length the GET's, and no body,
on every GET route, under every server, CGI and FastCGI alike; a 405's
Allow names HEAD where it names GET."""

import urllib.parse

import pytest

from conftest import FRONT, RECIPIENT, assert_problem

VERIFY = "verify-me-please"
# The headers a HEAD answer must carry as the GET's does (Date and the
# server's own differ from one answer to the next).
SAME = ("content-type", "content-length", "allow", "www-authenticate")


def _raw(srv, method, path, key=None):
    """(status, headers, body bytes) of one request on its own connection,
    the body read to the connection's end: what a server sends after a
    HEAD's header is there to see."""
    h = f"X-API-KEY: {key}\r\n" if key else ""
    return srv.raw(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{h}"
                   "Connection: close\r\n\r\n".encode())


def _queued(srv):
    r = srv.sms()
    assert r.status_code == 202, r.text
    return r.json()["smsId"]


def _cases(srv):
    """(path, key) of GET routes, answered 2xx, 4xx and 405."""
    acme = srv.inst.keys["acme"]
    sid = _queued(srv)
    srv.inst.write_conf("[ott.1]\nprovider = whatsapp\nphone-number-id = 1\n"
                        "token = t\napi-base = http://127.0.0.1:9/\n"
                        f"verify-token = {VERIFY}\n")
    hs = urllib.parse.urlencode({"hub.mode": "subscribe",
                                 "hub.verify_token": VERIFY,
                                 "hub.challenge": "1158201444"})
    return [("/ping", None), ("/templates", acme), ("/templates", None),
            ("/messages/" + sid, acme), ("/messages/" + sid, None),
            ("/messages/01M840Q7H2P5C7SYTHCZ984TVK", acme),
            ("/messages/nope", acme),
            ("/receipts/whatsapp?" + hs, None),
            ("/receipts/whatsapp?hub.mode=subscribe", None),
            ("/receipts/twilio", None)] + (
                # busybox httpd's own 404 page comes with its body even to
                # a HEAD (conf/busybox-httpd.conf); no program answers it.
                [] if FRONT == "busybox" else [("/nope", None)])


def test_head_answers_as_get_without_a_body(srv):
    got = {}
    for path, key in _cases(srv):
        gs, gh, gb = _raw(srv, "GET", path, key)
        got[path, bool(key)] = gs
        hs, hh, hb = _raw(srv, "HEAD", path, key)
        where = f"HEAD {path} (key {bool(key)}): GET {gs} {gb[:120]!r}"
        assert hs == gs, where + f", HEAD {hs}"
        assert hb == b"", where + f", HEAD's body {hb[:120]!r}"
        for name in SAME:
            assert hh.get(name) == gh.get(name), \
                where + f", {name}: {hh.get(name)!r} != {gh.get(name)!r}"
    # The routes' own answers were among them: 200, 401, 404, 400, 403.
    assert sorted(set(got.values())) == [200, 400, 401, 403, 404, 405], got


def test_head_of_the_health_check(srv):
    status, hdrs, body = _raw(srv, "HEAD", "/ping")
    assert status == 200
    assert hdrs["content-type"].startswith("text/plain")
    assert hdrs.get("content-length") in (None, "4"), hdrs
    assert body == b""


def test_head_on_a_post_route_is_405_without_a_body(srv):
    status, hdrs, body = _raw(srv, "HEAD", "/sms/v1/deliver",
                              srv.inst.keys["acme"])
    assert status == 405
    assert hdrs["allow"] == "POST"
    assert body == b""


@pytest.mark.parametrize("path,allow", [
    ("/ping", "GET, HEAD"), ("/templates", "GET, HEAD"),
    ("/messages/01M840Q7H2P5C7SYTHCZ984TVK", "GET, HEAD, DELETE"),
    ("/receipts/whatsapp", "POST, GET, HEAD"),
    ("/sms/v1/deliver", "POST")])
def test_allow_names_head_where_it_names_get(srv, path, allow):
    r = srv.request("PUT", path, data=b"{}")
    assert_problem(r, 405)
    assert r.headers["Allow"] == allow
    assert r.json()["detail"] == f"PUT is not allowed here; use {allow}"


def test_head_queues_nothing_and_reads_no_body(srv):
    # HEAD is GET without the body: a route's state stays as it was.
    sid = _queued(srv)
    status, _, body = _raw(srv, "HEAD", "/messages/" + sid,
                           srv.inst.keys["acme"])
    assert (status, body) == (200, b"")
    r = srv.get("/messages/" + sid)
    assert r.status_code == 200 and r.json()["recipient"] == RECIPIENT

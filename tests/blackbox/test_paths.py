"""Odd request paths (README "Deploying under a web server"; msgspool-fcgi(8)):
every setup answers the path as the web server normalises it, RFC 3986's
dot segments removed, repeated slashes merged, the escapes of unreserved
characters and of "/" decoded, then routed exactly (case counts, a
trailing slash is another path).  The CGI programs and msgspool-fcgi give
the same answer byte for byte.  Where a web server refuses a path itself,
before any program runs, the table says so for that server.

busybox httpd maps no route (conf/busybox-httpd.conf): not run there."""

import pytest

from conftest import FRONT, SERVER, Server, assert_problem

pytestmark = pytest.mark.skipif(
    FRONT == "busybox", reason="busybox httpd serves /cgi-bin/PROGRAM only, "
    "no route (conf/busybox-httpd.conf)")

# (path, the status of the route it is, {web server: the status it gives
# itself instead}).  @ID@ is a queued message's id, @ID%@ the same with
# its first character percent-encoded, @id@ in lower case.
PATHS = [
    ("/ping", 200, {}),
    ("/./ping", 200, {}),
    ("/%2e/ping", 200, {}),
    ("/x/../ping", 200, {}),
    ("/ping/%2e%2e/ping", 200, {}),
    ("/%2e%2e/ping", 200, {"nginx": 400, "apache": 400}),
    ("/../ping", 200, {"nginx": 400, "apache": 400}),
    ("//ping", 200, {}),
    ("/%70ing", 200, {}),
    ("/p%69n%67", 200, {}),
    ("/ping?x", 200, {}),
    ("/ping?/../x", 200, {}),
    ("/ping#x", 200, {"apache": 400}),
    ("/x%2F..%2Fping", 200, {"apache": 404}),
    ("/messages/%2e%2e/ping", 200, {}),
    ("/", 404, {}),
    ("/ping/", 404, {}),
    ("/ping/.", 404, {}),
    ("/ping/..", 404, {}),
    ("/ping/x", 404, {}),
    ("/pingx", 404, {}),
    ("/PING", 404, {}),
    ("/Ping", 404, {}),
    ("/ping;x", 404, {}),
    ("/ping%3Bx", 404, {}),
    ("/ping%3F", 404, {}),
    ("/ping%2e", 404, {}),
    ("/ping%20", 404, {}),
    ("/ping%5C", 404, {}),
    ("/ping%2F", 404, {}),
    ("/ping%zz", 404, {"nginx": 400, "apache": 400}),
    ("/ping%", 404, {"nginx": 400, "apache": 400}),
    ("/ping%ff", 404, {"lighttpd": 400}),
    ("/cgi-bin/ping", 404, {}),
    ("/%63gi-bin/ping", 404, {}),
    ("/sms/v1/deliver", 405, {}),
    ("/sms/v1//deliver", 405, {}),
    ("/sms/v1/./deliver", 405, {}),
    ("/sms/v1%2Fdeliver", 405, {"apache": 404}),
    ("/sms/v1/deliver/", 404, {}),
    ("/SMS/v1/deliver", 404, {}),
    ("/sms/v1/deliver/batch/", 404, {}),
    ("/messages", 200, {}),
    ("/messages/", 404, {}),
    ("/messages/@ID@", 200, {}),
    ("/messages//@ID@", 200, {}),
    ("/messages/./@ID@", 200, {}),
    ("/messages/x/../@ID@", 200, {}),
    ("/messages/@ID%@", 200, {}),
    ("/messages/@ID@?x=/y", 200, {}),
    ("/messages/@ID@/", 404, {}),
    ("/messages/@ID@/x", 404, {}),
    ("/messages/@ID@%2F", 404, {}),
    ("/MESSAGES/@ID@", 404, {}),
    ("/messages/@id@", 400, {}),
    ("/messages/@ID@;x", 400, {}),
    ("/messages/@ID@%3B", 400, {}),
    ("/messages/@ID@%3F", 400, {}),
    ("/messages/@ID@%3Fx", 400, {}),
    ("/messages/@ID@%23", 400, {}),
    ("/messages/@ID@%20", 400, {}),
    ("/messages/nope", 400, {}),
    ("/receipts", 404, {}),
    ("/receipts/", 404, {}),
    ("/receipts/twilio/", 404, {}),
    ("/receipts/twilio/x", 404, {}),
    ("/receipts/pigeon", 404, {}),
    ("/receipts/TWILIO", 404, {}),
    ("/receipts/twilio", 405, {}),
    ("/receipts//twilio", 405, {}),
    ("/receipts/./twilio", 405, {}),
    ("/receipts/%74wilio", 405, {}),
    ("/receipts/twilio%3F", 404, {}),
    ("/receipts/twilio%3Fx", 404, {}),
]

# The FastCGI setup of the same web server, and back.
COUNTERPART = {"lighttpd": "lighttpd-fcgi", "lighttpd-fcgi": "lighttpd",
               "nginx": "nginx-fcgi", "nginx-fcgi": "nginx"}


def _targets(srv):
    r = srv.sms()
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    subst = {"@ID@": sid, "@ID%@": "%%%02X" % ord(sid[0]) + sid[1:],
             "@id@": sid.lower()}
    out = []
    for path, status, own in PATHS:
        for k, v in subst.items():
            path = path.replace(k, v)
        out.append((path, status, own))
    return out


def _get(server, target, key):
    return server.raw(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"X-API-KEY: {key}\r\nConnection: close\r\n\r\n"
                      .encode())


def test_odd_paths_answer_as_the_normalised_path(srv):
    key = srv.inst.keys["acme"]
    wrong = []
    for target, status, own in _targets(srv):
        want = own.get(FRONT, status)
        got, hdrs, body = _get(srv, target, key)
        if got != want:
            wrong.append(f"{target}: {got}, not {want}: {body[:120]!r}")
        elif want >= 400 and FRONT not in own:
            # A route's own error, or no route: a problem like every one.
            if not hdrs.get("content-type", "").startswith(
                    "application/problem+json"):
                wrong.append(f"{target}: {hdrs.get('content-type')}")
    assert not wrong, f"{SERVER}:\n" + "\n".join(wrong)


def test_no_route_is_the_same_404_everywhere(srv):
    # The web server's own 404 (nginx's config, lighttpd's and Apache's
    # error handler) and msgspool-fcgi's are one document.
    got = set()
    for target in ("/nope", "/ping/", "/messages/", "/PING", "/"):
        status, hdrs, body = _get(srv, target, srv.inst.keys["acme"])
        assert status == 404, (target, body)
        got.add(body)
    assert got == {b'{"type":"urn:msgspool:problem:not-found","title":'
                   b'"Not Found","status":404,"detail":"no such route"}'}


@pytest.mark.skipif(SERVER not in COUNTERPART,
                    reason="no FastCGI config for this web server")
def test_cgi_and_fastcgi_answer_every_path_alike(srv, tmp_path):
    """The same web server in front of the CGI programs and of
    msgspool-fcgi, on one instance: the same status, Content-Type, Allow
    and body for each path, byte for byte."""
    other = Server(srv.inst, tmp_path / "other", kind=COUNTERPART[SERVER])
    key = srv.inst.keys["acme"]
    wrong = []
    try:
        for target, _, _ in _targets(srv):
            a = _get(srv, target, key)
            b = _get(other, target, key)
            a = (a[0], a[1].get("content-type"), a[1].get("allow"), a[2])
            b = (b[0], b[1].get("content-type"), b[1].get("allow"), b[2])
            if a != b:
                wrong.append(f"{target}:\n  {SERVER}: {a}\n  "
                             f"{other.kind}: {b}")
    finally:
        other.stop()
    assert not wrong, "\n".join(wrong)

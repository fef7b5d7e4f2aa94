"""What the web server in front of the programs adds or takes away
(conf/openapi.yaml; conf/*.conf).  The suite runs under each server
(MSGSPOOL_SERVER); where the servers differ and the programs cannot tell,
the test says what each one does."""

import json

import pytest

from conftest import (RECIPIENT, FRONT, assert_nothing_queued,
                      assert_problem, assert_unauthorized)

SMS = "/sms/v1/deliver"
MIB = 1024 * 1024
BODY = json.dumps({"recipient": RECIPIENT, "messageBody": "hi"})


@pytest.mark.parametrize("path", ["/nope", "/ping/", "/ping/extra",
                                  "/sms/v1", "/sms/v1/deliver/",
                                  "/email/v1/deliver/x", "/deliver.json",
                                  "/messages/", "/receipts/"])
def test_other_paths_are_404(srv, path):
    r = srv.get(path, client=None)
    # A problem under every server but busybox httpd, which has no error
    # handler to give it to (conf/busybox-httpd.conf).
    if FRONT == "busybox":
        assert r.status_code == 404, (r.status_code, r.text[:200])
    else:
        assert_problem(r, 404)


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/ping", 200), ("GET", "/templates", 401),
    ("PUT", SMS, 405), ("GET", "/templates?x=1", 401)])
def test_the_programs_content_length_is_kept(srv, method, path, status):
    # Apache >= 2.4.59 drops a CGI program's Content-Length and sends the
    # reply chunked unless ap_trust_cgilike_cl is set (conf/apache2.conf).
    r = srv.request(method, path, client=None)
    assert r.status_code == status
    assert "Transfer-Encoding" not in r.headers, dict(r.headers)
    assert r.headers.get("Content-Length") == str(len(r.content)), \
        dict(r.headers)


def test_a_body_over_every_limit_is_413(srv):
    # Over 64 MiB the servers' own limits apply (lighttpd, nginx, Apache
    # refuse the body themselves and answer with the problem their configs
    # give them); busybox httpd has none, and the program answers.
    r = srv.post_raw("/email/v1/deliver", b" " * (65 * MIB))
    assert_problem(r, 413)
    assert_nothing_queued(srv.inst)


def test_x_api_key_spelled_with_underscores(srv):
    # lighttpd and busybox turn every non-alphanumeric character of a
    # header name into "_", so X_API_KEY arrives as HTTP_X_API_KEY too;
    # nginx (underscores_in_headers off) and Apache drop such headers.
    r = srv.post_raw(SMS, BODY.encode(), client=None,
                     headers={"X_API_KEY": srv.inst.keys["acme"]})
    if FRONT in ("lighttpd", "busybox"):
        assert r.status_code == 202, r.text
    else:
        assert_unauthorized(r)
        assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("order", ["bad-good", "good-bad"])
def test_two_x_api_key_headers(srv, order):
    good = srv.inst.keys["acme"]
    keys = ["wrong", good] if order == "bad-good" else [good, "wrong"]
    req = ("POST /sms/v1/deliver HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"X-API-KEY: {keys[0]}\r\nX-API-KEY: {keys[1]}\r\n"
           "Content-Type: application/json\r\n"
           f"Content-Length: {len(BODY)}\r\nConnection: close\r\n\r\n"
           f"{BODY}").encode()
    status, _, body = srv.raw(req)
    # lighttpd and Apache join them ("a, b": no key matches); nginx passes
    # both and the program takes the first; busybox keeps the last.
    used = {"lighttpd": None, "apache": None, "nginx": keys[0],
            "busybox": keys[1]}[FRONT]
    if used == good:
        assert status == 202, body
    else:
        assert status == 401, body
        assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_idempotency_key(srv, value):
    # An Idempotency-Key is 1 to 255 printable characters: an empty one is
    # 400 (conf/openapi.yaml).  lighttpd's request parser drops a header
    # whose value is empty before any module, config or program sees it,
    # and no option keeps it: there the request runs without a key (README,
    # "Deploying under a web server").
    req = ("POST /sms/v1/deliver HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"X-API-KEY: {srv.inst.keys['acme']}\r\n"
           f"Idempotency-Key:{value}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(BODY)}\r\nConnection: close\r\n\r\n"
           f"{BODY}").encode()
    status, _, body = srv.raw(req)
    if FRONT == "lighttpd":
        assert status == 202, body
        assert len(srv.inst.files("new")) == 1
    else:
        assert status == 400, body
        assert json.loads(body)["type"].endswith(":invalid-idempotency-key")
        assert_nothing_queued(srv.inst)

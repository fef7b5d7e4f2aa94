"""openapi_check, the checker of replies against conf/openapi.yaml: what it
rejects, and how it maps the paths a request went to onto the document's
routes.

Needs Debian's python3-yaml and python3-jsonschema.
"""

import json

import pytest

pytest.importorskip("yaml", reason="apt-get install python3-yaml")
pytest.importorskip("jsonschema", reason="apt-get install python3-jsonschema")

import openapi_check as oc  # noqa: E402
from openapi_check import check_response  # noqa: E402
from harness.routes import ROUTES, SOME_ID, op, response  # noqa: E402


def test_checker_rejects_an_undocumented_status():
    with pytest.raises(AssertionError, match=r"status not documented"):
        check_response("GET", "/ping", 404, {"Content-Type": "text/html"},
                       b"<h1>404</h1>")
    with pytest.raises(AssertionError, match=r"path not in"):
        check_response("GET", "/nowhere", 404, {}, b"")
    with pytest.raises(AssertionError, match=r"not an operation"):
        check_response("GET", "/sms/v1/deliver", 200,
                       {"Content-Type": "application/json"}, b"{}")


def test_checker_rejects_a_body_off_the_schema():
    with pytest.raises(AssertionError, match=r"'status'"):
        check_response("POST", "/sms/v1/deliver", 202,
                       {"Content-Type": "application/json"},
                       b'{"smsId":"01M840Q7H2P5C7SYTHCZ984TVK",'
                       b'"status":"queued"}')
    with pytest.raises(AssertionError, match=r"not JSON"):
        check_response("POST", "/sms/v1/deliver", 202,
                       {"Content-Type": "application/json"}, b"{")
    with pytest.raises(AssertionError, match=r"Content-Type"):
        check_response("POST", "/sms/v1/deliver", 400,
                       {"Content-Type": "application/json"},
                       b'{"type":"urn:msgspool:problem:invalid-json",'
                       b'"title":"Bad Request","status":400,"detail":"x"}')
    with pytest.raises(AssertionError, match=r"'pong'"):
        check_response("GET", "/ping", 200, {"Content-Type": "text/plain"},
                       b"ping")


def test_checker_maps_a_program_reached_directly_to_its_route():
    # busybox httpd serves each program at /cgi-bin/PROGRAM.
    check_response("POST", "/cgi-bin/sms-deliver", 202,
                   {"Content-Type": "application/json"},
                   b'{"smsId":"01M840Q7H2P5C7SYTHCZ984TVK","status":"Queued"}')
    with pytest.raises(AssertionError, match=r"path not in"):
        check_response("GET", "/cgi-bin/nosuch", 200, {}, b"")
    ops = {op(m, p)["x-cgi-program"] for m, p in oc.operations()}
    assert ops == {prog for _, _, prog, _ in ROUTES}


def test_checker_maps_a_concrete_path_to_its_template():
    problem = (b'{"type":"urn:msgspool:problem:not-found",'
               b'"title":"Not Found","status":404,"detail":"x"}')
    hdrs = {"Content-Type": "application/problem+json"}
    # The route, and busybox's /cgi-bin/PROGRAM/ID for it.
    for path in ("/messages/" + SOME_ID, "/cgi-bin/messages/" + SOME_ID):
        check_response("GET", path, 404, hdrs, problem)
        check_response("DELETE", path, 404, hdrs, problem)
        not_allowed = problem.replace(b"not-found", b"method-not-allowed")
        check_response("PUT", path, 405,
                       dict(hdrs, Allow="GET, HEAD, DELETE"),
                       not_allowed.replace(b"Not Found",
                                           b"Method Not Allowed")
                       .replace(b"404", b"405"))
        with pytest.raises(AssertionError, match=r"Allow"):
            check_response("PUT", path, 405,
                           dict(hdrs, Allow="GET, DELETE"), not_allowed)
    with pytest.raises(AssertionError, match=r"path not in"):
        check_response("GET", "/messages/a/b", 404, hdrs, problem)
    # A 2xx for a path that is not an id: the program and the document
    # disagree.
    ok = response("GET", "/messages/{id}", 200)["content"][
        "application/json"]["examples"]["queued"]["value"]
    body = json.dumps(ok).encode()
    check_response("GET", "/messages/" + SOME_ID, 200,
                   {"Content-Type": "application/json"}, body)
    with pytest.raises(AssertionError, match=r"path parameter id"):
        check_response("GET", "/messages/nope", 200,
                       {"Content-Type": "application/json"}, body)


def test_checker_maps_a_receipt_path_to_its_template():
    hdrs = {"Content-Type": "application/problem+json"}
    signature = (b'{"type":"urn:msgspool:problem:bad-signature",'
                 b'"title":"Forbidden","status":403,"detail":"x"}')
    not_allowed = (b'{"type":"urn:msgspool:problem:method-not-allowed",'
                   b'"title":"Method Not Allowed","status":405,"detail":"x"}')
    taken = b'{"stored":1,"dropped":0}'
    json_hdrs = {"Content-Type": "application/json"}
    # The route (with Twilio's query), and busybox's /cgi-bin/receipts/NAME.
    for base in ("/receipts/", "/cgi-bin/receipts/"):
        for name in ("twilio", "whatsapp", "http"):
            check_response("POST", base + name + "?id=" + SOME_ID, 200,
                           json_hdrs, taken)
            check_response("POST", base + name, 403, hdrs, signature)
            check_response("PUT", base + name, 405,
                           dict(hdrs, Allow="POST, GET, HEAD"), not_allowed)
            with pytest.raises(AssertionError, match=r"Allow"):
                check_response("PUT", base + name, 405,
                               dict(hdrs, Allow="POST, GET"), not_allowed)
        # GET: the handshake on whatsapp, a 405 allowing POST elsewhere.
        check_response("GET", base + "whatsapp?hub.challenge=7", 200,
                       {"Content-Type": "text/plain"}, b"7")
        check_response("GET", base + "twilio", 405, dict(hdrs, Allow="POST"),
                       not_allowed)
        with pytest.raises(AssertionError, match=r"Allow"):
            check_response("GET", base + "twilio", 405,
                           dict(hdrs, Allow="POST, GET"), not_allowed)
        # A 2xx for a provider the document does not have, or a handshake
        # answered on another provider than whatsapp: they disagree.
        with pytest.raises(AssertionError, match=r"path parameter provider"):
            check_response("POST", base + "pigeon", 200, json_hdrs, taken)
        with pytest.raises(AssertionError, match=r"path parameter provider"):
            check_response("GET", base + "twilio", 200,
                           {"Content-Type": "text/plain"}, b"7")
    with pytest.raises(AssertionError, match=r"status not documented"):
        check_response("POST", "/receipts/twilio", 401, hdrs, signature)
    with pytest.raises(AssertionError, match=r"'dropped'"):
        check_response("POST", "/receipts/twilio", 200, json_hdrs,
                       b'{"stored":1}')


def test_checker_rejects_a_missing_required_header():
    problem = (b'{"type":"urn:msgspool:problem:unauthorized",'
               b'"title":"Unauthorized","status":401,"detail":"x"}')
    hdrs = {"Content-Type": "application/problem+json"}
    with pytest.raises(AssertionError, match=r"WWW-Authenticate"):
        check_response("GET", "/templates", 401, hdrs, problem)
    check_response("GET", "/templates", 401, dict(
        hdrs, **{"www-authenticate": 'ApiKey header="X-API-KEY"'}), problem)
    with pytest.raises(AssertionError, match=r"Allow"):
        check_response("PUT", "/templates", 405, hdrs,
                       b'{"type":"urn:msgspool:problem:method-not-allowed",'
                       b'"title":"Method Not Allowed","status":405,'
                       b'"detail":"x"}')


def test_checker_checks_the_ratelimit_headers():
    problem = (b'{"type":"urn:msgspool:problem:rate-limited",'
               b'"title":"Too Many Requests","status":429,"detail":"x"}')
    hdrs = {"Content-Type": "application/problem+json", "Retry-After": "42",
            "RateLimit-Policy": '"msgs";q=3;w=60',
            "RateLimit": '"msgs";r=0;t=42'}
    check_response("POST", "/sms/v1/deliver", 429, hdrs, problem)
    for name in ("Retry-After", "RateLimit-Policy", "RateLimit"):
        with pytest.raises(AssertionError, match=name):
            check_response("POST", "/sms/v1/deliver", 429,
                           {k: v for k, v in hdrs.items() if k != name},
                           problem)
    for name, bad in (("RateLimit-Policy", '"msgs";q=3;w=61'),
                      ("RateLimit", "r=0;t=42"), ("Retry-After", "0")):
        with pytest.raises(AssertionError, match=name):
            check_response("POST", "/sms/v1/deliver", 429,
                           dict(hdrs, **{name: bad}), problem)
    # Optional on a success, but checked when present.
    ok = {"Content-Type": "application/json"}
    body = b'{"smsId":"01M840Q7H2P5C7SYTHCZ984TVK","status":"Queued"}'
    check_response("POST", "/sms/v1/deliver", 202, ok, body)
    check_response("POST", "/sms/v1/deliver", 202, dict(
        ok, **{"RateLimit-Policy": '"msgs";q=3;w=60',
               "RateLimit": '"msgs";r=2;t=59'}), body)
    with pytest.raises(AssertionError, match="RateLimit"):
        check_response("POST", "/sms/v1/deliver", 202,
                       dict(ok, RateLimit="2"), body)


def test_checker_takes_head_as_get_without_its_body():
    # Every GET route answers HEAD (conf/openapi.yaml): the GET's status
    # and headers, no body; a route without GET has HEAD in no Allow.
    text = {"Content-Type": "text/plain; charset=utf-8"}
    check_response("HEAD", "/ping", 200, text, b"")
    check_response("HEAD", "/messages/" + SOME_ID, 404,
                   {"Content-Type": "application/problem+json"}, b"")
    with pytest.raises(AssertionError, match=r"not documented"):
        check_response("HEAD", "/ping", 201, text, b"")
    with pytest.raises(AssertionError, match=r"Allow"):
        check_response("HEAD", "/sms/v1/deliver", 405, dict(
            text, Allow="POST, HEAD"), b"")

"""conf/openapi.yaml: the document itself (every route of ROUTES below, its
statuses, headers, examples and rules), and real replies of every route
checked against it with openapi_check.check_response.

Needs Debian's python3-yaml and python3-jsonschema; the lint of the
document with the pinned Redocly CLI is tests/openapi/lint.sh.
"""

import base64
import hashlib
import hmac
import json
import shutil
import time
import urllib.parse

import pytest

pytest.importorskip("yaml", reason="apt-get install python3-yaml")
pytest.importorskip("jsonschema", reason="apt-get install python3-jsonschema")

from conftest import RECIPIENT, in_future, parse_time  # noqa: E402
import openapi_check as oc  # noqa: E402
from openapi_check import check_reply, check_response  # noqa: E402

# The routes msgspool serves: method, path, CGI program, scope.  The same
# table is in README.md (The API) and each web server's config maps them.
ROUTES = [
    ("GET", "/ping", "ping", "none"),
    ("GET", "/templates", "templates", "any valid key"),
    ("POST", "/ott/v1/deliver", "ott-deliver", "ott"),
    ("POST", "/sms/v1/deliver", "sms-deliver", "sms"),
    ("POST", "/sms/v1/deliver/batch", "sms-batch", "sms"),
    ("POST", "/voice/v1/deliver", "voice-deliver", "voice"),
    ("POST", "/deliver", "email-deliver", "email"),
    ("POST", "/email/v1/deliver", "email-deliver", "email"),
    ("POST", "/email/v1/attachments", "attachments", "email"),
    ("GET", "/messages/{id}", "messages", "any valid key"),
    ("DELETE", "/messages/{id}", "messages", "any valid key"),
    ("POST", "/receipts/{provider}", "receipts", "none: the provider's signature"),
    ("GET", "/receipts/{provider}", "receipts", "none: the provider's signature"),
]
# Each path, and the methods it allows in the order Allow names them.
PATHS = {}
for _m, _p, _, _ in ROUTES:
    PATHS.setdefault(_p, []).append(_m)
# A message id for the concrete path of /messages/{id}.
SOME_ID = "01M840Q7H2P5C7SYTHCZ984TVK"
# Operations whose 405 names fewer methods than their path has: GET
# /receipts/twilio (and http) is a 405 that allows only POST.
ALLOW_OF_405 = {("GET", "/receipts/{provider}"): "POST"}
# The operations that take no key (the provider's signature instead).
NO_KEY = {("GET", "/ping"), ("POST", "/receipts/{provider}"),
          ("GET", "/receipts/{provider}")}

# Every status each route's program can answer (cgi.c's pipeline, then
# the handler): the success codes, then the errors.
PIPELINE_POST = {"400", "401", "403", "405", "411", "413", "415", "500",
                 "503"}
# The send routes also take the client's rate (msgspool.conf(5), [client.ID]
# rate): 429 over it; and an Idempotency-Key: 409 while its first request
# runs, 422 for another body.  Not the upload, which queues no message.
SEND_POST = PIPELINE_POST | {"409", "422", "429"}
SEND_ROUTES = {("POST", "/ott/v1/deliver"), ("POST", "/sms/v1/deliver"),
               ("POST", "/sms/v1/deliver/batch"),
               ("POST", "/voice/v1/deliver"), ("POST", "/deliver"),
               ("POST", "/email/v1/deliver")}
# GET and DELETE /messages/{id}: no body; 400 for a path that is not an
# id, 404 for no such message of this client, 503 for a spool directory
# missing (and, for a cancel, a full or read-only spool).
PIPELINE_MESSAGES = {"200", "400", "401", "403", "404", "405", "500", "503"}
STATUSES = {
    ("GET", "/ping"): {"200", "405", "500"},
    ("GET", "/templates"): {"200", "401", "403", "405", "500"},
    ("POST", "/ott/v1/deliver"): {"200"} | SEND_POST,
    ("POST", "/sms/v1/deliver"): {"200", "202"} | SEND_POST,
    ("POST", "/sms/v1/deliver/batch"): {"200"} | SEND_POST,
    ("POST", "/voice/v1/deliver"): {"202"} | SEND_POST,
    ("POST", "/deliver"): {"200"} | SEND_POST,
    ("POST", "/email/v1/deliver"): {"200"} | SEND_POST,
    ("POST", "/email/v1/attachments"): {"201", "409", "422"} | PIPELINE_POST,
    ("GET", "/messages/{id}"): PIPELINE_MESSAGES,
    # 409: the message is sending or further on.
    ("DELETE", "/messages/{id}"): PIPELINE_MESSAGES | {"409"},
    # No key (403 is a bad signature), any Content-Type, 404 for an
    # unknown provider.
    ("POST", "/receipts/{provider}"): {"200", "400", "403", "404", "405",
                                       "411", "413", "500", "503"},
    # The WhatsApp handshake: no body; 405 for GET on another provider.
    ("GET", "/receipts/{provider}"): {"200", "403", "404", "405", "500",
                                      "503"},
}

# The schema names clients, the man pages and the descriptions in the
# document refer to: each must stay a component under its name.
SCHEMAS = [
    "MessageChannel", "ApiSmsRequest", "VoiceApiRequest",
    "OTTMessagePayload", "OTTMessageRequest", "EmailRequest",
    "EmailRecipient", "EmailResponse", "EmailResult",
    "EmailDeliverAttachment", "VoiceDeliverRequest", "SmsBatchRequest",
    "EmailDeliverPayload", "EmailDeliverRequest", "EmailDeliverResult",
    "EmailDeliverResponse", "CampaignAccepted", "AttachmentUploadResponse",
    "ProblemDetails", "MessageStatus", "ReceiptsTaken",
    "TwilioStatusCallback", "WhatsAppStatusWebhook", "HttpReceipt",
]

OTT_CONF = "\n[ott.1]\nprovider = file\n"
DOC = oc.load_document()


def schema_errors(value, name):
    return oc.validate_value(value, ["components", "schemas", name])


def op(method, path):
    return DOC["paths"][path][method.lower()]


def response(method, path, status):
    r = op(method, path)["responses"][str(status)]
    return oc._deref(DOC, r, [])[0]


# ============================================================ document

def test_document_is_openapi_3_1_with_relative_server_and_api_key():
    assert DOC["openapi"] == "3.1.0"
    assert DOC["info"]["title"] and DOC["info"]["version"]
    urls = [s["url"] for s in DOC["servers"]]
    assert urls and all("://" not in u and not u.startswith("//")
                        for u in urls), urls
    key = DOC["components"]["securitySchemes"]["ApiKey"]
    assert (key["type"], key["in"], key["name"]) == \
        ("apiKey", "header", "X-API-KEY")
    assert DOC["security"] == [{"ApiKey": []}]
    for m, p in oc.operations():
        if (m, p) in NO_KEY:
            assert op(m, p)["security"] == [], f"{m} {p} needs no key"
        else:
            assert "security" not in op(m, p), f"{m} {p} overrides security"


def test_every_route_is_documented_with_its_method():
    want = [(m, p) for m, p, _, _ in ROUTES]
    assert sorted(oc.operations()) == sorted(want)
    assert set(STATUSES) == set(want)
    for m, p, prog, _ in ROUTES:
        assert op(m, p)["x-cgi-program"] == prog, (m, p)


def test_message_id_parameter():
    item = DOC["paths"]["/messages/{id}"]
    params = [oc._deref(DOC, x, [])[0] for x in item["parameters"]]
    assert [(x["name"], x["in"], x["required"]) for x in params] == \
        [("id", "path", True)]
    assert params[0]["schema"] == {"$ref": "#/components/schemas/MessageId"}
    for m in PATHS["/messages/{id}"]:
        assert "parameters" not in op(m, "/messages/{id}"), m


def test_receipt_parameters():
    item = DOC["paths"]["/receipts/{provider}"]
    params = [oc._deref(DOC, x, [])[0] for x in item["parameters"]]
    assert [(x["name"], x["in"], x["required"]) for x in params] == \
        [("provider", "path", True)]
    assert schema_errors("twilio", "ReceiptProvider") == []
    assert DOC["components"]["schemas"]["ReceiptProvider"]["enum"] == [
        "twilio", "whatsapp", "http"]
    # GET is the WhatsApp handshake only: its own provider parameter.
    got = {(x["name"], x["in"]): x for x in op("GET", "/receipts/{provider}")
           ["parameters"]}
    assert set(got) == {("provider", "path"), ("hub.mode", "query"),
                        ("hub.verify_token", "query"),
                        ("hub.challenge", "query")}
    assert got[("provider", "path")]["schema"]["const"] == "whatsapp"
    got = {(x["name"], x["in"]) for x in op("POST", "/receipts/{provider}")
           ["parameters"]}
    assert got == {("id", "query"), ("X-Twilio-Signature", "header"),
                   ("X-Hub-Signature-256", "header"),
                   ("webhook-id", "header"), ("webhook-timestamp", "header"),
                   ("webhook-signature", "header")}
    content = op("POST", "/receipts/{provider}")["requestBody"]["content"]
    assert list(content) == ["application/x-www-form-urlencoded",
                             "application/json"]


def test_receipt_schemas():
    ok = {"id": SOME_ID, "status": "delivered"}
    assert schema_errors(ok, "HttpReceipt") == []
    assert schema_errors(dict(ok, id="prov-1", at="2026-11-23T10:00:04Z",
                              error={"code": 42, "message": "x"}),
                         "HttpReceipt") == []
    for bad in ({"id": SOME_ID}, {"status": "delivered"},
                dict(ok, status="queued"), dict(ok, status="failed"),
                dict(ok, id=7), dict(ok, at=1795428004)):
        assert schema_errors(bad, "HttpReceipt"), bad
    assert schema_errors({"stored": 1, "dropped": 0}, "ReceiptsTaken") == []
    for bad in ({"stored": 1}, {"stored": -1, "dropped": 0},
                {"stored": 1, "dropped": 0, "extra": 1}):
        assert schema_errors(bad, "ReceiptsTaken"), bad
    assert schema_errors({"MessageSid": "SM1"}, "TwilioStatusCallback")
    assert schema_errors({"AccountSid": "AC1", "X": 1},
                         "TwilioStatusCallback")


def test_operation_ids_are_unique_and_upload_is_deprecated():
    ids = [op(m, p)["operationId"] for m, p in oc.operations()]
    assert len(ids) == len(set(ids)), ids
    assert op("POST", "/email/v1/attachments").get("deprecated") is True
    assert sum(bool(op(m, p).get("deprecated"))
               for m, p in oc.operations()) == 1


@pytest.mark.parametrize("method,path", [(m, p) for m, p, _, _ in ROUTES])
def test_every_status_the_program_can_give_is_documented(method, path):
    assert set(op(method, path)["responses"]) == STATUSES[(method, path)]


@pytest.mark.parametrize("method,path", [(m, p) for m, p, _, _ in ROUTES])
def test_documented_headers(method, path):
    responses = op(method, path)["responses"]

    def header(status, name):
        h = response(method, path, status).get("headers", {}).get(name)
        assert h is not None, f"{method} {path} {status}: no {name}"
        return oc._deref(DOC, h, [])[0]

    allow = header(405, "Allow")
    assert allow["required"] is True
    assert allow["schema"]["const"] == ALLOW_OF_405.get(
        (method, path), ", ".join(PATHS[path]))
    if (method, path) in NO_KEY:
        assert "401" not in responses, (method, path)
    if "401" in responses:
        h = header(401, "WWW-Authenticate")
        assert h["required"] is True
        assert h["schema"]["const"] == 'ApiKey header="X-API-KEY"'
    if "503" in responses:
        h = header(503, "Retry-After")
        assert h["required"] is True
    # The client's rate: 429 with Retry-After and both RateLimit headers,
    # which every success of a send route may carry (only a client with a
    # rate gets them); no other route names them.
    assert ("429" in responses) == ((method, path) in SEND_ROUTES)
    if "429" in responses:
        for name in ("Retry-After", "RateLimit-Policy", "RateLimit"):
            assert header(429, name)["required"] is True, name
        assert response(method, path, 429) is \
            DOC["components"]["responses"]["TooManyRequests"]
    for status in responses:
        hdrs = response(method, path, status).get("headers", {})
        if status[0] == "2" and (method, path) in SEND_ROUTES:
            for name in ("RateLimit-Policy", "RateLimit"):
                assert header(status, name).get("required") is not True, \
                    (status, name)
            assert header(status, "Idempotent-Replay")["schema"][
                "const"] == "true", (method, path, status)
        elif status not in ("409", "422", "429"):
            assert not {"RateLimit-Policy", "RateLimit"} & set(hdrs), \
                (method, path, status)
    # Idempotency-Key: on the send routes and the upload; 409 says when
    # to retry.
    idem = (method, path) in SEND_ROUTES or \
        (method, path) == ("POST", "/email/v1/attachments")
    params = [p.get("$ref", "") for p in op(method, path).get(
        "parameters", [])]
    assert ("#/components/parameters/IdempotencyKey" in params) == idem
    if idem:
        assert header(409, "Retry-After")["schema"]["const"] == 1
        assert response(method, path, 422) is \
            DOC["components"]["responses"]["IdempotencyKeyReused"]
    if path == "/email/v1/attachments":
        for name in ("Deprecation", "Link"):
            assert header(201, name)["required"] is True
        assert header(201, "Deprecation")["schema"]["const"] == "true"
    # Every error is problem+json.
    for status in responses:
        if status[0] in "45":
            content = response(method, path, status)["content"]
            assert list(content) == ["application/problem+json"], \
                (method, path, status)


def test_ping_is_text_plain_pong():
    content = response("GET", "/ping", 200)["content"]
    assert list(content) == ["text/plain"]
    assert content["text/plain"]["schema"]["const"] == "pong"


def _examples():
    """(label, value, keys of its schema) for every example of the
    document's request bodies and responses."""
    out = []
    for m, p in oc.operations():
        o = op(m, p)
        rb = o.get("requestBody")
        if rb:
            for ct, mt in rb["content"].items():
                for name, ex in mt.get("examples", {}).items():
                    out.append((f"{m} {p} request {name}", ex["value"],
                                ["paths", p, m.lower(), "requestBody",
                                 "content", ct, "schema"]))
        for st, r in o["responses"].items():
            r, where = oc._deref(DOC, r, ["paths", p, m.lower(),
                                          "responses", st])
            for ct, mt in (r.get("content") or {}).items():
                for name, ex in mt.get("examples", {}).items():
                    out.append((f"{m} {p} {st} {name}", ex["value"],
                                where + ["content", ct, "schema"]))
    return out


def test_every_operation_has_examples():
    labels = [label for label, _, _ in _examples()]
    for m, p in oc.operations():
        o = op(m, p)
        if "requestBody" in o:
            assert any(x.startswith(f"{m} {p} request ") for x in labels), \
                f"{m} {p}: no request example"
        for st in o["responses"]:
            assert any(x.startswith(f"{m} {p} {st} ") for x in labels), \
                f"{m} {p}: no example for {st}"


@pytest.mark.parametrize("label,value,where", _examples(),
                         ids=[x[0] for x in _examples()])
def test_examples_match_their_schemas(label, value, where):
    assert oc.validate_value(value, where) == [], label


def test_schema_names_are_components():
    missing = [n for n in SCHEMAS
               if n not in DOC["components"]["schemas"]]
    assert missing == []


def test_message_status_schema():
    s = DOC["components"]["schemas"]
    status = s["MessageStatus"]
    assert set(status["required"]) == set(status["properties"]) == {
        "id", "channel", "recipient", "status", "createdAt", "updatedAt",
        "sendAt", "attempts", "nextAttemptAt", "sentAt", "completedAt",
        "provider", "providerMessageId", "error", "events"}
    assert status["additionalProperties"] is False
    assert s["MessageStatusValue"]["enum"] == [
        "scheduled", "queued", "sending", "retrying", "sent", "delivered",
        "read", "undelivered", "failed", "canceled"]
    ok = {"id": SOME_ID, "channel": "sms", "recipient": RECIPIENT,
          "status": "queued", "createdAt": "2026-11-23T10:00:00Z",
          "updatedAt": "2026-11-23T10:00:00Z", "sendAt": None, "attempts": 0,
          "nextAttemptAt": None, "sentAt": None, "completedAt": None,
          "provider": None, "providerMessageId": None, "error": None,
          "events": [{"status": "queued", "at": "2026-11-23T10:00:00Z"}]}
    assert schema_errors(ok, "MessageStatus") == []
    for bad in (dict(ok, status="Queued"), dict(ok, sendAt="tomorrow"),
                dict(ok, nextAttemptAt="2026-11-23T10:01:00Z"),
                dict(ok, completedAt="2026-11-23T10:01:00Z"),
                dict(ok, error={"message": "x"}),
                dict(ok, events=[{"status": "queued"}]),
                dict(ok, extra=1)):
        assert schema_errors(bad, "MessageStatus"), bad
    for err in ({"code": None, "message": "HTTP 503: busy"},
                {"code": 21211, "message": "invalid 'To'"},
                {"code": "4.2.2", "message": "mailbox full"}):
        assert schema_errors(dict(ok, status="failed", error=err,
                                  completedAt="2026-11-23T10:01:00Z"),
                             "MessageStatus") == [], err


def test_number_patterns():
    schemas = DOC["components"]["schemas"]
    assert schemas["PhoneNumberE164"]["pattern"] == r"^\+[1-9][0-9]{7,14}$"
    assert schemas["Msisdn"]["pattern"] == r"^[1-9][0-9]{7,14}$"
    assert schemas["ApiSmsRequest"]["properties"]["recipient"]["$ref"] == \
        "#/components/schemas/PhoneNumberE164"
    assert schemas["OTTMessagePayload"]["properties"]["recipient"][
        "$ref"] == "#/components/schemas/Msisdn"
    for ok in ("+12345678", "+4915112345678", "+123456789012345"):
        assert schema_errors(ok, "PhoneNumberE164") == [], ok
    for bad in ("+1234567", "+1234567890123456", "+0123456789",
                "4915112345678", "+49 151 1234567", ""):
        assert schema_errors(bad, "PhoneNumberE164"), bad
    for ok in ("12345678", "4915112345678", "123456789012345"):
        assert schema_errors(ok, "Msisdn") == [], ok
    for bad in ("1234567", "1234567890123456", "04915112345678",
                "+4915112345678"):
        assert schema_errors(bad, "Msisdn"), bad


def test_limits_in_schemas():
    s = DOC["components"]["schemas"]
    body = s["ApiSmsRequest"]["properties"]["messageBody"]
    assert (body["minLength"], body["maxLength"]) == (1, 1600)
    for name, member in (("OTTMessageRequest", "payload"),
                         ("SmsBatchRequest", "messages"),
                         ("EmailDeliverRequest", "payload"),
                         ("EmailRequest", "recipients"),
                         ("VoiceCampaignRequest", "recipients")):
        a = s[name]["properties"][member]
        assert (a["minItems"], a["maxItems"]) == (1, 1000), name
    for name in ("ApiSmsRequest", "OTTMessageRequest", "OTTMessagePayload",
                 "SmsBatchRequest", "VoiceApiRequest", "VoiceCampaignRequest",
                 "EmailDeliverRequest", "EmailRequest", "EmailDeliverPayload",
                 "EmailRecipient", "EmailDeliverAttachment",
                 "AttachmentUploadRequest"):
        # The programs reject unknown members.
        assert s[name]["additionalProperties"] is False, name


EMAIL_OK = {"templateId": "welcome",
            "payload": [{"recipient": "ann@example.com"}]}


@pytest.mark.parametrize("body,why", [
    ({"templateId": "w", "html": "<p>x</p>", "subject": "s",
      "payload": [{"recipient": "a@example.com"}]}, "templateId and html"),
    ({"payload": [{"recipient": "a@example.com"}]}, "neither"),
    ({"templateId": None, "html": None,
      "payload": [{"recipient": "a@example.com"}]}, "both null"),
    ({"html": "<p>x</p>", "payload": [{"recipient": "a@example.com"}]},
     "html without subject"),
    ({"templateId": "w", "payload": [
        {"recipient": "a@example.com",
         "attachments": [{"attachmentName": "a.txt", "content": "eA=="}]}],
      "attachments": [{"attachmentName": "b.txt", "content": "eA=="}]},
     "attachments at both levels"),
    ({"templateId": "w", "payload": [{"recipient": "a@example.com"}],
      "attachments": [{"attachmentName": "a.txt", "content": "eA==",
                       "attachmentId": "01M840Q7H2P5C7SYTHCZ984TVK"}]},
     "content and attachmentId"),
    ({"templateId": "w", "payload": [{"recipient": "a@example.com"}],
      "attachments": [{"content": "eA=="}]}, "content without a name"),
    ({"templateId": "w", "payload": [{"recipient": "a@example.com"}],
      "attachments": [{"attachmentName": "../x", "content": "eA=="}]},
     "a path as attachmentName"),
    ({"templateId": "w", "payload": []}, "empty payload"),
    ({"templateId": "w", "payload": [{"recipient": "a@example.com"}],
      "subject": "a\r\nBcc: x@example.com"}, "CR/LF in subject"),
    ({"templateId": "w", "payload": [{"recipient": "a@example.com"}],
      "cc": "x@example.com"}, "an unknown member"),
])
def test_email_rules_are_in_the_schema(body, why):
    assert schema_errors(body, "EmailDeliverRequest"), why
    v1 = dict(body)
    if "payload" in v1:
        v1["recipients"] = [
            {("to" if k == "recipient" else k): v for k, v in i.items()}
            for i in v1.pop("payload")]
    assert schema_errors(v1, "EmailRequest"), why


@pytest.mark.parametrize("body", [
    EMAIL_OK,
    {"templateId": "welcome", "html": None, "subject": "ignored",
     "payload": [{"recipient": "ann@example.com", "fields": None}],
     "attachments": None},
    {"html": "<p>x</p>", "subject": "s", "from": "A <a@example.com>",
     "payload": [{"recipient": "a@example.com", "attachments": [
         {"attachmentId": "01M840Q7H2P5C7SYTHCZ984TVK",
          "attachmentName": "renamed.pdf"}]}]},
])
def test_email_bodies_the_program_takes_match(body):
    assert schema_errors(body, "EmailDeliverRequest") == []


@pytest.mark.parametrize("body,why", [
    ({"recipient": RECIPIENT, "message": "hi",
      "audioUrl": "https://example.com/a.mp3"}, "message and audioUrl"),
    ({"recipient": RECIPIENT}, "neither message nor audioUrl"),
    ({"recipient": RECIPIENT, "audioUrl": "http://example.com/a.mp3"},
     "http URL"),
    ({"recipient": RECIPIENT, "message": "hi", "sendAt": in_future(60)},
     "sendAt on a single call"),
    ({"campaignName": "c", "recipients": [RECIPIENT], "recipient": RECIPIENT,
      "message": "hi"}, "recipient in a campaign"),
    ({"campaignName": "c", "recipients": [], "message": "hi"},
     "empty campaign"),
    ({"campaignName": "a\nb", "recipients": [RECIPIENT], "message": "hi"},
     "LF in campaignName"),
])
def test_voice_rules_are_in_the_schema(body, why):
    assert schema_errors(body, "VoiceDeliverRequest"), why


# ====================================================== the checker

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
        check_response("PUT", path, 405, dict(hdrs, Allow="GET, DELETE"),
                       not_allowed.replace(b"Not Found",
                                           b"Method Not Allowed")
                       .replace(b"404", b"405"))
        with pytest.raises(AssertionError, match=r"Allow"):
            check_response("PUT", path, 405, dict(hdrs, Allow="GET"),
                           not_allowed)
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
                           dict(hdrs, Allow="POST, GET"), not_allowed)
            with pytest.raises(AssertionError, match=r"Allow"):
                check_response("PUT", base + name, 405,
                               dict(hdrs, Allow="POST"), not_allowed)
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


# ================================================== real requests

@pytest.fixture
def live(srv):
    """The shared server; its config, keys and spool restored afterwards
    (some tests here change them)."""
    yield srv
    srv.inst.reset()


def b64(data):
    return base64.b64encode(data).decode()


def checked(r, status):
    """check_reply, and the status this test meant to provoke."""
    body = check_reply(r)
    assert r.status_code == status, f"{r.status_code}: {r.text[:500]}"
    return body


def test_live_every_request_example_is_accepted(live):
    """Each request example of the document, sent as it is, gets a 2xx
    that matches the document.  (The receipts' examples need the
    provider's signature: test_live_receipt_examples sends them.)"""
    live.inst.write_conf(OTT_CONF)
    n = 0
    for m, p in oc.operations():
        if op(m, p)["x-cgi-program"] == "receipts":
            continue
        rb = op(m, p).get("requestBody")
        for mt in (rb or {}).get("content", {}).values():
            for name, ex in mt.get("examples", {}).items():
                r = live.post_json(p, ex["value"])
                check_reply(r)
                assert 200 <= r.status_code < 300, (p, name, r.text[:500])
                n += 1
    assert n >= 9


@pytest.mark.parametrize("path", list(PATHS))
def test_live_other_methods_are_405_with_allow(live, path):
    methods = PATHS[path]
    # A templated path is asked for with a concrete value (the program
    # answers 405 before it looks at the id or the provider).
    concrete = path.replace("{id}", SOME_ID).replace("{provider}", "twilio")
    others = [m for m in ("GET", "POST", "PUT", "DELETE", "OPTIONS")
              if m not in methods]
    for other in others:
        r = live.request(other, concrete)
        checked(r, 405)
        assert r.headers["Allow"] == ", ".join(methods), other


def test_live_ping(live):
    assert checked(live.get("/ping", client=None), 200) == "pong"
    checked(live.get("/ping", api_key="not a key"), 200)
    checked(live.post_json("/ping", {}, client=None), 405)


def test_live_templates(live):
    got = checked(live.get("/templates"), 200)
    assert got and got == sorted(got, key=lambda t: t["createdDate"])
    assert checked(live.get("/templates", client="mailer"), 200) == []
    checked(live.get("/templates", client=None), 401)
    checked(live.get("/templates", api_key="wrong"), 401)
    checked(live.get("/templates", client="gone"), 403)


def test_live_ott(live):
    live.inst.write_conf(OTT_CONF)
    out = checked(live.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": "4915112345678", "templateID": "otp",
         "templateParameters": ["123456"], "channelType": 1},
        {"recipient": "4915112345678", "templateID": "otp",
         "templateParameters": ["1"], "channelType": 9},
        {"recipient": "+4915112345678", "templateID": "otp",
         "channelType": 1},
        {"recipient": "4915112345678", "templateID": "nosuch",
         "templateParameters": [], "channelType": 1},
        "not an object",
    ]}), 200)
    assert [e["status"] for e in out] == ["queued"] + ["error"] * 4
    assert out[4]["recipient"] is None
    checked(live.post_json("/ott/v1/deliver", {"payload": []}), 400)
    checked(live.post_json("/ott/v1/deliver", {"payload": [
        {"recipient": "4915112345678", "templateID": "otp",
         "channelType": 1}]}, client="mailer"), 403)
    checked(live.post_json("/ott/v1/deliver", {"payload": []},
                          content_type="text/plain"), 415)


def test_live_sms(live):
    body = {"recipient": RECIPIENT, "messageBody": "hi"}
    checked(live.post_json("/sms/v1/deliver", body), 202)
    out = checked(live.post_json("/sms/v1/deliver",
                                dict(body, sendAt=in_future(3600))), 200)
    assert out["status"] == "Scheduled"
    checked(live.post_json("/sms/v1/deliver", dict(body, sendAt=None)), 202)
    checked(live.post_json("/sms/v1/deliver",
                          dict(body, recipient="+0123456789")), 400)
    checked(live.post_json("/sms/v1/deliver", dict(body, extra=1)), 400)
    checked(live.post_raw("/sms/v1/deliver", b"{not json"), 400)
    checked(live.post_json("/sms/v1/deliver", body, api_key="wrong"), 401)
    checked(live.post_json("/sms/v1/deliver", body, client="mailer"), 403)
    checked(live.post_raw("/sms/v1/deliver", b" " * (1024 * 1024 + 1)), 413)
    checked(live.post_json("/sms/v1/deliver", body,
                          content_type="text/plain"), 415)


def test_live_sms_without_content_length_is_411(live):
    key = live.inst.keys["acme"]
    status, hdrs, body = live.raw(
        ("POST /sms/v1/deliver HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         f"X-API-KEY: {key}\r\nContent-Type: application/json\r\n"
         "Connection: close\r\n\r\n").encode())
    check_response("POST", "/sms/v1/deliver", status, hdrs, body)
    assert status == 411


def test_live_sms_batch(live):
    out = checked(live.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": RECIPIENT, "messageBody": "now"},
        {"recipient": RECIPIENT, "messageBody": "later",
         "sendAt": in_future(3600)},
        {"recipient": "12345", "messageBody": "bad"},
        {"recipient": 5, "messageBody": ""},
    ]}), 200)
    assert [e["status"] for e in out] == ["Queued", "Scheduled", "error",
                                          "error"]
    checked(live.post_json("/sms/v1/deliver/batch", {"messages": []}), 400)
    checked(live.post_json("/sms/v1/deliver/batch", [1]), 400)


def test_live_voice(live):
    out = checked(live.post_json("/voice/v1/deliver", {
        "recipient": RECIPIENT, "message": "hello", "callerId": "+15005550006",
        "language": "en-US"}), 202)
    assert set(out) == {"callId", "status"}
    out = checked(live.post_json("/voice/v1/deliver", {
        "campaignName": "spring", "recipients": [RECIPIENT, RECIPIENT, "x", 7],
        "audioUrl": "https://cdn.example.com/a.mp3",
        "sendAt": in_future(3600)}), 202)
    assert (out["accepted"], out["rejected"]) == (1, 3)
    assert "sendAt" in out
    checked(live.post_json("/voice/v1/deliver", {
        "recipient": RECIPIENT, "message": "hi",
        "audioUrl": "https://cdn.example.com/a.mp3"}), 400)
    checked(live.post_json("/voice/v1/deliver", {
        "recipient": RECIPIENT, "message": "hi"}, client="smsonly"), 403)


@pytest.mark.parametrize("path", ["/deliver", "/email/v1/deliver"])
def test_live_email_both_shapes_on_both_routes(live, path):
    out = checked(live.post_json(path, {
        "templateId": "welcome", "subject": "ignored",
        "payload": [{"recipient": "ann@example.com",
                     "fields": {"first_name": "Ann"}},
                    {"recipient": "bob@example.org"},
                    {"recipient": "not an address"}],
        "attachments": [{"attachmentName": "a.txt",
                         "content": b64(b"hello\n")}]}), 200)
    assert out["overallStatus"] == "partial" and out["errors"]
    assert set(out) == {"overallStatus", "errors", "recipients"}
    out = checked(live.post_json(path, {
        "html": "<p>Hi {{name}}</p>", "subject": "Hi {{name}}",
        "from": "Shop <shop@acme.example>",
        "recipients": [{"to": "ann@example.com", "fields": {"name": "Ann"}},
                       {"to": "bob@example.org"}]}), 200)
    assert out["overallStatus"] == "partial" and out["errors"] is None
    assert out["templateId"] is None and "to" in out["recipients"][0]


def test_live_email_errors(live):
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "html": "<p>x</p>",
        "payload": [{"recipient": "ann@example.com"}]}), 400)
    r = live.post_json("/deliver", {
        "templateId": "nosuch", "payload": [{"recipient": "ann@example.com"}]})
    assert checked(r, 400)["type"] == "urn:msgspool:problem:unknown-template"
    checked(live.post_json("/email/v1/deliver", {
        "templateId": "welcome", "recipients": []}), 400)
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com"}],
        "attachments": [{"attachmentName": "a.txt", "content": "!!"}]}), 400)
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com"}]},
        client="smsonly"), 403)
    checked(live.post_json("/email/v1/deliver", {}, client=None), 401)
    # An attachment over max-attachment is a 413 of the program itself.
    live.inst.write_conf("max-attachment = 1K\n")
    r = live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com"}],
        "attachments": [{"attachmentName": "a.bin",
                         "content": b64(b"x" * 2048)}]})
    assert checked(r, 413)["type"] == "urn:msgspool:problem:invalid-field"


def test_live_attachments_upload(live):
    r = live.post_json("/email/v1/attachments", {
        "attachmentName": "hello.txt", "content": b64(b"Hello, world\n")})
    out = checked(r, 201)
    assert r.headers["Deprecation"] == "true"
    # The upload stands in for content in an email of the same client.
    checked(live.post_json("/deliver", {
        "templateId": "welcome", "payload": [{"recipient": "a@example.com",
                                              "fields": {"first_name": "A"}}],
        "attachments": [{"attachmentId": out["attachmentId"]}]}), 200)
    r = live.post_json("/email/v1/attachments", {
        "attachmentName": "x.txt", "content": "not base64!"})
    checked(r, 400)
    assert r.headers.get("Deprecation") == "true"
    checked(live.post_json("/email/v1/attachments", {
        "attachmentName": "a/b", "content": ""}), 400)
    checked(live.post_json("/email/v1/attachments", {
        "attachmentName": "x.txt", "content": ""}, client="smsonly"), 403)
    live.inst.write_conf("max-attachment = 1K\n")
    r = live.post_json("/email/v1/attachments", {
        "attachmentName": "big.bin", "content": b64(b"x" * 2048)})
    checked(r, 413)
    assert r.headers.get("Deprecation") == "true"


def test_live_messages(live):
    """GET and DELETE /messages/{id}: every status the program gives."""
    sid = checked(live.sms(), 202)["smsId"]
    st = checked(live.get("/messages/" + sid), 200)
    assert (st["id"], st["status"]) == (sid, "queued")
    later = checked(live.sms(sendAt=in_future(3600)), 200)["smsId"]
    st = checked(live.get("/messages/" + later), 200)
    assert st["status"] == "scheduled"
    assert parse_time(st["nextAttemptAt"]) == parse_time(st["sendAt"])
    st = checked(live.request("DELETE", "/messages/" + later), 200)
    assert st["status"] == "canceled"
    assert [e["status"] for e in st["events"]] == ["scheduled", "canceled"]
    # Canceled already: the same answer.
    assert checked(live.request("DELETE", "/messages/" + later),
                   200)["status"] == "canceled"
    assert checked(live.get("/messages/" + later), 200)["status"] == \
        "canceled"
    live.inst.daemon_once()
    st = checked(live.get("/messages/" + sid), 200)
    assert st["status"] == "sent" and st["provider"] == "file"
    p = checked(live.request("DELETE", "/messages/" + sid), 409)
    assert p["type"] == "urn:msgspool:problem:not-cancelable"
    # Another client's message does not exist for this one.
    for method in ("GET", "DELETE"):
        for path in ("/messages/" + SOME_ID, "/messages/" + sid):
            client = "acme" if path.endswith(SOME_ID) else "mailer"
            p = checked(live.request(method, path, client=client), 404)
            assert p["type"] == "urn:msgspool:problem:not-found"
        p = checked(live.request(method, "/messages/nope"), 400)
        assert p["type"] == "urn:msgspool:problem:invalid-id"
        checked(live.request(method, "/messages/" + sid, client=None), 401)
        checked(live.request(method, "/messages/" + sid, api_key="wrong"),
                401)
        checked(live.request(method, "/messages/" + sid, client="gone"),
                403)
    assert live.inst.where(sid) == ["sent"]


# The receipts' request examples name this Twilio account and this
# WhatsApp number: the config below has sections for them, with the
# secrets the tests sign with.
PUBLIC = "https://msg.example.com"
TWILIO_SID = "AC0123456789abcdef0123456789abcdef"
TWILIO_TOKEN = "twilio-auth-token"
WA_PHONE = "106540352242922"
WA_SECRET = "meta-app-secret"
WA_VERIFY = "verify-me-please"
HTTP_SECRET = "whsec_" + b64(b"0123456789abcdef01234567")
RECEIPTS_CONF = f"""public-url = {PUBLIC}

[sms]
provider = twilio
account-sid = {TWILIO_SID}
auth-token = {TWILIO_TOKEN}
from = +15005550006

[ott.1]
provider = whatsapp
phone-number-id = {WA_PHONE}
token = not-used-here
app-secret = {WA_SECRET}
verify-token = {WA_VERIFY}

[voice]
provider = http
url = http://127.0.0.1:9/not-used-here
receipt-secret = {HTTP_SECRET}
"""


def _twilio_receipt(live, params, query="", token=TWILIO_TOKEN):
    """POST params as Twilio does, signed (computed here with hmac)."""
    q = f"?{query}" if query else ""
    data = f"{PUBLIC}/receipts/twilio{q}" + "".join(
        k + params[k] for k in sorted(params))
    sig = b64(hmac.new(token.encode(), data.encode(), hashlib.sha1).digest())
    return live.request("POST", "/receipts/twilio" + q, client=None,
                        data=urllib.parse.urlencode(params),
                        headers={"Content-Type":
                                 "application/x-www-form-urlencoded",
                                 "X-Twilio-Signature": sig})


def _whatsapp_receipt(live, body, secret=WA_SECRET):
    sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return live.request("POST", "/receipts/whatsapp", client=None, data=body,
                        headers={"Content-Type": "application/json",
                                 "X-Hub-Signature-256": "sha256=" + sig})


def _http_receipt(live, body, secret=HTTP_SECRET, ts=None):
    ts = str(int(time.time())) if ts is None else ts
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"msg_1.{ts}.".encode() + body, hashlib.sha256)
    return live.request("POST", "/receipts/http", client=None, data=body,
                        headers={"Content-Type": "application/json",
                                 "webhook-id": "msg_1",
                                 "webhook-timestamp": ts,
                                 "webhook-signature": "v1," +
                                 b64(mac.digest())})


@pytest.fixture
def receipts(live):
    """The live server configured for receipts; receipts/ emptied after
    (nothing here runs the daemon that would apply them)."""
    live.inst.write_conf(RECEIPTS_CONF)
    yield live
    shutil.rmtree(live.inst.spool / "receipts", ignore_errors=True)


def test_live_receipt_examples(receipts):
    """Each request example of POST /receipts/{provider}, signed as its
    provider signs, is taken (200) as the document says."""
    live = receipts
    content = op("POST", "/receipts/{provider}")["requestBody"]["content"]
    n = 0
    for name, ex in content["application/x-www-form-urlencoded"][
            "examples"].items():
        out = checked(_twilio_receipt(live, ex["value"]), 200)
        # Matched later through the provider's id: stored.
        assert out == {"stored": 1, "dropped": 0}, name
        n += 1
    for name, ex in content["application/json"]["examples"].items():
        body = json.dumps(ex["value"]).encode()
        if name.startswith("whatsapp"):
            out = checked(_whatsapp_receipt(live, body), 200)
            statuses = ex["value"]["entry"][0]["changes"][0]["value"][
                "statuses"]
            assert out == {"stored": len(statuses), "dropped": 0}, name
        else:
            assert name.startswith("http"), name
            out = checked(_http_receipt(live, body), 200)
            # SOME_ID is no message of this spool: dropped.
            assert out == {"stored": 0, "dropped": 1}, name
        n += 1
    assert n >= 7


def test_live_receipts(receipts):
    """/receipts/{provider}: every status the program gives, but 500 and
    503 (test_live_503_and_500)."""
    live = receipts
    params = {"AccountSid": TWILIO_SID, "MessageStatus": "delivered",
              "MessageSid": "SM" + "0" * 32}
    # Twilio: the message id in the query; an unknown one is dropped.
    assert checked(_twilio_receipt(live, params, query="id=" + SOME_ID),
                   200) == {"stored": 0, "dropped": 1}
    # A call's ringing tells nothing: not stored.
    assert checked(_twilio_receipt(live, {
        "AccountSid": TWILIO_SID, "CallStatus": "ringing",
        "CallSid": "CA" + "0" * 32}), 200) == {"stored": 0, "dropped": 0}
    for r in (_twilio_receipt(live, params, token="wrong"),
              _twilio_receipt(live, dict(params, AccountSid="AC" + "1" * 32)),
              live.request("POST", "/receipts/twilio", client=None,
                           data=urllib.parse.urlencode(params))):
        p = checked(r, 403)
        assert p["type"] == "urn:msgspool:problem:bad-signature"
    # WhatsApp: a wrong app secret; not JSON.
    body = json.dumps(op("POST", "/receipts/{provider}")["requestBody"][
        "content"]["application/json"]["examples"]["whatsappRead"][
        "value"]).encode()
    checked(_whatsapp_receipt(live, body, secret="wrong"), 403)
    checked(_whatsapp_receipt(live, b"not json"), 403)
    # http: a wrong secret, a stale timestamp; signed but not a receipt.
    ok = json.dumps({"id": SOME_ID, "status": "delivered"}).encode()
    checked(_http_receipt(live, ok, secret="whsec_" + b64(b"x" * 24)), 403)
    checked(_http_receipt(live, ok, ts=str(int(time.time()) - 3600)), 403)
    for bad in ({"id": SOME_ID}, {"id": SOME_ID, "status": "queued"}, []):
        p = checked(_http_receipt(live, json.dumps(bad).encode()), 400)
        assert p["type"] == "urn:msgspool:problem:invalid-field"
    assert not (live.inst.spool / "receipts").is_dir() or \
        list((live.inst.spool / "receipts").iterdir()) == []
    # The WhatsApp handshake.
    q = {"hub.mode": "subscribe", "hub.verify_token": WA_VERIFY,
         "hub.challenge": "1158201444"}
    r = live.get("/receipts/whatsapp?" + urllib.parse.urlencode(q),
                 client=None)
    assert checked(r, 200) == "1158201444"
    for wrong in (dict(q, **{"hub.verify_token": "not it"}),
                  dict(q, **{"hub.mode": "unsubscribe"}),
                  {"hub.challenge": "1"}):
        checked(live.get("/receipts/whatsapp?" +
                         urllib.parse.urlencode(wrong), client=None), 403)
    # GET elsewhere: 405 allowing POST; an unknown provider: 404.
    for name in ("twilio", "http"):
        r = live.get(f"/receipts/{name}?" + urllib.parse.urlencode(q),
                     client=None)
        checked(r, 405)
        assert r.headers["Allow"] == "POST"
    for method in ("GET", "POST"):
        p = checked(live.request(method, "/receipts/pigeon", client=None,
                                 data=b"x" if method == "POST" else None),
                    404)
        assert p["type"] == "urn:msgspool:problem:not-found"
    # 64 KiB at most; a Content-Length is needed.
    p = checked(live.post_raw("/receipts/http", b" " * (64 * 1024 + 1),
                              client=None), 413)
    assert p["type"] == "urn:msgspool:problem:payload-too-large"
    status, hdrs, body = live.raw(
        b"POST /receipts/twilio HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Connection: close\r\n\r\n")
    check_response("POST", "/receipts/twilio", status, hdrs, body)
    assert status == 411


def test_live_503_and_500(live):
    """A spool directory missing is 503 with Retry-After; an unreadable
    keys file is 500 (the live fixture restores both for the next test)."""
    (live.inst.spool / "new").rmdir()
    r = live.post_json("/sms/v1/deliver",
                      {"recipient": RECIPIENT, "messageBody": "hi"})
    checked(r, 503)
    assert r.headers["Retry-After"].isdigit()
    for method in ("GET", "DELETE"):
        r = live.request(method, "/messages/" + SOME_ID)
        checked(r, 503)
        assert r.headers["Retry-After"].isdigit()
    for r in (live.request("POST", "/receipts/twilio", client=None,
                           data=b"x"),
              live.get("/receipts/whatsapp?hub.mode=subscribe",
                       client=None)):
        checked(r, 503)
        assert r.headers["Retry-After"].isdigit()
    (live.inst.spool / "new").mkdir(mode=0o700)
    live.inst.keys_file.unlink()
    checked(live.get("/templates"), 500)
    checked(live.post_json("/voice/v1/deliver",
                          {"recipient": RECIPIENT, "message": "x"}), 500)
    checked(live.post_json("/email/v1/attachments",
                          {"attachmentName": "a", "content": ""}), 500)
    for method in ("GET", "DELETE"):
        checked(live.request(method, "/messages/" + SOME_ID), 500)
    # The receipts need no keys file: an unreadable config instead.
    live.inst.conf.write_text("this is not a config line\n")
    checked(live.request("POST", "/receipts/http", client=None, data=b"x"),
            500)
    checked(live.get("/receipts/whatsapp?hub.mode=subscribe", client=None),
            500)
    checked(live.get("/ping", client=None), 200)

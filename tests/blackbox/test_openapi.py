"""conf/openapi.yaml: the document itself (every route of harness/routes.py,
its statuses, headers, examples and rules).  The checker of replies,
openapi_check, is tested in test_openapi_checker.py; real replies of every
route are checked against the document in test_openapi_live.py.

Needs Debian's python3-yaml and python3-jsonschema; the lint of the
document with the pinned Redocly CLI is tests/openapi/lint.sh.
"""

import pytest

pytest.importorskip("yaml", reason="apt-get install python3-yaml")
pytest.importorskip("jsonschema", reason="apt-get install python3-jsonschema")

from conftest import RECIPIENT, in_future  # noqa: E402
import openapi_check as oc  # noqa: E402
from harness.routes import (DOC, PATHS, ROUTES, SOME_ID, op,  # noqa: E402
                            response)

# Operations whose 405 names fewer methods than their path has: GET
# /receipts/twilio (and http) is a 405 that allows only POST.
ALLOW_OF_405 = {("GET", "/receipts/{provider}"): "POST"}
# The operations that take no key (the provider's signature instead).
NO_KEY = {("GET", "/ping"), ("POST", "/receipts/{provider}"),
          ("GET", "/receipts/{provider}"), ("GET", "/unsubscribe/{token}"),
          ("POST", "/unsubscribe/{token}")}
# The errors a person reads in a browser: an HTML page, not a problem.
HTML_ERRORS = {("GET", "/unsubscribe/{token}", "404")}
# The console's routes: no key (a session); their errors a page, a
# problem (the console off, a body that is no form, the pipeline's), or
# either.
CONSOLE = {(m, p) for m, p, prog, _ in ROUTES if prog == "console"}
NO_KEY |= CONSOLE


def console_error_types(method, status):
    """The media types of a console route's error: a page (403 refused,
    409, a bad query), a problem (the pipeline's, a body that is no form)
    or either (400 of a form, 404 off or not there, 500, 503)."""
    if status in ("403", "409") or (method, status) == ("GET", "400"):
        return ["text/html"]
    if status in ("400", "404", "500", "503"):
        return ["application/problem+json", "text/html"]
    return ["application/problem+json"]


CONSOLE_GET = {"200", "404", "405", "500", "503"}
CONSOLE_POST = {"303", "400", "403", "404", "405", "411", "413", "415",
                "500", "503"}

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
# The routes of one message: their 422 is also a suppressed recipient.
ONE_MESSAGE = {("POST", "/sms/v1/deliver"), ("POST", "/voice/v1/deliver")}
# GET and DELETE /messages/{id}: no body; 400 for a path that is not an
# id, 404 for no such message of this client, 503 for a spool directory
# missing (and, for a cancel, a full or read-only spool).
PIPELINE_MESSAGES = {"200", "400", "401", "403", "404", "405", "500", "503"}
STATUSES = {
    ("GET", "/ping"): {"200", "405", "500"},
    ("GET", "/templates"): {"200", "401", "403", "405", "500"},
    ("GET", "/metrics"): {"200", "401", "403", "405", "500", "503"},
    ("POST", "/ott/v1/deliver"): {"200"} | SEND_POST,
    ("POST", "/sms/v1/deliver"): {"200", "202"} | SEND_POST,
    ("POST", "/sms/v1/deliver/batch"): {"200"} | SEND_POST,
    ("POST", "/voice/v1/deliver"): {"202"} | SEND_POST,
    ("POST", "/deliver"): {"200"} | SEND_POST,
    ("POST", "/email/v1/deliver"): {"200"} | SEND_POST,
    ("POST", "/email/v1/attachments"): {"201", "409", "422"} | PIPELINE_POST,
    # The list: 400 for a bad query, never 404.
    ("GET", "/messages"): {"200", "400", "401", "403", "405", "500",
                           "503"},
    ("GET", "/messages/{id}"): PIPELINE_MESSAGES,
    # 409: the message is sending or further on.
    ("DELETE", "/messages/{id}"): PIPELINE_MESSAGES | {"409"},
    # The suppressions: any valid key; 400 for a bad channel, address or
    # query, 404 for none of this client's; PUT's body is optional (411
    # for one without a length), its 201 made, 200 there already.
    ("GET", "/suppressions"): {"200", "400", "401", "403", "405", "500",
                               "503"},
    ("GET", "/suppressions/{channel}/{address}"): PIPELINE_MESSAGES,
    ("PUT", "/suppressions/{channel}/{address}"): {"200", "201"} |
    PIPELINE_POST,
    ("DELETE", "/suppressions/{channel}/{address}"): {"204"} |
    PIPELINE_MESSAGES - {"200"},
    # No key (403 is a bad signature), any Content-Type, 404 for an
    # unknown provider.
    ("POST", "/receipts/{provider}"): {"200", "400", "403", "404", "405",
                                       "411", "413", "500", "503"},
    # The WhatsApp handshake: no body; 405 for GET on another provider.
    ("GET", "/receipts/{provider}"): {"200", "403", "404", "405", "500",
                                      "503"},
    # No key, no body read (411: lighttpd's own): 404 for a token that
    # does not verify, 503 for a spool that cannot take the suppression.
    ("GET", "/unsubscribe/{token}"): {"200", "404", "405", "500", "503"},
    ("POST", "/unsubscribe/{token}"): {"200", "404", "405", "411", "500",
                                       "503"},
    # The console: a page (and 400 for a bad query of the list); a form's
    # 303, 403 without its token, 409 a message past it.
    ("GET", "/console"): CONSOLE_GET,
    ("POST", "/console/sign-in"): CONSOLE_POST,
    ("POST", "/console/sign-out"): CONSOLE_POST,
    ("GET", "/console/messages"): CONSOLE_GET | {"400"},
    ("GET", "/console/messages/{id}"): CONSOLE_GET,
    ("POST", "/console/messages/{id}/cancel"): CONSOLE_POST | {"409"},
    ("POST", "/console/messages/{id}/retry"): CONSOLE_POST | {"409"},
    ("GET", "/console/inbound"): CONSOLE_GET,
    ("GET", "/console/suppressions"): CONSOLE_GET,
    ("POST", "/console/suppressions/add"): CONSOLE_POST,
    ("POST", "/console/suppressions/remove"): CONSOLE_POST,
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
    "Suppression", "SuppressionList",
]


def schema_errors(value, name):
    return oc.validate_value(value, ["components", "schemas", name])


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
        elif (m, p) == ("GET", "/metrics"):
            # The key as X-API-KEY or Authorization: Bearer.
            assert op(m, p)["security"] == [{"ApiKey": []}, {"Bearer": []}]
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
        [("id", "path", True), ("client", "query", False)]
    assert params[0]["schema"] == {"$ref": "#/components/schemas/MessageId"}
    for m in ("GET", "DELETE"):
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
            DOC["components"]["responses"][
                "SuppressedOrKeyReused" if (method, path) in ONE_MESSAGE
                else "IdempotencyKeyReused"]
    if path == "/email/v1/attachments":
        for name in ("Deprecation", "Link"):
            assert header(201, name)["required"] is True
        assert header(201, "Deprecation")["schema"]["const"] == "true"
    # Every error is problem+json; a page (HTML_ERRORS) is HTML; the
    # console's a page, a problem or either (console_error_types).
    for status in responses:
        if status[0] in "45":
            content = [c.split(";")[0] for c in
                       response(method, path, status)["content"]]
            if (method, path) in CONSOLE:
                assert sorted(content) == console_error_types(
                    method, status), (method, path, status)
                continue
            want = "text/html" if (method, path, status) in HTML_ERRORS \
                else "application/problem+json"
            assert content == [want], (method, path, status)


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
            # A 204 has no content to show.
            if not oc._deref(DOC, o["responses"][st], [])[0].get("content"):
                continue
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
        "id", "direction", "channel", "recipient", "reference", "status",
        "createdAt", "updatedAt", "sendAt", "attempts", "nextAttemptAt",
        "sentAt", "completedAt", "route", "provider", "providerMessageId",
        "error", "events"}
    assert status["additionalProperties"] is False
    assert s["MessageStatusValue"]["enum"] == [
        "scheduled", "queued", "sending", "retrying", "sent", "delivered",
        "read", "undelivered", "failed", "canceled"]
    ok = {"id": SOME_ID, "direction": "outbound", "channel": "sms",
          "recipient": RECIPIENT, "reference": None,
          "status": "queued", "createdAt": "2026-11-23T10:00:00Z",
          "updatedAt": "2026-11-23T10:00:00Z", "sendAt": None, "attempts": 0,
          "nextAttemptAt": None, "sentAt": None, "completedAt": None,
          "route": None, "provider": None, "providerMessageId": None,
          "error": None,
          "events": [{"status": "queued", "at": "2026-11-23T10:00:00Z"}]}
    assert schema_errors(ok, "MessageStatus") == []
    for good in (dict(ok, reference="order-1001"),
                 dict(ok, reference="\u00e9" * 128),
                 dict(ok, reference="\U0001F600" * 128),
                 dict(ok, route="ott.3")):
        assert schema_errors(good, "MessageStatus") == [], good
    for bad in (dict(ok, direction="inbound"), dict(ok, reference=""),
                dict(ok, reference="x" * 129), dict(ok, reference="a\nb"),
                dict(ok, reference="a\u0085b"), dict(ok, reference=7),
                dict(ok, status="Queued"), dict(ok, sendAt="tomorrow"),
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

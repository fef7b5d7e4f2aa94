"""POST /deliver (EmailDeliverRequest) and POST /email/v1/deliver
(EmailRequest), replies as EmailDeliverResponse (conf/openapi.yaml;
msgspool-spool(5)); the headers of what is sent
(.eml of the file provider, SMTP) and attachments stored once (issue 9,
defects 6 and 11)."""

import email
import email.header
import email.policy
import html as htmllib
import json
import os
import random
import shutil
import time

import pytest

from conftest import (FRONT, assert_allow, assert_id,
                      assert_nothing_queued, assert_problem,
                      assert_unauthorized)
from channels_support import (PDF, PNG, TEXT, b64, bad, bad_any, due_now,
                              exactly_spooled, ok_json, spooled, unb64)
from doubles.smtp import SmtpSink

DELIVER = "/deliver"
V1 = "/email/v1/deliver"
MIB = 1024 * 1024
ANN, BOB, CY = "ann@example.com", "bob@example.org", "cy@example.net"
WELCOME_FROM = "hello@acme.example"
INLINE = "<html><body><p>Hi {{name}},</p><p>order {{order}} shipped.</p>" \
    "</body></html>"


def post(srv, body, path=DELIVER, client="acme", **kw):
    return srv.post_json(path, body, client=client, **kw)


def item(recipient, attachments=None, **fields):
    i = {"recipient": recipient, "fields": fields}
    if attachments is not None:
        i["attachments"] = attachments
    return i


def welcome(*items, **extra):
    body = {"templateId": "welcome", "payload": list(items)}
    body.update(extra)
    return body


def inline(*items, **extra):
    body = {"html": INLINE, "subject": "Order {{order}}",
            "from": "shop@acme.example", "payload": list(items)}
    body.update(extra)
    return body


def att(name, data, **kw):
    return {"attachmentName": name, "content": b64(data, **kw)}


def reply(r, n, overall=None, v1=False):
    out = ok_json(r, 200)
    assert isinstance(out, dict), out
    for k in ("overallStatus", "errors", "recipients"):
        assert k in out, f"{k!r} missing from {out}"
    if not v1:
        assert set(out) == {"overallStatus", "errors", "recipients"}, out
    assert out["overallStatus"] in ("success", "partial", "failed"), out
    assert out["errors"] is None or isinstance(out["errors"], list), out
    recs = out["recipients"]
    assert isinstance(recs, list) and len(recs) == n, out
    for e in recs:
        assert set(e) >= {"recipient", "messageId", "status", "error"}, e
        if not v1:
            assert set(e) == {"recipient", "messageId", "status", "error"}, e
        if e["status"] == "queued":
            assert e["error"] is None, e
            assert_id(e["messageId"])
        else:
            assert e["status"] == "error", e
            assert e["messageId"] is None, e
            assert isinstance(e["error"], str) and e["error"].strip(), e
    queued = sum(e["status"] == "queued" for e in recs)
    want = "success" if queued == n else "failed" if queued == 0 \
        else "partial"
    assert out["overallStatus"] == want, out
    if overall is not None:
        assert out["overallStatus"] == overall, out
    return out


def msg(srv, msgid, client="acme"):
    doc = spooled(srv.inst, "new", msgid, "email", client=client)
    due_now(doc)
    return doc["message"]


def ids(out):
    return [e["messageId"] for e in out["recipients"] if e["messageId"]]


# ------------------------------------------------- POST /deliver, ok

def test_template_success(srv):
    out = reply(post(srv, welcome(item(ANN, first_name="Ann"))), 1,
                "success")
    assert out["errors"] is None
    e = out["recipients"][0]
    assert e["recipient"] == ANN and e["status"] == "queued"
    exactly_spooled(srv.inst, [e["messageId"]])
    m = msg(srv, e["messageId"])
    assert m["to"] == ANN, m
    assert m["subject"] == "Welcome, Ann!", m
    assert m["from"] == WELCOME_FROM, m      # the template's From
    assert "<p>Hello Ann,</p>" in m["html"], m
    assert "{{" not in m["html"], m
    assert isinstance(m.get("text"), str), m
    assert "Hello Ann," in m["text"], m
    assert "welcome to ACME & friends." in m["text"], m
    assert "<p>" not in m["text"] and "&amp;" not in m["text"], m
    assert not m.get("attachments"), m


def test_merge_values_are_html_escaped_in_the_body_only(srv):
    nasty = "<b>&\"'"
    out = reply(post(srv, welcome(item(ANN, first_name=nasty))), 1,
                "success")
    m = msg(srv, out["recipients"][0]["messageId"])
    assert "<b>" not in m["html"], m
    assert "<b>&" not in m["html"], m
    start = m["html"].index("Hello ") + len("Hello ")
    end = m["html"].index(",</p>", start)
    escaped = m["html"][start:end]
    assert "&lt;b&gt;&amp;" in escaped, escaped
    assert '"' not in escaped and "'" not in escaped, escaped
    assert htmllib.unescape(escaped) == nasty, escaped
    # The subject is not HTML: the value goes in as it is.
    assert m["subject"] == f"Welcome, {nasty}!", m
    # The text alternative carries the value, not its escaped form.
    assert f"Hello {nasty}," in m["text"], m


def test_from_given_overrides_the_template(srv):
    out = reply(post(srv, welcome(item(ANN, first_name="Ann"),
                                  **{"from": "Support <help@acme.example>"})),
                1, "success")
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["from"] == "Support <help@acme.example>", m


def test_subject_with_template_is_ignored_with_a_notice(srv):
    out = reply(post(srv, welcome(item(ANN, first_name="Ann"),
                                  subject="My own subject")), 1, "success")
    assert isinstance(out["errors"], list) and out["errors"], out
    assert "subject" in json.dumps(out["errors"]), out
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["subject"] == "Welcome, Ann!", m


def test_inline_html_with_subject(srv):
    out = reply(post(srv, inline(item(ANN, name="Ann", order="A-17"))), 1,
                "success")
    assert out["errors"] is None
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["subject"] == "Order A-17", m
    assert m["from"] == "shop@acme.example", m
    assert m["to"] == ANN
    assert "<p>Hi Ann,</p>" in m["html"], m
    assert "<p>order A-17 shipped.</p>" in m["html"], m
    assert "Hi Ann," in m["text"] and "order A-17 shipped." in m["text"], m
    assert "<p>" not in m["text"], m


def test_inline_html_without_merge_fields(srv):
    body = {"html": "<p>Plain</p>", "subject": "Plain",
            "from": "a@acme.example", "payload": [{"recipient": ANN}]}
    out = reply(post(srv, body), 1, "success")
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["subject"] == "Plain" and "Plain" in m["text"], m


def test_several_recipients_each_get_their_own_file(srv):
    out = reply(post(srv, welcome(item(ANN, first_name="Ann"),
                                  item(BOB, first_name="Bob"),
                                  item(CY, first_name="Cy"))), 3, "success")
    assert [e["recipient"] for e in out["recipients"]] == [ANN, BOB, CY]
    got = ids(out)
    assert len(set(got)) == 3
    exactly_spooled(srv.inst, got)
    for (to, name), mid in zip([(ANN, "Ann"), (BOB, "Bob"), (CY, "Cy")],
                               got):
        m = msg(srv, mid)
        assert m["to"] == to and m["subject"] == f"Welcome, {name}!", m


def test_mailer_without_templates_can_send_inline(srv):
    out = reply(post(srv, inline(item(ANN, name="A", order="1")),
                     client="mailer"), 1, "success")
    spooled(srv.inst, "new", out["recipients"][0]["messageId"], "email",
            client="mailer")


def test_merge_values_keep_non_ascii(srv):
    name = "Jos\u00e9 \u00c5sa \u20ac \U0001F600"
    out = reply(post(srv, welcome(item(ANN, first_name=name))), 1,
                "success")
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["subject"] == f"Welcome, {name}!", m
    assert f"Hello {name}," in m["html"] and f"Hello {name}," in m["text"]


def test_inline_html_merge_values_are_escaped(srv):
    out = reply(post(srv, inline(item(ANN, name="<script>x</script>",
                                      order="1 & 2"))), 1, "success")
    m = msg(srv, out["recipients"][0]["messageId"])
    assert "<script>" not in m["html"], m
    assert "&lt;script&gt;x&lt;/script&gt;" in m["html"], m
    assert "order 1 &amp; 2 shipped." in m["html"], m
    assert m["subject"] == "Order 1 & 2", m
    assert "Hi <script>x</script>," in m["text"], m


# ------------------------------------------- recipients failing alone

@pytest.mark.parametrize("value", ["Ann\r\nBcc: evil@example.com",
                                   "Ann\nX", "Ann\rX"])
def test_cr_lf_merged_into_the_subject_fails_that_recipient(srv, value):
    out = reply(post(srv, welcome(item(ANN, first_name=value),
                                  item(BOB, first_name="Bob"))), 2,
                "partial")
    assert out["recipients"][0]["status"] == "error", out
    exactly_spooled(srv.inst, [out["recipients"][1]["messageId"]])


def test_missing_merge_field_fails_that_recipient(srv):
    out = reply(post(srv, welcome(item(ANN, first_name="Ann"),
                                  item(BOB, last_name="B"))), 2, "partial")
    assert out["recipients"][0]["status"] == "queued"
    e = out["recipients"][1]
    assert e["recipient"] == BOB and e["status"] == "error", e
    assert "first_name" in e["error"], e
    exactly_spooled(srv.inst, [out["recipients"][0]["messageId"]])


def test_missing_subject_merge_field_is_named(srv):
    # invoice: "Your invoice {{number}}", body uses {{first_name}}.
    body = {"templateId": "invoice",
            "payload": [item(ANN, first_name="Ann", number="7"),
                        item(BOB, first_name="Bob")]}
    out = reply(post(srv, body), 2, "partial")
    assert "number" in out["recipients"][1]["error"], out
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["subject"] == "Your invoice 7", m
    assert m["from"] == "billing@acme.example", m


def test_all_recipients_failing_is_failed(srv):
    out = reply(post(srv, welcome(item(ANN), item(BOB, other="x"))), 2,
                "failed")
    for e in out["recipients"]:
        assert "first_name" in e["error"], e
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("address", ["not-an-address", "ann@", "@example.com",
                                     "ann@localhost", "a b@example.com",
                                     "ann@example..com", ""])
def test_bad_recipient_address_fails_alone(srv, address):
    out = reply(post(srv, welcome(item(address, first_name="X"),
                                  item(BOB, first_name="Bob"))), 2,
                "partial")
    assert out["recipients"][0]["status"] == "error", out
    assert out["recipients"][0]["recipient"] == address
    assert out["recipients"][1]["status"] == "queued", out
    exactly_spooled(srv.inst, [out["recipients"][1]["messageId"]])


# ----------------------------------------------- request-level 400s

def test_template_and_html_is_400(srv):
    bad_any(post(srv, welcome(item(ANN, first_name="A"), html="<p>x</p>",
                              subject="s")),
            400, ("html", "templateId"), srv.inst)


def test_neither_template_nor_html_is_400(srv):
    body = {"from": "a@acme.example", "subject": "s",
            "payload": [item(ANN)]}
    bad_any(post(srv, body), 400, ("templateId", "html"), srv.inst)


def test_html_without_subject_is_400(srv):
    body = inline(item(ANN, name="A", order="1"))
    del body["subject"]
    bad(post(srv, body), 400, "subject", srv.inst)


def test_attachments_at_both_levels_is_400(srv):
    body = welcome(item(ANN, [att("a.txt", TEXT)], first_name="A"),
                   attachments=[att("b.txt", TEXT)])
    bad(post(srv, body), 400, "attachments", srv.inst)


@pytest.mark.parametrize("tid", ["no_such_template", "secret", "../etc/passwd",
                                 ".hidden", "welcome/../welcome", "bad id",
                                 "otp"])
def test_unusable_template_id_is_400(srv, tid):
    # secret belongs to other; otp is an OTT template, not an email one.
    body = {"templateId": tid, "payload": [item(ANN, first_name="A")]}
    bad(post(srv, body), 400, "templateId", srv.inst)


@pytest.mark.parametrize("subject", ["Hi\r\nBcc: x@evil.example", "Hi\nthere",
                                     "Hi\rthere"])
def test_cr_lf_in_subject_is_400(srv, subject):
    bad(post(srv, inline(item(ANN, name="A", order="1"), subject=subject)),
        400, "subject", srv.inst)


@pytest.mark.parametrize("frm", ["a@acme.example\r\nBcc: x@evil.example",
                                 "a@acme.example\n", "\ra@acme.example"])
def test_cr_lf_in_from_is_400(srv, frm):
    bad(post(srv, welcome(item(ANN, first_name="A"), **{"from": frm})), 400,
        "from", srv.inst)


@pytest.mark.parametrize("frm", ["not an address", "a@b.example, c@d.example",
                                 ""])
def test_bad_from_is_400(srv, frm):
    bad(post(srv, welcome(item(ANN, first_name="A"), **{"from": frm})), 400,
        "from", srv.inst)


def test_inline_html_without_from_is_400(srv):
    body = inline(item(ANN, name="A", order="1"))
    del body["from"]
    bad(post(srv, body), 400, "from", srv.inst)


def test_non_string_merge_value_is_400(srv):
    body = welcome({"recipient": ANN, "fields": {"first_name": 5}})
    bad(post(srv, body), 400, "payload[0].fields.first_name", srv.inst)


def test_missing_payload_is_400(srv):
    bad(post(srv, {"templateId": "welcome"}), 400, "payload", srv.inst)


def test_empty_payload_is_400(srv):
    bad(post(srv, welcome()), 400, "payload", srv.inst)


def test_1001_payload_items_is_400(srv):
    items = [item(f"u{i}@example.com", first_name="U") for i in range(1001)]
    bad(post(srv, welcome(*items)), 400, "payload", srv.inst)


def test_payload_item_without_recipient_is_400(srv):
    bad(post(srv, welcome({"fields": {"first_name": "A"}})), 400,
        "payload[0].recipient", srv.inst)


def test_unknown_field_is_400(srv):
    bad(post(srv, welcome(item(ANN, first_name="A"), cc="x@example.com")),
        400, "cc", srv.inst)


def test_non_json_content_type_is_415(srv):
    r = srv.post_json(DELIVER, welcome(item(ANN, first_name="A")),
                      content_type="text/plain")
    assert_problem(r, 415)
    assert_nothing_queued(srv.inst)


# -------------------------------------------------------- attachments

@pytest.mark.parametrize("enc", [dict(), dict(pad=False), dict(wrap=76),
                                 dict(pad=False, wrap=60)],
                         ids=["padded", "unpadded", "wrapped",
                              "unpadded-wrapped"])
@pytest.mark.parametrize("data", [PDF[:-1], PDF[:-2], PDF],
                         ids=["len%3=0", "len%3=1", "len%3=2"])
def test_attachment_base64_forms_accepted(srv, enc, data):
    body = welcome(item(ANN, first_name="A"),
                   attachments=[att("doc.pdf", data, **enc)])
    out = reply(post(srv, body), 1, "success")
    m = msg(srv, out["recipients"][0]["messageId"])
    (a,) = m["attachments"]
    assert a["name"] == "doc.pdf", a
    assert a["size"] == len(data), a
    assert unb64(a["content"]) == data, a


@pytest.mark.parametrize("name,data,ctype", [
    ("report.pdf", PDF, "application/pdf"),
    ("photo.png", PDF, "application/pdf"),
    ("picture.png", PNG, "image/png"),
    ("doc.pdf", PNG, "image/png"),
    ("notes.txt", TEXT, "text/plain"),
    ("data.bin", TEXT, "text/plain"),
])
def test_attachment_type_detected_from_bytes(srv, name, data, ctype):
    body = welcome(item(ANN, first_name="A"), attachments=[att(name, data)])
    out = reply(post(srv, body), 1, "success")
    (a,) = msg(srv, out["recipients"][0]["messageId"])["attachments"]
    assert a["name"] == name, a
    assert a["size"] == len(data), a
    assert a["contentType"] == ctype, a
    assert unb64(a["content"]) == data


def test_request_level_attachments_go_to_everyone(srv):
    body = welcome(item(ANN, first_name="A"), item(BOB, first_name="B"),
                   attachments=[att("a.pdf", PDF), att("b.png", PNG)])
    out = reply(post(srv, body), 2, "success")
    for mid in ids(out):
        atts = msg(srv, mid)["attachments"]
        assert [(a["name"], a["contentType"], a["size"]) for a in atts] == \
            [("a.pdf", "application/pdf", len(PDF)),
             ("b.png", "image/png", len(PNG))], atts
        # Whole as msgspool show tells it, stored once or not.
        shown = show(srv, mid)["message"]["attachments"]
        assert [unb64(a["content"]) for a in shown] == [PDF, PNG], shown


def test_per_recipient_attachments_go_only_to_their_recipient(srv):
    body = welcome(item(ANN, [att("ann.pdf", PDF)], first_name="A"),
                   item(BOB, [att("bob.png", PNG), att("bob.txt", TEXT)],
                        first_name="B"),
                   item(CY, first_name="C"))
    out = reply(post(srv, body), 3, "success")
    a, b, c = [msg(srv, mid) for mid in ids(out)]
    assert a["to"] == ANN and b["to"] == BOB and c["to"] == CY
    assert [x["name"] for x in a["attachments"]] == ["ann.pdf"]
    assert unb64(a["attachments"][0]["content"]) == PDF
    assert [(x["name"], x["contentType"]) for x in b["attachments"]] == \
        [("bob.png", "image/png"), ("bob.txt", "text/plain")]
    assert unb64(b["attachments"][1]["content"]) == TEXT
    assert not c.get("attachments"), c


BAD_BASE64 = ["!!!!", "QUJD$", "QUJDR", "QQ===", "QQ=Q", "Q===",
              "QUJD\x00RA==", "QQ==QUJD", "=QUJD", "QUJD=", "QUJD-_8",
              "\u00e4\u00f6\u00fc\u00df"]


@pytest.mark.parametrize("content", BAD_BASE64)
def test_bad_base64_at_request_level_is_400(srv, content):
    body = welcome(item(ANN, first_name="A"),
                   attachments=[{"attachmentName": "a.txt",
                                 "content": content}])
    bad(post(srv, body), 400, "attachments[0].content", srv.inst)


@pytest.mark.parametrize("content", BAD_BASE64)
def test_bad_base64_in_payload_item_is_400(srv, content):
    body = welcome(item(ANN, [att("ok.txt", TEXT),
                              {"attachmentName": "a.txt", "content": content}],
                        first_name="A"),
                   item(BOB, first_name="B"))
    bad(post(srv, body), 400, "payload[0].attachments[1].content", srv.inst)


@pytest.mark.parametrize("name", ["dir/a.pdf", "/etc/passwd", "..\\a.pdf",
                                  "a\\b.pdf", "a\r\nb.pdf", "a\nb.pdf",
                                  "a\rb.pdf", "", "..", "."])
def test_bad_attachment_name_is_400(srv, name):
    body = welcome(item(ANN, [{"attachmentName": name,
                               "content": b64(PDF)}], first_name="A"))
    bad(post(srv, body), 400, "payload[0].attachments[0].attachmentName",
        srv.inst)


def test_bad_attachment_name_at_request_level_is_400(srv):
    body = welcome(item(ANN, first_name="A"),
                   attachments=[{"attachmentName": "../x.pdf",
                                 "content": b64(PDF)}])
    bad(post(srv, body), 400, "attachments[0].attachmentName", srv.inst)


def test_attachment_without_name_is_400(srv):
    body = welcome(item(ANN, first_name="A"),
                   attachments=[{"content": b64(PDF)}])
    bad(post(srv, body), 400, "attachments[0].attachmentName", srv.inst)


def test_attachment_without_content_is_400(srv):
    body = welcome(item(ANN, first_name="A"),
                   attachments=[{"attachmentName": "a.pdf"}])
    p = assert_problem(post(srv, body), 400)
    assert any(k.startswith("attachments[0]") for k in p["errors"]), p
    assert_nothing_queued(srv.inst)


def test_attachment_of_exactly_10_mib_is_accepted(srv):
    data = b"%PDF-1.4\n" + b"\0" * (10 * MIB - 9)
    body = welcome(item(ANN, first_name="A"),
                   attachments=[att("big.pdf", data)])
    out = reply(post(srv, body, timeout=60), 1, "success")
    (a,) = msg(srv, out["recipients"][0]["messageId"])["attachments"]
    assert a["size"] == 10 * MIB, {k: a[k] for k in a if k != "content"}
    assert unb64(a["content"]) == data


def test_attachment_over_10_mib_is_413(srv):
    data = b"\0" * (10 * MIB + 1)
    body = welcome(item(ANN, first_name="A"),
                   attachments=[att("big.bin", data)])
    bad(post(srv, body, timeout=60), 413, "attachments[0].content",
        srv.inst)


def test_body_over_32_mib_is_413(srv):
    head, tail = b'{"html":"', b'"}'
    data = head + b"a" * (32 * MIB + 1 - len(head) - len(tail)) + tail
    assert len(data) == 32 * MIB + 1
    r = srv.post_raw(DELIVER, data, timeout=60)
    assert_problem(r, 413)
    assert_nothing_queued(srv.inst)


# --------------------------------------------- POST /email/v1/deliver

def test_v1_reply_repeats_the_request(srv):
    body = {"subject": "Ignored subject", "from": "news@acme.example",
            "templateId": "welcome",
            "recipients": [{"to": ANN, "fields": {"first_name": "Ann"}},
                           {"to": BOB, "fields": {"first_name": "Bob",
                                                  "extra": "x"}}]}
    out = reply(post(srv, body, path=V1), 2, "success", v1=True)
    assert out["subject"] == "Ignored subject", out
    assert out["from"] == "news@acme.example", out
    assert out["templateId"] == "welcome", out
    assert "subject" in json.dumps(out["errors"]), out
    for want, e in zip(body["recipients"], out["recipients"]):
        assert e["to"] == want["to"], e
        assert e["recipient"] == want["to"], e
        assert e["fields"] == want["fields"], e
    got = ids(out)
    exactly_spooled(srv.inst, got)
    m = msg(srv, got[1])
    assert m["to"] == BOB and m["subject"] == "Welcome, Bob!", m
    assert m["from"] == "news@acme.example", m
    assert "Hello Bob," in m["text"], m


def test_v1_without_subject_or_from(srv):
    body = {"templateId": "welcome",
            "recipients": [{"to": ANN, "fields": {"first_name": "Ann"}}]}
    out = reply(post(srv, body, path=V1), 1, "success", v1=True)
    assert out["errors"] is None, out
    assert out["templateId"] == "welcome", out
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["from"] == WELCOME_FROM and m["subject"] == "Welcome, Ann!", m


def test_v1_escapes_and_partial(srv):
    body = {"from": "news@acme.example", "templateId": "welcome",
            "recipients": [{"to": ANN, "fields": {"first_name": "<i>"}},
                           {"to": "nobody", "fields": {"first_name": "N"}},
                           {"to": BOB, "fields": {}}]}
    out = reply(post(srv, body, path=V1), 3, "partial", v1=True)
    assert [e["status"] for e in out["recipients"]] == \
        ["queued", "error", "error"]
    assert "first_name" in out["recipients"][2]["error"]
    assert out["recipients"][2]["fields"] == {}
    exactly_spooled(srv.inst, ids(out))
    m = msg(srv, out["recipients"][0]["messageId"])
    assert "&lt;i&gt;" in m["html"] and "<i>" not in m["html"], m


def test_v1_inline_html(srv):
    body = {"html": INLINE, "subject": "Order {{order}}",
            "from": "shop@acme.example",
            "recipients": [{"to": ANN, "fields": {"name": "Ann",
                                                  "order": "9"}}]}
    out = reply(post(srv, body, path=V1), 1, "success", v1=True)
    assert out["subject"] == "Order {{order}}", out
    m = msg(srv, out["recipients"][0]["messageId"])
    assert m["subject"] == "Order 9" and "<p>Hi Ann,</p>" in m["html"], m


def test_v1_empty_recipients_is_400(srv):
    bad(post(srv, {"templateId": "welcome", "recipients": []}, path=V1),
        400, "recipients", srv.inst)


def test_v1_missing_recipients_is_400(srv):
    # With neither list in the body the route decides which one the
    # error names; under busybox both email routes are the one URL
    # /cgi-bin/email-deliver (REQUEST_URI), which names the /deliver one.
    bad(post(srv, {"templateId": "welcome", "from": "a@acme.example"},
             path=V1), 400,
        "payload" if FRONT == "busybox" else "recipients", srv.inst)


def test_v1_recipient_without_to_is_400(srv):
    bad(post(srv, {"templateId": "welcome",
                   "recipients": [{"fields": {"first_name": "A"}}]},
             path=V1), 400, "recipients[0].to", srv.inst)


def test_v1_unknown_template_is_400(srv):
    bad(post(srv, {"templateId": "secret",
                   "recipients": [{"to": ANN, "fields": {}}]}, path=V1),
        400, "templateId", srv.inst)


def test_v1_template_and_html_is_400(srv):
    bad_any(post(srv, {"templateId": "welcome", "html": "<p>x</p>",
                       "subject": "s",
                       "recipients": [{"to": ANN, "fields": {}}]}, path=V1),
            400, ("html", "templateId"), srv.inst)


def test_v1_cr_lf_in_subject_is_400(srv):
    bad(post(srv, {"html": "<p>x</p>", "subject": "a\r\nb",
                   "from": "a@acme.example",
                   "recipients": [{"to": ANN, "fields": {}}]}, path=V1),
        400, "subject", srv.inst)


# ------------------------------------------------------ auth, method

@pytest.mark.parametrize("path", [DELIVER, V1])
def test_key_without_email_scope_is_403(srv, path):
    assert_problem(post(srv, welcome(item(ANN, first_name="A")), path=path,
                        client="smsonly"), 403)
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("path", [DELIVER, V1])
def test_missing_key_is_401(srv, path):
    assert_unauthorized(post(srv, welcome(item(ANN, first_name="A")),
                             path=path, client=None))
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("path", [DELIVER, V1])
def test_get_is_405(srv, path):
    assert_allow(srv.get(path), "POST")


# ------------------------------------------- what is sent: the headers

def show(srv, mid):
    """msgspool show ID, parsed."""
    cp = srv.inst.cli("show", mid)
    assert cp.returncode == 0, cp.err
    return json.loads(cp.out)


def eml_bytes(srv, mid):
    """The .eml the file provider wrote for mid; every byte of it is
    ASCII (headers encoded, bodies quoted-printable or base64)."""
    out = srv.inst.outbox_for(mid)
    assert [p.name for p in out] == [f"{mid}.eml"], \
        [p.name for p in srv.inst.outbox()]
    raw = out[0].read_bytes()
    eight = [i for i, b in enumerate(raw) if b >= 0x80]
    assert not eight, raw[max(0, eight[0] - 200):eight[0] + 100]
    return raw


def eml(srv, mid):
    """The .eml of mid (eml_bytes), parsed."""
    return email.message_from_bytes(eml_bytes(srv, mid),
                                    policy=email.policy.default)


def legacy_names(raw):
    """The name= parameters of the attachments' Content-Type, RFC 2047
    words decoded: what mail programs without RFC 2231 read."""
    m = email.message_from_bytes(raw, policy=email.policy.compat32)
    return [str(email.header.make_header(email.header.decode_header(
        part.get_param("name")))) for part in m.walk()
        if str(part.get("Content-Disposition", "")).startswith("attachment")]


def attachments_of(m):
    """[(filename, bytes)] of a parsed message's attachments."""
    return [(a.get_filename(), a.get_payload(decode=True))
            for a in m.iter_attachments()]


NON_ASCII_ADDRESSES = ["j\u00f6rg@example.de", "ann@ex\u00e4mple.com",
                       "\u00fc@\u00fc.example"]


@pytest.mark.parametrize("address", NON_ASCII_ADDRESSES)
def test_non_ascii_recipient_fails_alone_as_not_ascii(srv, address):
    # Issue 9, defect 11: it was queued and sent as one encoded word in
    # To:.  An address needs SMTPUTF8 end to end to be non-ASCII.
    out = reply(post(srv, welcome(item(address, first_name="X"),
                                  item(BOB, first_name="Bob"))), 2,
                "partial")
    e = out["recipients"][0]
    assert e["status"] == "error" and "ASCII" in e["error"], e
    assert e["error"].startswith("recipient"), e
    exactly_spooled(srv.inst, [out["recipients"][1]["messageId"]])


@pytest.mark.parametrize("frm", [
    "j\u00f6rg@acme.example", "J\u00f6rg <j\u00f6rg@acme.example>",
    "Shop <shop@\u00e4cme.example>"])
def test_non_ascii_from_address_is_400(srv, frm):
    p = bad(post(srv, welcome(item(ANN, first_name="A"), **{"from": frm})),
            400, "from", srv.inst)
    assert any("ASCII" in m for m in p["errors"]["from"]), p


@pytest.mark.parametrize("frm", [
    "x> y <a@b.example>", "Ann, Bob <a@acme.example>",
    "Ann (Shop) <a@acme.example>", 'Ann "Q" <a@acme.example>',
    "a@acme.example <b@acme.example>", "Ann <a@acme.example",
    "Ann <a@acme.example> x", "Ann <<a@acme.example>>",
    '"Ann <a@acme.example>', "Ann <a@acme.example> <b@acme.example>",
    "Ann <>", "Ann\t<a@acme.example>", "<a@acme.example> Ann"])
def test_malformed_from_is_400(srv, frm):
    # Issue 9, defect 11: "x> y <a@b.example>" was accepted.  From is a
    # bare addr-spec or a phrase / quoted string and <addr-spec>.
    bad(post(srv, welcome(item(ANN, first_name="A"), **{"from": frm})), 400,
        "from", srv.inst)


@pytest.mark.parametrize("frm,name", [
    ("shop@acme.example", ""),
    ("<shop@acme.example>", ""),
    ("Ann <shop@acme.example>", "Ann"),
    ("Ann Q. Doe <shop@acme.example>", "Ann Q. Doe"),
    ('"Doe, Ann" <shop@acme.example>', "Doe, Ann"),
    ('"say \\"hi\\"" <shop@acme.example>', 'say "hi"'),
    ("Zo\u00eb \u00dcn\u00efcode \U0001F600 <shop@acme.example>",
     "Zo\u00eb \u00dcn\u00efcode \U0001F600"),
    ('"Zo\u00eb, \\"Z\\"" <shop@acme.example>', 'Zo\u00eb, "Z"'),
])
def test_from_is_sent_as_written(srv, frm, name):
    out = reply(post(srv, welcome(item(ANN, first_name="A"),
                                  **{"from": frm})), 1, "success")
    mid = out["recipients"][0]["messageId"]
    srv.inst.daemon_once()
    m = eml(srv, mid)
    (a,) = m["From"].addresses
    assert (a.display_name, a.addr_spec) == (name, "shop@acme.example"), \
        str(m["From"])
    assert m["To"].addresses[0].addr_spec == ANN
    assert m["Message-ID"].endswith("@acme.example>"), m["Message-ID"]
    assert not m.defects and not m["From"].defects, (m.defects,
                                                     m["From"].defects)


ATTACHMENT_NAMES = [
    "Gr\u00fc\u00dfe \u2013 \u20ac \U0001F600.pdf",
    "r\u00e9sum\u00e9.pdf",
    "\u65e5\u672c\u8a9e\u306e\u9577\u3044\u30d5\u30a1\u30a4\u30eb\u540d"
    * 6 + ".txt",
    'say "hi".txt',
    "semi;colon=x.txt",
    "tab\there.txt",
    "plain.pdf",
]


@pytest.mark.parametrize("level", ["request", "recipient"])
@pytest.mark.parametrize("name", ATTACHMENT_NAMES,
                         ids=[f"name{i}" for i in range(len(ATTACHMENT_NAMES))])
def test_attachment_name_round_trips(srv, level, name):
    # Issue 9, defect 11: a non-ASCII name went out as raw 8-bit bytes
    # in Content-Disposition, and quotes were dropped.  RFC 2231 now.
    a = [att(name, PDF)]
    if level == "request":
        body = welcome(item(ANN, first_name="A"), item(BOB, first_name="B"),
                       attachments=a)
    else:
        body = welcome(item(ANN, a, first_name="A"))
    out = reply(post(srv, body), 2 if level == "request" else 1, "success")
    srv.inst.daemon_once()
    for mid in ids(out):
        m = eml(srv, mid)
        assert attachments_of(m) == [(name, PDF)], attachments_of(m)
        (part,) = m.iter_attachments()
        assert part.get_content_type() == "application/pdf"
        assert not part.defects, part.defects
        # The RFC 2047 fallback in the type's name= parameter.
        assert legacy_names(eml_bytes(srv, mid)) == [name]


def test_smtp_sends_the_headers_and_stored_attachments(srv):
    # The smtp provider sends what spooler/message.c builds, the
    # attachment stored once read from blobs/.
    inst = srv.inst
    name = "Gr\u00fc\u00dfe \u20ac \U0001F600 " + "x" * 60 + ".pdf"
    with SmtpSink() as sink:
        inst.write_conf(sink.config("email", starttls="no"))
        out = reply(post(srv, welcome(
            item(ANN, first_name="A"), item(BOB, first_name="B"),
            attachments=[att(name, PDF), att("notes.txt", TEXT)],
            **{"from": '"Zo\u00eb, Shop" <shop@acme.example>'})), 2,
            "success")
        inst.daemon_once()
        got = sink.wait_for(2, timeout=10)
    assert sorted(g.rcpt_tos[0] for g in got) == sorted([ANN, BOB])
    for g in got:
        raw_head = g.data.split(b"\r\n\r\n", 1)[0]
        assert all(b < 0x80 for b in g.data), raw_head
        assert g.mail_from == "shop@acme.example"
        (a,) = g.message["From"].addresses
        assert a.display_name == "Zo\u00eb, Shop", str(g.message["From"])
        assert [(n, d) for n, _, d in g.attachments] == \
            [(name, PDF), ("notes.txt", TEXT)], g.attachments
    assert sorted(inst.ids("sent")) == sorted(ids(out))


def test_smtp_sends_the_eml_byte_for_byte(srv):
    # One builder for both providers (spooler/message.c): what a relay
    # receives is the .eml the file provider wrote for the same document,
    # whether the attachment is stored once (two recipients) or inline.
    inst = srv.inst
    name = "Gr\u00fc\u00dfe \u20ac \U0001F600 " + "x" * 60 + ".pdf"
    frm = {"from": '"Zo\u00eb, Shop" <shop@acme.example>'}
    out = reply(post(srv, welcome(
        item(ANN, first_name="Zo\u00eb"), item(BOB, first_name="B"),
        attachments=[att(name, PDF)], **frm)), 2, "success")
    mids = ids(out)
    out = reply(post(srv, welcome(
        item(CY, [att("notes.txt", TEXT)], first_name="\u65e5\u672c"),
        **frm)), 1, "success")
    mids += ids(out)
    docs = {m: inst.path("new", m).read_bytes() for m in mids}
    inst.daemon_once()
    emls = {m: eml_bytes(srv, m) for m in mids}
    # The same documents again, queued as they were, to the SMTP relay.
    for m in mids:
        inst.path("sent", m).unlink()
        p = inst.path("new", m)
        p.write_bytes(docs[m])
        p.chmod(0o600)
    with SmtpSink() as sink:
        inst.write_conf(sink.config("email", starttls="no"))
        inst.daemon_once()
        got = sink.wait_for(3, timeout=10)
    assert len(got) == 3, got
    for g in got:
        (m,) = [m for m in mids if m in str(g.message["Message-ID"])]
        assert g.data == emls[m], (g.data[:600], emls[m][:600])
    assert sorted(inst.ids("sent")) == sorted(mids)


# -------------------------------- attachments stored once (defect 6)

@pytest.fixture
def blobs(srv):
    """srv with an empty spool/blobs/ (the spool's reset keeps it);
    yields a function listing its file names."""
    d = srv.inst.spool / "blobs"
    shutil.rmtree(d, ignore_errors=True)

    def names():
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []
    yield names
    shutil.rmtree(d, ignore_errors=True)


def disk_used(root):
    """Bytes the files under root take on disk, each inode counted once
    however many names it has."""
    seen, total = set(), 0
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames + dirnames:
            st = os.lstat(os.path.join(dirpath, n))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def test_request_attachment_is_stored_once(srv, blobs):
    # Issue 9, defect 6: 1000 recipients with one 256 KiB attachment
    # wrote 1000 copies.  200 x 256 KiB here: one copy, 200 links.
    n = 200
    # Bytes of a fixed seed: random ones began now and then with what
    # libmagic takes for an executable ("MZ"), so the type was not octet-stream.
    data = random.Random(9).randbytes(256 * 1024)
    body = inline(*[item(f"u{i}@example.com", name=f"U{i}", order=str(i))
                    for i in range(n)], attachments=[att("big.bin", data)])
    size = len(json.dumps(body).encode())
    out = reply(post(srv, body, timeout=60), n, "success")
    got = ids(out)
    exactly_spooled(srv.inst, got)
    # What the spool holds: one file a message (msgspool-spool(5); at least one
    # block each) and the attachment once.
    used = disk_used(srv.inst.spool)
    floor = n * os.statvfs(srv.inst.spool).f_bsize
    assert used <= 2 * size + floor, (used, size, floor)
    assert blobs() == sorted(f"{mid}.0" for mid in got)
    st = os.stat(srv.inst.spool / "blobs" / f"{got[0]}.0")
    assert st.st_nlink == n and st.st_size == len(data), st
    a = msg(srv, got[7])["attachments"]
    assert a == [{"name": "big.bin", "contentType": "application/octet-stream",
                  "size": len(data), "blob": 0}], a
    # msgspool show tells it whole.
    (shown,) = show(srv, got[7])["message"]["attachments"]
    assert unb64(shown["content"]) == data
    # What each message sends is unchanged: the whole attachment.
    srv.inst.daemon_once()
    assert sorted(srv.inst.ids("sent")) == sorted(got)
    for i, mid in enumerate(got):
        m = eml(srv, mid)
        assert m["To"].addresses[0].addr_spec == f"u{i}@example.com"
        assert attachments_of(m) == [("big.bin", data)], mid
    # Sent and within their retention: still there.
    assert len(blobs()) == n


def test_uploaded_attachment_is_stored_once_too(srv, blobs):
    r = srv.post_json("/email/v1/attachments",
                      {"attachmentName": "t.pdf", "content": b64(PDF)})
    aid = ok_json(r, 201)["attachmentId"]
    out = reply(post(srv, welcome(
        item(ANN, first_name="A"), item(BOB, first_name="B"),
        attachments=[{"attachmentName": "terms.pdf", "attachmentId": aid},
                     att("n.txt", TEXT)])), 2, "success")
    got = ids(out)
    assert blobs() == sorted(f"{m}.{i}" for m in got for i in (0, 1))
    srv.inst.daemon_once()
    for mid in got:
        assert attachments_of(eml(srv, mid)) == \
            [("terms.pdf", PDF), ("n.txt", TEXT)]


def test_one_recipient_keeps_its_attachment_inline(srv, blobs):
    out = reply(post(srv, welcome(item(ANN, first_name="A"),
                                  attachments=[att("a.pdf", PDF)])), 1)
    (a,) = msg(srv, out["recipients"][0]["messageId"])["attachments"]
    assert unb64(a["content"]) == PDF and "blob" not in a, a
    assert blobs() == []


def test_nothing_stored_for_a_request_refused(srv, blobs):
    body = welcome(item(ANN, first_name="A"), item(BOB, first_name="B"),
                   attachments=[att("a.pdf", PDF)],
                   **{"from": "x> y <a@b.example>"})
    bad(post(srv, body), 400, "from", srv.inst)
    assert blobs() == []
    assert srv.inst.files("tmp") == []


def test_stored_attachments_of_recipients_that_failed_are_not_kept(srv,
                                                                   blobs):
    out = reply(post(srv, welcome(item(ANN, first_name="A"),
                                  item(BOB, other="x"),
                                  attachments=[att("a.pdf", PDF)])), 2,
                "partial")
    good = out["recipients"][0]["messageId"]
    assert blobs() == [f"{good}.0"]


def age(path, hours):
    t = time.time() - hours * 3600
    os.utime(path, (t, t), follow_symlinks=False)


def test_prune_keeps_what_messages_still_need(srv, blobs):
    # Nothing a queued, deferred or failed message still needs is ever
    # pruned; what no message needs any more goes.
    inst = srv.inst
    names = ["queued", "deferred", "failed", "orphan", "deleted"]
    out = reply(post(srv, inline(*[item(f"{n}@example.com", name=n,
                                        order="1") for n in names],
                                 attachments=[att("a.pdf", PDF),
                                              att("b.png", PNG)])),
                len(names), "success")
    mid = dict(zip(names, ids(out)))
    spool = inst.spool
    later = time.time() + 3600
    os.rename(spool / "new" / f"{mid['deferred']}.json",
              spool / "deferred" / f"{mid['deferred']}.json")
    os.utime(spool / "deferred" / f"{mid['deferred']}.json", (later, later))
    os.rename(spool / "new" / f"{mid['failed']}.json",
              spool / "failed" / f"{mid['failed']}.json")
    os.unlink(spool / "new" / f"{mid['orphan']}.json")   # a CGI that died
    cp = inst.cli("delete", mid["deleted"])
    assert cp.returncode == 0, cp.err
    # msgspool delete takes its attachments with it, at once.
    assert not [b for b in blobs() if b.startswith(mid["deleted"])]
    for i in (0, 1):         # one inode each: every link is as old
        age(spool / "blobs" / f"{mid['queued']}.{i}", 40)
    inst.daemon_once()
    left = blobs()
    for n in ("queued", "deferred", "failed"):
        assert f"{mid[n]}.0" in left and f"{mid[n]}.1" in left, (n, left)
    assert not [b for b in left if b.startswith(mid["orphan"])], left
    assert attachments_of(eml(srv, mid["queued"])) == \
        [("a.pdf", PDF), ("b.png", PNG)]
    # The failed one, retried by hand, still sends them.
    cp = inst.cli("retry", mid["failed"])
    assert cp.returncode == 0, cp.err
    inst.daemon_once()
    assert attachments_of(eml(srv, mid["failed"])) == \
        [("a.pdf", PDF), ("b.png", PNG)]
    # A sent message pruned after its retention takes them with it.
    age(spool / "sent" / f"{mid['queued']}.json", 8 * 24)
    inst.daemon_once()
    assert inst.where(mid["queued"]) == []
    left = blobs()
    assert not [b for b in left if b.startswith(mid["queued"])], left
    assert f"{mid['deferred']}.0" in left and f"{mid['failed']}.1" in left


def test_stored_attachment_is_not_read_through_a_link(srv, blobs, tmp_path):
    # blobs/ is writable by the web server's user: a link there must not
    # make the daemon mail a file it can read and that user cannot.
    secret = tmp_path / "secret.pdf"
    secret.write_bytes(b"%PDF-1.4 SECRET " + b"s" * (len(PDF) - 16))
    out = reply(post(srv, welcome(item(ANN, first_name="A"),
                                  item(BOB, first_name="B"),
                                  attachments=[att("a.pdf", PDF)])), 2)
    victim, other = ids(out)
    link = srv.inst.spool / "blobs" / f"{victim}.0"
    link.unlink()
    link.symlink_to(secret)
    srv.inst.daemon_once()
    assert srv.inst.where(victim) == ["failed"], srv.inst.where(victim)
    doc = srv.inst.load("failed", victim)
    assert "blobs/" in doc["lastError"], doc["lastError"]
    assert srv.inst.outbox_for(victim) == []
    for p in srv.inst.outbox():
        assert b"SECRET" not in p.read_bytes()
    assert attachments_of(eml(srv, other)) == [("a.pdf", PDF)]


def test_attachment_name_with_control_characters_is_400(srv):
    """A name that cannot be written in a header (DEL, other controls)
    is refused; nothing is queued (found by the fuzzer)."""
    for name in ("doc.pd\u007f", "a\u0001b.txt", "bell\u0007.pdf"):
        r = srv.post_json("/deliver", {
            "from": "shop@acme.example", "subject": "s", "html": "<p>x</p>",
            "payload": [{"recipient": ANN}],
            "attachments": [{"attachmentName": name, "content": "aGk="}]})
        p = assert_problem(r, 400)
        assert "attachments[0].attachmentName" in p["errors"], p
        assert_nothing_queued(srv.inst)

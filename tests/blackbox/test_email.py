"""POST /deliver (EmailDeliverRequest) and POST /email/v1/deliver
(EmailRequest), replies as EmailDeliverResponse (conf/openapi.yaml;
msgspool-spool(5)): the template and the inline shape, recipients failing
alone, the request's 400s, keys and methods.  Attachments:
test_email_attachments.py; the headers of what is sent:
test_email_sent.py."""

import html as htmllib
import json

import pytest

from conftest import (FRONT, assert_allow, assert_nothing_queued,
                      assert_problem, assert_unauthorized)
from channels_support import TEXT, bad, bad_any, exactly_spooled, spooled
from email_routes import (ANN, BOB, CY, DELIVER, INLINE, V1, WELCOME_FROM,
                          att, ids, inline, item, msg, post, reply, welcome)


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

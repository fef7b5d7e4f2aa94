"""POST /email/v1/attachments, the deprecated upload, and the use of its
attachmentId in an email (conf/openapi.yaml; msgspool.conf(5) limits)."""

import re

import pytest

from conftest import (assert_allow, assert_nothing_queued, assert_problem,
                      assert_unauthorized)
from channels_support import (PDF, PNG, TEXT, b64, bad, due_now,
                              exactly_spooled, ok_json, spooled, unb64)

PATH = "/email/v1/attachments"
ANN, BOB = "ann@example.com", "bob@example.org"


def upload(srv, name, data=None, client="acme", content=None, **extra):
    body = {"attachmentName": name,
            "content": content if content is not None else b64(data)}
    body.update(extra)
    return srv.post_json(PATH, body, client=client)


def uploaded(r, name, data, ctype):
    out = ok_json(r, 201)
    assert set(out) == {"attachmentId", "attachmentName", "contentType",
                        "size"}, out
    aid = out["attachmentId"]
    assert isinstance(aid, str) and aid, out
    # URL-safe, usable as an id: [A-Za-z0-9_.-], not starting with '.'.
    assert all(c.isalnum() and c.isascii() or c in "_.-" for c in aid), aid
    assert not aid.startswith("."), aid
    assert out["attachmentName"] == name, out
    assert out["contentType"] == ctype, out
    assert out["size"] == len(data) and type(out["size"]) is int, out
    assert r.headers.get("Deprecation") == "true", r.headers
    assert re.match(r"^\s*<[^>]+>\s*;", r.headers.get("Link", "")), \
        r.headers
    return aid


def uploads_of(inst, client):
    d = inst.spool / "uploads" / client
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def email(srv, attachments, client="acme", level="request"):
    body = {"html": "<p>See the attachment, {{name}}.</p>",
            "subject": "Your document", "from": "docs@acme.example"}
    if level == "request":
        body["payload"] = [{"recipient": ANN, "fields": {"name": "Ann"}}]
        body["attachments"] = attachments
    else:
        body["payload"] = [{"recipient": ANN, "fields": {"name": "Ann"},
                            "attachments": attachments}]
    return srv.post_json("/deliver", body, client=client)


def sent_ok(srv, r, client="acme"):
    out = ok_json(r, 200)
    assert out["overallStatus"] == "success", out
    mid = out["recipients"][0]["messageId"]
    exactly_spooled(srv.inst, [mid])
    doc = spooled(srv.inst, "new", mid, "email", client=client)
    due_now(doc)
    return doc["message"]


# ------------------------------------------------------------- upload

@pytest.mark.parametrize("name,data,ctype", [
    ("terms.pdf", PDF, "application/pdf"),
    ("image.png", PNG, "image/png"),
    ("x.pdf", PNG, "image/png"),
    ("readme", TEXT, "text/plain"),
])
def test_upload_is_201_with_detected_type(srv, name, data, ctype):
    before = uploads_of(srv.inst, "acme")
    uploaded(upload(srv, name, data), name, data, ctype)
    # An upload is not a message: nothing queued.
    assert_nothing_queued(srv.inst)
    assert len(uploads_of(srv.inst, "acme")) == len(before) + 1


def test_upload_unpadded_and_wrapped_base64(srv):
    data = PDF[:-1]
    uploaded(upload(srv, "a.pdf", content=b64(data, pad=False, wrap=64)),
             "a.pdf", data, "application/pdf")


def test_uploads_get_distinct_ids(srv):
    a = uploaded(upload(srv, "a.pdf", PDF), "a.pdf", PDF, "application/pdf")
    b = uploaded(upload(srv, "a.pdf", PDF), "a.pdf", PDF, "application/pdf")
    assert a != b


# ------------------------------------------------- using the upload

@pytest.mark.parametrize("level", ["request", "item"])
def test_uploaded_id_used_in_an_email(srv, level):
    aid = uploaded(upload(srv, "terms.pdf", PDF), "terms.pdf", PDF,
                   "application/pdf")
    m = sent_ok(srv, email(srv, [{"attachmentName": "x.pdf",
                                  "attachmentId": aid}], level=level))
    (a,) = m["attachments"]
    assert a["name"] == "x.pdf", a
    assert a["contentType"] == "application/pdf", a
    assert a["size"] == len(PDF), a
    assert unb64(a["content"]) == PDF, a


def test_uploaded_id_beside_inline_attachment(srv):
    aid = uploaded(upload(srv, "p.png", PNG), "p.png", PNG, "image/png")
    m = sent_ok(srv, email(srv, [
        {"attachmentName": "inline.txt", "content": b64(TEXT)},
        {"attachmentName": "pic.png", "attachmentId": aid}]))
    assert [(a["name"], a["contentType"]) for a in m["attachments"]] == \
        [("inline.txt", "text/plain"), ("pic.png", "image/png")]
    assert unb64(m["attachments"][1]["content"]) == PNG


def test_uploaded_id_used_twice(srv):
    aid = uploaded(upload(srv, "t.pdf", PDF), "t.pdf", PDF,
                   "application/pdf")
    for _ in range(2):
        srv.inst.reset()
        m = sent_ok(srv, email(srv, [{"attachmentName": "x.pdf",
                                      "attachmentId": aid}]))
        assert unb64(m["attachments"][0]["content"]) == PDF


def test_other_client_cannot_use_the_id(srv):
    aid = uploaded(upload(srv, "terms.pdf", PDF), "terms.pdf", PDF,
                   "application/pdf")
    r = email(srv, [{"attachmentName": "x.pdf", "attachmentId": aid}],
              client="other")
    p = assert_problem(r, 400)
    assert any(k.startswith("attachments[0]") for k in p["errors"]), p
    assert_nothing_queued(srv.inst)


def test_other_client_cannot_use_the_id_in_an_item(srv):
    aid = uploaded(upload(srv, "terms.pdf", PDF), "terms.pdf", PDF,
                   "application/pdf")
    r = email(srv, [{"attachmentName": "x.pdf", "attachmentId": aid}],
              client="mailer", level="item")
    p = assert_problem(r, 400)
    assert any(k.startswith("payload[0].attachments[0]")
               for k in p["errors"]), p
    assert_nothing_queued(srv.inst)


def test_unknown_attachment_id_is_400(srv):
    r = email(srv, [{"attachmentName": "x.pdf",
                     "attachmentId": "01M840Q7H2P5C7SYTHCZ984TVK"}])
    p = assert_problem(r, 400)
    assert any(k.startswith("attachments[0]") for k in p["errors"]), p
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("aid", ["../acme/x", "/etc/passwd", ".hidden", ""])
def test_attachment_id_that_is_a_path_is_400(srv, aid):
    bad(email(srv, [{"attachmentName": "x.pdf", "attachmentId": aid}]), 400,
        "attachments[0].attachmentId", srv.inst)


def test_content_and_attachment_id_together_is_400(srv):
    aid = uploaded(upload(srv, "t.pdf", PDF), "t.pdf", PDF,
                   "application/pdf")
    r = email(srv, [{"attachmentName": "x.pdf", "attachmentId": aid,
                     "content": b64(PDF)}])
    p = assert_problem(r, 400)
    assert any(k.startswith("attachments[0]") for k in p["errors"]), p
    assert_nothing_queued(srv.inst)


# ------------------------------------------------------- bad uploads

@pytest.mark.parametrize("content", ["!!!!", "QUJDR", "QQ===", "QQ=Q",
                                     "Q===", "%PDF-1.4"])
def test_upload_bad_base64_is_400(srv, content):
    before = uploads_of(srv.inst, "acme")
    bad(upload(srv, "a.pdf", content=content), 400, "content", srv.inst)
    assert uploads_of(srv.inst, "acme") == before


def test_upload_missing_attachment_name_is_400(srv):
    before = uploads_of(srv.inst, "acme")
    r = srv.post_json(PATH, {"content": b64(PDF)})
    bad(r, 400, "attachmentName", srv.inst)
    assert uploads_of(srv.inst, "acme") == before


def test_upload_missing_content_is_400(srv):
    bad(srv.post_json(PATH, {"attachmentName": "a.pdf"}), 400, "content",
        srv.inst)


@pytest.mark.parametrize("name", ["a/b.pdf", "..\\a.pdf", "a\r\nb.pdf",
                                  "a\nb", "", ".."])
def test_upload_bad_attachment_name_is_400(srv, name):
    before = uploads_of(srv.inst, "acme")
    bad(upload(srv, name, PDF), 400, "attachmentName", srv.inst)
    assert uploads_of(srv.inst, "acme") == before


def test_upload_content_not_a_string_is_400(srv):
    bad(srv.post_json(PATH, {"attachmentName": "a.pdf", "content": [1]}),
        400, "content", srv.inst)


def test_upload_unknown_field_is_400(srv):
    bad(upload(srv, "a.pdf", PDF, contentType="application/pdf"), 400,
        "contentType", srv.inst)


# ------------------------------------------------------ auth, method

@pytest.mark.parametrize("client", ["smsonly", "gone"])
def test_upload_without_email_scope_is_403(srv, client):
    assert_problem(upload(srv, "a.pdf", PDF, client=client), 403)
    assert uploads_of(srv.inst, client) == []


def test_upload_without_key_is_401(srv):
    assert_unauthorized(upload(srv, "a.pdf", PDF, client=None))


def test_upload_by_mailer_is_its_own(srv):
    aid = uploaded(upload(srv, "m.pdf", PDF, client="mailer"), "m.pdf", PDF,
                   "application/pdf")
    m = sent_ok(srv, email(srv, [{"attachmentName": "m.pdf",
                                  "attachmentId": aid}], client="mailer"),
                client="mailer")
    assert unb64(m["attachments"][0]["content"]) == PDF
    srv.inst.reset()
    r = email(srv, [{"attachmentName": "m.pdf", "attachmentId": aid}])
    assert_problem(r, 400)
    assert_nothing_queued(srv.inst)


def test_get_is_405(srv):
    assert_allow(srv.get(PATH), "POST")

"""The email routes, POST /deliver (EmailDeliverRequest) and POST
/email/v1/deliver (EmailRequest; conf/openapi.yaml): request bodies, their
replies checked as EmailDeliverResponse, the message a recipient's file
holds, and what was sent (msgspool show, the .eml of the file provider).
Used by test_email.py, test_email_attachments.py and test_email_sent.py."""

import email
import email.policy
import json

from conftest import assert_id
from channels_support import b64, due_now, ok_json, spooled

DELIVER = "/deliver"
V1 = "/email/v1/deliver"
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


def attachments_of(m):
    """[(filename, bytes)] of a parsed message's attachments."""
    return [(a.get_filename(), a.get_payload(decode=True))
            for a in m.iter_attachments()]

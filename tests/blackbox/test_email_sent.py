"""What the email routes send (conf/openapi.yaml; msgspool-spool(5)): the
headers of the .eml of the file provider and of SMTP, addresses and From
as written, attachment names round trip (issue 9, defect 11)."""

import email
import email.header
import email.policy

import pytest

from channels_support import PDF, TEXT, bad, exactly_spooled
from doubles.smtp import SmtpSink
from email_routes import (ANN, BOB, CY, att, attachments_of, eml, eml_bytes,
                          ids, item, post, reply, welcome)


# ------------------------------------------- what is sent: the headers


def legacy_names(raw):
    """The name= parameters of the attachments' Content-Type, RFC 2047
    words decoded: what mail programs without RFC 2231 read."""
    m = email.message_from_bytes(raw, policy=email.policy.compat32)
    return [str(email.header.make_header(email.header.decode_header(
        part.get_param("name")))) for part in m.walk()
        if str(part.get("Content-Disposition", "")).startswith("attachment")]


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
    # The smtp provider sends what spooler/providers/message.c builds, the
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
    # One builder for both providers (spooler/providers/message.c): what a relay
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

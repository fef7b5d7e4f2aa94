"""Attachments of POST /deliver and POST /email/v1/deliver
(EmailDeliverAttachment; conf/openapi.yaml; msgspool-spool(5)): their
encodings, types, levels, names and limits, and each stored once however
many recipients share it (issue 9, defect 6)."""

import json
import os
import random
import shutil
import time

import pytest

from conftest import assert_nothing_queued, assert_problem
from channels_support import (PDF, PNG, TEXT, b64, bad, exactly_spooled,
                              ok_json, unb64)
from email_routes import (ANN, BOB, CY, DELIVER, att, attachments_of, eml,
                          ids, inline, item, msg, post, reply, show,
                          welcome)


MIB = 1024 * 1024

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

"""
Helpers shared by test_ott.py, test_voice.py, test_email*.py (and
email_routes.py) and test_attachments_upload.py: reply and spool-file checks for every
channel, extra instance data (OTT templates, an [ott.N] section), and
small real files (PDF, PNG) for attachment type detection.
"""

import base64
import datetime
import json
import stat
import struct
import zlib

import pytest

from conftest import (assert_nothing_queued, assert_problem,
                      id_time, parse_time, utcnow)

# ------------------------------------------------------------ replies


def ok_json(r, status):
    """r has this status and an application/json body; returns it."""
    assert r.status_code == status, (
        f"expected {status}, got {r.status_code}: {r.text[:1000]}")
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip().lower() == "application/json", (
        f"Content-Type {ctype!r}")
    return r.json()


def bad(r, status, path, inst):
    """An RFC 9457 problem with this status naming path in errors, and
    nothing queued anywhere."""
    p = assert_problem(r, status, path)
    assert_nothing_queued(inst)
    return p


def bad_any(r, status, paths, inst):
    """Like bad(), but any one of paths may be the key named."""
    p = assert_problem(r, status)
    errs = p.get("errors") or {}
    assert any(k in errs for k in paths), (
        f"none of {paths} in errors of {p}")
    assert_nothing_queued(inst)
    return p


# -------------------------------------------------------------- spool


def spooled(inst, state, msgid, channel, client="acme"):
    """The spool file state/msgid.json: 0640 at most, JSON, the documented
    members, this channel and client.  Returns the document."""
    p = inst.path(state, msgid)
    assert p.is_file(), (f"no {state}/{msgid}.json; spool {inst.counts()}: "
                         f"{ {s: inst.files(s) for s in ('new', 'deferred')} }")
    mode = stat.S_IMODE(p.stat().st_mode)
    # The writer's, readable by its group at most (msgspool-spool(5)).
    assert mode & 0o7137 == 0 and mode & 0o600 == 0o600, \
        f"{p} has mode {oct(mode)}"
    doc = json.loads(p.read_bytes())
    assert isinstance(doc, dict), doc
    for k in ("version", "id", "channel", "client", "created", "attempts",
              "nextAttempt", "lastError", "providerReply", "message"):
        assert k in doc, f"{k!r} missing from {doc}"
    assert doc["version"] == 1, doc
    assert doc["id"] == msgid, doc
    assert doc["channel"] == channel, doc
    assert doc["client"] == client, doc
    assert doc["attempts"] == 0, doc
    assert doc["lastError"] is None, doc
    created = parse_time(doc["created"])
    assert abs((created - id_time(msgid)).total_seconds()) < 5, doc
    parse_time(doc["nextAttempt"])
    assert isinstance(doc["message"], dict), doc
    return doc


def exactly_spooled(inst, ids, state="new"):
    """state/ holds exactly the files ID.json for ids; tmp/ is empty and
    no other waiting state holds anything."""
    assert inst.files(state) == sorted(f"{i}.json" for i in ids), (
        f"{state}/ holds {inst.files(state)}, expected {sorted(ids)}")
    assert inst.files("tmp") == [], inst.files("tmp")
    other = "deferred" if state == "new" else "new"
    assert inst.files(other) == [], f"{other}/ holds {inst.files(other)}"


def due_now(doc):
    assert parse_time(doc["nextAttempt"]) <= utcnow() + \
        datetime.timedelta(seconds=2), doc


# ---------------------------------------------------------- test data

# A small but real PDF (libmagic needs only the "%PDF-" header, but this
# one is complete).
PDF = (b"%PDF-1.4\n"
       b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
       b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n"
       b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>\n"
       b"endobj\n"
       b"xref\n0 4\n0000000000 65535 f \n0000000009 00000 n \n"
       b"0000000058 00000 n \n0000000115 00000 n \n"
       b"trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n186\n%%EOF\n")

TEXT = b"Hello,\nthis is a plain text attachment.\nRegards\n"


def _png_chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))


def make_png(w=2, h=2):
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" +
            _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + _png_chunk(b"IDAT", zlib.compress(raw))
            + _png_chunk(b"IEND", b""))


PNG = make_png()


def b64(data, pad=True, wrap=None):
    """data as base64: without '=' padding when pad is False, with a
    line break every wrap characters when wrap is set."""
    s = base64.b64encode(data).decode()
    if not pad:
        s = s.rstrip("=")
    if wrap:
        s = "\r\n".join(s[i:i + wrap] for i in range(0, len(s), wrap))
    return s


def unb64(s):
    """Decode a spooled base64 string (padding optional, whitespace
    ignored)."""
    s = "".join(s.split())
    return base64.b64decode(s + "=" * (-len(s) % 4), validate=True)


# ------------------------------------------------------- OTT templates

def ott_template(name, params, language, provider, body):
    return (f"Name: {name}\nParameters: {params}\nLanguage: {language}\n"
            f"Provider-Template: {provider}\n\n{body}")


# Extra OTT templates written for the OTT tests:
# (client, id) -> (Name, Parameters, Language, Provider-Template, body)
EXTRA_OTT = {
    ("acme", "order_update"): (
        "Order update", 2, "de", "order_update_v2",
        "Hallo {{1}}, Ihre Bestellung {{2}} ist unterwegs.\n"),
    ("acme", "plain.v1"): (
        "Plain", 1, "en", "plain_text", "Note: {{1}}\n"),
    ("other", "other_otp"): (
        "Other OTP", 1, "en", "other_code", "Other code {{1}}\n"),
}


@pytest.fixture(scope="module")
def ott_templates(instance):
    """Write EXTRA_OTT into the shared instance for one module; remove
    what was written (and directories made) afterwards."""
    made_dirs, made_files = [], []
    for (client, tid), (name, n, lang, prov, body) in EXTRA_OTT.items():
        d = instance.templates / client / "ott"
        if not d.exists():
            d.mkdir(parents=True)
            made_dirs.append(d)
        p = d / f"{tid}.tmpl"
        assert not p.exists(), f"{p} exists already"
        p.write_text(ott_template(name, n, lang, prov, body))
        made_files.append(p)
    yield EXTRA_OTT
    for p in made_files:
        p.unlink(missing_ok=True)
    for d in reversed(made_dirs):
        try:
            d.rmdir()
        except OSError:
            pass


OTT_CONF = "\n[ott.1]\nprovider = file\n\n[ott.3]\nprovider = file\n"

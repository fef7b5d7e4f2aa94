"""GET /ping and GET /templates (conf/openapi.yaml; msgspool.conf(5))."""

import pytest

import json

from conftest import (ACME_TEMPLATES, INTL_NAME, LEGACY_MTIME, FRONT,
                      assert_allow, assert_problem, assert_unauthorized,
                      parse_time)


# --------------------------------------------------------------- ping

def _assert_pong(r):
    assert r.status_code == 200, r.text
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip() == "text/plain", ctype
    assert r.text.rstrip("\r\n") == "pong", repr(r.text)


def test_ping_without_key(srv):
    _assert_pong(srv.get("/ping", client=None))


@pytest.mark.parametrize("key", ["garbage", "", "x" * 300])
def test_ping_ignores_a_bad_key(srv, key):
    _assert_pong(srv.get("/ping", api_key=key))


def test_ping_with_valid_and_disabled_keys(srv):
    _assert_pong(srv.get("/ping", client="acme"))
    _assert_pong(srv.get("/ping", client="gone"))


def test_ping_with_query_string(srv):
    _assert_pong(srv.get("/ping?probe=1", client=None))


def test_ping_post_is_405(srv):
    r = srv.post_raw("/ping", b"", client=None)
    assert_allow(r, "GET, HEAD")


def test_ping_put_is_405(srv):
    r = srv.request("PUT", "/ping", client=None, data=b"x")
    assert_allow(r, "GET, HEAD")


def test_cgi_bin_is_not_served_directly(srv):
    if FRONT == "busybox":
        pytest.skip("busybox httpd runs CGI programs only at /cgi-bin/NAME "
                    "and cannot rewrite the routes to them: /cgi-bin/ping "
                    "is how it serves /ping (conf/busybox-httpd.conf)")
    r = srv.get("/cgi-bin/ping", client=None)
    assert r.status_code == 404


# ---------------------------------------------------------- templates

def _expected_acme():
    out = []
    for tid, (name, subj, frm, tags, created) in ACME_TEMPLATES.items():
        out.append({"id": tid, "name": name, "subject": subj,
                    "fromAddress": frm, "tags": tags,
                    "createdDate": created or LEGACY_MTIME})
    return sorted(out, key=lambda t: parse_time(t["createdDate"]))


def _assert_json_array(r):
    assert r.status_code == 200, r.text
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip() == "application/json", ctype
    body = r.json()
    assert isinstance(body, list), body
    return body


def test_templates_lists_own_email_templates_sorted(srv):
    got = _assert_json_array(srv.get("/templates", client="acme"))
    want = _expected_acme()
    assert [t["id"] for t in got] == [t["id"] for t in want], got
    for g, w in zip(got, want):
        assert set(g) >= {"id", "name", "subject", "fromAddress", "tags",
                          "createdDate"}, g
        for k in ("id", "name", "subject", "fromAddress", "tags"):
            assert g[k] == w[k], (k, g, w)
        assert parse_time(g["createdDate"]) == parse_time(w["createdDate"]), \
            (g, w)


def test_templates_created_defaults_to_mtime(srv):
    got = _assert_json_array(srv.get("/templates", client="acme"))
    legacy = [t for t in got if t["id"] == "legacy_1"]
    assert len(legacy) == 1, got
    assert parse_time(legacy[0]["createdDate"]) == parse_time(LEGACY_MTIME)


def test_templates_created_dates_are_utc(srv):
    got = _assert_json_array(srv.get("/templates", client="acme"))
    for t in got:
        assert parse_time(t["createdDate"]).utcoffset().total_seconds() == 0


def test_templates_skip_hidden_non_tmpl_and_ott(srv):
    got = _assert_json_array(srv.get("/templates", client="acme"))
    ids = {t["id"] for t in got}
    assert ".hidden" not in ids and "hidden" not in ids
    assert not any("notes" in i for i in ids)
    assert "otp" not in ids
    assert "bad id" not in ids
    assert len(got) == len(ACME_TEMPLATES), got


def test_templates_other_client_sees_only_its_own(srv):
    got = _assert_json_array(srv.get("/templates", client="other"))
    assert [t["id"] for t in got] == ["secret"], got
    acme = _assert_json_array(srv.get("/templates", client="acme"))
    assert "secret" not in {t["id"] for t in acme}


@pytest.mark.parametrize("client", ["mailer", "smsonly"])
def test_templates_client_without_templates_gets_empty_array(srv, client):
    # mailer has no directory at all, smsonly an empty one; any valid
    # key may list (even one without the email scope).
    assert _assert_json_array(srv.get("/templates", client=client)) == []


def test_templates_non_ascii_and_bad_encoding(srv):
    r = srv.get("/templates", client="intl")
    assert r.status_code == 200, r.text
    # Strict UTF-8 JSON, whatever the files hold.
    got = json.loads(r.content.decode("utf-8", "strict"))
    assert isinstance(got, list)
    byid = {t["id"]: t for t in got}
    assert "utf8" in byid, got
    assert byid["utf8"]["name"] == INTL_NAME
    assert byid["utf8"]["subject"] == "Grüße, {{name}}"
    assert byid["utf8"]["tags"] == "ä,ö"
    # The Latin-1 file is skipped or its text made valid; never raw bytes.
    assert set(byid) <= {"utf8", "latin1"}, got


def test_templates_very_long_key_is_401(srv):
    assert_unauthorized(srv.get("/templates", api_key="k" * 4000))


def test_templates_without_key_is_401(srv):
    assert_unauthorized(srv.get("/templates", client=None))


def test_templates_empty_key_is_401(srv):
    assert_unauthorized(srv.get("/templates", api_key=""))


def test_templates_unknown_key_is_401(srv):
    assert_unauthorized(srv.get("/templates", api_key="no-such-key"))


def test_templates_key_of_other_client_hash_is_401(srv):
    # The hash itself is not a key.
    import hashlib
    h = hashlib.sha256(srv.inst.keys["acme"].encode()).hexdigest()
    assert_unauthorized(srv.get("/templates", api_key=h))


def test_templates_disabled_key_is_403(srv):
    assert_problem(srv.get("/templates", client="gone"), 403)


def test_templates_post_is_405(srv):
    r = srv.post_json("/templates", {}, client="acme")
    assert_allow(r, "GET, HEAD")


def test_templates_created_with_an_offset_is_listed_in_utc(private):
    # A Created header in another offset (or with a fraction) is listed
    # as the same instant in UTC, and sorted by that instant.
    srv, inst = private()
    d = inst.templates / "smsonly" / "email"
    for tid, created in (("east", "2024-05-01T10:00:00+02:00"),
                         ("utc", "2024-05-01T08:30:00.250Z"),
                         ("west", "2024-05-01T02:00:00-05:00")):
        (d / f"{tid}.tmpl").write_text(
            f"Name: {tid}\nSubject: s\nFrom: a@acme.example\n"
            f"Created: {created}\n\n<p>x</p>\n")
    r = srv.get("/templates", client="smsonly")
    assert r.status_code == 200, r.text
    assert [(t["id"], t["createdDate"]) for t in r.json()] == [
        ("west", "2024-05-01T07:00:00Z"), ("east", "2024-05-01T08:00:00Z"),
        ("utc", "2024-05-01T08:30:00Z")], r.text

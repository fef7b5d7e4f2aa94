"""client=ID (msgspool.conf(5), KEYS FILE; conf/openapi.yaml, the
parameter client): a key with the admin scope acts for another client on
GET /messages, GET and DELETE /messages/{id} and the suppression routes;
with no client= it acts for its own client like any key; client= from a
key without admin is 403, and one that is no client id 400.  The scopes
metrics and admin are made by `msgspool key add` and are no part of "*".
Every reply is also checked against conf/openapi.yaml (openapi_check)."""

import urllib.parse

import pytest

from conftest import assert_problem, in_future
from openapi_check import check_reply

NUM = "+4915112345678"
ENC = "%2B4915112345678"
# Values of client= that are no text or hold a control character.
RAW = ("client=ac%01me", "client=%ff", "client=ac%00me")


@pytest.fixture
def keys(srv):
    """Keys added as an operator adds them: ops (admin), prom (metrics),
    both (every channel and admin).  The keys file is restored by the
    next test's reset."""
    made = {}
    for client, scopes in (("ops", "admin"), ("prom", "metrics"),
                           ("both", "*,admin")):
        cp = srv.inst.cli("key", "add", client, scopes)
        assert cp.returncode == 0, cp.err
        made[client] = cp.out.strip()
        assert len(made[client]) == 44, cp.out
    return made


def _req(srv, method, path, key, **kw):
    r = srv.request(method, path, api_key=key, **kw)
    check_reply(r)
    return r


def _queue(srv, client="acme", **kw):
    r = srv.sms(client=client, **kw)
    assert r.status_code in (200, 202), r.text
    return r.json()["smsId"]


def _ids(r):
    assert r.status_code == 200, r.text
    return [e["id"] for e in r.json()["messages"]]


def _forbidden(r):
    p = assert_problem(r, 403, "client")
    assert p["type"].endswith(":forbidden"), p
    assert "admin" in p["detail"], p
    return p


def test_key_add_writes_the_scopes_by_name(srv, keys):
    lines = [ln.split(":") for ln in
             srv.inst.keys_file.read_text().splitlines()
             if not ln.startswith("#")]
    scopes = {f[0]: f[2] for f in lines}
    assert scopes["ops"] == "admin" and scopes["prom"] == "metrics"
    assert scopes["both"] == "*,admin"
    cp = srv.inst.cli("key", "add", "x", "sms,admins")
    assert cp.returncode != 0 and "bad scopes" in cp.err, cp.err


def test_admin_lists_another_clients_messages(srv, keys):
    mine = [_queue(srv) for _ in range(3)]
    theirs = _queue(srv, client="other")
    # Its own client's list, like any key's: ops has sent nothing.
    assert _ids(_req(srv, "GET", "/messages", keys["ops"])) == []
    got = _ids(_req(srv, "GET", "/messages?client=acme", keys["ops"]))
    assert got == sorted(mine, reverse=True)
    got = _ids(_req(srv, "GET", "/messages?client=other", keys["ops"]))
    assert got == [theirs]
    # client= beside the filters, in any place, and in the Link of the
    # next page.
    r = _req(srv, "GET", "/messages?limit=2&client=acme&channel=sms",
             keys["ops"])
    assert _ids(r) == sorted(mine, reverse=True)[:2]
    link = r.headers["Link"]
    query = urllib.parse.parse_qs(
        urllib.parse.urlsplit(link.split(">")[0].lstrip("<")).query)
    assert query["client"] == ["acme"], link
    # A client with no messages (or no key at all) has an empty list.
    assert _ids(_req(srv, "GET", "/messages?client=nobody",
                     keys["ops"])) == []


def test_admin_reads_and_cancels_for_another_client(srv, keys):
    msgid = _queue(srv, sendAt=in_future(3600))
    # Not ops's own message: 404 without client=.
    assert_problem(_req(srv, "GET", "/messages/" + msgid, keys["ops"]), 404)
    assert_problem(_req(srv, "GET", f"/messages/{msgid}?client=other",
                        keys["ops"]), 404)
    r = _req(srv, "GET", f"/messages/{msgid}?client=acme", keys["ops"])
    assert r.status_code == 200, r.text
    assert r.json()["id"] == msgid and r.json()["status"] == "scheduled"
    r = _req(srv, "DELETE", f"/messages/{msgid}?client=acme", keys["ops"])
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    # acme sees it canceled, as if it had canceled it itself.
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200 and r.json()["status"] == "canceled"


def test_admin_keeps_another_clients_suppressions(srv, keys):
    path = f"/suppressions/sms/{ENC}?client=acme"
    r = _req(srv, "PUT", path, keys["ops"])
    assert r.status_code == 201, r.text
    assert r.json()["address"] == NUM and r.json()["source"] == "manual"
    # In acme's list, not in ops's.
    d = srv.inst.spool / "suppressions"
    assert (d / "acme" / "sms" / (NUM + ".json")).is_file()
    assert not (d / "ops").exists()
    r = srv.get(f"/suppressions/sms/{ENC}")
    assert r.status_code == 200, r.text
    r = _req(srv, "GET", "/suppressions", keys["ops"])
    assert r.status_code == 200 and r.json()["suppressions"] == []
    r = _req(srv, "GET", "/suppressions?channel=sms&client=acme",
             keys["ops"])
    assert [s["address"] for s in r.json()["suppressions"]] == [NUM]
    r = _req(srv, "GET", path, keys["ops"])
    assert r.status_code == 200 and r.json()["address"] == NUM
    assert_problem(_req(srv, "GET", f"/suppressions/sms/{ENC}",
                        keys["ops"]), 404)
    r = _req(srv, "DELETE", path, keys["ops"])
    assert r.status_code == 204, r.text
    assert_problem(srv.get(f"/suppressions/sms/{ENC}"), 404)


def test_client_without_admin_is_403_and_changes_nothing(srv, keys):
    msgid = _queue(srv, sendAt=in_future(3600))
    # acme's "*" is every channel, not admin; prom has metrics only.
    for key in (srv.inst.keys["acme"], keys["prom"]):
        for method, path in (
                ("GET", "/messages?client=acme"),
                ("GET", "/messages?status=queued&client=other"),
                ("GET", f"/messages/{msgid}?client=acme"),
                ("DELETE", f"/messages/{msgid}?client=acme"),
                ("GET", "/suppressions?client=acme"),
                ("GET", f"/suppressions/sms/{ENC}?client=acme"),
                ("PUT", f"/suppressions/sms/{ENC}?client=other"),
                ("DELETE", f"/suppressions/sms/{ENC}?client=acme"),
                # Even a bad id: the key may name no client at all.
                ("GET", "/messages?client=.bad")):
            _forbidden(_req(srv, method, path, key))
    r = srv.get("/messages/" + msgid)
    assert r.json()["status"] == "scheduled", r.text
    assert not (srv.inst.spool / "suppressions").exists() or \
        not any((srv.inst.spool / "suppressions").rglob("*.json"))


def test_bad_client_is_400_naming_it(srv, keys):
    msgid = _queue(srv)
    for query in RAW + ("client=", "client=.hidden", "client=a%2Fb",
                  "client=" + "a" * 65, "client=acme&client=other",
                  "client=ac+me"):
        for path in ("/messages", "/messages/" + msgid, "/suppressions",
                     f"/suppressions/sms/{ENC}"):
            r = _req(srv, "GET", f"{path}?{query}", keys["ops"])
            p = assert_problem(r, 400)
            # lighttpd refuses a query that does not decode itself.
            if query in RAW and p["type"].endswith(":invalid-request"):
                continue
            assert p["type"].endswith(":invalid-query"), (path, query, p)
            assert "client" in p["errors"], (path, query, p)


def test_admin_scope_is_no_channel(srv, keys):
    # admin alone sends nothing; "*,admin" sends and acts for others.
    r = _req(srv, "POST", "/sms/v1/deliver", keys["ops"],
             json={"recipient": NUM, "messageBody": "hi"},
             headers={"Content-Type": "application/json"})
    p = assert_problem(r, 403)
    assert "'sms' scope" in p["detail"], p
    r = srv.post_json("/sms/v1/deliver",
                      {"recipient": NUM, "messageBody": "hi"},
                      api_key=keys["both"])
    assert r.status_code in (200, 202), r.text
    own = r.json()["smsId"]
    assert _ids(_req(srv, "GET", "/messages", keys["both"])) == [own]
    _queue(srv)
    assert len(_ids(_req(srv, "GET", "/messages?client=acme",
                         keys["both"]))) == 1

"""Suppressions (conf/openapi.yaml, Suppression; msgspool-spool(5),
Suppressions): the /suppressions API with its percent-encoded addresses,
one client's list apart from another's, the refusal of a suppressed
recipient at acceptance, msgspoold failing a message whose recipient was
suppressed after it was queued, and msgspool suppress.  Every reply of
the program is also checked against conf/openapi.yaml (openapi_check)."""

import base64
import json

from conftest import FRONT, assert_allow, assert_nothing_queued, \
    assert_problem, assert_unauthorized, parse_time
from openapi_check import check_reply

NUM = "+4915112345678"
ENC = "%2B4915112345678"
# busybox httpd passes a PUT's body without CONTENT_LENGTH (its
# busybox-httpd.conf): a PUT with a body is 411 there.
PUT_BODY = FRONT != "busybox"


def _sup(srv, method, path, client="acme", **kw):
    r = srv.request(method, "/suppressions" + path, client=client, **kw)
    check_reply(r)
    return r


def _put(srv, channel, addr, client="acme", reason=None):
    kw = {}
    if reason is not None:
        kw["json"] = {"reason": reason}
    return _sup(srv, "PUT", f"/{channel}/{addr}", client=client, **kw)


def _list(srv, query="", client="acme"):
    r = _sup(srv, "GET", query, client=client)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"suppressions", "next"}, body
    return body


def _add(srv, channel, addr, client="acme"):
    """Suppress addr (as the lists write it) for client on channel."""
    cp = srv.inst.cli("suppress", "add", client, channel, addr)
    assert cp.returncode == 0, cp.err


def _files(srv, client, channel):
    d = srv.inst.spool / "suppressions" / client / channel
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_put_get_delete(srv):
    r = _sup(srv, "GET", f"/sms/{ENC}")
    assert_problem(r, 404)
    reason = "asked by phone" if PUT_BODY else None
    r = _put(srv, "sms", ENC, reason=reason)
    assert r.status_code == 201, r.text
    obj = r.json()
    assert set(obj) == {"channel", "address", "source", "reason",
                        "createdAt"}
    assert obj["channel"] == "sms" and obj["address"] == NUM
    assert obj["source"] == "manual" and obj["reason"] == reason
    parse_time(obj["createdAt"])
    # One JSON file, named by the address, in the client's list.
    assert _files(srv, "acme", "sms") == [NUM + ".json"]
    doc = json.loads((srv.inst.spool / "suppressions" / "acme" / "sms" /
                      (NUM + ".json")).read_text())
    assert doc["address"] == NUM and doc["source"] == "manual"
    # There already: 200, left as it was (its reason too).
    r = _put(srv, "sms", ENC, reason="again" if PUT_BODY else None)
    assert r.status_code == 200, r.text
    assert r.json() == obj
    r = _sup(srv, "GET", f"/sms/{ENC}")
    assert r.status_code == 200 and r.json() == obj
    # HEAD: the GET's status and headers, no body.
    r = srv.request("HEAD", f"/suppressions/sms/{ENC}")
    assert r.status_code == 200 and r.content == b""
    r = _sup(srv, "DELETE", f"/sms/{ENC}")
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert _files(srv, "acme", "sms") == []
    assert_problem(_sup(srv, "DELETE", f"/sms/{ENC}"), 404)
    assert_problem(_sup(srv, "GET", f"/sms/{ENC}"), 404)


def test_put_with_and_without_a_body(srv):
    r = _put(srv, "voice", ENC)
    assert r.status_code == 201, r.text
    assert r.json()["reason"] is None and r.json()["channel"] == "voice"
    r = _sup(srv, "PUT", f"/ott/{NUM[1:]}", json={"reason": None})
    if not PUT_BODY:
        assert_problem(r, 411)
        return
    assert r.status_code == 201, r.text
    assert r.json()["address"] == NUM[1:] and r.json()["reason"] is None
    # An empty body is none; {} has no reason either.
    r = _sup(srv, "PUT", f"/sms/{ENC}", data=b"",
             headers={"Content-Type": "application/json"})
    assert r.status_code == 201 and r.json()["reason"] is None, r.text
    r = _sup(srv, "PUT", f"/email/ann%40example.com", json={})
    assert r.status_code == 201 and r.json()["reason"] is None, r.text
    r = _sup(srv, "PUT", f"/email/bob%40example.com",
             json={"reason": "Grüße, ☃"})
    assert r.status_code == 201 and r.json()["reason"] == "Grüße, ☃"


def test_encoded_addresses_and_email_case(srv):
    # %40 for '@'; the domain's case does not count, the local part's does.
    r = _put(srv, "email", "Ann%40Example.COM")
    assert r.status_code == 201, r.text
    assert r.json()["address"] == "Ann@example.com"
    assert _files(srv, "acme", "email") == ["Ann@example.com.json"]
    r = _sup(srv, "GET", "/email/Ann%40example.com")
    assert r.status_code == 200 and r.json()["address"] == "Ann@example.com"
    r = _put(srv, "email", "Ann%40EXAMPLE.com")
    assert r.status_code == 200, r.text
    assert_problem(_sup(srv, "GET", "/email/ann%40example.com"), 404)
    # A '+' written as it is in the path is a '+' too.
    r = _put(srv, "sms", NUM)
    assert r.status_code == 201, r.text
    assert _sup(srv, "GET", f"/sms/{ENC}").status_code == 200
    # ott: digits; a '+' before them is dropped.
    r = _put(srv, "ott", ENC)
    assert r.status_code == 201 and r.json()["address"] == NUM[1:]
    assert _files(srv, "acme", "ott") == [NUM[1:] + ".json"]


def test_bad_channel_address_body(srv):
    assert_problem(_sup(srv, "GET", f"/fax/{ENC}"), 400, "channel")
    assert_problem(_put(srv, "fax", ENC), 400, "channel")
    assert_problem(_put(srv, "sms", "4915112345678"), 400, "address")
    assert_problem(_put(srv, "sms", "%2B49"), 400, "address")
    assert_problem(_sup(srv, "DELETE", "/email/nobody"), 400, "address")
    assert_problem(_put(srv, "ott", "12ab5678"), 400, "address")
    if PUT_BODY:
        _bad_bodies(srv)
    # Nothing was written for any of them.
    assert not (srv.inst.spool / "suppressions").exists() or \
        list((srv.inst.spool / "suppressions").rglob("*.json")) == []


def _bad_bodies(srv):
    r = _sup(srv, "PUT", f"/sms/{ENC}", json={"reason": 5})
    assert_problem(r, 400, "reason")
    r = _sup(srv, "PUT", f"/sms/{ENC}", json={"why": "x"})
    assert_problem(r, 400, "why")
    r = _sup(srv, "PUT", f"/sms/{ENC}", json={"reason": "x" * 1001})
    assert_problem(r, 400, "reason")
    r = _sup(srv, "PUT", f"/sms/{ENC}", data=b"{",
             headers={"Content-Type": "application/json"})
    assert_problem(r, 400)
    r = _sup(srv, "PUT", f"/sms/{ENC}", data=b"reason=x",
             headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_problem(r, 415)
    r = _sup(srv, "PUT", f"/sms/{ENC}", data=b"[]",
             headers={"Content-Type": "application/json"})
    assert_problem(r, 400, "")


def test_methods_and_keys(srv):
    r = _sup(srv, "POST", f"/sms/{ENC}", json={})
    assert_problem(r, 405)
    assert_allow(r, "GET, HEAD, PUT, DELETE")
    r = _sup(srv, "DELETE", "")
    assert_problem(r, 405)
    assert_allow(r, "GET, HEAD")
    assert_unauthorized(_sup(srv, "GET", "", client=None))
    assert_unauthorized(_sup(srv, "PUT", f"/sms/{ENC}", client=None))
    assert_problem(_sup(srv, "GET", "", client="gone"), 403)
    # Any valid key, whatever its scopes.
    r = _put(srv, "sms", ENC, client="mailer")
    assert r.status_code == 201, r.text


def test_one_client_never_sees_or_changes_anothers(srv):
    assert _put(srv, "sms", ENC, client="other").status_code == 201
    assert _list(srv)["suppressions"] == []
    assert_problem(_sup(srv, "GET", f"/sms/{ENC}"), 404)
    assert_problem(_sup(srv, "DELETE", f"/sms/{ENC}"), 404)
    # acme's own is a new one; other's stays as it was.
    r = _put(srv, "sms", ENC, reason="mine" if PUT_BODY else None)
    assert r.status_code == 201, r.text
    got = _sup(srv, "GET", f"/sms/{ENC}", client="other").json()
    assert got["createdAt"] and got["reason"] is None
    assert _sup(srv, "DELETE", f"/sms/{ENC}").status_code == 204
    assert _sup(srv, "GET", f"/sms/{ENC}",
                client="other").status_code == 200
    assert [s["address"] for s in
            _list(srv, client="other")["suppressions"]] == [NUM]


def test_list_newest_first_in_pages(srv):
    nums = ["+49151000000%02d" % i for i in range(7)]
    for n in nums:
        assert _put(srv, "sms", n.replace("+", "%2B")).status_code == 201
    assert _put(srv, "email", "ann%40example.com").status_code == 201
    body = _list(srv)
    assert [s["address"] for s in body["suppressions"]] == \
        ["ann@example.com"] + nums[::-1]
    assert body["next"] is None
    # Three at a time, the next page after the last one's cursor.
    seen, query = [], "?channel=sms&limit=3"
    while True:
        body = _list(srv, query)
        assert len(body["suppressions"]) <= 3
        seen += [s["address"] for s in body["suppressions"]]
        assert all(s["channel"] == "sms" for s in body["suppressions"])
        if body["next"] is None:
            break
        query = "?channel=sms&limit=3&after=" + body["next"]
    assert seen == nums[::-1]
    body = _list(srv, "?channel=email")
    assert [s["address"] for s in body["suppressions"]] == \
        ["ann@example.com"]
    # A suppression lifted meanwhile leaves the cursor good.
    first = _list(srv, "?channel=sms&limit=2")
    assert _sup(srv, "DELETE", "/sms/" + nums[4].replace("+", "%2B")
                ).status_code == 204
    body = _list(srv, "?channel=sms&limit=2&after=" + first["next"])
    assert [s["address"] for s in body["suppressions"]] == \
        [nums[3], nums[2]]
    # HEAD of the list.
    r = srv.request("HEAD", "/suppressions")
    assert r.status_code == 200 and r.content == b""


def test_list_bad_parameters(srv):
    for q, name in (("?limit=0", "limit"), ("?limit=501", "limit"),
                    ("?limit=x", "limit"), ("?limit=", "limit"),
                    ("?channel=fax", "channel"), ("?after=zzz", "after"),
                    ("?sort=asc", "sort")):
        assert_problem(_sup(srv, "GET", q), 400, name)
    assert _list(srv, "?limit=500&channel=voice")["suppressions"] == []


def test_cli_suppress(srv):
    inst = srv.inst
    cp = inst.cli("suppress", "add", "acme", "sms", NUM)
    assert cp.returncode == 0 and cp.err == "", cp.err
    assert cp.out == f"suppressed {NUM} on sms for acme\n"
    r = _sup(srv, "GET", f"/sms/{ENC}")
    assert r.status_code == 200 and r.json()["source"] == "manual"
    cp = inst.cli("suppress", "add", "acme", "sms", NUM)
    assert cp.returncode == 0
    assert cp.out == f"{NUM} was suppressed on sms for acme already " \
        "(manual)\n"
    assert inst.cli("suppress", "add", "other", "email",
                    "Bob@Example.COM").returncode == 0
    assert _put(srv, "voice", ENC, client="other").status_code == 201
    cp = inst.cli("suppress", "list")
    assert cp.returncode == 0, cp.err
    lines = cp.out.splitlines()
    assert lines[0].split() == ["CLIENT", "CHANNEL", "ADDRESS", "SOURCE",
                                "CREATED", "REASON"]
    rows = [ln.split() for ln in lines[1:-1]]
    # Newest first, every client's.
    assert [r[:4] for r in rows] == [
        ["other", "voice", NUM, "manual"],
        ["other", "email", "Bob@example.com", "manual"],
        ["acme", "sms", NUM, "manual"]]
    parse_time(rows[0][4])
    assert lines[-1] == "3 suppressions"
    cp = inst.cli("suppress", "list", "acme")
    assert [ln.split()[:3] for ln in cp.out.splitlines()[1:-1]] == \
        [["acme", "sms", NUM]]
    assert cp.out.splitlines()[-1] == "1 suppression"
    cp = inst.cli("suppress", "remove", "acme", "sms", NUM)
    assert cp.returncode == 0 and cp.out == f"removed {NUM} on sms for acme\n"
    assert_problem(_sup(srv, "GET", f"/sms/{ENC}"), 404)
    cp = inst.cli("suppress", "remove", "acme", "sms", NUM)
    assert cp.returncode == 1 and cp.out == ""
    assert cp.err == f"msgspool: suppress remove: {NUM} is not suppressed " \
        "on sms for acme\n"
    # Usage errors: one line on stderr, exit 1, nothing written.
    for args in (("add", "acme", "fax", NUM), ("add", "acme", "sms", "123"),
                 ("add", "../x", "sms", NUM), ("remove", "acme", "email",
                                                "nobody"),
                 ("list", ".x"), ("frob",), ("add", "acme", "sms")):
        cp = inst.cli("suppress", *args)
        assert cp.returncode == 1 and cp.out == "", (args, cp.out)
        assert cp.err.count("\n") == 1 and cp.err.startswith(
            ("msgspool: suppress", "usage: msgspool suppress")), cp.err
    assert sorted(p.name for p in (inst.spool / "suppressions").iterdir()) \
        == ["acme", "other"]
    assert inst.cli("suppress").returncode == 1


# ---------------------------------------------------------- acceptance

def test_a_suppressed_sms_is_refused_422(srv):
    _add(srv, "sms", NUM)
    r = srv.sms(recipient=NUM)
    check_reply(r)
    p = assert_problem(r, 422, "recipient")
    assert p["type"] == "urn:msgspool:problem:suppressed"
    assert p["errors"] == {"recipient": ["suppressed (manual)"]}
    assert_nothing_queued(srv.inst)
    # Scheduled or not, the same; another number, or another client, goes.
    r = srv.sms(recipient=NUM, sendAt="2099-01-01T00:00:00Z")
    assert_problem(r, 422, "recipient")
    assert_nothing_queued(srv.inst)
    assert srv.sms(recipient="+4915112345679").status_code == 202
    assert srv.sms(recipient=NUM, client="other").status_code == 202
    # Lifted: it goes again.
    assert _sup(srv, "DELETE", f"/sms/{ENC}").status_code == 204
    assert srv.sms(recipient=NUM).status_code == 202


def test_a_suppressed_call_is_refused_422(srv):
    _add(srv, "voice", NUM)
    body = {"recipient": NUM, "message": "hello"}
    r = srv.post_json("/voice/v1/deliver", body)
    check_reply(r)
    assert assert_problem(r, 422, "recipient")["errors"] == \
        {"recipient": ["suppressed (manual)"]}
    assert_nothing_queued(srv.inst)
    # The list is the channel's: an SMS to the number goes.
    assert srv.sms(recipient=NUM).status_code == 202


def test_a_batch_entry_alone_fails(srv):
    _add(srv, "sms", NUM)
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": "+4915112345679", "messageBody": "a"},
        {"recipient": NUM, "messageBody": "b",
         "sendAt": "2099-01-01T00:00:00Z"},
        {"recipient": "4915", "messageBody": "c"},
        {"recipient": "+4915112345670", "messageBody": "d"}]})
    check_reply(r)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [e["status"] for e in out] == ["Queued", "error", "error",
                                          "Queued"]
    assert out[1] == {"recipient": NUM, "smsId": None, "status": "error",
                      "error": "recipient: suppressed (manual)"}
    assert sorted(srv.inst.ids("new")) == sorted([out[0]["smsId"],
                                                  out[3]["smsId"]])
    assert srv.inst.ids("deferred") == []
    # Every entry suppressed: a 200 of errors, nothing queued.
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
        {"recipient": NUM, "messageBody": "b"}]})
    assert r.status_code == 200 and r.json()[0]["status"] == "error"


def test_an_ott_entry_alone_fails(srv):
    srv.inst.write_conf("\n[ott.1]\nprovider = file\n")
    try:
        _add(srv, "ott", NUM[1:])
        entry = {"templateID": "otp", "templateParameters": ["1"],
                 "channelType": 1}
        r = srv.post_json("/ott/v1/deliver", {"payload": [
            dict(entry, recipient=NUM[1:]),
            dict(entry, recipient="4915112345679")]})
        check_reply(r)
        out = r.json()
        assert [e["status"] for e in out] == ["error", "queued"], out
        assert out[0]["error"] == "recipient: suppressed (manual)"
        assert out[0]["messageId"] is None
        assert srv.inst.ids("new") == [out[1]["messageId"]]
    finally:
        srv.inst.write_conf()


def test_a_campaign_call_alone_fails(srv):
    _add(srv, "voice", NUM)
    r = srv.post_json("/voice/v1/deliver", {
        "campaignName": "spring", "message": "hello",
        "recipients": [NUM, "+4915112345679"]})
    check_reply(r)
    assert r.status_code == 202, r.text
    out = r.json()
    assert (out["accepted"], out["rejected"]) == (1, 1)
    assert out["calls"][0]["status"] == "error"
    assert out["calls"][0]["callId"] is None
    assert out["calls"][0]["error"] == "recipient: suppressed (manual)"
    assert srv.inst.ids("new") == [out["calls"][1]["callId"]]


def test_an_email_recipient_alone_fails(srv):
    # The domain's case does not count.
    _add(srv, "email", "ann@EXAMPLE.com")
    r = srv.post_json("/email/v1/deliver", {
        "subject": "Hi", "html": "<p>Hi</p>", "from": "news@acme.example",
        "recipients": [{"to": "ann@Example.com"},
                       {"to": "bob@example.com"}]})
    check_reply(r)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["overallStatus"] == "partial"
    first, second = out["recipients"]
    assert first["status"] == "error" and first["messageId"] is None
    assert first["error"] == "recipient: suppressed (manual)"
    assert second["status"] == "queued"
    assert srv.inst.ids("new") == [second["messageId"]]


def test_test_keys_obey_suppressions(srv):
    cp = srv.inst.cli("key", "add", "sandbox", "*", "--test")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    try:
        _add(srv, "sms", NUM, client="sandbox")
        r = srv.post_json("/sms/v1/deliver", {"recipient": NUM,
                                              "messageBody": "test"},
                          client=None, api_key=key)
        assert_problem(r, 422, "recipient")
        assert_nothing_queued(srv.inst)
    finally:
        srv.inst.write_keys()


# ------------------------------------------------------------- msgspoold

def _status(srv, mid):
    r = srv.get("/messages/" + mid)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_message_queued_before_is_failed_not_sent(srv):
    secret = "whsec_" + base64.b64encode(b"s" * 32).decode()
    # A receiver nobody listens at: the event waits in events/.
    srv.inst.write_conf("\n[client.acme]\nwebhook-url = "
                        f"http://127.0.0.1:9/hook\nwebhook-secret = {secret}\n")
    try:
        mid = srv.sms(recipient=NUM).json()["smsId"]
        later = srv.sms(recipient=NUM, sendAt="2099-01-01T00:00:00Z"
                        ).json()["smsId"]
        other = srv.sms(recipient="+4915112345679").json()["smsId"]
        assert _put(srv, "sms", ENC).status_code == 201
        srv.inst.daemon_once()
        st = _status(srv, mid)
        assert st["status"] == "failed", st
        assert st["error"] == {"code": "suppressed",
                               "message": "the recipient is suppressed "
                                          "(manual)"}
        assert st["provider"] is None and st["sentAt"] is None
        assert [e["status"] for e in st["events"]] == ["queued", "failed"]
        assert srv.inst.where(mid) == ["failed"]
        # Never handed to a provider: the file provider wrote nothing.
        assert srv.inst.outbox_for(mid) == []
        assert _status(srv, other)["status"] == "sent"
        assert srv.inst.outbox_for(other) != []
        # The client's webhook: message.failed, as for any failure.
        events = [json.loads(p.read_text()) for p in
                  (srv.inst.spool / "events").iterdir()]
        failed = [e for e in events if e["data"]["id"] == mid]
        assert [e["type"] for e in failed] == ["message.failed"]
        assert failed[0]["data"]["error"]["code"] == "suppressed"
        # Scheduled, it waits as it was; once due, it fails the same.
        assert _status(srv, later)["status"] == "scheduled"
        assert srv.inst.cli("retry", later).returncode == 0
        srv.inst.daemon_once()
        st = _status(srv, later)
        assert st["status"] == "failed" and \
            st["error"]["code"] == "suppressed", st
        assert srv.inst.outbox_for(later) == []
        # Lifted: a message sent afterwards goes.
        assert _sup(srv, "DELETE", f"/sms/{ENC}").status_code == 204
        again = srv.sms(recipient=NUM).json()["smsId"]
        srv.inst.daemon_once()
        assert _status(srv, again)["status"] == "sent"
    finally:
        srv.inst.write_conf()

"""GET and DELETE /messages/{id}: the status of a message and its cancel
(conf/openapi.yaml, MessageStatus; msgspool-spool(5)).  Every reply of the
program is also checked against conf/openapi.yaml (openapi_check)."""

import json
import shutil
import threading

from conftest import (assert_problem, assert_unauthorized, in_future,
                      parse_time)
from openapi_check import check_reply

STATUS_KEYS = {"id", "direction", "channel", "recipient", "reference",
               "status", "createdAt", "updatedAt", "sendAt", "attempts",
               "nextAttemptAt", "sentAt", "completedAt", "route", "provider",
               "providerMessageId", "error", "events"}


def _queue(srv, client="acme", **kw):
    r = srv.sms(client=client, **kw)
    assert r.status_code in (200, 202), r.text
    return r.json()["smsId"]


def _problem(r, status, path=None):
    """assert_problem, and the reply as conf/openapi.yaml documents it."""
    check_reply(r)
    return assert_problem(r, status, path)


def _status(srv, msgid, client="acme"):
    r = srv.get("/messages/" + msgid, client=client)
    assert r.status_code == 200, r.text
    check_reply(r)
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert set(body) == STATUS_KEYS, sorted(body)
    assert body["id"] == msgid
    for k in ("createdAt", "updatedAt"):
        parse_time(body[k])
    statuses = [e["status"] for e in body["events"]]
    assert body["events"], body
    # The last event is the status (a claim, "sending", writes none).
    if body["status"] != "sending":
        assert statuses[-1] == body["status"], body
    return body


def _cancel(srv, msgid, client="acme"):
    r = srv.request("DELETE", "/messages/" + msgid, client=client)
    check_reply(r)
    return r


def test_queued_then_sent(srv):
    sid = _queue(srv, recipient="+4915112345678")
    st = _status(srv, sid)
    assert st["status"] == "queued"
    assert st["channel"] == "sms"
    assert st["recipient"] == "+4915112345678"
    assert st["attempts"] == 0
    assert st["sentAt"] is None and st["completedAt"] is None
    assert st["error"] is None and st["sendAt"] is None
    assert st["direction"] == "outbound"
    assert st["reference"] is None and st["route"] is None
    srv.inst.daemon_once()
    st = _status(srv, sid)
    assert st["status"] == "sent"
    assert st["attempts"] == 1
    assert st["provider"] == "file"
    assert st["route"] == "sms"
    parse_time(st["sentAt"])
    assert st["completedAt"] is None        # sent is not final
    assert [e["status"] for e in st["events"]] == ["queued", "sent"]


def test_scheduled(srv):
    when = in_future(3600)
    sid = _queue(srv, sendAt=when)
    st = _status(srv, sid)
    assert st["status"] == "scheduled"
    assert parse_time(st["sendAt"]) == parse_time(when)
    assert parse_time(st["nextAttemptAt"]) == parse_time(when)


def test_retrying_and_failed_by_hand(srv):
    """A message in deferred/ after an attempt is retrying; in failed/,
    failed, with the error recorded."""
    inst = srv.inst
    sid = _queue(srv)
    p = inst.path("new", sid)
    doc = json.loads(p.read_text())
    doc["attempts"] = 1
    doc["lastError"] = "HTTP 503: busy"
    doc["nextAttempt"] = in_future(600)
    doc["events"].append({"status": "retrying", "at": doc["created"]})
    inst.path("deferred", sid).write_text(json.dumps(doc))
    p.unlink()
    st = _status(srv, sid)
    assert st["status"] == "retrying"
    assert st["error"]["message"] == "HTTP 503: busy"
    assert st["nextAttemptAt"] is not None
    doc["events"].append({"status": "failed", "at": doc["created"]})
    inst.path("failed", sid).write_text(json.dumps(doc))
    inst.path("deferred", sid).unlink()
    st = _status(srv, sid)
    assert st["status"] == "failed"
    assert st["completedAt"] is not None
    assert st["nextAttemptAt"] is None


def test_provider_error_code(srv):
    """error.code is the provider's code when it gave one (Twilio's code,
    the Graph API's error.code, the SMTP server's reply code); provider
    names who refused it."""
    from doubles.smtp import SmtpSink
    from doubles.standin import Standin
    inst = srv.inst
    with Standin() as standin, SmtpSink() as sink:
        inst.write_conf(standin.twilio_config("sms") +
                        standin.whatsapp_config(1) +
                        sink.config("email", starttls="no"))
        standin.script("+4915112340010", [("status", 400)])
        standin.script("+4915112340011", [("500",)])
        standin.script("4915112340012", [("status", 400)])
        sink.script("gone@example.org", [("rcpt", "550 5.1.1 no such user")])
        bad = _queue(srv, recipient="+4915112340010")
        busy = _queue(srv, recipient="+4915112340011")
        r = srv.post_json("/ott/v1/deliver", {"payload": [{
            "recipient": "4915112340012", "templateID": "otp",
            "templateParameters": ["1"], "channelType": 1}]})
        assert r.status_code == 200, r.text
        ott = r.json()[0]["messageId"]
        r = srv.post_json("/deliver", {
            "from": "shop@acme.example", "subject": "Hi", "html": "<p>x</p>",
            "payload": [{"recipient": "gone@example.org"}]})
        assert r.status_code == 200, r.text
        mail = r.json()["recipients"][0]["messageId"]
        inst.daemon_once()
    for msgid, status, provider, code in (
            (bad, "failed", "twilio", 21211),
            (busy, "retrying", "twilio", 20500),
            (ott, "failed", "whatsapp", 131030),
            (mail, "failed", "smtp", 550)):
        st = _status(srv, msgid)
        assert st["status"] == status, st
        assert st["provider"] == provider, st
        assert st["error"]["code"] == code, st
        assert st["error"]["message"], st


def test_canceled_moved_back_by_hand_then_failed(srv):
    """msgspool-spool(5): a canceled message moved back into new/ with mv
    is sent after all; when that fails it is failed, not canceled."""
    from doubles.standin import Standin
    inst = srv.inst
    with Standin() as standin:
        inst.write_conf(standin.twilio_config("sms"))
        standin.script("+4915112340010", [("status", 400)])
        sid = _queue(srv, recipient="+4915112340010", sendAt=in_future(3600))
        assert _cancel(srv, sid).json()["status"] == "canceled"
        shutil.move(inst.path("failed", sid), inst.path("new", sid))
        inst.daemon_once()
    st = _status(srv, sid)
    assert st["status"] == "failed", st
    assert st["error"]["code"] == 21211, st
    cp = inst.cli("list", "failed")
    assert " failed " in cp.out and "canceled" not in cp.out, cp.out


def test_sending(srv):
    inst = srv.inst
    sid = _queue(srv)
    shutil.move(inst.path("new", sid), inst.path("cur", sid))
    assert _status(srv, sid)["status"] != "queued"
    r = srv.get("/messages/" + sid)
    check_reply(r)
    assert r.json()["status"] == "sending"
    r = _cancel(srv, sid)
    _problem(r, 409)
    assert inst.where(sid) == ["cur"]


def test_other_clients_message_is_404(srv):
    sid = _queue(srv, client="acme")
    r = srv.get("/messages/" + sid, client="other")
    _problem(r, 404)
    r = _cancel(srv, sid, client="other")
    _problem(r, 404)
    assert srv.inst.where(sid) == ["new"]


def test_unknown_and_bad_ids(srv):
    _problem(srv.get("/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV"), 404)
    # A path out of the spool is never one: the server or the program
    # refuses it (nginx answers 400 itself to an encoded "/..").
    r = srv.get("/messages/..%2F..%2Fetc%2Fpasswd")
    assert r.status_code in (400, 404), r.status_code
    for bad in ("nope", "01ARZ3NDEKTSV4RRFFQ69G5FA",
                "01ARZ3NDEKTSV4RRFFQ69G5FAVX", "01arz3ndektsv4rrffq69g5fav"):
        r = srv.get("/messages/" + bad)
        assert r.status_code in (400, 404), (bad, r.status_code)
        if r.status_code == 400:
            _problem(r, 400)


def test_key_needed(srv):
    sid = _queue(srv)
    for r in (srv.get("/messages/" + sid, client=None),
              srv.get("/messages/" + sid, api_key="wrong")):
        check_reply(r)
        assert_unauthorized(r)


def test_method_not_allowed(srv):
    sid = _queue(srv)
    r = srv.request("PUT", "/messages/" + sid, data=b"{}")
    assert r.status_code == 405
    _problem(r, 405)
    got = [m.strip() for m in r.headers["Allow"].split(",")]
    assert got == ["GET", "HEAD", "DELETE"], got


def test_cancel_queued(srv):
    inst = srv.inst
    sid = _queue(srv)
    r = _cancel(srv, sid)
    assert r.status_code == 200, r.text
    st = r.json()
    assert st["status"] == "canceled"
    assert st["completedAt"] is not None
    assert inst.where(sid) == ["failed"]
    assert _status(srv, sid)["status"] == "canceled"
    # Again: the same answer; and never sent.
    assert _cancel(srv, sid).json()["status"] == "canceled"
    inst.daemon_once()
    assert inst.where(sid) == ["failed"]
    assert inst.outbox_for(sid) == []


def test_cancel_scheduled_and_retry_by_hand(srv):
    inst = srv.inst
    sid = _queue(srv, sendAt=in_future(3600))
    r = _cancel(srv, sid)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    assert inst.files("deferred") == []
    # retry --failed leaves a canceled message alone ...
    inst.cli("retry", "--failed")
    assert inst.where(sid) == ["failed"]
    # ... retry ID sends it after all.
    inst.cli("retry", sid)
    assert inst.where(sid) == ["new"]
    inst.daemon_once()
    assert _status(srv, sid)["status"] == "sent"


def test_cancel_sent_is_409(srv):
    sid = _queue(srv)
    srv.inst.daemon_once()
    r = _cancel(srv, sid)
    _problem(r, 409)
    assert _status(srv, sid)["status"] == "sent"


def test_cli_shows_the_status(srv):
    inst = srv.inst
    sid = _queue(srv)
    _cancel(srv, sid)
    out = inst.cli("show", sid).out
    assert json.loads(out)["status"] == "canceled"
    assert "canceled" in inst.cli("list").out


def test_cancel_races_the_daemon(srv):
    """Cancels and a daemon on the same messages, many times: each ends
    canceled and unsent, or sent and not canceled; never both."""
    inst = srv.inst
    rounds = 3
    for _ in range(rounds):
        inst.reset()
        ids = [_queue(srv, messageBody=f"race {i}") for i in range(25)]
        results = {}

        def cancel_all():
            for sid in ids:
                results[sid] = _cancel(srv, sid).status_code

        t = threading.Thread(target=cancel_all)
        t.start()
        inst.daemon_once()
        t.join(timeout=120)
        assert not t.is_alive()
        inst.daemon_once()
        for sid in ids:
            where = inst.where(sid)[0] if inst.where(sid) else None
            sent = bool(inst.outbox_for(sid))
            if results[sid] == 200:
                assert where == "failed" and not sent, (sid, where)
                assert _status(srv, sid)["status"] == "canceled"
            else:
                assert results[sid] == 409, results[sid]
                assert where == "sent" and sent, (sid, where)


# ------------------------------------------------------ GET /messages

def test_list_with_a_query_and_its_next_page_through_the_server(srv):
    """GET /messages?QUERY routed to the program with its query as sent
    (a percent-encoded '+', a literal comma), and the Link header's
    next page followed through the server: the same as ?after=next,
    the last page without Link (conf/openapi.yaml, MessageList)."""
    from test_list import follow, page, same_filters
    mine = [_queue(srv, recipient="+4915112345678", messageBody=str(i))
            for i in range(2)]
    _queue(srv, recipient="+4915112345679")
    mine.append(_queue(srv, recipient="+4915112345678",
                       sendAt=in_future(3600)))
    query = "status=queued,scheduled&recipient=%2B4915112345678&limit=2"
    body, r = page(srv, query)
    assert [m["id"] for m in body["messages"]] == [mine[2], mine[1]]
    same_filters(r, query)
    last, r2 = follow(srv, r)
    assert [m["id"] for m in last["messages"]] == [mine[0]]
    assert last["next"] is None and "Link" not in r2.headers
    assert page(srv, query + "&after=" + body["next"])[0] == last
    # HEAD: the GET's status and Link, no body.
    h = srv.request("HEAD", "/messages?" + query)
    assert h.status_code == 200 and h.content == b""
    assert h.headers.get("Link") == r.headers["Link"]


def test_list_method_key_and_bad_query(srv):
    r = srv.request("POST", "/messages", data=b"{}",
                    headers={"Content-Type": "application/json"})
    _problem(r, 405)
    got = [m.strip() for m in r.headers["Allow"].split(",")]
    assert got == ["GET", "HEAD"], got
    r = srv.get("/messages", client=None)
    check_reply(r)
    assert_unauthorized(r)
    _problem(srv.get("/messages?limit=501"), 400, "limit")
    _problem(srv.get("/messages?status=queued&status=sent"), 400, "status")

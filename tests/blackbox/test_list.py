"""GET /messages: a client's list of its own messages (conf/openapi.yaml,
MessageList; msgspool-spool(5), Lists; msgspool(8), reindex), tested from
outside: every filter alone and together, pages and their cursors while
messages keep coming, the Link header, the 400s naming the parameter,
one client never seeing another's, statuses as they change, a sending
program killed at each point of its durable write, the index deleted and
rebuilt, and messages pruned after retention.  Every reply is checked
against conf/openapi.yaml (openapi_check).  What a web server changes
(the query string through each server's routing) is in test_messages.py,
which runs under all six setups."""

import datetime
import json
import os
import re
import secrets
import shutil
import subprocess
import time
import urllib.parse

import pytest

from conftest import (CGI_DIR, FRONT, PROBLEM_PREFIX, RECIPIENT,
                      assert_problem, assert_unauthorized, in_future,
                      parse_time, rfc3339, utcnow)
from harness.env import ROUTES
from delivery_support import (daemons, new_id, queue_sms,  # noqa: F401
                              wait_until)
from doubles.standin import Standin
from harness.receiptsign import stdwh_sig
from openapi_check import check_reply

__all__ = ["daemons"]   # the fixture, imported for pytest

LIST = "/messages"
BATCH = "/sms/v1/deliver/batch"
SMS_SECRET = "whsec_" + "c21zIHJlY2VpcHRzIGFuZCBpbmJvdW5kLCAyNGIr"
OTT_SECRET = "whsec_" + "b3R0IHJlY2VpcHRzIGFuZCBpbmJvdW5kLCAyNGIr"
ACME_NUM = "+15005550006"       # acme's number for inbound messages
OTHER_NUM = "+4930901820"       # other's
PHONE = RECIPIENT               # a person: +4915112345678
PHONE_DIGITS = PHONE[1:]        # the same number as OTT writes it
PHONE2 = "+4915112345679"
ANN = "ann@example.org"
STATUSES = ("scheduled", "queued", "sending", "retrying", "sent",
            "delivered", "read", "undelivered", "failed", "canceled")
FINAL = ("delivered", "read", "undelivered", "failed", "canceled")


# ------------------------------------------------------------- helpers

def q(**params):
    """A query string of params in order (None left out), each value
    percent-encoded ('+' as %2B, ' ' as %20), commas kept as they are."""
    return "&".join(f"{k}={urllib.parse.quote(str(v), safe=',')}"
                    for k, v in params.items() if v is not None)


def get_list(srv, query="", client="acme"):
    """GET /messages?query, checked against conf/openapi.yaml."""
    r = srv.get(LIST + ("?" + query if query else ""), client=client)
    check_reply(r)
    return r


def page(srv, query="", client="acme"):
    """One page: (body, reply).  A 200 {"messages", "next"}, newest
    first; a Link header exactly when there is a next page."""
    r = get_list(srv, query, client)
    assert r.status_code == 200, \
        f"GET /messages?{query} ({client}): {r.status_code} {r.text[:600]}"
    assert r.headers["Content-Type"].split(";")[0] == "application/json"
    body = r.json()
    assert set(body) == {"messages", "next"}, sorted(body)
    msgs = body["messages"]
    assert isinstance(msgs, list)
    assert_newest_first(msgs)
    for e in msgs:
        assert "events" not in e, e
        assert e["direction"] in ("outbound", "inbound"), e
    link = r.headers.get("Link")
    if body["next"] is None:
        assert link is None, f"Link {link!r} on the last page of {query!r}"
    else:
        assert isinstance(body["next"], str) and body["next"], body["next"]
        assert link is not None, f"no Link header, next {body['next']!r}"
    return body, r


def listing(srv, query="", client="acme", limit=500):
    """Every entry of the list for query, all its pages (after=next)."""
    base = q(limit=limit) + ("&" + query if query else "")
    out, after, pages = [], None, 0
    while True:
        body, _ = page(srv, base + ("&" + q(after=after) if after else ""),
                       client)
        out += body["messages"]
        pages += 1
        assert pages < 100, "a list that never ends"
        after = body["next"]
        if after is None:
            break
    assert_newest_first(out)
    ids = [e["id"] for e in out]
    assert len(ids) == len(set(ids)), f"an id twice in {query!r}"
    return out


def ids_of(srv, query="", client="acme"):
    return [e["id"] for e in listing(srv, query, client)]


def assert_newest_first(entries):
    """Ids (which sort by creation time) strictly falling; createdAt of
    outbound messages never rising."""
    ids = [e["id"] for e in entries]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids), \
        f"not newest first: {ids}"
    times = [parse_time(e["createdAt"]) for e in entries
             if e.get("direction") == "outbound"]
    assert times == sorted(times, reverse=True), times


def link_next(r):
    """The target of the reply's Link rel="next": (path, query)."""
    link = r.headers["Link"]
    m = re.fullmatch(r'\s*<([^>]*)>\s*;\s*rel="next"\s*', link)
    assert m, f"Link {link!r} is not <...>; rel=\"next\""
    u = urllib.parse.urlsplit(urllib.parse.urljoin(r.url, m.group(1)))
    return u.path, u.query


def follow(srv, r, client="acme"):
    """GET the reply's Link rel="next", as a client would."""
    path, query = link_next(r)
    # Under busybox the program is served at /cgi-bin/messages; a Link
    # to the route itself is sent there as every request is (route()).
    if path.endswith("/cgi-bin/messages"):
        path = LIST
    assert path == LIST, f"Link to {path!r}"
    return page(srv, query, client)


def same_filters(r, query):
    """The Link rel="next" of r carries the filters of query (its
    parameters but after), and after=next."""
    _, lq = link_next(r)
    got = urllib.parse.parse_qs(lq, keep_blank_values=True)
    want = urllib.parse.parse_qs(query, keep_blank_values=True)
    want.pop("after", None)
    assert got.pop("after") == [r.json()["next"]], lq
    assert set(got) == set(want), (lq, query)
    for k in want:
        assert len(got[k]) == 1, (k, lq)
        if k in ("status", "channel", "direction", "limit", "reference"):
            assert got[k] == want[k], (k, lq, query)


def status_of(srv, msgid, client="acme"):
    r = srv.get("/messages/" + msgid, client=client)
    assert r.status_code == 200, (msgid, r.status_code, r.text[:300])
    return r.json()


def assert_entries_are_status_objects(srv, entries, client="acme"):
    """Each entry is what GET /messages/{id} answers, without events."""
    for e in entries:
        st = status_of(srv, e["id"], client)
        st.pop("events", None)
        assert e == st, f"entry {e}\n!= GET /messages/{e['id']} {st}"


def sms(srv, to=PHONE, client="acme", **kw):
    r = srv.sms(client=client, recipient=to, **kw)
    assert r.status_code in (200, 202), r.text
    return r.json()["smsId"]


def batch(srv, messages, client="acme"):
    r = srv.post_json(BATCH, {"messages": messages}, client=client,
                      timeout=120)
    assert r.status_code == 200, r.text[:600]
    out = r.json()
    assert all(e["status"] == "Queued" for e in out), out[:3]
    return [e["smsId"] for e in out]


def ott(srv, to=PHONE_DIGITS, channel_type=1, **kw):
    entry = {"recipient": to, "templateID": "otp",
             "templateParameters": ["123456"], "channelType": channel_type}
    entry.update(kw)
    r = srv.post_json("/ott/v1/deliver", {"payload": [entry]})
    assert r.status_code == 200, r.text
    e = r.json()[0]
    assert e["status"] != "error", e
    return e["messageId"]


def voice(srv, to=PHONE, **kw):
    r = srv.post_json("/voice/v1/deliver",
                      dict({"recipient": to, "message": "hello"}, **kw))
    assert r.status_code == 202, r.text
    return r.json()["callId"]


def email(srv, to=ANN, **kw):
    r = srv.post_json("/deliver", {
        "from": "shop@acme.example", "subject": "Hi", "html": "<p>Hi</p>",
        "payload": [dict({"recipient": to}, **kw)]})
    assert r.status_code == 200, r.text
    e = r.json()["recipients"][0]
    assert e["messageId"], e
    return e["messageId"]


def signed_http(srv, body, secret):
    raw = json.dumps(body).encode()
    ts = str(int(time.time()))
    mid = "msg_" + secrets.token_hex(8)
    return srv.request("POST", "/receipts/http", client=None, data=raw,
                       headers={"Content-Type": "application/json",
                                "webhook-id": mid, "webhook-timestamp": ts,
                                "webhook-signature": stdwh_sig(
                                    secret, mid, ts, raw)})


def inbound(srv, frm, to=ACME_NUM, text="hello back", secret=SMS_SECRET):
    """An inbound message posted as the http provider posts it (sms with
    SMS_SECRET, ott with OTT_SECRET); its msgspool id."""
    d = srv.inst.spool / "inbox"
    before = set(os.listdir(d)) if d.is_dir() else set()
    r = signed_http(srv, {"type": "inbound", "from": frm, "to": to,
                          "text": text}, secret)
    assert r.status_code == 200, r.text
    new = set(os.listdir(d)) - before
    assert len(new) == 1, new
    return new.pop()[:-len(".json")]


def receipt(srv, msgid, status, secret=SMS_SECRET):
    r = signed_http(srv, {"id": msgid, "status": status}, secret)
    assert r.status_code == 200, r.text


def conf(inst, standin, top=""):
    """sms and ott.2 through the stand-in's http provider (receipts and
    inbound messages signed with SMS_SECRET and OTT_SECRET), ott.1 to
    the file provider; acme owns ACME_NUM, other OTHER_NUM."""
    inst.write_conf(
        top + standin.hook_config("sms") + f"receipt-secret = {SMS_SECRET}\n"
        "\n[ott.1]\nprovider = file\n\n" + standin.hook_config("ott.2") +
        f"receipt-secret = {OTT_SECRET}\n"
        f"\n[client.acme]\ninbound = {ACME_NUM}\n"
        f"\n[client.other]\ninbound = {OTHER_NUM}\n")


def wait_next_second():
    """Until the clock is 50 ms into the next whole second (createdAt is
    written in seconds, from time(2), which may lag the clock a message
    id is read from by a tick of the kernel's)."""
    t = int(time.time()) + 1.05
    wait_until(lambda: time.time() >= t, 3, interval=0.01,
               what="the next second")


@pytest.fixture
def standin():
    with Standin() as s:
        yield s


# ---------------------------------------------------------- the basics

def test_empty_list_and_its_shape(srv):
    body, r = page(srv)
    assert body == {"messages": [], "next": None}
    sid = sms(srv)
    body, _ = page(srv)
    assert [e["id"] for e in body["messages"]] == [sid]
    e = body["messages"][0]
    assert (e["direction"], e["channel"], e["recipient"], e["status"]) == \
        ("outbound", "sms", PHONE, "queued")
    assert_entries_are_status_objects(srv, body["messages"])
    # HEAD: the GET's status and headers, no body.
    r = srv.request("HEAD", LIST)
    assert r.status_code == 200 and r.content == b"", r.content[:200]


def test_every_valid_key_lists_its_own_and_no_key_none(srv):
    for client in ("mailer", "smsonly", "intl"):
        assert page(srv, client=client)[0]["messages"] == []
    assert_unauthorized(get_list(srv, client=None))
    assert_unauthorized(srv.get(LIST, api_key="not a key"))
    assert_problem(get_list(srv, client="gone"), 403)


def test_each_filter_alone_and_combined(srv, standin):
    inst = srv.inst
    conf(inst, standin)
    s1 = sms(srv, PHONE)
    s2 = sms(srv, PHONE2)
    sched = sms(srv, PHONE, sendAt=in_future(3600))
    o1 = ott(srv, PHONE_DIGITS)
    v1 = voice(srv, PHONE2)
    m1 = email(srv, ANN)
    canceled = sms(srv, PHONE2)
    assert srv.request("DELETE", "/messages/" + canceled).status_code == 200
    in_sms = inbound(srv, PHONE, text="yes")
    in_ott = inbound(srv, PHONE_DIGITS, text="ja", secret=OTT_SECRET)
    # other's, to the same number: never in acme's list
    sms(srv, PHONE, client="other")
    inbound(srv, PHONE, to=OTHER_NUM, text="for other")
    everything = [in_ott, in_sms, canceled, m1, v1, o1, sched, s2, s1]
    assert ids_of(srv) == everything

    def check(query, want):
        got = ids_of(srv, query)
        assert got == [i for i in everything if i in want], \
            f"?{query}: got {got}, want {want}"

    check(q(status="queued"), {s1, s2, o1, v1, m1})
    check(q(status="scheduled"), {sched})
    check(q(status="canceled"), {canceled})
    check(q(status="scheduled,canceled"), {sched, canceled})
    check(q(status="sent,delivered,failed"), set())
    check(q(channel="sms"), {s1, s2, sched, canceled, in_sms})
    check(q(channel="ott"), {o1, in_ott})
    check(q(channel="voice"), {v1})
    check(q(channel="email"), {m1})
    check(q(direction="outbound"), set(everything) - {in_sms, in_ott})
    check(q(direction="inbound"), {in_sms, in_ott})
    # A phone number in either form finds the SMS, the OTT message and
    # the call to it, and the inbound messages from it.
    to_phone = {s1, sched, o1, in_sms, in_ott}
    check(q(recipient=PHONE), to_phone)
    check(q(recipient=PHONE_DIGITS), to_phone)
    check(q(recipient=PHONE2), {s2, v1, canceled})
    check(q(recipient=ANN), {m1})
    check(q(recipient="ann@EXAMPLE.ORG"), {m1})     # a domain's case
    check(q(recipient="Ann@example.org"), set())    # a local part's not
    check(q(recipient="+4915199999999"), set())
    # ANDed
    check(q(channel="sms", status="queued"), {s1, s2})
    check(q(channel="sms", recipient=PHONE), {s1, sched, in_sms})
    check(q(channel="ott", direction="inbound"), {in_ott})
    check(q(channel="ott", direction="outbound", recipient=PHONE), {o1})
    check(q(status="queued", recipient=PHONE2), {s2, v1})
    check(q(status="queued,scheduled", channel="sms", recipient=PHONE,
            direction="outbound"), {s1, sched})
    check(q(channel="email", direction="inbound"), set())
    # Each status filter lists only messages in that status now.
    for st in STATUSES:
        for e in listing(srv, q(status=st)):
            assert e["status"] == st, (st, e)
    # Each entry is the message's own object, inbound ones too.
    assert_entries_are_status_objects(srv, listing(srv))
    for e in listing(srv, q(direction="inbound")):
        assert (e["from"], e["to"]) in ((PHONE, ACME_NUM),
                                        (PHONE_DIGITS, ACME_NUM)), e


def test_recipient_in_other_spellings(srv):
    """recipient is compared normalized: an OTT address may carry a '+';
    a spelling the list does not take is a 400 naming recipient, never
    another set of messages."""
    s1 = sms(srv, PHONE)
    sms(srv, PHONE2)
    want = [s1]
    assert ids_of(srv, q(recipient=PHONE)) == want
    assert ids_of(srv, q(channel="sms", recipient=PHONE)) == want
    for spelling in ("+49 151 1234 5678", "0049 15112345678",
                     "+49-151-12345678"):
        r = get_list(srv, q(recipient=spelling))
        if r.status_code == 400:
            assert_problem(r, 400, "recipient")
        else:
            assert r.status_code == 200, r.text
            assert [e["id"] for e in r.json()["messages"]] == want, spelling


def test_since_inclusive_until_exclusive(srv):
    a = sms(srv, messageBody="a")
    wait_next_second()
    b = sms(srv, messageBody="b")
    wait_next_second()
    c = sms(srv, messageBody="c")
    ta, tb, tc = (status_of(srv, i)["createdAt"] for i in (a, b, c))
    assert parse_time(ta) < parse_time(tb) < parse_time(tc)
    assert ids_of(srv, q(since=tb)) == [c, b]
    assert ids_of(srv, q(until=tb)) == [a]
    assert ids_of(srv, q(since=tb, until=tc)) == [b]
    assert ids_of(srv, q(since=ta, until=ta)) == []
    assert ids_of(srv, q(since=tc)) == [c]
    assert ids_of(srv, q(until=ta)) == []
    assert ids_of(srv, q(since=ta)) == [c, b, a]
    # The same instant in another zone, and with fractions of a second.
    t = parse_time(tb)
    east = t.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    assert ids_of(srv, q(since=east.isoformat())) == [c, b]
    assert ids_of(srv, q(until=rfc3339(t).replace("Z", ".000Z"))) == [a]
    # Far away on either side.
    assert ids_of(srv, q(since="2000-01-01T00:00:00Z")) == [c, b, a]
    assert ids_of(srv, q(until="2000-01-01T00:00:00Z")) == []
    assert ids_of(srv, q(since=in_future(3600))) == []
    assert ids_of(srv, q(status="queued", since=tb, until=tc)) == [b]


def test_reference_exact(srv):
    srv.inst.write_conf("\n[ott.1]\nprovider = file\n")
    r1 = sms(srv, reference="order-1001")
    r2 = sms(srv, reference="order-1001")
    r3 = sms(srv, reference="order-10011")
    r4 = sms(srv, reference="Order-1001")
    utf = sms(srv, reference="\u00e9" * 128)
    none = sms(srv)
    [b1, b2] = batch(srv, [
        {"recipient": PHONE, "messageBody": "x", "reference": "order-1001"},
        {"recipient": PHONE2, "messageBody": "y", "reference": "b-2"}])
    o1 = ott(srv, reference="order-1001")
    m1 = email(srv, reference="mail ref/1 & 2")
    assert ids_of(srv, q(reference="order-1001")) == [o1, b1, r2, r1]
    assert ids_of(srv, q(reference="order-10011")) == [r3]
    assert ids_of(srv, q(reference="Order-1001")) == [r4]
    assert ids_of(srv, q(reference="order-100")) == []
    assert ids_of(srv, q(reference="\u00e9" * 128)) == [utf]
    assert ids_of(srv, q(reference="b-2")) == [b2]
    assert ids_of(srv, q(reference="mail ref/1 & 2")) == [m1]
    assert ids_of(srv, q(reference="order-1001", channel="ott")) == [o1]
    assert ids_of(srv, q(reference="order-1001", recipient=PHONE2)) == []
    entries = listing(srv)
    assert {e["id"]: e["reference"] for e in entries}[none] is None
    assert {e["id"]: e["reference"] for e in entries}[r4] == "Order-1001"
    assert_entries_are_status_objects(srv, entries)


def test_limit_default_50_and_1_to_500(srv):
    ids = batch(srv, [{"recipient": PHONE, "messageBody": f"m{i}"}
                      for i in range(60)])
    newest = sorted(ids, reverse=True)
    body, r = page(srv)
    assert [e["id"] for e in body["messages"]] == newest[:50]
    assert body["next"] is not None
    body, _ = page(srv, q(after=body["next"]))
    assert [e["id"] for e in body["messages"]] == newest[50:]
    assert body["next"] is None
    body, _ = page(srv, q(limit=1))
    assert [e["id"] for e in body["messages"]] == newest[:1]
    body, _ = page(srv, q(limit=500))
    assert [e["id"] for e in body["messages"]] == newest
    assert body["next"] is None
    body, _ = page(srv, q(limit=60))
    assert len(body["messages"]) == 60
    # a page that ends exactly at the end may or may not know it; the
    # page after it is empty then
    if body["next"] is not None:
        assert page(srv, q(limit=60, after=body["next"]))[0] == \
            {"messages": [], "next": None}


# ------------------------------------------------------ pages, cursors

def test_a_thousand_in_pages_of_7_while_more_arrive(srv):
    """1,000 queued SMS (a batch) and some messages the filters leave
    out; paged 7 at a time by following the Link header, messages
    arriving between pages: each of the thousand exactly once, newest
    first, none of those that came later; the Link carries the filters
    and gives what ?after=next gives; the last page has next null and
    no Link."""
    inst = srv.inst
    inst.write_conf("\n[ott.1]\nprovider = file\n")
    old_sched = sms(srv, sendAt=in_future(3600))
    old_voice = voice(srv)
    thousand = batch(srv, [{"recipient": "+49151%08d" % i,
                            "messageBody": f"n{i}"} for i in range(1000)])
    assert len(set(thousand)) == 1000
    ott(srv)
    query = q(status="queued", channel="sms", direction="outbound", limit=7)
    body, r = page(srv, query)
    seen, later, pages = [], [], 1
    while True:
        entries = body["messages"]
        assert len(entries) == 7 or body["next"] is None, len(entries)
        assert all(e["channel"] == "sms" and e["status"] == "queued"
                   for e in entries), entries
        seen += [e["id"] for e in entries]
        if body["next"] is None:
            break
        same_filters(r, query)
        if pages % 10 == 0:
            later.append(sms(srv, messageBody=f"later {pages}"))
            # the Link and ?after=next are the same page
            by_after, _ = page(srv, query + "&" + q(after=body["next"]))
            got, r2 = follow(srv, r)
            assert got == by_after
            body, r = got, r2
        else:
            body, r = follow(srv, r)
        pages += 1
    assert pages == 143, pages
    assert seen == sorted(thousand, reverse=True), "not each once, newest first"
    assert old_sched not in seen and old_voice not in seen
    assert not set(later) & set(seen)
    # the newcomers head the list now
    assert ids_of(srv, q(status="queued", channel="sms")) == \
        later[::-1] + sorted(thousand, reverse=True)


def test_cursor_past_the_end_and_of_a_removed_message(srv):
    ids = [sms(srv, messageBody=str(i)) for i in range(5)]
    body, _ = page(srv, q(limit=2))
    assert [e["id"] for e in body["messages"]] == [ids[4], ids[3]]
    cursor = body["next"]
    # The message the cursor follows is canceled, then deleted: the
    # cursor still gives the page after it.
    assert srv.request("DELETE", "/messages/" + ids[3]).status_code == 200
    assert srv.inst.cli("delete", ids[3]).returncode == 0
    assert [e["id"] for e in page(srv, q(limit=2, after=cursor))[0][
        "messages"]] == [ids[2], ids[1]]
    assert ids[3] not in ids_of(srv)
    # The last page: next null.
    body, _ = page(srv, q(limit=3))
    assert body["next"] is not None
    last, _ = page(srv, q(limit=3, after=body["next"]))
    assert [e["id"] for e in last["messages"]] == [ids[0]]
    assert last["next"] is None


# ----------------------------------------------------------- bad input

BAD = [
    ("foo=1", "foo"),
    ("Status=queued", "Status"),
    ("status=queued&status=sent", "status"),
    ("limit=5&limit=5", "limit"),
    ("status=bogus", "status"),
    ("status=queued,bogus", "status"),
    ("status=", "status"),
    ("status=Queued", "status"),
    ("channel=fax", "channel"),
    ("channel=", "channel"),
    ("direction=sideways", "direction"),
    ("direction=", "direction"),
    ("recipient=abc", "recipient"),
    ("recipient=", "recipient"),
    ("recipient=%2B12", "recipient"),
    ("reference=", "reference"),
    ("reference=" + "x" * 129, "reference"),
    ("reference=a%C2%85b", "reference"),     # U+0085, a C1 control
    ("since=yesterday", "since"),
    ("since=2026-01-01", "since"),
    ("since=2026-01-01T00:00:00", "since"),
    ("until=2026-13-01T00:00:00Z", "until"),
    ("until=", "until"),
    ("limit=0", "limit"),
    ("limit=501", "limit"),
    ("limit=abc", "limit"),
    ("limit=-1", "limit"),
    ("limit=", "limit"),
    ("after=zzz", "after"),
    ("after=", "after"),
    ("after=%2F..%2F..%2Fetc%2Fpasswd", "after"),
]


@pytest.mark.parametrize("query,name", BAD, ids=[b[0][:40] for b in BAD])
def test_bad_parameter_is_400_naming_it(srv, query, name):
    r = get_list(srv, query)
    assert_problem(r, 400, name)


def test_ascii_control_in_a_value_is_400(srv):
    """A control character or a byte that is not UTF-8, which the server
    may refuse itself (lighttpd does, with its own problem); else the
    program names the parameter."""
    for query in ("reference=a%0Ab", "reference=a%00b", "reference=a%7Fb",
                  "reference=a%FFb", "recipient=%2B49151%0A12345678"):
        r = srv.get(LIST + "?" + query)
        p = assert_problem(r, 400)
        if p["type"] != PROBLEM_PREFIX + "invalid-request":
            check_reply(r)
            assert query.split("=")[0] in p["errors"], p


def test_largest_reference_and_limit_are_good(srv):
    sms(srv)
    assert page(srv, q(reference="x" * 128, limit=500))[0]["messages"] == []


# ----------------------------------------------------------- isolation

def test_one_client_never_sees_anothers(srv, standin):
    inst = srv.inst
    conf(inst, standin)
    mine = [sms(srv, PHONE), sms(srv, PHONE2), ott(srv, PHONE_DIGITS)]
    mine.append(inbound(srv, PHONE))
    theirs = [sms(srv, PHONE, client="other"),
              sms(srv, "+4915100000777", client="other")]
    theirs.append(inbound(srv, PHONE, to=OTHER_NUM))
    assert set(ids_of(srv)) == set(mine)
    assert set(ids_of(srv, client="other")) == set(theirs)
    # A recipient the other client used finds only one's own.
    assert ids_of(srv, q(recipient="+4915100000777")) == []
    assert set(ids_of(srv, q(recipient=PHONE), client="other")) == \
        {theirs[0], theirs[2]}
    for st in STATUSES:
        assert not set(ids_of(srv, q(status=st), client="other")) & set(mine)
    # Clients with no messages, whatever they ask.
    for client in ("smsonly", "mailer"):
        assert ids_of(srv, client=client) == []
        assert ids_of(srv, q(recipient=PHONE), client=client) == []
    # Another client's cursor shows none of the first one's messages.
    body, _ = page(srv, q(limit=1))
    r = get_list(srv, q(after=body["next"]), client="other")
    if r.status_code == 200:
        assert not {e["id"] for e in r.json()["messages"]} & set(mine)
    else:
        assert_problem(r, 400, "after")


# ----------------------------------------------------- status changes

def test_status_filters_follow_each_message(srv, standin):
    """Messages queued, scheduled, canceled, then sent, failed, retrying,
    then delivered, undelivered and read by signed receipts, one moved
    into cur/ (sending): a status filter finds each in its status of
    now only."""
    inst = srv.inst
    conf(inst, standin)
    standin.script("+4915100000005", [("status", 400)], then=("status", 400))
    standin.script("+4915100000006", [("503",)], then=("503",))
    sent = sms(srv, "+4915100000001")
    dlv = sms(srv, "+4915100000002")
    und = sms(srv, "+4915100000003")
    read = ott(srv, "4915100000004", channel_type=2)
    failed = sms(srv, "+4915100000005")
    retrying = sms(srv, "+4915100000006")
    sched = sms(srv, "+4915100000007", sendAt=in_future(3600))
    canceled = sms(srv, "+4915100000008")
    sending = sms(srv, "+4915100000009", sendAt=in_future(3600))

    def expect(want):
        for st in STATUSES:
            got = set(ids_of(srv, q(status=st)))
            assert got == want.get(st, set()), (st, got, want.get(st))
        listed = {e["id"]: e["status"] for e in listing(srv)}
        assert set(listed) == set().union(*want.values())
        for msgid, st in listed.items():
            assert status_of(srv, msgid)["status"] == st, (msgid, st)

    assert srv.request("DELETE", "/messages/" + canceled).status_code == 200
    expect({"queued": {sent, dlv, und, read, failed, retrying},
            "scheduled": {sched, sending}, "canceled": {canceled}})
    inst.daemon_once()
    expect({"sent": {sent, dlv, und, read}, "failed": {failed},
            "retrying": {retrying}, "scheduled": {sched, sending},
            "canceled": {canceled}})
    receipt(srv, dlv, "delivered")
    receipt(srv, und, "undelivered")
    receipt(srv, read, "read", secret=OTT_SECRET)
    inst.daemon_once()
    late = sms(srv, "+4915100000010")
    # A claim by hand, as a daemon's (after the last daemon, which would
    # take it back): the file in cur/ says sending.
    shutil.move(inst.path("deferred", sending), inst.path("cur", sending))
    assert status_of(srv, sending)["status"] == "sending"
    expect({"sent": {sent}, "delivered": {dlv}, "undelivered": {und},
            "read": {read}, "failed": {failed}, "retrying": {retrying},
            "scheduled": {sched}, "sending": {sending}, "queued": {late},
            "canceled": {canceled}})
    assert set(ids_of(srv, q(status="delivered,read,undelivered"))) == \
        {dlv, read, und}
    assert set(ids_of(srv, q(status=",".join(FINAL)))) == \
        {dlv, read, und, failed, canceled}
    assert_entries_are_status_objects(srv, listing(srv))


def test_retry_and_delete_by_the_cli(srv):
    """msgspool retry ID sends a canceled message after all: it is
    queued in the list; msgspool delete ID takes it off the list."""
    inst = srv.inst
    a = sms(srv)
    b = sms(srv)
    assert srv.request("DELETE", "/messages/" + a).status_code == 200
    assert ids_of(srv, q(status="canceled")) == [a]
    assert inst.cli("retry", a).returncode == 0
    assert ids_of(srv, q(status="canceled")) == []
    assert ids_of(srv, q(status="queued")) == [b, a]
    assert inst.cli("delete", b).returncode == 0
    assert ids_of(srv) == [a]
    inst.daemon_once()
    assert ids_of(srv, q(status="sent")) == [a]


def test_moved_back_by_hand_is_queued_in_the_list(srv):
    """msgspool-spool(5): a failed or canceled message moved back into
    new/ with mv is sent after all; the files say queued, and so does
    the list (a stale index never makes a message disappear)."""
    inst = srv.inst
    a = sms(srv)
    assert srv.request("DELETE", "/messages/" + a).status_code == 200
    shutil.move(inst.path("failed", a), inst.path("new", a))
    assert status_of(srv, a)["status"] == "queued"
    assert ids_of(srv, q(status="queued")) == [a]
    assert ids_of(srv, q(status="canceled")) == []
    assert [e["status"] for e in listing(srv)] == ["queued"]


# ------------------------------------------------------ killed at faults

def _fault_cgi(srv, prog, path, body, fault, key=None):
    """The fault build of prog, run as the server runs it, killing
    itself (SIGKILL) at its fault-th fault point."""
    exe = CGI_DIR.parent / "tests" / "fault" / prog
    assert exe.is_file(), f"{exe}: the fault build is missing (make check-build)"
    # The path as the server will route the retry: busybox httpd serves
    # /cgi-bin/PROGRAM only, and an Idempotency-Key is the route's.
    if FRONT == "busybox":
        path = "/cgi-bin/" + ROUTES[path]
    data = json.dumps(body).encode()
    env = {"PATH": "/usr/bin:/bin", "MSGSPOOL_CONFIG": str(srv.inst.conf),
           "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "POST",
           "REQUEST_URI": path, "SCRIPT_NAME": path,
           "CONTENT_TYPE": "application/json",
           "CONTENT_LENGTH": str(len(data)),
           "HTTP_X_API_KEY": srv.inst.keys["acme"],
           "MSGSPOOL_FAULT": str(fault)}
    if key is not None:
        env["HTTP_IDEMPOTENCY_KEY"] = key
    return subprocess.run([str(exe)], input=data, env=env,
                          capture_output=True, timeout=60)


def _reply_ids(text):
    """The message ids of a CGI's reply (headers, blank line, JSON)."""
    head, _, body = text.replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("Status: 20"), text[:300]
    doc = json.loads(body)
    entries = doc if isinstance(doc, list) else [doc]
    return {e.get("smsId") for e in entries}


@pytest.mark.parametrize("prog,path,n,keyed,sync", [
    ("sms-deliver", "/sms/v1/deliver", 1, False, None),
    ("sms-batch", BATCH, 3, False, None),
    ("sms-batch", BATCH, 3, True, None),
    ("sms-batch", BATCH, 16, False, "filesystem")],
    ids=["sms", "batch", "batch-with-key", "batch-sync-filesystem"])
def test_killed_at_every_fault_point(srv, prog, path, n, keyed, sync):
    """The sending program kills itself at its Nth fault point (each
    write, rename and directory sync of its durable write, each
    publication of a held message), for N = 1, 2, ... until it runs
    through.  After each death the list holds exactly the messages the
    spool holds (GET /messages/{id} finds them), and every message a
    client was told was accepted; with an Idempotency-Key, each retry's
    messages and nothing else: what was never accepted never appears.
    With sync = filesystem (msgspool.conf(5)), 16 messages: the file
    system's syncs of their files and of their names are among the
    points."""
    inst = srv.inst
    if sync is not None:
        inst.write_conf("sync = %s" % sync)
    if n == 1:
        body = {"recipient": PHONE, "messageBody": "killed"}
    else:
        body = {"messages": [{"recipient": PHONE, "messageBody": f"k{i}"}
                             for i in range(n)]}
    accepted = set()
    fault = 0

    def check(answered):
        """The list against the spool; when answered (every request
        has had its reply), with a key, against the replies."""
        listed = set(ids_of(srv))
        spooled = set(inst.ids("new")) | set(inst.ids("deferred"))
        assert listed == spooled, (f"fault {fault}: listed not spooled "
                                   f"{listed - spooled}, spooled not "
                                   f"listed {spooled - listed}")
        assert accepted <= listed, f"fault {fault}: {accepted - listed}"
        if keyed and answered:
            assert listed == accepted, f"fault {fault}: {listed - accepted}"
        assert set(ids_of(srv, q(status="queued", recipient=PHONE))) == \
            listed

    while True:
        fault += 1
        assert fault < 200, "the write path never ran through"
        key = f"list-kill-{fault}" if keyed else None
        p = _fault_cgi(srv, prog, path, body, fault, key)
        if p.returncode == 0:
            accepted |= _reply_ids(p.stdout.decode())
            check(True)
            break
        assert p.returncode == -9, (p.returncode, p.stderr[-500:])
        check(not keyed)
        if keyed:
            r = srv.post_json(path, body, headers={"Idempotency-Key": key})
            assert r.status_code == 200, r.text
            accepted |= {e["smsId"] for e in r.json()}
            check(True)
    assert fault > 3, f"only {fault - 1} fault points"


def _statuses_agree(srv, where):
    """Each message's status in the list is its status by GET
    /messages/{id}, and each status filter finds exactly those."""
    listed = {e["id"]: e["status"] for e in listing(srv)}
    for msgid, st in listed.items():
        assert status_of(srv, msgid)["status"] == st, (where, msgid, st)
    for st in set(listed.values()):
        assert set(ids_of(srv, q(status=st))) == \
            {i for i, s in listed.items() if s == st}, (where, st)
    return listed


def test_msgspoold_killed_at_every_fault_point_then_restarted(srv,
                                                             standin):
    """msgspoold (the fault build) kills itself at its Nth fault point
    while it sends a new message and applies a delivered receipt to a
    message made an hour ago, for N = 1, 2, ... until it runs through;
    after each death a msgspoold runs again (as systemd restarts it):
    the list then agrees with GET /messages/{id} on every status."""
    inst = srv.inst
    exe = CGI_DIR.parent / "tests" / "fault" / "msgspoold"
    assert exe.is_file(), f"{exe}: the fault build is missing"
    hour_ago = utcnow() - datetime.timedelta(hours=1)
    fault = 0
    while True:
        fault += 1
        assert fault < 100, "msgspoold never ran through"
        inst.reset()
        conf(inst, standin)
        old = queue_sms(inst.spool, "+4915100000001", created=hour_ago,
                        msgid=new_id(hour_ago.timestamp()))
        assert inst.cli("reindex").returncode == 0
        inst.daemon_once()
        receipt(srv, old, "delivered")
        new = sms(srv, "+4915100000002")
        assert _statuses_agree(srv, "before") == {old: "sent",
                                                  new: "queued"}
        env = {k: v for k, v in os.environ.items()
               if k != "MSGSPOOL_CONFIG"}
        env["MSGSPOOL_FAULT"] = str(fault)
        p = subprocess.run([str(exe), "-c", str(inst.conf), "--once"],
                           env=env, capture_output=True, timeout=60)
        if p.returncode == 0:
            break
        assert p.returncode == -9, (p.returncode, p.stderr[-500:])
        point = p.stderr.decode().strip().splitlines()[-1]
        inst.daemon_once()
        assert _statuses_agree(srv, point) == {old: "delivered",
                                               new: "sent"}, point
    assert _statuses_agree(srv, "through") == {old: "delivered",
                                               new: "sent"}
    assert fault > 3, f"only {fault - 1} fault points"


# ----------------------------------------------------- the index itself

def _views(srv):
    """Whole listings of both clients with several filters, in pages of
    500 and of 3."""
    queries = ["", q(direction="inbound"), q(direction="outbound"),
               q(status="queued,failed,canceled"), q(status="sent"),
               q(channel="ott"), q(channel="sms", recipient=PHONE),
               q(recipient=PHONE2)]
    views = {(c, qq, 500): listing(srv, qq, client=c)
             for c in ("acme", "other") for qq in queries}
    for c in ("acme", "other"):
        views[(c, "", 3)] = listing(srv, client=c, limit=3)
    return views


def test_reindex_and_a_deleted_index(srv, standin):
    """With SPOOL/lists/ deleted the list still lists every message, new
    ones too; msgspool reindex builds the same lists again."""
    inst = srv.inst
    conf(inst, standin)
    standin.script("+4915100000005", [("status", 400)], then=("status", 400))
    sms(srv, PHONE)
    sms(srv, PHONE2)
    sms(srv, "+4915100000005")
    sms(srv, PHONE, sendAt=in_future(3600))
    ott(srv, PHONE_DIGITS)
    ott(srv, "4915100000004", channel_type=2)
    voice(srv, PHONE2)
    email(srv, ANN)
    batch(srv, [{"recipient": "+4916%08d" % i, "messageBody": "b"}
                for i in range(20)])
    sms(srv, PHONE, client="other")
    inst.daemon_once()
    c = sms(srv, PHONE2)
    assert srv.request("DELETE", "/messages/" + c).status_code == 200
    sms(srv, PHONE)
    inbound(srv, PHONE)
    inbound(srv, PHONE_DIGITS, secret=OTT_SECRET)
    inbound(srv, PHONE2, to=OTHER_NUM)
    lists = inst.spool / "lists"
    assert lists.is_dir(), "no SPOOL/lists/"
    before = _views(srv)
    assert len(before[("acme", "", 500)]) == 32
    assert len(before[("other", "", 500)]) == 2
    shutil.rmtree(lists)
    assert _views(srv) == before
    # A message sent while there is no index is listed too.
    late = sms(srv, PHONE)
    assert ids_of(srv)[0] == late
    assert ids_of(srv, q(recipient=PHONE, status="queued"))[0] == late
    before = _views(srv)
    cp = inst.cli("reindex")
    assert cp.returncode == 0, cp.err
    assert lists.is_dir()
    assert _views(srv) == before
    # Again, from nothing, and again over a built one.
    shutil.rmtree(lists)
    assert inst.cli("reindex").returncode == 0
    assert _views(srv) == before
    assert inst.cli("reindex").returncode == 0
    assert _views(srv) == before
    # And it goes on: a new message, a change of status.
    newest = sms(srv, PHONE2)
    inst.daemon_once()
    assert ids_of(srv, q(status="sent", recipient=PHONE2))[0] == newest


def test_a_message_put_in_new_by_hand_is_listed_after_reindex(srv):
    """msgspool-spool(5): a file mv'd into new/ is a message; msgspool
    reindex lists it."""
    inst = srv.inst
    a = sms(srv)
    # Newer than a, also when made in a's millisecond: ids order the list.
    bid = new_id()
    while bid <= a:
        bid = new_id()
    b = queue_sms(inst.spool, PHONE2, body="by hand", msgid=bid)
    assert status_of(srv, b)["status"] == "queued"
    assert inst.cli("reindex").returncode == 0
    assert ids_of(srv) == [b, a]
    assert ids_of(srv, q(recipient=PHONE2)) == [b]


# ------------------------------------------------------------- pruning

def test_pruned_after_retention_gone_as_from_get(srv, standin, daemons):
    """With retention = 1s, msgspoold prunes at its start the sent, the
    delivered and the inbound messages: gone from the list as from GET
    /messages/{id}; a failed one stays (failed/ is never pruned), and so
    do the messages that came after."""
    inst = srv.inst
    conf(inst, standin, top="retention = 1s\n")
    standin.script("+4915100000005", [("status", 400)], then=("status", 400))
    sent = sms(srv, "+4915100000001")
    dlv = sms(srv, "+4915100000002")
    failed = sms(srv, "+4915100000005")
    inst.daemon_once()
    receipt(srv, dlv, "delivered")
    inst.daemon_once()
    got = inbound(srv, PHONE)
    assert status_of(srv, dlv)["status"] == "delivered"
    assert set(ids_of(srv)) == {sent, dlv, failed, got}
    files = [inst.path("sent", sent), inst.path("sent", dlv),
             inst.spool / "inbox" / (got + ".json")]
    # Older than retention in whole seconds, as msgspoold compares.
    newest = int(max(p.stat().st_mtime for p in files))
    wait_until(lambda: time.time() > newest + 2.1, 5,
               what="the messages older than retention")
    d = daemons.start(inst.conf)
    wait_until(lambda: not any(p.exists() for p in files), 30,
               what="the sent and inbound messages pruned")
    d.stop()
    for msgid in (sent, dlv, got):
        assert srv.get("/messages/" + msgid).status_code == 404
    later = [sms(srv, sendAt=in_future(3600)), inbound(srv, PHONE2)]
    assert ids_of(srv) == later[::-1] + [failed]
    for st in STATUSES:
        assert set(ids_of(srv, q(status=st))) <= {failed, later[0]}, st
    assert ids_of(srv, q(direction="inbound")) == [later[1]]
    assert ids_of(srv, q(recipient="+4915100000002")) == []


def _old(path, days=8):
    t = time.time() - days * 86400
    os.utime(path, (t, t))


@pytest.mark.parametrize("how", ["reindex", "first-start"])
@pytest.mark.parametrize("prune", ["msgspoold", "cron"])
def test_pruned_after_the_lists_were_built_gone_as_from_get(
        srv, standin, daemons, how, prune):
    """The lists built from the spool's files (msgspool reindex, or
    msgspoold's first start on a spool without them, as after an
    upgrade), then a sent and a delivered message pruned after
    retention, by msgspoold or by the find line of msgspoold(8)'s cron
    entry: gone from the list as from GET /messages/{id}."""
    inst = srv.inst
    conf(inst, standin)
    sent = sms(srv, "+4915100000001")
    dlv = sms(srv, "+4915100000002")
    inst.daemon_once()
    receipt(srv, dlv, "delivered")
    inst.daemon_once()
    keep = sms(srv, sendAt=in_future(3600))
    # A week went by before the lists were built: both are past
    # retention, and the build dates their lines by their files.
    for msgid in (sent, dlv):
        _old(inst.path("sent", msgid))
    if how == "reindex":
        assert inst.cli("reindex").returncode == 0
        assert ids_of(srv) == [keep, dlv, sent]
    else:
        # msgspoold builds them at its start, then prunes (--once too):
        # prune is msgspoold's either way.
        shutil.rmtree(inst.spool / "lists")
        inst.daemon_once()
        assert (inst.spool / "lists").is_dir()
        assert inst.files("sent") == []
        prune = None
    if prune is None:
        pass
    elif prune == "msgspoold":
        d = daemons.start(inst.conf)
        wait_until(lambda: inst.files("sent") == [], 30,
                   what="the sent messages pruned")
        d.stop()
    else:
        # find SPOOL/sent -type f -mmin +10080 -delete
        for p in (inst.spool / "sent").iterdir():
            if p.is_file() and p.stat().st_mtime < time.time() - 10080 * 60:
                p.unlink()
    for msgid in (sent, dlv):
        assert srv.get("/messages/" + msgid).status_code == 404
    assert ids_of(srv) == [keep]
    assert ids_of(srv, q(status="sent,delivered")) == []

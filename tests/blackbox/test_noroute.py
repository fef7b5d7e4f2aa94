"""A recipient no route takes is refused at acceptance (msgspool.conf(5),
Routes; conf/openapi.yaml, no-route): a 400 no-route on a one-message
route (an SMS, a single call), the entry's error "no-route: ..." in an SMS
batch, a campaign, an OTT payload and an email's recipients, the others
queued; an [ott.N] or a [route.NAME] of ott.N makes channelType N
routable; a test key's messages are refused the same; a config whose
routes msgspoold would refuse is a 500, never a 4xx.  Every reply is
checked against conf/openapi.yaml."""

import pytest

from conftest import assert_nothing_queued, assert_problem
from channels_support import ok_json, spooled
from openapi_check import check_reply

DE = "+4915112345678"
DE2 = "+4915112345679"
FR = "+33612345678"
US = "+12025550123"
NO_ROUTE = "urn:msgspool:problem:no-route"

# sms and voice take +49 only: no route without a prefix.
PREFIXED = ("[sms]\nprovider = file\nprefix = +49\n\n"
            "[voice]\nprovider = file\nprefix = +49\n")


@pytest.fixture
def prefixed(srv):
    srv.inst.write_conf(PREFIXED)
    return srv


def _post(srv, path, body, **kw):
    r = srv.post_json(path, body, **kw)
    check_reply(r)
    return r


def _no_route_400(r, inst):
    """A 400 no-route naming recipient, and nothing queued."""
    p = assert_problem(r, 400, "recipient")
    assert p["type"] == NO_ROUTE, p
    assert p["errors"]["recipient"][0].startswith(
        "no route takes this recipient ("), p
    assert_nothing_queued(inst)
    return p


def _no_route_entry(e, idkey):
    assert e["status"] == "error" and e[idkey] is None, e
    assert e["error"].startswith("no-route: "), e
    return e["error"]


# -------------------------------------------------------- one message

def test_sms_no_route_is_400_and_a_routed_one_goes(prefixed):
    p = _no_route_400(_post(prefixed, "/sms/v1/deliver", {
        "recipient": FR, "messageBody": "hi"}), prefixed.inst)
    assert p["errors"]["recipient"] == [
        "no route takes this recipient (routes of sms take +49)"], p
    r = _post(prefixed, "/sms/v1/deliver", {"recipient": DE,
                                            "messageBody": "hi"})
    assert r.status_code == 202, r.text
    spooled(prefixed.inst, "new", r.json()["smsId"], "sms")


def test_scheduled_sms_no_route_is_400(prefixed):
    _no_route_400(_post(prefixed, "/sms/v1/deliver", {
        "recipient": FR, "messageBody": "hi",
        "sendAt": "2030-01-01T09:00:00Z"}), prefixed.inst)


def test_voice_call_no_route_is_400(prefixed):
    p = _no_route_400(_post(prefixed, "/voice/v1/deliver", {
        "recipient": US, "message": "hello"}), prefixed.inst)
    assert "routes of voice take +49" in p["errors"]["recipient"][0], p
    r = _post(prefixed, "/voice/v1/deliver", {"recipient": DE,
                                              "message": "hello"})
    assert r.status_code == 202, r.text
    spooled(prefixed.inst, "new", r.json()["callId"], "voice")


def test_no_route_before_suppression(prefixed):
    """Suppressed too: the 400 of no route, not the 422."""
    r = prefixed.request("PUT", "/suppressions/sms/" + FR)
    assert r.status_code in (200, 201), r.text
    _no_route_400(_post(prefixed, "/sms/v1/deliver", {
        "recipient": FR, "messageBody": "hi"}), prefixed.inst)


def test_test_key_is_refused_the_same(prefixed):
    cp = prefixed.inst.cli("key", "add", "sandbox", "*", "--test")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    _no_route_400(_post(prefixed, "/sms/v1/deliver", {
        "recipient": FR, "messageBody": "hi"}, api_key=key), prefixed.inst)
    r = _post(prefixed, "/sms/v1/deliver/batch", {"messages": [
        {"recipient": FR, "messageBody": "a"},
        {"recipient": DE, "messageBody": "b"}]}, api_key=key)
    out = ok_json(r, 200)
    _no_route_entry(out[0], "smsId")
    assert out[1]["status"] == "Queued", out
    doc = spooled(prefixed.inst, "new", out[1]["smsId"], "sms",
                  client="sandbox")
    assert doc["test"] is True


def test_a_refused_request_keeps_no_idempotency_key(prefixed):
    """The 400 is not kept: once a route takes the number, the same key
    queues it."""
    key = {"Idempotency-Key": "noroute-then-route"}
    body = {"recipient": FR, "messageBody": "hi"}
    _no_route_400(_post(prefixed, "/sms/v1/deliver", body, headers=key),
                  prefixed.inst)
    prefixed.inst.write_conf(PREFIXED + "\n[route.fr]\nchannel = sms\n"
                             "provider = file\nprefix = +33\n")
    r = _post(prefixed, "/sms/v1/deliver", body, headers=key)
    assert r.status_code == 202, r.text
    assert "Idempotent-Replay" not in r.headers


# ------------------------------------------------------------ batches

def test_sms_batch_entry_fails_alone(prefixed):
    r = _post(prefixed, "/sms/v1/deliver/batch", {"messages": [
        {"recipient": DE, "messageBody": "a"},
        {"recipient": FR, "messageBody": "b",
         "sendAt": "2030-01-01T09:00:00Z"},
        {"recipient": DE2, "messageBody": "c"}]})
    out = ok_json(r, 200)
    assert [e["status"] for e in out] == ["Queued", "error", "Queued"], out
    assert out[1]["recipient"] == FR and "sendAt" not in out[1], out
    assert _no_route_entry(out[1], "smsId") == (
        "no-route: no route takes this recipient (routes of sms take +49)")
    assert sorted(prefixed.inst.ids("new")) == sorted(
        [out[0]["smsId"], out[2]["smsId"]])
    assert prefixed.inst.ids("deferred") == []


def test_sms_batch_of_no_route_only_is_200(prefixed):
    """Every entry refused: the client's doing, a 200 of errors."""
    r = _post(prefixed, "/sms/v1/deliver/batch", {"messages": [
        {"recipient": FR, "messageBody": "a"},
        {"recipient": US, "messageBody": "b"}]})
    out = ok_json(r, 200)
    for e in out:
        _no_route_entry(e, "smsId")
    assert_nothing_queued(prefixed.inst)


def test_campaign_recipient_fails_alone(prefixed):
    r = _post(prefixed, "/voice/v1/deliver", {
        "campaignName": "routes", "message": "hello",
        "recipients": [DE, {"recipient": FR, "reference": "r-1"}, DE2]})
    out = ok_json(r, 202)
    assert (out["accepted"], out["rejected"]) == (2, 1), out
    calls = out["calls"]
    assert [c["status"] for c in calls] == ["queued", "error", "queued"]
    assert calls[1]["recipient"] == FR
    assert "routes of voice take +49" in _no_route_entry(calls[1], "callId")
    assert len(prefixed.inst.ids("new")) == 2


def test_a_route_of_its_own_takes_its_prefix(srv):
    """[route.fr] with channel = sms adds +33 to what sms takes."""
    srv.inst.write_conf(PREFIXED + "\n[route.fr]\nchannel = sms\n"
                        "provider = file\nprefix = +33\n")
    r = _post(srv, "/sms/v1/deliver/batch", {"messages": [
        {"recipient": FR, "messageBody": "a"},
        {"recipient": US, "messageBody": "b"}]})
    out = ok_json(r, 200)
    assert out[0]["status"] == "Queued", out
    assert _no_route_entry(out[1], "smsId") == (
        "no-route: no route takes this recipient (routes of sms take "
        "+49, +33)")


def test_a_route_without_prefix_takes_the_rest(srv):
    """A [route.NAME] with no prefix takes what no prefix claims, the
    channel's own section having one."""
    srv.inst.write_conf(PREFIXED + "\n[route.rest]\nchannel = sms\n"
                        "provider = file\n")
    r = _post(srv, "/sms/v1/deliver", {"recipient": US,
                                       "messageBody": "hi"})
    assert r.status_code == 202, r.text


# ---------------------------------------------------------------- OTT

def _ott(srv, entries):
    r = _post(srv, "/ott/v1/deliver", {"payload": [
        {"recipient": to, "templateID": "otp",
         "templateParameters": ["123456"], "channelType": ch}
        for to, ch in entries]})
    return ok_json(r, 200)


def test_ott_route_section_makes_a_channel_type_routable(srv):
    """channel = ott.2 routes channelType 2 without an [ott.2]; ott.4
    takes 49 only; ott.3 nothing configures."""
    srv.inst.write_conf("[route.wa2]\nchannel = ott.2\nprovider = file\n\n"
                        "[route.wa4]\nchannel = ott.4\nprovider = file\n"
                        "prefix = 49\n")
    out = _ott(srv, [(DE[1:], 2), (DE[1:], 3), (FR[1:], 4), (DE[1:], 4)])
    assert [e["status"] for e in out] == \
        ["queued", "error", "error", "queued"], out
    assert _no_route_entry(out[1], "messageId") == \
        "no-route: channelType 3 is not configured"
    assert _no_route_entry(out[2], "messageId") == (
        "no-route: no route takes this recipient (routes of channelType 4 "
        "take 49)")
    doc = spooled(srv.inst, "new", out[0]["messageId"], "ott")
    assert doc["message"]["channelType"] == 2
    assert len(srv.inst.ids("new")) == 2


def test_ott_unconfigured_channel_type(srv):
    """The default config has no [ott.N]: every channelType is refused."""
    out = _ott(srv, [(DE[1:], 1)])
    assert _no_route_entry(out[0], "messageId") == \
        "no-route: channelType 1 is not configured"
    assert_nothing_queued(srv.inst)


# -------------------------------------------------------------- email

EMAIL_ROUTE = "[email]\nprovider = file\nprefix = @example.com\n"


@pytest.mark.parametrize("path,listname,addr", [
    ("/deliver", "payload", "recipient"),
    ("/email/v1/deliver", "recipients", "to"),
])
def test_email_by_domain(srv, path, listname, addr):
    srv.inst.write_conf(EMAIL_ROUTE)
    r = _post(srv, path, {
        "html": "<p>Hi</p>", "subject": "Hi", "from": "shop@acme.example",
        listname: [{addr: "ann@example.com"},
                   {addr: "bob@example.org"},
                   {addr: "cy@mail.Example.COM"}]})
    out = ok_json(r, 200)
    assert out["overallStatus"] == "partial", out
    res = out["recipients"]
    assert [e["status"] for e in res] == ["queued", "error", "queued"], res
    assert _no_route_entry(res[1], "messageId") == (
        "no-route: no route takes this recipient (routes of email take "
        "@example.com)")
    assert len(srv.inst.ids("new")) == 2


def test_email_with_shared_attachment_stores_it_for_the_routed_only(srv):
    """Attachments stored once for several recipients: a refused one
    gets no link to them."""
    srv.inst.write_conf(EMAIL_ROUTE)
    r = _post(srv, "/deliver", {
        "html": "<p>Hi</p>", "subject": "Hi", "from": "shop@acme.example",
        "attachments": [{"attachmentName": "a.txt",
                         "content": "SGVsbG8K"}],
        "payload": [{"recipient": "ann@example.com"},
                    {"recipient": "bob@example.org"}]})
    out = ok_json(r, 200)
    res = out["recipients"]
    assert [e["status"] for e in res] == ["queued", "error"], res
    # blobs/ID.N: the queued message's link alone.
    names = sorted(p.name for p in (srv.inst.spool / "blobs").iterdir())
    assert names == [res[0]["messageId"] + ".0"], names


def test_email_every_recipient_refused(srv):
    srv.inst.write_conf(EMAIL_ROUTE)
    r = _post(srv, "/deliver", {
        "html": "<p>Hi</p>", "subject": "Hi", "from": "shop@acme.example",
        "payload": [{"recipient": "bob@example.org"}]})
    out = ok_json(r, 200)
    assert out["overallStatus"] == "failed", out
    _no_route_entry(out["recipients"][0], "messageId")
    assert_nothing_queued(srv.inst)


# ------------------------------------------------ routes that are wrong

SEND = [
    ("/sms/v1/deliver", {"recipient": DE, "messageBody": "hi"}),
    ("/sms/v1/deliver/batch",
     {"messages": [{"recipient": DE, "messageBody": "hi"}]}),
    ("/voice/v1/deliver", {"recipient": DE, "message": "hi"}),
    ("/ott/v1/deliver", {"payload": [{
        "recipient": DE[1:], "templateID": "otp",
        "templateParameters": ["1"], "channelType": 1}]}),
    ("/deliver", {"html": "<p>Hi</p>", "subject": "Hi",
                  "from": "shop@acme.example",
                  "payload": [{"recipient": "ann@example.com"}]}),
]

BROKEN = {
    "unknown fallback": ("[sms]\nprovider = file\nfallback = nope\n",
                         "[sms] fallback: no route 'nope'"),
    "a circle": ("[sms]\nfallback = b\n[route.b]\nchannel = sms\n"
                 "fallback = sms\n", "a circle"),
    "bad prefix": ("[route.b]\nchannel = sms\nprefix = +4x\n",
                   "[route.b] prefix"),
    "no channel": ("[route.b]\nprovider = file\n", "[route.b] channel"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_routes_a_daemon_would_refuse_are_500(srv, case):
    conf, why = BROKEN[case]
    srv.inst.write_conf("[ott.1]\nprovider = file\n" + conf)
    start = len(srv.cgi_stderr())
    for path, body in SEND:
        r = _post(srv, path, body)
        p = assert_problem(r, 500)
        assert p["type"] == "urn:msgspool:problem:internal", (path, p)
    assert_nothing_queued(srv.inst)
    log = srv.cgi_stderr()[start:]
    assert why in log, log
    # A route that queues nothing does not read them.
    r = srv.get("/templates")
    assert r.status_code == 200, r.text

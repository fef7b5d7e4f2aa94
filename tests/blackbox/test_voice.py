"""POST /voice/v1/deliver: a single call or a campaign (conf/openapi.yaml;
msgspool-spool(5))."""

import datetime

import pytest

from conftest import (RECIPIENT, assert_allow, assert_id,
                      assert_nothing_queued, assert_problem,
                      assert_unauthorized, in_future, parse_time, utcnow)
from channels_support import (bad, bad_any, due_now, exactly_spooled,
                              ok_json, spooled)

PATH = "/voice/v1/deliver"
AUDIO = "https://media.example.com/calls/hello.mp3"
R1, R2, R3 = "+4915100000001", "+4915100000002", "+4915100000003"


def call(srv, client="acme", **body):
    return srv.post_json(PATH, body, client=client)


def accepted_call(r):
    out = ok_json(r, 202)
    assert set(out) == {"callId", "status"}, out
    assert out["status"] == "queued", out
    assert_id(out["callId"])
    return out


def campaign_reply(r, n):
    out = ok_json(r, 202)
    for k in ("campaignId", "status", "accepted", "rejected", "calls"):
        assert k in out, f"{k!r} missing from {out}"
    assert out["status"] == "queued", out
    assert_id(out["campaignId"])
    assert type(out["accepted"]) is int and type(out["rejected"]) is int
    calls = out["calls"]
    assert isinstance(calls, list) and len(calls) == n, out
    for c in calls:
        assert set(c) >= {"recipient", "callId", "status", "error"}, c
        if c["status"] == "queued":
            assert c["error"] is None, c
            assert_id(c["callId"])
        else:
            assert c["status"] == "error", c
            assert c["callId"] is None, c
            assert isinstance(c["error"], str) and c["error"].strip(), c
    assert out["accepted"] == sum(c["status"] == "queued" for c in calls)
    assert out["rejected"] == sum(c["status"] == "error" for c in calls)
    return out


# -------------------------------------------------------- single call

def test_call_with_message_is_queued(srv):
    out = accepted_call(call(srv, recipient=RECIPIENT,
                             message="Your parcel arrives today."))
    exactly_spooled(srv.inst, [out["callId"]])
    doc = spooled(srv.inst, "new", out["callId"], "voice")
    due_now(doc)
    m = doc["message"]
    assert m["to"] == RECIPIENT, m
    assert m.get("say") == "Your parcel arrives today.", m
    assert m.get("play") is None, m


def test_call_with_audio_url_is_queued(srv):
    out = accepted_call(call(srv, recipient=RECIPIENT, audioUrl=AUDIO))
    exactly_spooled(srv.inst, [out["callId"]])
    m = spooled(srv.inst, "new", out["callId"], "voice")["message"]
    assert m["to"] == RECIPIENT, m
    assert m.get("play") == AUDIO, m
    assert m.get("say") is None, m


def test_call_with_caller_id_and_language(srv):
    out = accepted_call(call(srv, recipient=RECIPIENT, message="Hallo",
                             callerId="+4930123456789", language="de-DE"))
    m = spooled(srv.inst, "new", out["callId"], "voice")["message"]
    assert m.get("from") == "+4930123456789", m
    assert m.get("language") == "de-DE", m
    assert m.get("say") == "Hallo", m


def test_calls_get_distinct_ids(srv):
    ids = [accepted_call(call(srv, recipient=RECIPIENT,
                              message=f"m{i}"))["callId"] for i in range(3)]
    assert len(set(ids)) == 3
    exactly_spooled(srv.inst, ids)


def test_call_by_other_client_records_it(srv):
    out = accepted_call(call(srv, client="other", recipient=RECIPIENT,
                             message="hi"))
    spooled(srv.inst, "new", out["callId"], "voice", client="other")


def test_both_message_and_audio_url_is_400(srv):
    bad_any(call(srv, recipient=RECIPIENT, message="hi", audioUrl=AUDIO),
            400, ("message", "audioUrl"), srv.inst)


def test_neither_message_nor_audio_url_is_400(srv):
    bad_any(call(srv, recipient=RECIPIENT), 400, ("message", "audioUrl"),
            srv.inst)


@pytest.mark.parametrize("url", [
    "http://media.example.com/hello.mp3",
    "ftp://media.example.com/hello.mp3",
    "media.example.com/hello.mp3",
    "https://",
    "https://media.example.com/a b.mp3",
    "",
])
def test_audio_url_not_https_is_400(srv, url):
    bad(call(srv, recipient=RECIPIENT, audioUrl=url), 400, "audioUrl",
        srv.inst)


def test_empty_message_is_400(srv):
    bad(call(srv, recipient=RECIPIENT, message=""), 400, "message",
        srv.inst)


@pytest.mark.parametrize("to", ["4915112345678", "+49151", "+49 151 12345678",
                                "+4915112345678901234", "", 4915112345678])
def test_bad_recipient_is_400(srv, to):
    bad(call(srv, recipient=to, message="hi"), 400, "recipient", srv.inst)


def test_missing_recipient_is_400(srv):
    bad(call(srv, message="hi"), 400, "recipient", srv.inst)


def test_bad_caller_id_is_400(srv):
    bad(call(srv, recipient=RECIPIENT, message="hi", callerId="ACME"), 400,
        "callerId", srv.inst)


def test_bad_language_is_400(srv):
    bad(call(srv, recipient=RECIPIENT, message="hi", language="en US"),
        400, "language", srv.inst)


def test_message_not_a_string_is_400(srv):
    bad(call(srv, recipient=RECIPIENT, message=["hi"]), 400, "message",
        srv.inst)


def test_unknown_field_is_400(srv):
    bad(call(srv, recipient=RECIPIENT, message="hi", voice="alice"), 400,
        "voice", srv.inst)


# ----------------------------------------------------------- campaign

def test_campaign_queues_one_call_per_recipient(srv):
    out = campaign_reply(call(srv, campaignName="Spring sale",
                              recipients=[R1, R2, R3],
                              message="Twenty percent off today."), 3)
    assert out["accepted"] == 3 and out["rejected"] == 0, out
    assert [c["recipient"] for c in out["calls"]] == [R1, R2, R3]
    ids = [c["callId"] for c in out["calls"]]
    assert len(set(ids)) == 3
    assert out["campaignId"] not in ids
    exactly_spooled(srv.inst, ids)
    for to, cid in zip([R1, R2, R3], ids):
        doc = spooled(srv.inst, "new", cid, "voice")
        due_now(doc)
        assert doc["message"]["to"] == to, doc
        assert doc["message"].get("say") == "Twenty percent off today."


def test_campaign_with_audio_url(srv):
    out = campaign_reply(call(srv, campaignName="Jingle",
                              recipients=[R1], audioUrl=AUDIO), 1)
    m = spooled(srv.inst, "new", out["calls"][0]["callId"],
                "voice")["message"]
    assert m.get("play") == AUDIO and m["to"] == R1, m


def test_campaign_bad_and_duplicate_recipients_rejected_alone(srv):
    recipients = [R1, "12345", R1, 42, R2, "+49 151", R2]
    out = campaign_reply(call(srv, campaignName="Mixed",
                              recipients=recipients, message="hi"), 7)
    assert [c["status"] for c in out["calls"]] == \
        ["queued", "error", "error", "error", "queued", "error", "error"]
    assert out["accepted"] == 2 and out["rejected"] == 5, out
    assert out["calls"][0]["recipient"] == R1
    assert out["calls"][1]["recipient"] == "12345"
    assert out["calls"][4]["recipient"] == R2
    assert "duplicate" in out["calls"][2]["error"].lower(), out["calls"][2]
    assert "duplicate" in out["calls"][6]["error"].lower(), out["calls"][6]
    ids = [out["calls"][0]["callId"], out["calls"][4]["callId"]]
    exactly_spooled(srv.inst, ids)
    assert spooled(srv.inst, "new", ids[1], "voice")["message"]["to"] == R2


def test_campaign_future_send_at_is_deferred(srv):
    at = in_future(3600)
    out = campaign_reply(call(srv, campaignName="Later",
                              recipients=[R1, R2], message="hi",
                              sendAt=at), 2)
    assert out["accepted"] == 2
    ids = [c["callId"] for c in out["calls"]]
    exactly_spooled(srv.inst, ids, state="deferred")
    want = parse_time(at)
    for cid in ids:
        doc = spooled(srv.inst, "deferred", cid, "voice")
        due = parse_time(doc["nextAttempt"])
        assert abs((due - want).total_seconds()) < 2, doc


def test_campaign_past_send_at_is_due_now(srv):
    past = (utcnow() - datetime.timedelta(hours=1)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    out = campaign_reply(call(srv, campaignName="Now", recipients=[R1],
                              message="hi", sendAt=past), 1)
    exactly_spooled(srv.inst, [out["calls"][0]["callId"]])


def test_campaign_1000_recipients_accepted_count(srv):
    # Only the count matters here; duplicates keep the spool small.
    recipients = [R1] + ["bad"] * 999
    out = campaign_reply(call(srv, campaignName="Big", recipients=recipients,
                              message="hi"), 1000)
    assert out["accepted"] == 1 and out["rejected"] == 999
    exactly_spooled(srv.inst, [out["calls"][0]["callId"]])


@pytest.mark.parametrize("value", [R1, {"to": R1}, 5])
def test_campaign_recipients_not_an_array_is_400(srv, value):
    bad(call(srv, campaignName="X", recipients=value, message="hi"), 400,
        "recipients", srv.inst)


def test_campaign_empty_recipients_is_400(srv):
    bad(call(srv, campaignName="X", recipients=[], message="hi"), 400,
        "recipients", srv.inst)


def test_campaign_1001_recipients_is_400(srv):
    recipients = [f"+49151{i:08d}" for i in range(1001)]
    bad(call(srv, campaignName="X", recipients=recipients, message="hi"),
        400, "recipients", srv.inst)


def test_campaign_without_name_is_400(srv):
    bad(call(srv, recipients=[R1], message="hi"), 400, "campaignName",
        srv.inst)


def test_campaign_both_message_and_audio_url_is_400(srv):
    bad_any(call(srv, campaignName="X", recipients=[R1], message="hi",
                 audioUrl=AUDIO), 400, ("message", "audioUrl"), srv.inst)


def test_campaign_neither_message_nor_audio_url_is_400(srv):
    bad_any(call(srv, campaignName="X", recipients=[R1]), 400,
            ("message", "audioUrl"), srv.inst)


def test_campaign_http_audio_url_is_400(srv):
    bad(call(srv, campaignName="X", recipients=[R1],
             audioUrl="http://media.example.com/a.mp3"), 400, "audioUrl",
        srv.inst)


@pytest.mark.parametrize("at", ["tomorrow", "2026-13-01T00:00:00Z",
                                "2026-11-23 10:00:00"])
def test_campaign_bad_send_at_is_400(srv, at):
    bad(call(srv, campaignName="X", recipients=[R1], message="hi",
             sendAt=at), 400, "sendAt", srv.inst)


# ------------------------------------------------------ auth, method

@pytest.mark.parametrize("client", ["mailer", "smsonly", "gone"])
def test_key_without_voice_scope_is_403(srv, client):
    assert_problem(call(srv, client=client, recipient=RECIPIENT,
                        message="hi"), 403)
    assert_nothing_queued(srv.inst)


def test_missing_key_is_401(srv):
    assert_unauthorized(call(srv, client=None, recipient=RECIPIENT,
                             message="hi"))
    assert_nothing_queued(srv.inst)


def test_get_is_405(srv):
    assert_allow(srv.get(PATH), "POST")

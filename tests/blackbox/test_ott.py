"""POST /ott/v1/deliver (conf/openapi.yaml; msgspool.conf(5) templates)."""

import pytest

from conftest import (assert_allow, assert_id, assert_nothing_queued,
                      assert_problem, assert_unauthorized)
from channels_support import (OTT_CONF, bad, due_now, exactly_spooled,
                              ok_json, ott_templates, spooled)  # noqa: F401

PATH = "/ott/v1/deliver"
TO = "4915112345678"


@pytest.fixture
def ott(srv, ott_templates):  # noqa: F811
    """The shared server, its spool clean, with [ott.1] and [ott.3]
    configured and the extra OTT templates in place."""
    srv.inst.write_conf(OTT_CONF)
    yield srv
    srv.inst.write_conf()


def entry(recipient=TO, tid="order_update", params=("Ann", "A-1001"),
          channel=1, **extra):
    e = {"recipient": recipient, "templateID": tid,
         "templateParameters": list(params) if params is not None else None,
         "channelType": channel}
    if params is None:
        del e["templateParameters"]
    e.update(extra)
    return e


def send(srv, payload, client="acme"):
    return srv.post_json(PATH, {"payload": payload}, client=client)


def results(r, n):
    out = ok_json(r, 200)
    assert isinstance(out, list) and len(out) == n, out
    for e in out:
        assert isinstance(e, dict), e
        assert set(e) == {"recipient", "messageId", "status", "error"}, e
        assert e["status"] in ("queued", "error"), e
        if e["status"] == "queued":
            assert e["error"] is None, e
            assert_id(e["messageId"])
        else:
            assert isinstance(e["error"], str) and e["error"].strip(), e
            assert e["messageId"] is None, e
    return out


# ------------------------------------------------------------ success

def test_one_entry_is_queued_with_the_rendered_message(ott):
    out = results(send(ott, [entry()]), 1)
    e = out[0]
    assert e["recipient"] == TO and e["status"] == "queued"
    exactly_spooled(ott.inst, [e["messageId"]])
    doc = spooled(ott.inst, "new", e["messageId"], "ott")
    due_now(doc)
    m = doc["message"]
    assert m["to"] == TO, m
    assert m["body"].rstrip("\n") == \
        "Hallo Ann, Ihre Bestellung A-1001 ist unterwegs.", m
    assert "{{" not in m["body"], m
    assert m["templateName"] == "Order update", m
    assert m["language"] == "de", m
    assert m["providerTemplate"] == "order_update_v2", m
    assert m["parameters"] == ["Ann", "A-1001"], m
    assert m["channelType"] == 1, m


def test_sample_template_from_the_base_instance(ott):
    out = results(send(ott, [entry(tid="otp", params=["123456"])]), 1)
    doc = spooled(ott.inst, "new", out[0]["messageId"], "ott")
    m = doc["message"]
    assert m["body"].rstrip("\n") == "Your code is 123456", m
    assert m["templateName"] == "OTP" and m["language"] == "en", m
    assert m["providerTemplate"] == "otp_code", m
    assert m["parameters"] == ["123456"], m


def test_parameters_are_not_html_escaped(ott):
    # OTT bodies are text: a value goes in as it is.
    out = results(send(ott, [entry(tid="plain.v1",
                                   params=['<b>&"\' ok'])]), 1)
    m = spooled(ott.inst, "new", out[0]["messageId"], "ott")["message"]
    assert m["body"].rstrip("\n") == 'Note: <b>&"\' ok', m


def test_several_entries_get_distinct_sorted_ids(ott):
    payload = [entry(recipient=f"49151000000{i:02d}",
                     params=[f"N{i}", f"O{i}"]) for i in range(5)]
    out = results(send(ott, payload), 5)
    ids = [e["messageId"] for e in out]
    assert [e["recipient"] for e in out] == [p["recipient"] for p in payload]
    assert len(set(ids)) == 5
    # The time part (milliseconds) follows input order; within one
    # millisecond the random part may order either way.
    assert [i[:10] for i in ids] == sorted(i[:10] for i in ids)
    exactly_spooled(ott.inst, ids)
    for i, mid in enumerate(ids):
        m = spooled(ott.inst, "new", mid, "ott")["message"]
        assert m["to"] == payload[i]["recipient"], m
        assert m["parameters"] == [f"N{i}", f"O{i}"], m


def test_other_configured_channel_type(ott):
    out = results(send(ott, [entry(channel=3)]), 1)
    m = spooled(ott.inst, "new", out[0]["messageId"], "ott")["message"]
    assert m["channelType"] == 3, m


def test_other_client_uses_its_own_template(ott):
    out = results(send(ott, [entry(tid="other_otp", params=["42"])],
                       client="other"), 1)
    doc = spooled(ott.inst, "new", out[0]["messageId"], "ott",
                  client="other")
    assert doc["message"]["body"].rstrip("\n") == "Other code 42"


def test_charset_parameter_accepted(ott):
    r = ott.post_json(PATH, {"payload": [entry()]},
                      content_type="application/json; charset=utf-8")
    out = results(r, 1)
    exactly_spooled(ott.inst, [out[0]["messageId"]])


# ------------------------------------------- entries failing alone

BAD_ENTRIES = {
    "unknown template": (entry(tid="no_such_template"), "template"),
    "another client's template": (entry(tid="other_otp", params=["1"]),
                                  "template"),
    "too few parameters": (entry(params=["Ann"]), "param"),
    "too many parameters": (entry(params=["Ann", "A-1", "x"]), "param"),
    "parameters missing": (entry(params=None), "param"),
    "unconfigured channelType": (entry(channel=7), None),
    "recipient with plus": (entry(recipient="+" + TO), "recipient"),
    "recipient too short": (entry(recipient="1234567"), "recipient"),
    "recipient too long": (entry(recipient="1234567890123456"),
                           "recipient"),
    "recipient with letters": (entry(recipient="49151abc45678"),
                               "recipient"),
    "non-string parameter": (entry(params=["Ann", 1001]),
                             "templateParameters"),
    "templateID path": (entry(tid="../x"), "templateID"),
    "templateID absolute path": (entry(tid="/etc/passwd"), "templateID"),
    "channelType string": (entry(channel="1"), "channelType"),
    "recipient missing": ({"templateID": "order_update",
                           "templateParameters": ["a", "b"],
                           "channelType": 1}, "recipient"),
    "entry not an object": ("just a string", None),
}


@pytest.mark.parametrize("case", list(BAD_ENTRIES), ids=list(BAD_ENTRIES))
def test_bad_entry_fails_alone(ott, case):
    bad_entry, word = BAD_ENTRIES[case]
    good1 = entry(recipient="4915100000001")
    good2 = entry(recipient="4915100000002", params=["Bo", "B-2"])
    out = results(send(ott, [good1, bad_entry, good2]), 3)
    assert [e["status"] for e in out] == ["queued", "error", "queued"], out
    assert out[0]["recipient"] == good1["recipient"]
    assert out[2]["recipient"] == good2["recipient"]
    if isinstance(bad_entry, dict) and "recipient" in bad_entry:
        assert out[1]["recipient"] == bad_entry["recipient"], out[1]
    if word is not None:
        assert word.lower() in out[1]["error"].lower(), out[1]
    ids = [out[0]["messageId"], out[2]["messageId"]]
    exactly_spooled(ott.inst, ids)
    assert spooled(ott.inst, "new", ids[1], "ott")["message"]["to"] == \
        good2["recipient"]


def test_routing_failure_is_named(ott):
    out = results(send(ott, [entry(channel=2)]), 1)
    err = out[0]["error"].lower()
    assert "rout" in err or "channel" in err, out
    exactly_spooled(ott.inst, [])


def test_mixed_batch_keeps_input_order(ott):
    payload = [
        entry(recipient="4915100000001"),
        entry(recipient="4915100000002", tid="nope"),
        entry(recipient="4915100000003", tid="other_otp", params=["1"]),
        entry(recipient="4915100000004", params=["one"]),
        entry(recipient="4915100000005", channel=9),
        entry(recipient="+4915100000006"),
        entry(recipient="4915100000007", params=["a", 2]),
        entry(recipient="4915100000008", tid="../x"),
        entry(recipient="4915100000009", tid="otp", params=["777"]),
    ]
    out = results(send(ott, payload), len(payload))
    assert [e["recipient"] for e in out] == [p["recipient"] for p in payload]
    assert [e["status"] for e in out] == \
        ["queued"] + ["error"] * 7 + ["queued"], out
    ids = [out[0]["messageId"], out[-1]["messageId"]]
    exactly_spooled(ott.inst, ids)
    assert spooled(ott.inst, "new", ids[1], "ott")["message"]["body"] \
        .rstrip("\n") == "Your code is 777"


def test_all_entries_bad_is_still_200_and_nothing_queued(ott):
    out = results(send(ott, [entry(tid="nope"), entry(channel=99)]), 2)
    assert [e["status"] for e in out] == ["error", "error"]
    exactly_spooled(ott.inst, [])


# ------------------------------------------------ request-level 4xx

def test_empty_payload_is_400(ott):
    bad(send(ott, []), 400, "payload", ott.inst)


def test_1001_entries_is_400(ott):
    payload = [entry(recipient=f"4915{i:09d}") for i in range(1001)]
    bad(send(ott, payload), 400, "payload", ott.inst)


def test_missing_payload_is_400(ott):
    bad(ott.post_json(PATH, {}), 400, "payload", ott.inst)


@pytest.mark.parametrize("value", [{"recipient": TO}, "x", 3, None])
def test_payload_not_an_array_is_400(ott, value):
    bad(ott.post_json(PATH, {"payload": value}), 400, "payload", ott.inst)


def test_unknown_top_level_field_is_400(ott):
    bad(ott.post_json(PATH, {"payload": [entry()], "channel": 1}), 400,
        "channel", ott.inst)


def test_body_not_an_object_is_400(ott):
    r = ott.post_json(PATH, [entry()])
    assert_problem(r, 400)
    assert_nothing_queued(ott.inst)


def test_invalid_json_is_400(ott):
    assert_problem(ott.post_raw(PATH, b'{"payload": [}'), 400)
    assert_nothing_queued(ott.inst)


# ------------------------------------------------------ auth, method

@pytest.mark.parametrize("client", ["mailer", "smsonly"])
def test_key_without_ott_scope_is_403(ott, client):
    assert_problem(send(ott, [entry()], client=client), 403)
    assert_nothing_queued(ott.inst)


def test_disabled_key_is_403(ott):
    assert_problem(send(ott, [entry()], client="gone"), 403)
    assert_nothing_queued(ott.inst)


def test_missing_key_is_401(ott):
    assert_unauthorized(send(ott, [entry()], client=None))
    assert_nothing_queued(ott.inst)


def test_get_is_405(ott):
    assert_allow(ott.get(PATH), "POST")

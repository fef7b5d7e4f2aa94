"""POST /sms/v1/deliver/batch (conf/openapi.yaml)."""

import json

import pytest

from conftest import (RECIPIENT, assert_allow, assert_id,
                      assert_nothing_queued, assert_problem,
                      assert_spool_file, assert_unauthorized, in_future,
                      parse_time)

PATH = "/sms/v1/deliver/batch"


def _msg(recipient=RECIPIENT, text="hi", **extra):
    m = {"recipient": recipient, "messageBody": text}
    m.update(extra)
    return m


def _batch(srv, messages, client="acme", timeout=None):
    kw = {"timeout": timeout} if timeout else {}
    return srv.post_json(PATH, {"messages": messages}, client=client, **kw)


def _results(r, n):
    assert r.status_code == 200, r.text[:1000]
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip() == "application/json", ctype
    out = r.json()
    assert isinstance(out, list) and len(out) == n, out
    for e in out:
        assert isinstance(e, dict), e
        assert set(e) >= {"recipient", "smsId", "status", "error"}, e
        assert e["status"] in ("Queued", "Scheduled", "error"), e
        if e["status"] == "error":
            assert isinstance(e["error"], str) and e["error"], e
            assert e["smsId"] is None, e
        else:
            assert e["error"] is None, e
            assert_id(e["smsId"])
    return out


def test_batch_all_good(srv):
    msgs = [_msg("+4915100000001", "one"), _msg("+4915100000002", "two"),
            _msg("+4915100000003", "three")]
    out = _results(_batch(srv, msgs), 3)
    assert [e["status"] for e in out] == ["Queued"] * 3
    assert [e["recipient"] for e in out] == [m["recipient"] for m in msgs]
    ids = [e["smsId"] for e in out]
    assert len(set(ids)) == 3
    assert srv.inst.ids("new") == sorted(ids)
    for m, e in zip(msgs, out):
        assert_spool_file(srv.inst, "new", e["smsId"], to=m["recipient"],
                          body=m["messageBody"])
    assert srv.inst.files("tmp") == [] and srv.inst.files("deferred") == []


def test_batch_id_times_follow_input_order(srv):
    out = _results(_batch(srv, [_msg() for _ in range(5)]), 5)
    ids = [e["smsId"] for e in out]
    # The time part (first 10 characters, milliseconds) never goes back;
    # within one millisecond the random part may order either way.
    assert [i[:10] for i in ids] == sorted(i[:10] for i in ids)


def test_batch_mixed_good_and_bad(srv):
    msgs = [
        _msg("+4915100000001", "ok"),
        _msg("12345", "bad recipient"),
        _msg("+4915100000003", ""),
        42,
        _msg("+4915100000005", "ok too"),
        {"recipient": "+4915100000006", "messageBody": "x", "foo": 1},
        _msg("+4915100000007", "x" * 1601),
        ["+4915100000008", "array"],
        {"recipient": "+4915100000009"},
        _msg("+4915100000010", "bad time", sendAt="soon"),
    ]
    out = _results(_batch(srv, msgs), len(msgs))
    assert [e["status"] for e in out] == [
        "Queued", "error", "error", "error", "Queued", "error", "error",
        "error", "error", "error"]
    for i in (0, 1, 2, 4, 5, 6, 8, 9):
        assert out[i]["recipient"] == msgs[i]["recipient"], (i, out[i])
    good = [out[0]["smsId"], out[4]["smsId"]]
    assert srv.inst.ids("new") == sorted(good)
    assert_spool_file(srv.inst, "new", good[0], to="+4915100000001",
                      body="ok")
    assert_spool_file(srv.inst, "new", good[1], to="+4915100000005",
                      body="ok too")
    assert srv.inst.files("tmp") == [] and srv.inst.files("deferred") == []


def test_batch_all_bad_is_still_200(srv):
    out = _results(_batch(srv, [_msg("nope"), "x", None]), 3)
    assert [e["status"] for e in out] == ["error"] * 3
    assert_nothing_queued(srv.inst)


def test_batch_scheduled_and_past(srv):
    when = in_future(7200)
    past = "2001-01-01T00:00:00Z"
    msgs = [_msg("+4915100000001", "later", sendAt=when),
            _msg("+4915100000002", "now"),
            _msg("+4915100000003", "was due", sendAt=past)]
    out = _results(_batch(srv, msgs), 3)
    assert [e["status"] for e in out] == ["Scheduled", "Queued", "Queued"]
    assert srv.inst.ids("deferred") == [out[0]["smsId"]]
    assert srv.inst.ids("new") == sorted([out[1]["smsId"], out[2]["smsId"]])
    doc = assert_spool_file(srv.inst, "deferred", out[0]["smsId"],
                            to="+4915100000001", body="later")
    assert parse_time(doc["nextAttempt"]) == parse_time(when)


def test_batch_multibyte_bodies(srv):
    msgs = [_msg(text="€" * 1600), _msg(text="€" * 1601)]
    out = _results(_batch(srv, msgs), 2)
    assert [e["status"] for e in out] == ["Queued", "error"]
    assert_spool_file(srv.inst, "new", out[0]["smsId"], body="€" * 1600)


def test_batch_nul_in_one_entry(srv):
    data = (b'{"messages": [{"recipient": "+4915112345678", '
            b'"messageBody": "a\\u0000b"}]}')
    r = srv.post_raw(PATH, data)
    # jansson may refuse the whole body (400) or the entry (200, error):
    # either way nothing is queued.
    if r.status_code == 200:
        out = _results(r, 1)
        assert out[0]["status"] == "error"
    else:
        assert_problem(r, 400)
    assert_nothing_queued(srv.inst)


def test_batch_of_1000_is_accepted(srv):
    msgs = [_msg("+49151%08d" % i, "m%d" % i) for i in range(1000)]
    out = _results(_batch(srv, msgs, timeout=60), 1000)
    assert all(e["status"] == "Queued" for e in out)
    assert [e["recipient"] for e in out] == [m["recipient"] for m in msgs]
    ids = [e["smsId"] for e in out]
    assert len(set(ids)) == 1000
    assert sorted(srv.inst.ids("new")) == sorted(ids)
    assert srv.inst.files("tmp") == []
    assert_spool_file(srv.inst, "new", ids[999], to="+4915100000999",
                      body="m999")


# ----------------------------------------------------- whole-request errors

def test_batch_empty_is_400(srv):
    assert_problem(_batch(srv, []), 400, "messages")
    assert_nothing_queued(srv.inst)


def test_batch_of_1001_is_400(srv):
    msgs = [_msg("+49151%08d" % i, "m") for i in range(1001)]
    assert_problem(_batch(srv, msgs, timeout=60), 400, "messages")
    assert_nothing_queued(srv.inst)


def test_batch_missing_messages_is_400(srv):
    assert_problem(srv.post_json(PATH, {}), 400, "messages")
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("value", [{"recipient": RECIPIENT}, "x", 1, None])
def test_batch_messages_not_an_array_is_400(srv, value):
    assert_problem(srv.post_json(PATH, {"messages": value}), 400,
                   "messages")
    assert_nothing_queued(srv.inst)


def test_batch_unknown_top_level_field_is_400(srv):
    r = srv.post_json(PATH, {"messages": [_msg()], "extra": True})
    assert_problem(r, 400, "extra")
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("data", [b"[", b"[]", b'[{"recipient": "+1"}]',
                                  b"\xff"])
def test_batch_body_not_an_object_is_400(srv, data):
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


def test_batch_no_key_is_401(srv):
    assert_unauthorized(_batch(srv, [_msg()], client=None))
    assert_nothing_queued(srv.inst)


def test_batch_unknown_key_is_401(srv):
    r = srv.post_json(PATH, {"messages": [_msg()]}, api_key="nope")
    assert_unauthorized(r)
    assert_nothing_queued(srv.inst)


def test_batch_disabled_key_is_403(srv):
    assert_problem(_batch(srv, [_msg()], client="gone"), 403)
    assert_nothing_queued(srv.inst)


def test_batch_without_sms_scope_is_403(srv):
    assert_problem(_batch(srv, [_msg()], client="mailer"), 403)
    assert_nothing_queued(srv.inst)


def test_batch_get_is_405(srv):
    assert_allow(srv.get(PATH), "POST")


def test_batch_text_plain_is_415(srv):
    r = srv.post_json(PATH, {"messages": [_msg()]}, content_type="text/plain")
    assert_problem(r, 415)
    assert_nothing_queued(srv.inst)


def test_batch_over_1_mib_is_413(srv):
    data = json.dumps({"messages": [_msg()]}).encode()
    data = data[:-1] + b" " * (1024 * 1024 + 1 - len(data)) + b"}"
    assert_problem(srv.post_raw(PATH, data), 413)
    assert_nothing_queued(srv.inst)


def test_batch_missing_new_dir_is_503(private):
    srv, inst = private()
    (inst.spool / "new").rmdir()
    r = _batch(srv, [_msg()])
    assert_problem(r, 503)
    assert r.headers.get("Retry-After")
    assert inst.files("tmp") == [] and inst.files("deferred") == []


def test_max_batch_from_config(private):
    srv, inst = private()
    inst.write_conf("max-batch = 2\n")
    _results(_batch(srv, [_msg(), _msg()]), 2)
    assert len(inst.files("new")) == 2
    assert_problem(_batch(srv, [_msg(), _msg(), _msg()]), 400, "messages")
    assert len(inst.files("new")) == 2

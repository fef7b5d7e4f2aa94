"""POST /sms/v1/deliver (conf/openapi.yaml; msgspool-spool(5))."""

import datetime
import json
import time

import pytest
import requests

from conftest import (ABSENT, RECIPIENT, assert_allow, assert_id,
                      assert_nothing_queued, assert_problem,
                      assert_spool_file, assert_unauthorized, in_future,
                      parse_time, rfc3339, utcnow, FRONT)

PATH = "/sms/v1/deliver"
MIB = 1024 * 1024


def _queued(r):
    assert r.status_code == 202, r.text
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip() == "application/json", ctype
    body = r.json()
    assert body.get("status") == "Queued", body
    assert_id(body.get("smsId"))
    return body


def _scheduled(r):
    assert r.status_code == 200, r.text
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip() == "application/json", ctype
    body = r.json()
    assert body.get("status") == "Scheduled", body
    assert_id(body.get("smsId"))
    assert "sendAt" in body, body
    return body


# ------------------------------------------------------------ success

def test_queued_makes_one_spool_file(srv):
    body = _queued(srv.sms(messageBody="hi"))
    sid = body["smsId"]
    assert srv.inst.files("new") == [sid + ".json"]
    for s in ("tmp", "deferred", "cur", "sent", "failed"):
        assert srv.inst.files(s) == [], s
    doc = assert_spool_file(srv.inst, "new", sid, body="hi")
    assert doc["attempts"] == 0
    assert doc["lastError"] is None
    assert doc["providerReply"] is None
    # Due now: nextAttempt not in the future.
    assert parse_time(doc["nextAttempt"]) <= utcnow() + \
        datetime.timedelta(seconds=2)


def test_queued_reply_has_exactly_the_documented_fields(srv):
    body = _queued(srv.sms())
    assert set(body) == {"smsId", "status"}, body


def test_ids_are_unique_and_sort_by_time(srv):
    ids = []
    for _ in range(3):
        ids.append(_queued(srv.sms())["smsId"])
        # Not a wait: the next id in a later millisecond (an id sorts by
        # its millisecond, then at random), which msgspool-fcgi can
        # otherwise answer within.
        time.sleep(0.005)
    assert len(set(ids)) == 3
    assert ids == sorted(ids)
    assert srv.inst.ids("new") == sorted(ids)


def test_client_recorded_in_spool_file(srv):
    sid = _queued(srv.sms(client="other"))["smsId"]
    assert_spool_file(srv.inst, "new", sid, client="other")


def test_sms_scope_only_key_works(srv):
    sid = _queued(srv.sms(client="smsonly"))["smsId"]
    assert_spool_file(srv.inst, "new", sid, client="smsonly")


@pytest.mark.parametrize("text", [
    "Grüße aus Köln – 10 € 😀",
    "line one\nline two\r\nline three\ttab",
    "quote \" backslash \\ slash / <b>&amp;</b>",
])
def test_body_stored_exactly(srv, text):
    sid = _queued(srv.sms(messageBody=text))["smsId"]
    assert_spool_file(srv.inst, "new", sid, body=text)


@pytest.mark.parametrize("recipient", ["+12345678", "+123456789012345"])
def test_recipient_length_bounds_ok(srv, recipient):
    sid = _queued(srv.sms(recipient=recipient))["smsId"]
    assert_spool_file(srv.inst, "new", sid, to=recipient)


@pytest.mark.parametrize("text", ["x" * 1600, "é" * 1600, "€" * 1600])
def test_body_of_1600_characters_ok(srv, text):
    sid = _queued(srv.sms(messageBody=text))["smsId"]
    assert_spool_file(srv.inst, "new", sid, body=text)


@pytest.mark.parametrize("ctype", ["application/json; charset=utf-8",
                                   "application/json;charset=UTF-8"])
def test_content_type_parameters_allowed(srv, ctype):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      content_type=ctype)
    _queued(r)


def test_query_string_is_ignored(srv):
    r = srv.post_json(PATH + "?x=1",
                      {"recipient": RECIPIENT, "messageBody": "hi"})
    _queued(r)


def test_body_of_exactly_1_mib_ok(srv):
    doc = {"recipient": RECIPIENT, "messageBody": "hi"}
    data = json.dumps(doc).encode()
    data = data[:-1] + b" " * (MIB - len(data)) + b"}"
    assert len(data) == MIB
    _queued(srv.post_raw(PATH, data))


def test_concurrent_requests_get_distinct_files(srv):
    import concurrent.futures
    import requests

    def one(i):
        with requests.Session() as sess:
            sess.trust_env = False
            r = sess.post(srv.url(PATH), timeout=30, json={
                "recipient": RECIPIENT, "messageBody": f"parallel {i}"},
                headers={"X-API-KEY": srv.inst.keys["acme"]})
            return r.status_code, r.json().get("smsId")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        res = list(pool.map(one, range(16)))
    assert all(code == 202 for code, _ in res), res
    ids = [i for _, i in res]
    assert len(set(ids)) == 16
    assert sorted(srv.inst.ids("new")) == sorted(ids)
    assert srv.inst.files("tmp") == []
    bodies = sorted(srv.inst.load("new", i)["message"]["body"] for i in ids)
    assert bodies == sorted(f"parallel {i}" for i in range(16))


# ---------------------------------------------------------- scheduled

def test_future_send_at_is_scheduled_in_deferred(srv):
    when = in_future(3600)
    body = _scheduled(srv.sms(sendAt=when))
    sid = body["smsId"]
    assert parse_time(body["sendAt"]) == parse_time(when)
    assert srv.inst.files("deferred") == [sid + ".json"]
    assert srv.inst.files("new") == []
    assert srv.inst.files("tmp") == []
    doc = assert_spool_file(srv.inst, "deferred", sid, body="hi")
    assert parse_time(doc["nextAttempt"]) == parse_time(when)


def test_future_send_at_with_offset_and_fraction(srv):
    t = utcnow() + datetime.timedelta(days=2)
    t = t.replace(microsecond=0)
    local = t.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    when = local.strftime("%Y-%m-%dT%H:%M:%S") + ".250+02:00"
    body = _scheduled(srv.sms(sendAt=when))
    got = parse_time(body["sendAt"])
    assert abs((got - t).total_seconds()) < 1, (body, rfc3339(t))
    assert srv.inst.ids("deferred") == [body["smsId"]]


def test_past_send_at_is_queued_now(srv):
    when = rfc3339(utcnow() - datetime.timedelta(hours=1))
    sid = _queued(srv.sms(sendAt=when))["smsId"]
    assert srv.inst.files("new") == [sid + ".json"]
    assert srv.inst.files("deferred") == []


# ------------------------------------------------------- 400: bad JSON

@pytest.mark.parametrize("data", [
    b'{"recipient": "+4915112345678", "messageBody": ',
    b"not json",
    b"",
    b'{"recipient": "+4915112345678", "messageBody": "hi"} trailing',
    b"{'recipient': '+4915112345678'}",
], ids=["truncated", "garbage", "empty", "trailing", "single-quotes"])
def test_invalid_json_is_400(srv, data):
    r = srv.post_raw(PATH, data)
    if FRONT == "busybox" and data == b"":
        # busybox httpd sets CONTENT_LENGTH only when it is above 0: an
        # empty body looks like no Content-Length at all.
        assert_problem(r, 411)
    else:
        assert_problem(r, 400)
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("data", [b"[]", b'"hi"', b"42", b"null", b"true",
                                  b'[{"recipient": "+4915112345678"}]'])
def test_json_not_an_object_is_400(srv, data):
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("data", [
    b'{"recipient": "+4915112345678", "messageBody": "\xff\xfe"}',
    b'{"recipient": "+4915112345678", "messageBody": "\xc0\xaf"}',
    b'{"recipient": "+4915112345678", "messageBody": "ab\xed\xa0\x80"}',
    b'{"recipient": "+4915112345678", "messageBody": "\xe2\x82"}',
], ids=["ff-fe", "overlong", "surrogate", "truncated-seq"])
def test_invalid_utf8_is_400(srv, data):
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("data", [b"[" * 200000, b'{"a":' * 100000],
                         ids=["arrays", "objects"])
def test_deeply_nested_json_is_400(srv, data):
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


def test_lone_surrogate_escape_is_400(srv):
    data = b'{"recipient": "+4915112345678", "messageBody": "a\\ud800b"}'
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


def test_nul_in_message_body_is_400(srv):
    data = b'{"recipient": "+4915112345678", "messageBody": "a\\u0000b"}'
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


def test_raw_nul_byte_in_body_is_400(srv):
    data = b'{"recipient": "+4915112345678", "messageBody": "a\x00b"}'
    assert_problem(srv.post_raw(PATH, data), 400)
    assert_nothing_queued(srv.inst)


# ----------------------------------------------------- 400: fields

def test_missing_recipient_is_400(srv):
    assert_problem(srv.sms(recipient=ABSENT), 400, "recipient")
    assert_nothing_queued(srv.inst)


def test_missing_message_body_is_400(srv):
    assert_problem(srv.sms(messageBody=ABSENT), 400, "messageBody")
    assert_nothing_queued(srv.inst)


def test_empty_object_names_both_fields(srv):
    r = srv.post_json(PATH, {})
    p = assert_problem(r, 400, "recipient")
    assert "messageBody" in p["errors"], p
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("recipient", [
    "4915112345678",            # no plus
    "+1234567",                 # 7 digits
    "+1234567890123456",        # 16 digits
    "+49151abc45678",           # letters
    "+49 151 12345678",         # spaces
    "++4915112345678",
    "+",
    "",
    "+4915112345678\n",
    " +4915112345678",
    "+４９１５１１２３４５６７８",  # full-width digits
])
def test_bad_recipient_is_400(srv, recipient):
    assert_problem(srv.sms(recipient=recipient), 400, "recipient")
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("text", ["", "x" * 1601, "é" * 1601, "😀" * 1601])
def test_bad_message_body_length_is_400(srv, text):
    assert_problem(srv.sms(messageBody=text), 400, "messageBody")
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("field,value", [
    ("recipient", 4915112345678),
    ("recipient", None),
    ("recipient", ["+4915112345678"]),
    ("messageBody", 42),
    ("messageBody", None),
    ("messageBody", {"text": "hi"}),
    ("messageBody", True),
    ("sendAt", 1893456000),
    ("sendAt", {"at": "2030-01-01T00:00:00Z"}),
])
def test_wrong_type_is_400(srv, field, value):
    assert_problem(srv.sms(**{field: value}), 400, field)
    assert_nothing_queued(srv.inst)


def test_unknown_field_is_400(srv):
    assert_problem(srv.sms(foo="bar"), 400, "foo")
    assert_nothing_queued(srv.inst)


def test_misspelled_field_is_400(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messagebody": "hi"})
    assert_problem(r, 400, "messagebody")
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("when", [
    "tomorrow",
    "",
    "2030-13-01T00:00:00Z",
    "2030-02-30T00:00:00Z",
    "2030-01-01T25:00:00Z",
    "2030-01-01",
    "2030-01-01T00:00:00",          # no offset
    "01/01/2030 00:00",
    "2030-01-01T00:00:00Zjunk",
    "2030-01-01T00:00:00+25:00",
    "2030-01-01T00:00:00.Z",
    "2030-01-01T00:00Z",
    " 2030-01-01T00:00:00Z",
])
def test_bad_send_at_is_400(srv, when):
    assert_problem(srv.sms(sendAt=when), 400, "sendAt")
    assert_nothing_queued(srv.inst)


def test_errors_report_every_bad_field(srv):
    r = srv.sms(recipient="nope", messageBody="", sendAt="later")
    p = assert_problem(r, 400)
    assert {"recipient", "messageBody", "sendAt"} <= set(p["errors"]), p
    assert_nothing_queued(srv.inst)


# ------------------------------------------------------- 401 / 403

def test_no_key_is_401(srv):
    assert_unauthorized(srv.sms(client=None))
    assert_nothing_queued(srv.inst)


def test_empty_key_is_401(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      api_key="")
    assert_unauthorized(r)
    assert_nothing_queued(srv.inst)


def test_unknown_key_is_401(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      api_key="definitely-not-a-key")
    assert_unauthorized(r)
    assert_nothing_queued(srv.inst)


def test_key_with_extra_character_is_401(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      api_key=srv.inst.keys["acme"] + "x")
    assert_unauthorized(r)
    assert_nothing_queued(srv.inst)


def test_disabled_key_is_403(srv):
    assert_problem(srv.sms(client="gone"), 403)
    assert_nothing_queued(srv.inst)


def test_key_without_sms_scope_is_403(srv):
    assert_problem(srv.sms(client="mailer"), 403)
    assert_nothing_queued(srv.inst)


def test_auth_is_checked_before_the_body(srv):
    # A bad body with no key is still a 401, not a 400.
    assert_unauthorized(srv.post_raw(PATH, b"not json", client=None))
    assert_nothing_queued(srv.inst)


# ------------------------------------------- 405 / 411 / 413 / 415

@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH",
                                    "OPTIONS"])
def test_other_methods_are_405(srv, method):
    assert_allow(srv.request(method, PATH), "POST")
    assert_nothing_queued(srv.inst)


def test_body_over_1_mib_is_413(srv):
    doc = {"recipient": RECIPIENT, "messageBody": "hi"}
    data = json.dumps(doc).encode()
    data = data[:-1] + b" " * (MIB + 1 - len(data)) + b"}"
    assert len(data) == MIB + 1
    assert_problem(srv.post_raw(PATH, data), 413)
    assert_nothing_queued(srv.inst)


def test_text_plain_is_415(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      content_type="text/plain")
    assert_problem(r, 415)
    assert_nothing_queued(srv.inst)


def test_missing_content_type_is_415(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      content_type=None)
    assert_problem(r, 415)
    assert_nothing_queued(srv.inst)


@pytest.mark.parametrize("ctype", ["application/jsonx",
                                   "application/x-www-form-urlencoded",
                                   "application/json-patch+json"])
def test_other_json_like_types_are_415(srv, ctype):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      content_type=ctype)
    assert_problem(r, 415)
    assert_nothing_queued(srv.inst)


def test_no_content_length_is_411(srv):
    key = srv.inst.keys["acme"]
    req = ("POST /sms/v1/deliver HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"X-API-KEY: {key}\r\nContent-Type: application/json\r\n"
           "Connection: close\r\n\r\n").encode()
    status, hdrs, body = srv.raw(req)
    assert status == 411
    # The program finds no CONTENT_LENGTH (nginx: an empty one) and
    # answers; lighttpd refuses the request itself and hands it to its
    # server.error-handler (conf/lighttpd.conf), a program that answers the
    # same problem.
    assert hdrs.get("content-type", "").startswith(
        "application/problem+json"), (hdrs, body)
    p = json.loads(body)
    assert p["status"] == 411 and p["type"].endswith("length-required")
    assert_nothing_queued(srv.inst)


# ---------------------------------------------------------------- 503

def _assert_retry_after(r):
    ra = r.headers.get("Retry-After")
    assert ra, f"no Retry-After: {dict(r.headers)}"
    ra = ra.strip()
    if ra.isdigit():
        assert int(ra) > 0
    else:   # an HTTP-date
        from email.utils import parsedate_to_datetime
        parsedate_to_datetime(ra)


@pytest.mark.parametrize("missing", ["new", "tmp"])
def test_missing_spool_dir_is_503(private, missing):
    srv, inst = private()
    (inst.spool / missing).rmdir()
    r = srv.sms()
    assert_problem(r, 503)
    _assert_retry_after(r)
    for s in ("tmp", "new", "deferred"):
        assert inst.files(s) == [], s


def test_missing_deferred_dir_scheduled_is_503(private):
    srv, inst = private()
    (inst.spool / "deferred").rmdir()
    r = srv.sms(sendAt=in_future(3600))
    assert_problem(r, 503)
    _assert_retry_after(r)
    assert inst.files("tmp") == [] and inst.files("new") == []


# ------------------------------------------------- transport, config

def test_chunked_request_body(srv):
    def chunks():
        yield b'{"recipient": "+4915112345678", '
        yield b'"messageBody": "chunked"}'
    for attempt in range(3):
        try:
            r = srv.post_raw(PATH, chunks())
            break
        except requests.exceptions.ConnectionError:
            # Apache, at random under load, resets the connection of a
            # chunked body the program answered without reading (411).
            if FRONT != "apache" or attempt == 2:
                raise
    assert r.request.headers.get("Transfer-Encoding") == "chunked"
    if FRONT in ("apache", "busybox"):
        # Neither sets CONTENT_LENGTH for a chunked body (Apache passes it
        # decoded, busybox still chunked): the program's 411 (conf/openapi.yaml).
        assert_problem(r, 411)
        assert_nothing_queued(srv.inst)
        return
    # lighttpd and nginx read the whole body first and set CONTENT_LENGTH.
    sid = _queued(r)["smsId"]
    assert_spool_file(srv.inst, "new", sid, body="chunked")


def test_very_long_key_is_401(srv):
    r = srv.post_json(PATH, {"recipient": RECIPIENT, "messageBody": "hi"},
                      api_key="k" * 4000)
    assert_unauthorized(r)
    assert_nothing_queued(srv.inst)


def test_max_body_from_config(private):
    srv, inst = private()
    inst.write_conf("max-body = 1K\n")
    small = {"recipient": RECIPIENT, "messageBody": "x" * 900}
    _queued(srv.post_json(PATH, small))
    big = {"recipient": RECIPIENT, "messageBody": "x" * 1000}
    assert len(json.dumps(big)) > 1024
    assert_problem(srv.post_json(PATH, big), 413)
    assert len(inst.files("new")) == 1


def test_relative_paths_in_config(private):
    # Relative paths are taken relative to the config file's directory.
    srv, inst = private()
    inst.conf.write_text("spool = spool\nkeys = keys\n"
                         "templates = templates\n")
    sid = _queued(srv.sms())["smsId"]
    assert_spool_file(inst, "new", sid)


def test_unreadable_keys_file_is_500(private):
    srv, inst = private()
    inst.keys_file.unlink()
    assert_problem(srv.sms(), 500)
    assert_problem(srv.get("/templates"), 500)
    for s in ("tmp", "new", "deferred"):
        assert inst.files(s) == [], s


def test_missing_config_file_is_500(private):
    srv, inst = private()
    inst.conf.unlink()
    assert_problem(srv.sms(), 500)
    for s in ("tmp", "new", "deferred"):
        assert inst.files(s) == [], s
    # The health check needs no configuration.
    r = srv.get("/ping", client=None)
    assert r.status_code == 200 and r.text.rstrip("\r\n") == "pong"

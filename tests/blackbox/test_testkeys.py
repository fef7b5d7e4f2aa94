"""Test keys (msgspool.conf(5), KEYS FILE): validated, spooled, visible
and reported like live ones, completed by msgspoold by their recipient,
never handed to a provider."""

import pytest

from conftest import CLIENTS, assert_problem


@pytest.fixture
def test_key(srv):
    """A test key of a client of its own, every scope."""
    cp = srv.inst.cli("key", "add", "sandbox", "*", "--test")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    assert len(key) >= 40
    yield key
    srv.inst.write_keys()


def _final(srv, key, mid):
    srv.inst.daemon_once()
    r = srv.get("/messages/" + mid, api_key=key)
    assert r.status_code == 200, r.text
    return r.json()


def _sms(srv, key, to):
    r = srv.post_json("/sms/v1/deliver", {"recipient": to,
                                          "messageBody": "test"},
                      api_key=key)
    assert r.status_code == 202, r.text
    return r.json()["smsId"]


@pytest.mark.parametrize("to,status,events", [
    ("+4915112340001", "failed", ["queued", "failed"]),
    ("+4915112340002", "undelivered", ["queued", "sent", "undelivered"]),
    ("+4915112349999", "delivered", ["queued", "sent", "delivered"]),
])
def test_sms_magic_recipients(srv, test_key, to, status, events):
    mid = _sms(srv, test_key, to)
    assert srv.inst.load("new", mid)["test"] is True
    st = _final(srv, test_key, mid)
    assert st["status"] == status, st
    assert [e["status"] for e in st["events"]] == events, st["events"]
    assert st["provider"] in (None, "test")
    # Never sent for real: the file provider wrote nothing.
    assert srv.inst.outbox_for(mid) == []


@pytest.mark.parametrize("local,status", [
    ("fail", "failed"), ("bounce", "undelivered"), ("anna", "delivered")])
def test_email_magic_local_parts(srv, test_key, local, status):
    r = srv.post_json("/email/v1/deliver", {
        "from": "news@acme.example", "subject": "Hi", "html": "<p>x</p>",
        "recipients": [{"to": f"{local}@example.org"}]}, api_key=test_key)
    assert r.status_code == 200, r.text
    mid = r.json()["recipients"][0]["messageId"]
    assert _final(srv, test_key, mid)["status"] == status
    assert srv.inst.outbox_for(mid) == []


def test_voice_and_ott_too(srv, test_key):
    r = srv.post_json("/voice/v1/deliver", {"recipient": "+4915112340002",
                                            "message": "hello"},
                      api_key=test_key)
    assert r.status_code == 202, r.text
    cid = r.json()["callId"]
    assert _final(srv, test_key, cid)["status"] == "undelivered"


def test_validation_is_the_same(srv, test_key):
    r = srv.post_json("/sms/v1/deliver", {"recipient": "12",
                                          "messageBody": "x"},
                      api_key=test_key)
    assert_problem(r, 400)


def test_live_key_of_same_client_still_sends(srv, test_key):
    """A client may hold a live and a test key at once."""
    cp = srv.inst.cli("key", "add", "sandbox", "sms")
    assert cp.returncode == 0, cp.err
    live = cp.out.strip()
    mid = _sms(srv, live, "+4915112340001")
    assert "test" not in srv.inst.load("new", mid)
    srv.inst.daemon_once()
    # A live message to a magic number is sent for real.
    assert srv.inst.outbox_for(mid) != []
    assert "sandbox" not in CLIENTS

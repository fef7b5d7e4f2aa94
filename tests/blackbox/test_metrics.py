"""GET /metrics (conf/openapi.yaml; msgspoold(8), Metrics): Prometheus'
text format 0.0.4, read here by Prometheus' own parser
(python3-prometheus-client), to a key with the metrics scope given as
X-API-KEY or Authorization: Bearer; 401 without a key, 403 for a key
without the scope.  Every metric of the table is there with its type and
labels; the queue's gauges are the spool's files by state and channel;
after msgspoold --once against stand-ins that take a message, refuse one
(400) and defer one (503), msgspool_attempts_total says so by route and
result; a cancel by DELETE /messages/{id} is counted as canceled."""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import assert_problem
from delivery_support import daemons, queue_sms, where  # noqa: F401
from doubles.standin import Standin

__all__ = ["daemons"]           # the fixture, imported for pytest

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# name: (type, label names of its samples)
TABLE = {
    "msgspool_queue_messages": ("gauge", {"state", "channel"}),
    "msgspool_queue_oldest_age_seconds": ("gauge", {"state"}),
    "msgspool_attempts_total": (
        "counter", {"channel", "route", "provider", "result"}),
    "msgspool_messages_completed_total": ("counter", {"channel", "status"}),
    "msgspool_provider_request_duration_seconds": (
        "histogram", {"provider"}),
    "msgspool_receipts_total": ("counter", {"provider"}),
    "msgspool_inbound_messages_total": ("counter", {"channel", "provider"}),
    "msgspool_webhook_deliveries_total": ("counter", {"result"}),
    "msgspool_route_up": ("gauge", {"route"}),
    "msgspool_daemon_heartbeat_timestamp_seconds": ("gauge", set()),
    "msgspool_spool_free_bytes": ("gauge", set()),
    "msgspool_build_info": ("gauge", {"version"}),
}
STATES = ("new", "deferred", "cur", "failed", "sent")
CHANNELS = ("sms", "ott", "email", "voice")


@pytest.fixture
def prom(srv):
    """A key with the metrics scope (and one with every channel's)."""
    cp = srv.inst.cli("key", "add", "prom", "metrics")
    assert cp.returncode == 0, cp.err
    return cp.out.strip()


def scrape(srv, key, bearer=False):
    h = {"Authorization": "Bearer " + key} if bearer else None
    r = srv.get("/metrics", client=None, api_key=None if bearer else key,
                headers=h)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == CONTENT_TYPE
    return {f.name: f for f in text_string_to_metric_families(r.text)}, r


def samples(fams, name, suffix=""):
    """{frozenset of label items: value} of a family's samples."""
    # The parser names a counter's family without its _total.
    f = fams.get(name) or fams[name[:-len("_total")]]
    return {frozenset(s.labels.items()): s.value for s in f.samples
            if s.name == name + suffix or
            (suffix == "" and s.name == name)}


def test_every_metric_with_its_type_and_labels(srv, prom):
    fams, _ = scrape(srv, prom)
    for name, (typ, labels) in TABLE.items():
        f = fams.get(name) or fams.get(name[:-len("_total")])
        assert f is not None, name
        assert f.type == typ, (name, f.type)
        for s in f.samples:
            got = set(s.labels) - {"le"}
            assert got == labels, (name, s)
    q = samples(fams, "msgspool_queue_messages")
    assert len(q) == len(STATES) * len(CHANNELS)
    assert samples(fams, "msgspool_spool_free_bytes")[frozenset()] > 0
    info = fams["msgspool_build_info"].samples
    assert len(info) == 1 and info[0].value == 1 and info[0].labels["version"]


def test_queue_gauges_are_the_spools_counts(srv, prom):
    spool = srv.inst.spool
    queue_sms(spool, "+4915112345678")
    queue_sms(spool, "+4915112345679")
    r = srv.sms()
    assert r.status_code == 202, r.text
    r = srv.post_json("/voice/v1/deliver", {"recipient": "+4915112345678",
                                            "message": "hi"})
    assert r.status_code == 202, r.text
    fams, _ = scrape(srv, prom)
    q = samples(fams, "msgspool_queue_messages")
    counts = srv.inst.counts()
    for st in STATES:
        total = sum(v for k, v in q.items() if ("state", st) in k)
        assert total == counts.get(st, 0), (st, q, counts)
    assert q[frozenset({("state", "new"), ("channel", "sms")})] == 3
    assert q[frozenset({("state", "new"), ("channel", "voice")})] == 1
    age = samples(fams, "msgspool_queue_oldest_age_seconds")
    assert age[frozenset({("state", "new")})] >= 0
    assert age[frozenset({("state", "deferred")})] == 0


def test_queue_at_rest_not_listed_again(srv, prom):
    """A state whose directory has not changed is counted from
    metrics/count-STATE (msgspool-spool(5)); a message more changes the
    directory, and the next scrape counts it."""
    import os
    import time
    spool = srv.inst.spool
    for _ in range(2):
        assert srv.sms().status_code == 202
    then = time.time() - 10
    os.utime(spool / "new", (then, then))
    fams, _ = scrape(srv, prom)
    new_sms = frozenset({("state", "new"), ("channel", "sms")})
    assert samples(fams, "msgspool_queue_messages")[new_sms] == 2
    assert (spool / "metrics" / "count-new").exists()
    fams, _ = scrape(srv, prom)
    assert samples(fams, "msgspool_queue_messages")[new_sms] == 2
    assert srv.sms().status_code == 202
    fams, _ = scrape(srv, prom)
    assert samples(fams, "msgspool_queue_messages")[new_sms] == 3


def test_attempts_by_result_after_msgspoold(srv, prom, daemons):
    with Standin() as ok, Standin() as bad, Standin() as down:
        bad.failing("400")
        down.failing("503")
        conf = (ok.twilio_config("sms") +
                bad.twilio_config("route.bad") +
                "channel = sms\nprefix = +33\n" +
                down.twilio_config("route.down") +
                "channel = sms\nprefix = +1\n")
        srv.inst.write_conf(conf)
        ids = {}
        for route, to in (("sms", "+4915112345678"),
                          ("bad", "+33612345678"), ("down", "+12025550123")):
            r = srv.sms(recipient=to, messageBody="metrics " + route)
            assert r.status_code == 202, r.text
            ids[route] = r.json()["smsId"]
        daemons.once(srv.inst.conf)
    spool = srv.inst.spool
    assert where(spool, ids["sms"]) == ["sent"]
    assert where(spool, ids["bad"]) == ["failed"]
    assert where(spool, ids["down"]) == ["deferred"]
    fams, _ = scrape(srv, prom)
    a = samples(fams, "msgspool_attempts_total")
    want = {("sms", "sent"): 1, ("bad", "failed"): 1, ("down", "retry"): 1}
    got = {}
    for k, v in a.items():
        d = dict(k)
        assert d["channel"] == "sms" and d["provider"] == "twilio", d
        got[(d["route"], d["result"])] = v
    assert got == want, a
    c = samples(fams, "msgspool_messages_completed_total")
    assert c == {frozenset({("channel", "sms"), ("status", "failed")}): 1}
    q = samples(fams, "msgspool_queue_messages")
    for st in ("sent", "failed", "deferred"):
        assert q[frozenset({("state", st), ("channel", "sms")})] == 1, q
    h = fams["msgspool_provider_request_duration_seconds"].samples
    n = [s.value for s in h if s.name.endswith("_count")]
    assert n == [3], h
    hb = samples(fams, "msgspool_daemon_heartbeat_timestamp_seconds")
    assert hb[frozenset()] > 0
    up = samples(fams, "msgspool_route_up")
    assert set(dict(k)["route"] for k in up) == {"sms", "bad", "down"}


def test_canceled_counted(srv, prom):
    """A cancel happens in a CGI program, not in msgspoold: it is counted
    in the spool (msgspool-spool(5), metrics/canceled), one for its
    channel, once, however often it is canceled again."""
    fams, _ = scrape(srv, prom)
    c = samples(fams, "msgspool_messages_completed_total")
    assert not any(("status", "canceled") in k for k in c), c
    r = srv.post_json("/voice/v1/deliver", {"recipient": "+4915112345678",
                                            "message": "hi"})
    assert r.status_code == 202, r.text
    vid = r.json()["callId"]
    for _ in range(2):
        r = srv.request("DELETE", "/messages/" + vid)
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "canceled", r.text
    fams, _ = scrape(srv, prom)
    c = samples(fams, "msgspool_messages_completed_total")
    assert c == {frozenset({("channel", "voice"),
                            ("status", "canceled")}): 1}, c


def test_bearer_and_refusals(srv, prom):
    scrape(srv, prom, bearer=True)
    r = srv.get("/metrics", client=None)
    assert_problem(r, 401)
    r = srv.get("/metrics", client=None,
                headers={"Authorization": "Bearer nope"})
    assert_problem(r, 401)
    # acme's key has every channel, but not metrics.
    r = srv.get("/metrics")
    assert_problem(r, 403)
    r = srv.post_json("/metrics", {}, api_key=prom, client=None)
    assert r.status_code == 405, r.text


def test_state_file_hours_kept_and_metrics_file(srv, daemons, tmp_path):
    """status/daemon.json after a run; the next run keeps its hours and
    writes metrics-file, the same text Prometheus' parser reads."""
    import json
    spool = srv.inst.spool
    queue_sms(spool, "+4915112345678")
    daemons.once(srv.inst.conf)
    state = json.loads((spool / "status" / "daemon.json").read_text())
    for k in ("pid", "host", "version", "started", "heartbeat", "attempts",
              "completed", "receipts", "inbound", "webhooks", "durations",
              "routes", "hours"):
        assert k in state, (k, state)
    assert [h["sent"] for h in state["hours"]] == [1], state["hours"]
    assert state["hours"][0]["hour"] % 3600 == 0
    out = tmp_path / "msgspool.prom"
    srv.inst.write_conf("metrics-file = %s\n" % out)
    queue_sms(spool, "+4915112345679")
    daemons.once(srv.inst.conf)
    state = json.loads((spool / "status" / "daemon.json").read_text())
    assert [h["sent"] for h in state["hours"]] == [2], state["hours"]
    fams = {f.name: f for f in text_string_to_metric_families(
        out.read_text())}
    q = samples(fams, "msgspool_queue_messages")
    assert q[frozenset({("state", "sent"), ("channel", "sms")})] == 2
    a = samples(fams, "msgspool_attempts_total")
    assert sum(a.values()) == 1, a     # this run's, since it started

"""
Routing and failover (msgspool.conf(5), Routes; msgspoold(8), Routes),
from outside, against the stand-ins' failure modes: a channel's own
section is its first route, [route.NAME] sections add others; a message
goes by the longest prefix of its recipient and, when its route cannot
take it now (no connection, a timeout, a 5xx, a 429, an SMPP session
not bound), to the next route of its fallback list at once, without a
backoff; a permanent refusal is final; a route failing `breaker` times
in a row is out for `breaker-time`, then one message probes it.

What each test looks at: where the message went (GET /messages/{id}:
its route, its provider and an event for each attempt; which stand-in
got it), how many attempts each stand-in saw, and how long it took.
msgspoold runs in the foreground (the daemons fixture); every wait
polls its condition with a bound.  Nothing here depends on the web
server: it runs under lighttpd and lighttpd-fcgi.
"""

import re
import signal
import time

import pytest

from delivery_support import (EVENTUALLY, daemons, run_cli,  # noqa: F401
                              timestamp, wait_until, where)
from doubles.ports import RefusedPort
from doubles.smsc import Smsc
from doubles.smtp import SmtpSink
from doubles.standin import Standin
from email_routes import inline, item
from openapi_check import check_reply

__all__ = ["daemons"]           # the fixture, imported for pytest

TIMEOUT = 2     # seconds: the first route's `timeout`, its hang's cost
# Seconds a failover may take beyond its cause ("at once"): far below
# the shortest backoff (48 s), room for a busy machine or a sanitizer
# build.
AT_ONCE = 1.5
BREAKER_TIME = 3

FIRST, BACKUP = "sms", "backup"


# ------------------------------------------------------------ config

def twilio_route(standin, base=None, extra=""):
    """[sms], the channel's own section and first route, through the
    Twilio stand-in (or whatever listens at base), its timeout short."""
    text = standin.twilio_config("sms")
    if base is not None:
        text = text.replace(standin.twilio_base, base)
    return text + "timeout = %d\n" % TIMEOUT + extra


def http_route(standin, name=BACKUP, channel="sms", extra=""):
    """[route.NAME] of channel through the webhook stand-in."""
    return "[route.%s]\nchannel = %s\nprovider = http\nurl = %s\n%s" % (
        name, channel, standin.hook_url, extra)


def start(srv, daemons, conf):
    srv.inst.write_conf(conf)
    d = daemons.start(srv.inst.conf)
    d.wait_idle()
    return d


# ------------------------------------------------------------ messages

def send(srv, to, text="routed"):
    r = srv.sms(recipient=to, messageBody=text)
    assert r.status_code == 202, r.text
    return r.json()["smsId"]


def status_of(srv, msgid):
    """GET /messages/{id}, checked against conf/openapi.yaml."""
    r = srv.get("/messages/" + msgid)
    assert r.status_code == 200, r.text
    check_reply(r)
    return r.json()


def settled(srv, msgid, state="sent"):
    """Wait for the message's file in state/; its status object."""
    wait_until(lambda: where(srv.inst.spool, msgid) == [state], EVENTUALLY,
               what="%s/%s (in %s)" % (state, msgid,
                                       where(srv.inst.spool, msgid)))
    return status_of(srv, msgid)


def error_text(e):
    err = e.get("error")
    if isinstance(err, dict):
        return err.get("message") or ""
    return err or ""


def tries(st):
    """The attempts its events record: (status, route, error given)."""
    return [(e["status"], e.get("route"), bool(error_text(e)))
            for e in st["events"]
            if e["status"] in ("retrying", "sent", "failed")]


def went(st, route, provider):
    assert (st["route"], st["provider"]) == (route, provider), st


def hook_ids(standin):
    """The message ids the webhook stand-in was given, in order."""
    return [r["json"]["id"] for r in standin.requests
            if r["api"] == "hook" and r["json"]]


def to_of(standin, to):
    """The requests standin saw for recipient to."""
    return [r for r in standin.requests if r["recipient"] == to]


# ------------------------------------------- failover, mode by mode

# The first route's failure: a port nothing listens on, a connection
# closed at accept, no answer within its timeout, a 5xx, a 429.  A
# Retry-After far off does not hold the message back from its fallback.
HTTP_FAILURES = ["refused", "close", "hang", "500", "503", "429"]


@pytest.mark.parametrize("mode", HTTP_FAILURES)
def test_failover_at_once(srv, daemons, mode):
    with Standin() as first, Standin() as backup, RefusedPort() as down:
        base = None
        if mode == "refused":
            base = down.url("/twilio")
        else:
            first.failing(mode, retry_after=60 if mode in ("503", "429")
                          else None)
        d = start(srv, daemons, twilio_route(first, base, "fallback = %s\n"
                                             % BACKUP) + http_route(backup))
        to = "+4915112341001"
        t0 = time.time()
        msgid = send(srv, to, "failover " + mode)
        got = backup.wait_for(1, timeout=EVENTUALLY, api="hook")[0]
        st = settled(srv, msgid)
        assert got["json"]["id"] == msgid
        assert first.attempts == (0 if mode == "refused" else 1), \
            first.requests
        assert backup.attempts == 1
        since = first.requests[0]["time"] if mode != "refused" else t0
        took = got["time"] - since
        print("failover on %s: %.2fs" % (mode, took))
        if mode == "hang":
            assert TIMEOUT - 0.3 <= took <= TIMEOUT + AT_ONCE, took
        else:
            assert took <= AT_ONCE, took
        went(st, BACKUP, "http")
        assert st["status"] == "sent" and st["error"] is None, st
        assert tries(st) == [("retrying", FIRST, True),
                             ("sent", BACKUP, False)], st["events"]
        if mode in ("500", "503", "429"):
            retrying = [e for e in st["events"]
                        if e["status"] == "retrying"][0]
            assert mode in error_text(retrying), retrying
        assert first.violations == [] and backup.violations == []
        assert d.stop() == 0


@pytest.mark.parametrize("mode", ["unbind", "refuse-bind"])
def test_failover_from_an_smpp_session_not_bound(srv, daemons, mode):
    # A first message binds the session; then the SMSC unbinds at the
    # next submit_sm (it is lost unanswered), or unbinds and refuses
    # every bind after: the session is not bound and the message goes
    # to the fallback at once.
    with Smsc() as smsc, Standin() as backup:
        d = start(srv, daemons, smsc.config(
            section="sms", extra="fallback = %s\n" % BACKUP) +
            http_route(backup))
        # Bound (msgspoold binds at its start): the route takes messages.
        smsc.wait_for(smsc.bound_sessions, EVENTUALLY, "a bound session")
        warm = send(srv, "+4915112341011", "binds the session")
        st = settled(srv, warm)
        went(st, FIRST, "smpp")
        assert smsc.attempts == 1
        smsc.failing(mode)
        if mode == "refuse-bind":
            smsc.unbind()
            smsc.wait_for(lambda: not smsc.bound_sessions(), EVENTUALLY,
                          "the session gone")
        t0 = time.time()
        msgid = send(srv, "+4915112341012", "not bound")
        got = backup.wait_for(1, timeout=EVENTUALLY, api="hook")[0]
        took = got["time"] - t0
        print("failover from smpp (%s): %.2fs" % (mode, took))
        assert took <= AT_ONCE + 0.5, took
        st = settled(srv, msgid)
        went(st, BACKUP, "http")
        assert tries(st)[-1] == ("sent", BACKUP, False), st["events"]
        for ev in tries(st)[:-1]:
            assert ev == ("retrying", FIRST, True), st["events"]
        if mode == "unbind":
            assert smsc.attempts == 2 and smsc.submits[-1]["unbound"]
            assert tries(st)[0] == ("retrying", FIRST, True), st["events"]
        else:
            assert smsc.attempts == 1       # never submitted
            smsc.wait_for(lambda: any(not b["accepted"] for b in
                                      smsc.binds), EVENTUALLY,
                          "a refused bind")
        assert smsc.violations == [] and backup.violations == []
        assert d.stop() == 0


def test_a_permanent_refusal_is_final(srv, daemons):
    # Twilio's 400, 21211: not tried elsewhere.
    with Standin() as first, Standin() as backup:
        first.failing("400")
        d = start(srv, daemons, twilio_route(first, extra="fallback = %s\n"
                                             % BACKUP) + http_route(backup))
        msgid = send(srv, "+4915112341021", "invalid number")
        st = settled(srv, msgid, "failed")
        assert first.attempts == 1
        assert backup.attempts == 0          # and never will: it failed
        assert st["status"] == "failed", st
        assert st["route"] == FIRST, st
        assert st["error"]["code"] in (21211, "21211"), st
        assert tries(st) == [("failed", FIRST, True)], st["events"]
        assert d.stop() == 0


# ------------------------------------------------------------ prefixes

def test_the_longest_prefix_wins(srv, daemons):
    # [sms] takes what no prefix claims; +49 goes to [route.de], +4915
    # and +4916 (the longer prefixes) to [route.mobile].
    with Standin() as default, Standin() as de, Standin() as mobile:
        conf = (default.hook_config("sms") +
                http_route(de, "de", extra="prefix = +49\n") +
                http_route(mobile, "mobile", extra="prefix = +4915 4916\n"))
        d = start(srv, daemons, conf)
        want = {"+4915112341031": ("mobile", mobile),
                "+4916012341032": ("mobile", mobile),
                "+4917012341033": ("de", de),
                "+493012341034": ("de", de),
                "+33612341035": ("sms", default),
                "+1415555123": ("sms", default)}
        ids = {to: send(srv, to, "prefix") for to in want}
        for to, msgid in ids.items():
            route, standin = want[to]
            st = settled(srv, msgid)
            went(st, route, "http")
            assert tries(st) == [("sent", route, False)], st["events"]
            assert len(to_of(standin, to)) == 1, (to, standin.requests)
        assert default.attempts == 2 and de.attempts == 2
        assert mobile.attempts == 2
        assert d.stop() == 0


# ------------------------------------------------------------- email

@pytest.mark.parametrize("mode", ["refused", "close", "tempfail"])
def test_email_by_domain_with_the_first_relay_down(srv, daemons, mode):
    # [route.corp] takes @example.com and its subdomains, its relay is
    # down; [email], the other relay, takes the rest and is corp's
    # fallback.
    with SmtpSink() as corp, SmtpSink() as relay, RefusedPort() as down:
        corp_conf = corp.config("route.corp", starttls="no")
        if mode == "refused":
            corp_conf = corp_conf.replace(corp.url, down.url(
                scheme="smtp"))
        else:
            corp.failing(mode)
        conf = (relay.config("email", starttls="no") + "timeout = %d\n" %
                TIMEOUT + corp_conf + "channel = email\nprefix = @example.com"
                "\nfallback = email\ntimeout = %d\n" % TIMEOUT)
        d = start(srv, daemons, conf)
        rcpts = ["ann@example.com", "bob@example.org",
                 "cy@mail.example.com"]
        r = srv.post_json("/deliver", inline(*[
            item(a, name="N", order="1") for a in rcpts]))
        assert r.status_code == 200, r.text
        ids = {e["recipient"]: e["messageId"]
               for e in r.json()["recipients"]}
        t0 = time.time()
        got = relay.wait_for(3, timeout=EVENTUALLY)
        print("email over the second relay (%s): %.2fs" % (
            mode, time.time() - t0))
        assert sorted(m.rcpt_tos[0] for m in got) == sorted(rcpts)
        assert corp.messages == []
        assert corp.attempts == (0 if mode == "refused" else 2)
        for a in rcpts:
            st = settled(srv, ids[a])
            went(st, "email", "smtp")
            if a == "bob@example.org":
                assert tries(st) == [("sent", "email", False)], st
            else:
                assert tries(st) == [("retrying", "corp", True),
                                     ("sent", "email", False)], st
        assert d.stop() == 0


# ------------------------------------------------------------ breaker

def breaker_conf(first, backup=None, breaker=3):
    extra = "breaker = %d\nbreaker-time = %ds\n" % (breaker, BREAKER_TIME)
    if backup is None:
        return twilio_route(first, extra=extra)
    return twilio_route(first, extra=extra + "fallback = %s\n" % BACKUP) \
        + http_route(backup)


def test_breaker_takes_a_route_out_then_probes_it(srv, daemons):
    with Standin() as first, Standin() as backup:
        first.failing("503")
        d = start(srv, daemons, breaker_conf(first, backup))
        n = [0]

        def one(wait=True):
            n[0] += 1
            msgid = send(srv, "+49151123420%02d" % n[0], "b%d" % n[0])
            if wait:
                wait_until(lambda: where(srv.inst.spool, msgid) ==
                           ["sent"], EVENTUALLY, what="sent/" + msgid)
            return msgid

        # Three temporary failures in a row take the route out.
        for _ in range(3):
            one()
        assert first.attempts == 3 and backup.attempts == 3
        out_at = first.requests[-1]["time"]
        # While it is out its messages go straight to the fallback.
        for _ in range(3):
            st = status_of(srv, one())
            went(st, BACKUP, "http")
            assert tries(st) == [("sent", BACKUP, False)], st["events"]
        assert first.attempts == 3, first.requests
        assert backup.attempts == 6
        # After breaker-time, one message probes it (and fails over).
        deadline = out_at + BREAKER_TIME + 4
        while first.attempts == 3 and time.time() < deadline:
            one(wait=False)
            time.sleep(0.2)
        assert first.attempts == 4, "no probe within %ds of breaker-time" \
            % (deadline - out_at - BREAKER_TIME)
        probe = first.requests[-1]["time"]
        assert probe >= out_at + BREAKER_TIME - 1, probe - out_at
        # The probe failed: out again, the messages go on to the fallback.
        for _ in range(3):
            one()
        assert first.attempts == 4, first.requests
        # It answers again: the next probe brings it in.
        first.failing(None)
        deadline = probe + BREAKER_TIME + 4
        while not first.sent() and time.time() < deadline:
            one(wait=False)
            time.sleep(0.2)
        assert first.sent(), "no second probe within %ds of breaker-time" \
            % (deadline - probe - BREAKER_TIME)
        # In again: its messages go to it.
        wait_until(lambda: srv.inst.ids("new") == [] and
                   srv.inst.ids("cur") == [], EVENTUALLY, what="all sent")
        before = len(first.sent()), backup.attempts
        for _ in range(3):
            st = status_of(srv, one())
            went(st, FIRST, "twilio")
        assert (len(first.sent()), backup.attempts) == \
            (before[0] + 3, before[1])
        wait_until(lambda: srv.inst.ids("new") == [] and
                   srv.inst.ids("cur") == [], EVENTUALLY, what="all sent")
        assert srv.inst.ids("deferred") == [] and \
            srv.inst.ids("failed") == []
        assert first.violations == [] and backup.violations == []
        assert d.stop() == 0


def test_a_dead_route_sees_no_more_than_breaker_attempts(srv, daemons):
    # A burst while the first route hangs: until it has answered it has
    # at most breaker messages in flight, the rest go on to the fallback
    # at once.
    with Standin() as first, Standin() as backup:
        first.failing("hang")
        d = start(srv, daemons, breaker_conf(first, backup))
        t0 = time.time()
        r = srv.post_json("/sms/v1/deliver/batch", {"messages": [
            {"recipient": "+4915112347%03d" % i, "messageBody": "burst"}
            for i in range(20)]})
        assert r.status_code == 200, r.text
        ids = [e["smsId"] for e in r.json()]
        assert len(ids) == 20 and all(ids), r.json()
        backup.wait_for(17, timeout=EVENTUALLY, api="hook")
        print("17 over the fallback in %.2fs" % (time.time() - t0))
        assert time.time() - t0 < TIMEOUT, "waited for the dead route"
        assert first.attempts == 3, first.requests
        for msgid in ids:
            st = settled(srv, msgid)
            went(st, BACKUP, "http")
        assert first.attempts == 3, first.requests
        assert sorted(hook_ids(backup)) == sorted(ids)
        assert d.stop() == 0


def test_a_route_out_without_fallback_holds_its_messages(srv, daemons):
    # Out, with nowhere else to go: its messages wait (deferred) instead
    # of hammering it.
    with Standin() as first:
        first.failing("503")
        d = start(srv, daemons, breaker_conf(first, breaker=2))
        tos = ["+4915112343%03d" % i for i in range(5)]
        ids = []
        for to in tos[:2]:
            ids.append(send(srv, to, "fails"))
            settled(srv, ids[-1], "deferred")
        assert first.attempts == 2
        for to in tos[2:]:
            ids.append(send(srv, to, "waits"))
        out_at = first.requests[-1]["time"]
        for msgid in ids[2:]:
            st = settled(srv, msgid, "deferred")
            assert st["status"] == "retrying", st
            # Due when the route is to be tried again (whole seconds,
            # rounded up: 2 s more at most).
            assert timestamp(st["nextAttemptAt"]) <= \
                out_at + BREAKER_TIME + 2, (st, out_at)
        assert first.attempts == 2, first.requests
        # They wait for the route, not a backoff: once it answers again,
        # the probe after breaker-time takes one and the rest follow.
        first.failing(None)
        for msgid in ids[2:]:
            wait_until(lambda: where(srv.inst.spool, msgid) == ["sent"],
                       out_at + BREAKER_TIME + 5 - time.time(),
                       what="sent/%s once the route is in again" % msgid)
        assert len(first.sent()) == 3
        assert where(srv.inst.spool, ids[0]) == ["deferred"]   # backoff
        assert d.stop() == 0


# ----------------------------------------- every route failing at once

def test_all_routes_failing_wait_their_backoff(srv, daemons):
    with Standin() as first, Standin() as backup:
        slow, soon = "+4915112344001", "+4915112344002"
        # slow: both routes fail with no Retry-After: the backoff.
        first.script(slow, ["503"], then="503")
        backup.script(slow, ["500"], then="500")
        # soon: both ask for 2 s; then the first route takes it.
        first.script(soon, [("429", 2)])
        backup.script(soon, [("429", 2)], then=("429", 2))
        d = start(srv, daemons, twilio_route(first, extra="fallback = %s\n"
                                             % BACKUP) + http_route(backup))
        t0 = time.time()
        a = send(srv, slow, "backoff")
        st = settled(srv, a, "deferred")
        assert st["status"] == "retrying", st
        assert tries(st) == [("retrying", FIRST, True),
                             ("retrying", BACKUP, True)], st["events"]
        wait = timestamp(st["nextAttemptAt"]) - t0
        assert 40 <= wait <= 80, st             # 60 s, +-20 %
        assert len(to_of(first, slow)) == 1 and \
            len(to_of(backup, slow)) == 1

        b = send(srv, soon, "retry-after")
        st = settled(srv, b, "deferred")
        assert st["status"] == "retrying", st
        assert timestamp(st["nextAttemptAt"]) - time.time() <= 4, st
        # When it is due it starts again from its first route.
        st = settled(srv, b)
        went(st, FIRST, "twilio")
        assert tries(st) == [("retrying", FIRST, True),
                             ("retrying", BACKUP, True),
                             ("sent", FIRST, False)], st["events"]
        assert len(to_of(first, soon)) == 2
        assert len(to_of(backup, soon)) == 1
        assert where(srv.inst.spool, a) == ["deferred"]
        assert d.stop() == 0


# ------------------------------------------------------------ crashes

@pytest.mark.parametrize("when", ["first route hanging",
                                  "fallback answering"])
def test_kill_during_failover(srv, daemons, when):
    # kill -9 while the first route hangs (before the fallback saw the
    # message), or while the fallback is answering: after a restart the
    # message is sent once, or twice at most when the fallback had it
    # already (msgspool-spool(5): a kill sends again what was in
    # flight, no more).
    with Standin() as first, Standin() as backup:
        to = "+4915112345001"
        conf = twilio_route(first, extra="fallback = %s\n" % BACKUP) + \
            http_route(backup)
        if when == "first route hanging":
            first.failing("hang")
        else:
            first.failing("503")
            backup.script(to, [("delay", 1.0)])
        d = start(srv, daemons, conf)
        msgid = send(srv, to, "killed")
        if when == "first route hanging":
            first.wait_for(1, timeout=EVENTUALLY)
            assert backup.attempts == 0
        else:
            wait_until(lambda: backup.in_flight >= 1, EVENTUALLY,
                       what="the fallback's request")
        d.signal(signal.SIGKILL)
        d.wait(10)
        first.failing("close")
        d = daemons.start(srv.inst.conf)
        st = settled(srv, msgid)
        went(st, BACKUP, "http")
        wait_until(lambda: backup.in_flight == 0, EVENTUALLY,
                   what="the fallback's requests answered")
        got = hook_ids(backup)
        if when == "first route hanging":
            assert got == [msgid], got
        else:
            assert 1 <= len(got) <= 2 and set(got) == {msgid}, got
        assert srv.inst.ids("sent") == [msgid]
        assert d.stop() == 0


# ------------------------------------------------------- config errors

# The config, and what its one line must say (the section first).
BAD_CONFIGS = {
    "unknown fallback": ("[sms]\nfallback = nowhere\n",
                         ["[sms]", "fallback", "nowhere"]),
    "itself": ("[route.a]\nchannel = sms\nfallback = a\n",
               ["[route.a]", "fallback"]),
    "circle": ("[sms]\nfallback = a\n"
               "[route.a]\nchannel = sms\nfallback = b\n"
               "[route.b]\nchannel = sms\nfallback = a\n",
               ["fallback", "circle"]),
    "another channel": ("[sms]\nfallback = calls\n"
                        "[route.calls]\nchannel = voice\n",
                        ["[sms]", "fallback", "calls"]),
    "bad prefix": ("[route.de]\nchannel = sms\nprefix = +49x\n",
                   ["[route.de]", "prefix", "+49x"]),
}


@pytest.mark.parametrize("what", sorted(BAD_CONFIGS))
def test_config_errors_stop_msgspoold_at_start(srv, daemons, what):
    conf, says = BAD_CONFIGS[what]
    srv.inst.write_conf(conf)
    d = daemons.start(srv.inst.conf)
    rc = d.wait(10)
    assert rc != 0, d.log()
    lines = [ln for ln in d.log().splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert re.search(r"\[(sms|route\.[a-z]+)\]", lines[0]), lines
    for word in says:
        assert word in lines[0], (word, lines)


# ------------------------------------------------------ msgspool status

ROUTE_LINE = re.compile(
    r"^route (?P<name>\S+) \((?P<channel>[a-z0-9.]+), provider "
    r"(?P<provider>[a-z]+)\): (?P<state>in|out|probing)"
    r"(?: since (?P<since>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ))?(?P<rest>.*)$")


def routes_listed(out):
    """msgspool status: the line of each route, by its name, as a dict
    of ROUTE_LINE's groups."""
    return {m.group("name"): m.groupdict() for m in
            map(ROUTE_LINE.match, out.splitlines()) if m}


def test_msgspool_status_shows_every_route(srv, daemons):
    with Standin() as first, Standin() as backup:
        first.failing("503")
        conf = breaker_conf(first, backup, breaker=1) + \
            "[route.spare]\nchannel = sms\nprovider = file\n"
        d = start(srv, daemons, conf)
        msgid = send(srv, "+4915112346001", "status")
        settled(srv, msgid)
        cp = run_cli(srv.inst.conf, "status")
        assert cp.returncode == 0, cp.stderr
        print(cp.stdout)
        routes = routes_listed(cp.stdout)
        want = {FIRST: ("twilio", "out"), BACKUP: ("http", "in"),
                "spare": ("file", "in"), "voice": ("file", "in"),
                "email": ("file", "in")}
        assert {n: (r["provider"], r["state"]) for n, r in routes.items()} \
            == want, cp.stdout
        assert all(r["channel"] == (n if n in ("voice", "email") else "sms")
                   for n, r in routes.items()), cp.stdout
        sms = routes[FIRST]
        assert sms["since"] is not None, sms            # since when
        assert "last error: HTTP 503" in sms["rest"], sms
        assert routes[BACKUP]["since"] is not None, routes[BACKUP]
        assert "error" not in routes[BACKUP]["rest"], routes[BACKUP]
        assert d.stop() == 0

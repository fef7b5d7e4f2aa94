"""Idempotency-Key on the POST delivery routes (conf/openapi.yaml;
msgspool-spool(5), Idempotency): a 2xx reply kept per client and key and
replayed with Idempotent-Replay: true, 422 for another body, 409 with
Retry-After while the first request runs, keys of two clients apart, keys
expiring, and the guarantee: a request killed at any point of its durable
write, then retried with its key, queues each message exactly once and
answers with the ids of the messages it queued."""

import datetime
import fcntl
import hashlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import (CGI_DIR, FRONT, RECIPIENT, assert_problem, fresh_window,
                      parse_time, rfc3339)
from openapi_check import check_reply

SMS = "/sms/v1/deliver"
BATCH = "/sms/v1/deliver/batch"

# One good request of every POST delivery route: path, body, reply status.
ROUTES = {
    "sms": (SMS, {"recipient": RECIPIENT, "messageBody": "once"}, 202),
    "sms-batch": (BATCH, {"messages": [
        {"recipient": RECIPIENT, "messageBody": f"m{i}"} for i in range(3)]},
        200),
    "voice": ("/voice/v1/deliver", {"recipient": RECIPIENT,
                                    "message": "your code is 1 2 3"}, 202),
    "email": ("/deliver", {"templateId": "welcome", "payload": [
        {"recipient": "ann@example.com", "fields": {"first_name": "Ann"}}]},
        200),
}


def post(srv, path, body, key, client="acme"):
    h = {} if key is None else {"Idempotency-Key": key}
    return srv.post_json(path, body, client=client, headers=h)


def queued(inst):
    """Every message file in new/ and deferred/ (ids)."""
    return sorted(inst.ids("new") + inst.ids("deferred"))


def reply_ids(r):
    """The message ids a reply names, whatever the route."""
    doc = r.json()
    ids = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("smsId", "callId", "messageId", "id") and \
                        isinstance(x, str):
                    ids.append(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(doc)
    return sorted(ids)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_replay_returns_the_kept_reply_and_queues_nothing(srv, route):
    path, body, status = ROUTES[route]
    first = post(srv, path, body, f"k-{route}")
    assert first.status_code == status, first.text
    check_reply(first)
    assert "Idempotent-Replay" not in first.headers
    ids = queued(srv.inst)
    assert ids and ids == reply_ids(first)
    again = post(srv, path, body, f"k-{route}")
    assert again.status_code == status
    assert again.headers["Idempotent-Replay"] == "true"
    assert again.content == first.content
    assert again.headers["Content-Type"] == first.headers["Content-Type"]
    check_reply(again)
    assert queued(srv.inst) == ids


def test_quoted_key_is_the_same_key(srv):
    path, body, _ = ROUTES["sms"]
    first = post(srv, path, body, "order-7")
    again = post(srv, path, body, '"order-7"')
    assert again.headers.get("Idempotent-Replay") == "true"
    assert again.json() == first.json()
    assert len(queued(srv.inst)) == 1


def test_another_body_is_422_and_queues_nothing(srv):
    path, body, _ = ROUTES["sms"]
    assert post(srv, path, body, "k").status_code == 202
    r = post(srv, path, dict(body, messageBody="other"), "k")
    assert_problem(r, 422)
    check_reply(r)
    # Another route with the same key and body is another request too.
    r = post(srv, BATCH, body, "k")
    assert_problem(r, 422)
    assert len(queued(srv.inst)) == 1


# The same route as the servers normalise the path (msgspool-fcgi(8);
# test_paths.py): a merged "//", a dot segment, an escaped unreserved
# character.
SPELLINGS = ["/sms/v1//deliver", "//sms/v1/deliver", "/sms/v1/./deliver",
             "/sms/v1/%64eliver"]


def post_as_written(srv, path, body, key):
    """POST body to path exactly as written (requests would normalise
    it): (status, headers with lower-case names, body)."""
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"X-API-KEY: {srv.inst.keys['acme']}\r\n"
            f"Content-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n"
            f"Idempotency-Key: {key}\r\nConnection: close\r\n\r\n")
    return srv.raw(head.encode() + data)


# busybox httpd maps no route: each program is at /cgi-bin/PROGRAM only
# (conf/busybox-httpd.conf), so a route has no other spelling there.
ROUTED = pytest.mark.skipif(
    FRONT == "busybox", reason="busybox httpd serves /cgi-bin/PROGRAM only, "
    "no route (conf/busybox-httpd.conf)")


@ROUTED
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_same_route_in_another_spelling_replays(srv, spelling):
    """A key belongs to the route that serves the request, not to how
    its path was written: the same key and body there replay the kept
    reply and queue nothing, whichever spelling came first."""
    path, body, status = ROUTES["sms"]
    for n, (a, b) in enumerate([(path, spelling), (spelling, path)]):
        key = f"spelled-{n}"
        st, hdrs, first = post_as_written(srv, a, body, key)
        assert st == status, (a, first)
        assert "idempotent-replay" not in hdrs
        st, hdrs, again = post_as_written(srv, b, body, key)
        assert st == status, (b, again)
        assert hdrs.get("idempotent-replay") == "true", (a, b, again)
        assert again == first
    assert len(queued(srv.inst)) == 2


@ROUTED
def test_another_route_of_the_same_program_is_422(srv):
    """/deliver and /email/v1/deliver are one program but two routes
    (their replies differ): the same key and body on the other is 422."""
    _, body, _ = ROUTES["email"]
    assert post(srv, "/deliver", body, "mail").status_code == 200
    st, _, text = post_as_written(srv, "/email/v1//deliver", body, "mail")
    assert st == 422, text
    assert json.loads(text)["type"].endswith(":idempotency-key-reused")
    assert len(queued(srv.inst)) == 1


@pytest.mark.parametrize("key", ["x" * 256, "caf\u00e9", "a\tb",
                                 '"open', '"a"b'])
def test_invalid_key_is_400(srv, key):
    path, body, _ = ROUTES["sms"]
    h = {"Idempotency-Key": key.encode("latin-1")}
    r = srv.post_json(path, body, headers=h)
    assert_problem(r, 400)
    check_reply(r)
    assert queued(srv.inst) == []


def test_longest_key_is_accepted(srv):
    path, body, _ = ROUTES["sms"]
    assert post(srv, path, body, "k" * 255).status_code == 202


def test_failed_request_is_not_kept(srv):
    path, body, _ = ROUTES["sms"]
    r = post(srv, path, dict(body, recipient="123"), "k400")
    assert_problem(r, 400)
    # Not kept: the same key with a good body is a first request.
    r = post(srv, path, body, "k400")
    assert r.status_code == 202
    assert "Idempotent-Replay" not in r.headers
    assert len(queued(srv.inst)) == 1


def test_two_clients_keys_are_independent(srv):
    path, body, _ = ROUTES["sms"]
    a = post(srv, path, body, "shared", client="acme")
    b = post(srv, path, body, "shared", client="other")
    assert a.status_code == b.status_code == 202
    assert "Idempotent-Replay" not in b.headers
    assert a.json()["smsId"] != b.json()["smsId"]
    assert len(queued(srv.inst)) == 2


def test_keys_expire(srv):
    srv.inst.write_conf("idempotency-ttl = 1h\n")
    path, body, _ = ROUTES["sms"]
    first = post(srv, path, body, "short")
    assert post(srv, path, body, "short").headers.get(
        "Idempotent-Replay") == "true"
    # Aged, not waited for: a record expires idempotency-ttl after the
    # time it keeps (msgspool-spool(5) Idempotency), set an hour and a
    # second back, in place so the file keeps its owner.
    rec = _lock_path(srv.inst, "acme", "short").with_suffix(".json")
    doc = json.loads(rec.read_bytes())
    doc["created"] = rfc3339(parse_time(doc["created"]) -
                             datetime.timedelta(seconds=3601))
    rec.write_text(json.dumps(doc) + "\n")
    later = post(srv, path, body, "short")
    assert later.status_code == 202
    assert "Idempotent-Replay" not in later.headers
    assert later.json()["smsId"] != first.json()["smsId"]
    assert len(queued(srv.inst)) == 2


def _lock_path(inst, client, key):
    h = hashlib.sha256(client.encode() + b"\0" + key.encode()).hexdigest()
    return inst.spool / "idempotency" / f"{h[:40]}.lock"


def test_key_in_use_is_409_with_retry_after(srv):
    path, body, _ = ROUTES["sms"]
    # The first request, still running: it holds the key's lock.
    lock = _lock_path(srv.inst, "acme", "busy")
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        r = post(srv, path, body, "busy")
        assert_problem(r, 409)
        check_reply(r)
        assert r.headers["Retry-After"] == "1"
    assert queued(srv.inst) == []
    assert post(srv, path, body, "busy").status_code == 202


def test_concurrent_requests_with_one_key_queue_once(srv):
    body = {"messages": [{"recipient": RECIPIENT, "messageBody": f"c{i}"}
                         for i in range(300)]}
    for round_ in range(3):
        key = f"race-{round_}"
        replies = []
        gate = threading.Barrier(4)

        def one():
            gate.wait()
            replies.append(post(srv, BATCH, body, key))
        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        codes = sorted(r.status_code for r in replies)
        assert len(replies) == 4
        assert set(codes) <= {200, 409}, codes
        firsts = [r for r in replies if r.status_code == 200 and
                  "Idempotent-Replay" not in r.headers]
        assert len(firsts) == 1, codes
        for r in replies:
            if r.status_code == 409:
                assert r.headers["Retry-After"] == "1"
            elif r is not firsts[0]:
                assert r.content == firsts[0].content
        assert len(queued(srv.inst)) == 300 * (round_ + 1)


def test_replay_does_not_count_against_the_rate(srv):
    srv.inst.write_conf("[client.acme]\nrate = 2/min\n")
    fresh_window("2/min")
    path, body, _ = ROUTES["sms"]
    assert post(srv, path, body, "r1").status_code == 202
    for _ in range(3):
        r = post(srv, path, body, "r1")
        assert r.headers["Idempotent-Replay"] == "true"
        assert r.headers["RateLimit"].startswith('"msgs";r=1;')
    assert post(srv, path, dict(body, messageBody="2"), "r2"
                ).status_code == 202
    assert_problem(post(srv, path, dict(body, messageBody="3"), "r3"), 429)


# ------------------------------------------------ killed, then retried

def _fault_dir():
    d = CGI_DIR.parent / "tests" / "fault"
    assert (d / "sms-batch").is_file(), \
        f"{d}: the fault build is missing (make check-build makes it)"
    return d


def _run_cgi(srv, prog, path, body, key, fault):
    data = json.dumps(body).encode()
    env = {
        "PATH": "/usr/bin:/bin",
        "MSGSPOOL_CONFIG": str(srv.inst.conf),
        "GATEWAY_INTERFACE": "CGI/1.1",
        "REQUEST_METHOD": "POST",
        "REQUEST_URI": srv.route(path),
        "SCRIPT_NAME": srv.route(path),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)),
        "HTTP_X_API_KEY": srv.inst.keys["acme"],
        "HTTP_IDEMPOTENCY_KEY": key,
        "MSGSPOOL_FAULT": str(fault),
    }
    return subprocess.run([str(_fault_dir() / prog)], input=data, env=env,
                          capture_output=True, timeout=60)


@pytest.mark.parametrize("prog,path,n", [("sms-batch", BATCH, 5),
                                         ("sms-deliver", SMS, 1)])
def test_killed_at_every_fault_point_then_retried(srv, prog, path, n):
    """The CGI kills itself at the Nth fault point of its write path (the
    durable write of each file, each directory sync, the idempotency
    record, each publication), for N = 1, 2, ... until it runs through;
    after each death the request is retried through the web server with
    its key.  Every retry answers with the ids of the messages queued
    for that key, each exactly once."""
    if n == 1:
        body = {"recipient": RECIPIENT, "messageBody": "killed"}
    else:
        body = {"messages": [{"recipient": RECIPIENT,
                              "messageBody": f"k{i}"} for i in range(n)]}
    expected = set()
    points = {}
    fault = 0
    while True:
        fault += 1
        assert fault < 200, "the write path never ran through"
        key = f"{prog}-kill-{fault}"
        p = _run_cgi(srv, prog, path, body, key, fault)
        if p.returncode == 0:
            break
        assert p.returncode == -9, (p.returncode, p.stderr)
        where = p.stderr.decode().strip().splitlines()[-1]
        points[where.split(": ", 1)[1]] = points.get(
            where.split(": ", 1)[1], 0) + 1
        r = post(srv, path, body, key)
        assert r.status_code in (200, 202), r.text
        check_reply(r)
        ids = set(reply_ids(r))
        assert len(ids) == n
        expected |= ids
        # Exactly the messages the reply names are queued, once each,
        # and nothing of the killed run is queued beside them.
        assert set(queued(srv.inst)) == expected
        assert len(queued(srv.inst)) == len(expected)
        # Retried again: the same reply, still nothing more.
        again = post(srv, path, body, key)
        assert again.headers.get("Idempotent-Replay") == "true"
        assert set(reply_ids(again)) == ids
        assert len(queued(srv.inst)) == len(expected)
    # The run that went through answered like any other.
    out = p.stdout.decode()
    assert out.startswith("Status: 20"), out
    kills = fault - 1
    print(f"\n{prog}: killed at {kills} points {points}; "
          f"{len(expected)} messages queued by the retries, each once")
    assert kills >= 6
    assert len(expected) == kills * n
    # Leftovers of the killed runs are held files in tmp/, never queued.
    leftover = [f for f in srv.inst.files("tmp") if not f.endswith(".held")
                and not f.startswith(".")]
    assert all(".json." in f for f in leftover), leftover


def test_upload_takes_a_key_too(srv):
    body = {"attachmentName": "terms.txt", "content": "SGVsbG8K"}
    first = srv.post_json("/email/v1/attachments", body,
                          headers={"Idempotency-Key": "up-1"})
    assert first.status_code == 201, first.text
    check_reply(first)
    again = srv.post_json("/email/v1/attachments", body,
                          headers={"Idempotency-Key": "up-1"})
    assert again.status_code == 201
    assert again.headers["Idempotent-Replay"] == "true"
    assert again.headers["Deprecation"] == "true"
    assert again.json() == first.json()
    check_reply(again)
    r = srv.post_json("/email/v1/attachments", dict(body, content="eA=="),
                      headers={"Idempotency-Key": "up-1"})
    assert_problem(r, 422)


def _pids_of(srv, exe, workers=False):
    """The processes of srv's web server (each runs in a session of its
    own, started by the harness; the other tests running beside this one
    have theirs) running the program at path exe; with workers, only
    those whose parent runs it too (msgspool-fcgi's workers, not the
    supervisor that replaces them)."""
    sessions = {p.pid for p in srv.procs}

    def runs(pid):
        try:
            return os.readlink(f"/proc/{pid}/exe") == str(exe)
        except OSError:
            return False

    def stat(pid):
        """(ppid, session) of pid, or (0, 0)."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[1]), int(fields[3])
        except (OSError, ValueError, IndexError):
            return 0, 0
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and
            runs(d) and stat(d)[1] in sessions and
            (not workers or runs(stat(d)[0]))]


def test_sigkill_at_random_times_under_load_then_retry(srv):
    """Requests with keys through the web server, each program serving one
    killed with SIGKILL after a random delay (before, during or after its
    write), then retried with the key: every retry gets the ids of 40
    messages, each queued once, and nothing else is queued."""
    import random
    from conftest import CGI_DIR, FASTCGI, FCGI_DIR
    exe = (FCGI_DIR / "msgspool-fcgi") if FASTCGI else (CGI_DIR / "sms-batch")
    exe = exe.resolve()
    rnd = random.Random(1234)
    expected = set()
    killed = answered = 0
    for round_ in range(20):
        key = f"load-{round_}"
        body = {"messages": [{"recipient": RECIPIENT,
                              "messageBody": f"r{round_}-{i}"}
                             for i in range(40)]}
        out = []
        t = threading.Thread(target=lambda: out.append(
            _post_quiet(srv, BATCH, body, key)))
        t.start()
        time.sleep(rnd.uniform(0, 0.06))    # the kill's moment, not a wait
        deadline = time.time() + 0.2
        while time.time() < deadline and t.is_alive():
            pids = _pids_of(srv, exe, workers=FASTCGI)
            if pids:
                for pid in pids:
                    try:
                        os.kill(pid, 9)
                    except ProcessLookupError:
                        pass
                killed += 1
                break
            time.sleep(0.001)
        t.join(30)
        first = out[0] if out else None
        if getattr(first, "status_code", None) == 200:
            answered += 1
        # Retry as a client would: while the first still runs (409), and
        # while the server has no program to run it (a FastCGI worker
        # being replaced: 5xx), for at most 20 s.
        until = time.time() + 20
        while True:
            r = post(srv, BATCH, body, key)
            if r.status_code == 200 or time.time() > until or not (
                    r.status_code == 409 or r.status_code >= 500):
                break
            time.sleep(0.1)
        assert r.status_code == 200, r.text
        ids = set(reply_ids(r))
        assert len(ids) == 40
        expected |= ids
        assert set(queued(srv.inst)) == expected
    print(f"\n20 requests, {killed} programs killed at random times, "
          f"{answered} first replies a 200; {len(expected)} messages "
          f"queued by the retries, each once")
    assert len(expected) == 20 * 40


def _post_quiet(srv, path, body, key):
    try:
        return post(srv, path, body, key)
    except Exception as e:  # the connection may die with the program
        return e

"""FastCGI mode (msgspool-fcgi(8)): what only a persistent process can get
wrong.  The rest of the suite runs under lighttpd-fcgi and nginx-fcgi as it
does under the CGI servers; these tests run only there (MSGSPOOL_SERVER
lighttpd-fcgi or nginx-fcgi).  A persistent process must pick up a changed
config and keys file at the next request, route by path alone, and
survive the death of a worker."""

import json
import os
import signal
import socket
import subprocess
import time

import pytest

from channels_support import OTT_CONF, spooled
from conftest import (FASTCGI, FCGI_DIR, assert_problem, assert_unauthorized)

pytestmark = pytest.mark.skipif(
    not FASTCGI, reason="FastCGI mode only (MSGSPOOL_SERVER=lighttpd-fcgi "
    "or nginx-fcgi)")

DEFAULT_WORKERS = 8     # msgspool-fcgi(8)


def _fcgi_procs(server):
    """{pid: ppid} of the msgspool-fcgi processes of server (each of its
    processes runs in a session of its own, started by the harness)."""
    exe = os.path.realpath(FCGI_DIR / "msgspool-fcgi")
    sessions = {p.pid for p in server.procs}
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{d}/exe") != exe:
                continue
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # state ppid pgrp session ...
        if fields[0] != "Z" and int(fields[3]) in sessions:
            out[int(d)] = int(fields[1])
    return out


def _workers(server):
    procs = _fcgi_procs(server)
    return sorted(p for p, pp in procs.items() if pp in procs)


def _wait_workers(server, n, timeout=10, gone=None):
    """The workers once there are n of them, gone (a pid) not among them:
    a killed one is listed until the kernel has ended it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        w = _workers(server)
        if len(w) == n and gone not in w:
            return w
        time.sleep(0.05)
    return _workers(server)


def test_default_number_of_workers(srv):
    assert len(_wait_workers(srv, DEFAULT_WORKERS)) == DEFAULT_WORKERS
    sup = [p for p, pp in _fcgi_procs(srv).items()
           if pp not in _fcgi_procs(srv)]
    assert len(sup) == 1, _fcgi_procs(srv)


def test_a_killed_worker_is_replaced(srv):
    before = _wait_workers(srv, DEFAULT_WORKERS)
    assert len(before) == DEFAULT_WORKERS
    os.kill(before[0], signal.SIGKILL)
    after = _wait_workers(srv, DEFAULT_WORKERS, gone=before[0])
    assert len(after) == DEFAULT_WORKERS, after
    assert before[0] not in after
    # Every request is answered by the ones left and the new one.
    for _ in range(3 * DEFAULT_WORKERS):
        assert srv.get("/ping", client=None).status_code == 200
    r = srv.sms()
    assert r.status_code == 202, r.text


def test_a_changed_config_applies_to_the_next_request(srv):
    assert srv.sms().status_code == 202
    srv.inst.write_conf("max-body = 16\n")
    assert_problem(srv.sms(), 413)
    srv.inst.write_conf("")
    assert srv.sms().status_code == 202


def test_a_broken_config_is_500_until_fixed(srv):
    srv.inst.write_conf("this is no config line\n")
    assert_problem(srv.sms(), 500)
    # The health check needs no config.
    assert srv.get("/ping", client=None).status_code == 200
    srv.inst.write_conf("")
    assert srv.sms().status_code == 202


def test_a_changed_keys_file_applies_to_the_next_request(srv):
    keys = srv.inst.keys_file
    text = keys.read_text()
    assert srv.sms().status_code == 202
    # Every key gone, in place (same inode): the next request is refused.
    keys.write_text("")
    assert_unauthorized(srv.sms())
    keys.write_text(text)
    assert srv.sms().status_code == 202


@pytest.mark.parametrize("path", ["/nope", "/cgi-bin/ping", "/messages/",
                                  "/messages/a/b", "/ping/x"])
def test_no_route_is_a_404_problem(srv, path):
    # The web servers' own 404 under CGI, word for word (test_paths.py).
    r = srv.get(path, client=None)
    assert_problem(r, 404)
    assert r.json()["detail"] == "no such route"


def test_the_query_string_is_not_the_route(srv):
    assert srv.get("/ping?x=/sms/v1/deliver", client=None).text == "pong"
    r = srv.get("/nope?/ping", client=None)
    assert_problem(r, 404)


def _otp(srv):
    """Send an OTT message from the template otp to a worker: its body
    as queued, or the entry's error."""
    r = srv.post_json("/ott/v1/deliver", {"payload": [{
        "recipient": "4915100000001", "templateID": "otp",
        "templateParameters": ["42"], "channelType": 1}]})
    assert r.status_code == 200, r.text
    [e] = r.json()
    if e["status"] != "queued":
        return e["error"]
    return spooled(srv.inst, "new", e["messageId"], "ott")["message"]["body"]


def test_a_changed_template_applies_to_the_next_request(srv):
    """Each worker keeps the templates it read; a stat a use finds a
    change, so every worker sends the new text, and none a removed one."""
    srv.inst.write_conf(OTT_CONF)
    path = srv.inst.templates / "acme" / "ott" / "otp.tmpl"
    text = path.read_text()
    # Enough requests that every worker has read it.
    for _ in range(3 * DEFAULT_WORKERS):
        assert _otp(srv).rstrip("\n") == "Your code is 42"
    path.write_text(text.replace("Your code is", "Dein Code ist"))
    for _ in range(3 * DEFAULT_WORKERS):
        assert _otp(srv).rstrip("\n") == "Dein Code ist 42"
    path.unlink()
    for _ in range(3 * DEFAULT_WORKERS):
        assert "no OTT template 'otp'" in _otp(srv)
    path.write_text(text)
    assert _otp(srv).rstrip("\n") == "Your code is 42"


def _raw_get(srv, target):
    status, _, body = srv.raw(b"GET " + target + b" HTTP/1.1\r\n"
                              b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
    return status, body


def test_a_percent_encoded_path_is_decoded_before_routing(srv):
    """As a web server decodes a path before it maps it to a program:
    /p%69ng is /ping, and a message id may come encoded too."""
    status, body = _raw_get(srv, b"/p%69n%67?x=%41")
    assert (status, body) == (200, b"pong")
    msgid = srv.sms().json()["smsId"]
    enc = ("/messages/%s%%%02X" % (msgid[:-1], ord(msgid[-1]))).encode()
    r_status, r_body = srv.raw(b"GET " + enc + b" HTTP/1.1\r\nHost: x\r\n"
                               b"X-API-KEY: " + srv.inst.keys["acme"].encode() +
                               b"\r\nConnection: close\r\n\r\n")[::2]
    assert r_status == 200, r_body
    assert json.loads(r_body)["id"] == msgid


@pytest.mark.parametrize("target", [b"/p%00ing", b"/ping%3F",
                                    b"/ping%3Fx=1"])
def test_an_encoded_separator_routes_nowhere(srv, target):
    status, body = _raw_get(srv, target)
    # The web server may refuse it first; it never reaches a route.
    assert status in (400, 404), (status, body)
    assert body != b"pong"


def test_no_route_with_a_body_is_a_404_problem(srv):
    # The body is never read; the answer comes whole all the same, and the
    # worker serves the next request.
    r = srv.post_raw("/nope", b"x" * 200000)
    assert_problem(r, 404)
    assert srv.sms().status_code == 202


def _listening(port):
    """The local addresses listening on TCP port, as /proc/net/tcp and
    tcp6 write them (0100007F: 127.0.0.1; 00000000: every address)."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            addr, hexport = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(hexport, 16) == port:
                out.add(addr)
    return out


@pytest.mark.parametrize("host,want", [("", "0100007F"),
                                       ("127.0.0.1", "0100007F"),
                                       ("0.0.0.0", "00000000")])
def test_a_port_without_a_host_listens_on_loopback(srv, host, want):
    """-s :PORT is 127.0.0.1:PORT (msgspool-fcgi(8)): a FastCGI socket
    open to the network takes requests with any REMOTE_ADDR from anyone
    who reaches it; every address only when asked for by name."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [FCGI_DIR / "msgspool-fcgi", "-s", f"{host}:{port}", "-w", "1",
         "-c", srv.inst.conf], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not _listening(port) and proc.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        assert _listening(port) == {want}, proc.poll()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert b"cannot listen" not in err, err


def _settled(private):
    """A private server with one message, its spool's root last changed
    an hour ago (what a worker trusts, lib/spool/spool_seen.c): the
    server, its instance, the message's path and that time."""
    srv, inst = private()
    r = srv.sms()
    assert r.status_code == 202, r.text
    old = time.time() - 3600
    os.utime(inst.spool, (old, old))
    return srv, inst, "/messages/" + r.json()["smsId"], old


def test_a_state_removed_from_a_settled_spool_is_503_at_once(private):
    """A worker looks at the spool's states again only when the spool's
    root changed (lib/spool/spool_seen.c): a root last changed an hour
    ago, every worker having served from it, then a state removed: every
    request after is 503, as before, and 200 again once it is back."""
    srv, inst, path, old = _settled(private)
    for _ in range(3 * DEFAULT_WORKERS):
        assert srv.get(path).status_code == 200
    (inst.spool / "cur").rmdir()
    for _ in range(3 * DEFAULT_WORKERS):
        r = srv.get(path)
        assert_problem(r, 503)
        assert r.headers["Retry-After"].isdigit()
    (inst.spool / "cur").mkdir(mode=0o700)
    os.utime(inst.spool, (old, old))
    for _ in range(3 * DEFAULT_WORKERS):
        assert srv.get(path).status_code == 200


def _spool_fds(server, spool):
    """The descriptors of server's workers open on something in spool."""
    root = os.path.realpath(spool)
    held = []
    for pid in _workers(server):
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in names:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target == root or target.startswith(root + "/"):
                held.append((pid, target))
    return held


def test_an_idle_worker_holds_nothing_of_the_spool(private):
    """Under load a worker holds the spool's root and states from one
    request to the next (msgspool-fcgi(8), Per request); one with no
    request waiting lets them go before it answers, so that after
    requests one at a time none is open, whatever was asked."""
    srv, inst, path, _ = _settled(private)
    for _ in range(3 * DEFAULT_WORKERS):
        assert srv.get(path).status_code == 200
        assert srv.sms().status_code == 202
    assert _spool_fds(srv, inst.spool) == []


def test_a_status_follows_its_file_byte_for_byte(private):
    """Each worker answers GET /messages/{id} again from the reply it made
    from the same bytes in the same state (msgspool-fcgi(8), Per
    request), and only then: the file moved by hand, edited in place, and
    edited again to the same size with its times put back, each change
    is the next answer of every worker."""
    srv, inst = private()
    r = srv.sms()
    assert r.status_code == 202, r.text
    mid = r.json()["smsId"]
    path = "/messages/" + mid
    name = mid + ".json"

    def every_worker_says(status):
        for _ in range(4 * DEFAULT_WORKERS):
            r = srv.get(path)
            assert r.status_code == 200, r.text
            assert r.json()["status"] == status, r.json()

    every_worker_says("queued")
    (inst.spool / "new" / name).rename(inst.spool / "sent" / name)
    every_worker_says("sent")
    f = inst.spool / "sent" / name
    doc = json.loads(f.read_text())
    doc["receiptStatus"] = "delivered"
    with open(f, "r+") as out:
        out.write(json.dumps(doc, indent=2))
        out.truncate()
    every_worker_says("delivered")
    st = f.stat()
    text = f.read_text().replace('"delivered"', '"read"     ')
    assert len(text) == st.st_size
    with open(f, "r+") as out:
        out.write(text)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    every_worker_says("read")
    # Another client's message is no more found for having been answered.
    r = srv.get(path, client="other")
    assert_problem(r, 404)

"""
Helpers shared by test_delivery.py, test_delivery_daemon.py and
test_crash.py: spool files written the way the CGI programs write them
(lib/spool/spool.c spool_doc_new and spool_enqueue: tmp/ first, then a rename
into new/ or deferred/), the long-running daemon as a managed process,
bounded waits, and the fixtures of the delivery tests (a Standin, an
instance with no web server).
"""

import ctypes
import datetime
import json
import os
import secrets
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BIN_DIR, CROCKFORD, SANITIZER_MARKS, STATES, rfc3339, \
    utcnow, Instance
from doubles.standin import Standin

STOP_TIMEOUT = 10       # seconds for a daemon to exit after SIGTERM
# Seconds to wait for what must happen eventually (a file reaching sent/,
# a log line): generous, so that a slow or busy machine (a sanitizer
# build, other work beside the suite) is not a failure; waiting longer
# costs nothing when it happens at once.  A bound that is the point of a
# test is written out where it is checked.
EVENTUALLY = 30


# ---------------------------------------------------------------- ids

def new_id(t=None):
    """A ULID as spool_id_new makes it: 10 characters of milliseconds,
    16 of randomness, Crockford base32."""
    ms = int((time.time() if t is None else t) * 1000)
    head = "".join(CROCKFORD[(ms >> (45 - 5 * i)) & 31] for i in range(10))
    r = int.from_bytes(secrets.token_bytes(10), "big")
    tail = "".join(CROCKFORD[(r >> (75 - 5 * i)) & 31] for i in range(16))
    return head + tail


# -------------------------------------------------------- spool files

def make_doc(channel, message, client="acme", created=None, due=None,
             msgid=None):
    """A spool document as spool_doc_new builds it.  created and due are
    aware datetimes (default now)."""
    now = utcnow()
    return {
        "version": 1,
        "id": msgid or new_id(),
        "channel": channel,
        "client": client,
        "created": rfc3339(created or now),
        "attempts": 0,
        "nextAttempt": rfc3339(due if due is not None and due > now
                               else now),
        "lastError": None,
        "providerReply": None,
        "message": message,
    }


def enqueue(spool, doc, state="new", sync=False):
    """Write doc into tmp/ (O_EXCL, 0600), optionally fsync, then rename
    into state/ (new or deferred; a deferred file's mtime is when it is
    due).  Returns the id."""
    spool = Path(spool)
    name = doc["id"] + ".json"
    tmp = spool / "tmp" / name
    data = (json.dumps(doc, ensure_ascii=False) + "\n").encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                 0o600)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    if state == "deferred":
        due = datetime.datetime.fromisoformat(
            doc["nextAttempt"].replace("Z", "+00:00")).timestamp()
        os.utime(tmp, (due, due))
    os.rename(tmp, spool / state / name)
    return doc["id"]


def queue_sms(spool, to, body="hello", **kw):
    return enqueue(spool, make_doc("sms", {"to": to, "body": body}, **kw))


def queue_voice(spool, to, say=None, play=None, frm=None, language=None,
                **kw):
    msg = {}
    if say is not None:
        msg["say"] = say
    if play is not None:
        msg["play"] = play
    if frm is not None:
        msg["from"] = frm
    if language is not None:
        msg["language"] = language
    msg["to"] = to
    return enqueue(spool, make_doc("voice", msg, **kw))


def queue_ott(spool, to, channel_type=1, template_id="otp",
              template_name="OTP", language="en", provider_template=None,
              parameters=(), body="", **kw):
    msg = {"to": to, "channelType": channel_type, "templateId": template_id,
           "templateName": template_name, "language": language,
           "providerTemplate": provider_template, "parameters":
           list(parameters), "body": body}
    msg = {k: v for k, v in msg.items() if v is not None}
    return enqueue(spool, make_doc("ott", msg, **kw))


def where(spool, msgid):
    """The states whose directory holds msgid's file."""
    spool = Path(spool)
    return [s for s in STATES if (spool / s / (msgid + ".json")).exists()]


def load(spool, state, msgid):
    return json.loads((Path(spool) / state / (msgid + ".json")).read_bytes())


def ids_in(spool, state):
    d = Path(spool) / state
    return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".json"))


def count(spool, state):
    return len(os.listdir(Path(spool) / state))


# --------------------------------------------------------------- waits

def wait_until(pred, timeout, interval=0.02, what="condition"):
    """Poll pred until it is true; its last value.  Fails the test after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            pytest.fail("waited %.1fs for %s" % (timeout, what))
        time.sleep(interval)


class Inotify:
    """inotify(7) on one directory for the events of mask, read without
    blocking: what happened to its files, where nothing else tells (a
    file only read, a rename seen once however often it is done)."""

    IN_OPEN = 0x20
    IN_MOVED_TO = 0x80
    IN_Q_OVERFLOW = 0x4000

    def __init__(self, d, mask):
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self.fd, os.fsencode(str(d)), mask) < 0:
            err = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(err, "inotify_add_watch %s" % d)

    def read(self):
        """The (mask, name) of each event since the last read; name is ""
        for the directory itself."""
        got = []
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return got
            off = 0
            while off < len(buf):
                _, mask, _, ln = struct.unpack_from("iIII", buf, off)
                name = buf[off + 16:off + 16 + ln].rstrip(b"\0").decode()
                off += 16 + ln
                if mask & self.IN_Q_OVERFLOW:
                    pytest.fail("inotify queue overflowed: events lost "
                                "(raise fs.inotify.max_queued_events)")
                got.append((mask, name))

    def close(self):
        os.close(self.fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -------------------------------------------------------------- daemon

class Daemon:
    """msgspoold -c CONF [--once] as a child process, stderr to a file."""

    def __init__(self, conf, logdir, once=False, tag="msgspoold"):
        self.conf = Path(conf)
        logdir = Path(logdir)
        logdir.mkdir(parents=True, exist_ok=True)
        n = 0
        while (logdir / ("%s.%d.log" % (tag, n))).exists():
            n += 1
        self.logpath = logdir / ("%s.%d.log" % (tag, n))
        prog = BIN_DIR / "msgspoold"
        if not prog.exists():
            pytest.fail("not built: %s (run `make build`)" % prog)
        env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
        argv = [str(prog), "-c", str(self.conf)] + (["--once"] if once
                                                     else [])
        with open(self.logpath, "ab") as err:
            self.proc = subprocess.Popen(argv, env=env,
                                         stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL,
                                         stderr=err)
        self.started = time.monotonic()

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def log(self):
        try:
            return self.logpath.read_text("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def wait_log(self, text, timeout=EVENTUALLY):
        wait_until(lambda: text in self.log() or not self.alive(), timeout,
                   what="%r in the daemon log" % text)
        assert text in self.log(), "daemon exited:\n" + self.log()[-3000:]

    def wait_idle(self, timeout=EVENTUALLY):
        """Until the daemon is idle in its wait for work, its start done:
        blocked in poll(2) (its main thread's wchan), where it wakes for a
        file in new/ or a chore.  Where the kernel does not name the
        wait, sleeping (state S) must do."""
        def idle():
            assert self.alive(), "daemon exited:\n" + self.log()[-3000:]
            if "started" not in self.log():
                return False
            try:
                with open("/proc/%d/wchan" % self.pid) as f:
                    wchan = f.read().strip()
                with open("/proc/%d/stat" % self.pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                return False
            if wchan in ("", "0"):
                return state == "S"
            return "poll" in wchan
        wait_until(idle, timeout, interval=0.01,
                   what="msgspoold idle in its wait")

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def wait(self, timeout):
        """The exit status; fails the test (after killing it) when the
        daemon has not exited within timeout seconds."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("msgspoold did not exit within %.1fs\n%s" % (
                timeout, self.log()[-3000:]))

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM and wait: the exit status."""
        self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self):
        """SIGKILL and reap."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass

    def check_sanitizers(self):
        text = self.log()
        for mark in SANITIZER_MARKS:
            assert mark not in text, "sanitizer report:\n" + text[-4000:]


class Daemons:
    """The daemons a test started; whatever is still running at the end is
    killed (by its own pid) and its log checked."""

    def __init__(self, logdir):
        self.logdir = Path(logdir)
        self.all = []

    def start(self, conf, once=False):
        d = Daemon(conf, self.logdir, once=once)
        self.all.append(d)
        return d

    def once(self, conf, timeout=60):
        """msgspoold --once: waits for it, asserts exit 0, returns it."""
        d = self.start(conf, once=True)
        rc = d.wait(timeout)
        assert rc == 0, "msgspoold --once exited %s\n%s" % (rc, d.log())
        d.check_sanitizers()
        return d

    def logs(self):
        return "".join("--- %s (pid %d) ---\n%s\n" % (d.logpath.name, d.pid,
                                                      d.log()[-4000:])
                       for d in self.all)

    def cleanup(self):
        for d in self.all:
            if d.alive():
                d.kill()
        for d in self.all:
            d.check_sanitizers()


@pytest.fixture
def daemons(request, tmp_path):
    ds = Daemons(tmp_path / "daemon-logs")
    yield ds
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(ds.logs())
    ds.cleanup()


def run_cli(conf, *args, timeout=30):
    """msgspool -c CONF ARGS...: the CompletedProcess (text)."""
    env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
    return subprocess.run([str(BIN_DIR / "msgspool"), "-c", str(conf)] +
                          [str(a) for a in args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def timestamp(s):
    """An RFC 3339 'Z' time as seconds since the epoch."""
    return datetime.datetime.fromisoformat(
        s.replace("Z", "+00:00")).timestamp()


# ------------------------------------------ fixtures of the delivery tests

@pytest.fixture
def standin():
    with Standin() as s:
        yield s


@pytest.fixture
def inst(tmp_path):
    """An instance of our own, for tests that need no HTTP API."""
    return Instance(tmp_path / "inst")


def assert_sent(spool, msgid, attempts=1):
    assert where(spool, msgid) == ["sent"], where(spool, msgid)
    doc = load(spool, "sent", msgid)
    assert doc["attempts"] == attempts, doc
    assert doc["lastError"] is None, doc
    assert doc["providerReply"], doc
    return doc

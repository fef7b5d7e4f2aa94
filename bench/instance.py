"""The servers bench/run.py measures: a temporary msgspool instance
(Instance: config, keys, templates, spool, and SMS and email files
queued fast), lighttpd over the CGI programs (Lighttpd) and lighttpd
over a FastCGI responder (LighttpdFcgi), with the bench client's key.
"""
import hashlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
# What make built: the programs and the bench's own baselines
# (MSGSPOOL_BUILD, the Makefile's O, default build/).
BUILD = ROOT / (os.environ.get("MSGSPOOL_BUILD") or "build")
BIN = BUILD / "bench"

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# The spool's areas a row fills, set aside by clear() with the states
# (made again on demand by the programs): inbound messages, their notes
# and parts, the index of providers' ids, webhook events.
AREAS = ("inbox", "inbox-new", "inbox-parts", "index", "events",
         "events-failed")
# A suppression's file name is its address when it holds only these
# (lib/spool/suppress.c escapes every other byte).
SUPPRESS_NAME_RE = re.compile(r"[A-Za-z0-9@+_-][A-Za-z0-9@.+_-]*\Z")
KEY = "bench-key-0123456789"
CLIENT = "bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port, timeout=10):
    """Whether something accepts connections on 127.0.0.1:port within
    timeout seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def ulid():
    ms = int(time.time() * 1000)
    return ("".join(CROCKFORD[(ms >> (45 - 5 * i)) & 31] for i in range(10)) +
            "".join(random.choice(CROCKFORD) for _ in range(16)))


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Instance:
    """A temporary msgspool instance: config, keys, templates, spool."""

    def __init__(self, base, extra=""):
        self.base = Path(base)
        self.spool = self.base / "spool"
        for d in ("tmp", "new", "deferred", "cur", "sent", "failed"):
            (self.spool / d).mkdir(parents=True, exist_ok=True)
        t = self.base / "templates" / CLIENT
        (t / "email").mkdir(parents=True, exist_ok=True)
        (t / "ott").mkdir(parents=True, exist_ok=True)
        (t / "email" / "welcome.tmpl").write_text(
            "Name: Welcome\nSubject: Welcome, {{name}}\nFrom: hello@example.com\n"
            "Tags: bench\nCreated: 2026-01-01T00:00:00Z\n\n"
            "<html><body><p>Hello {{name}},</p><p>your account is ready.</p></body></html>\n")
        (t / "ott" / "order.tmpl").write_text(
            "Name: Order\nParameters: 2\nLanguage: en_US\nProvider-Template: order\n\n"
            "Hello {{1}}, order {{2}} has shipped.\n")
        (self.base / "keys").write_text(
            "%s:%s:*\n" % (CLIENT, hashlib.sha256(KEY.encode()).hexdigest()))
        self.conf = self.base / "msgspool.conf"
        self.write_conf(extra)

    def write_conf(self, extra=""):
        self.conf.write_text(
            "spool = %s\nkeys = %s\ntemplates = %s\n%s\n[ott.1]\nprovider = file\n"
            % (self.spool, self.base / "keys", self.base / "templates", extra))

    def count(self, state):
        return sum(1 for _ in os.scandir(self.spool / state))

    def clear(self):
        """Empty the spool for the next row.  The old directories are set
        aside, not removed, until the run's end: ext4 skips inodes freed
        in the last minute or more when it allocates new ones, so removing
        100,000 files would slow the creates of the rows that follow."""
        trash = self.base / "trash"
        trash.mkdir(exist_ok=True)
        for d in ("tmp", "new", "deferred", "cur", "sent", "failed", "outbox",
                  "idempotency") + AREAS:
            p = self.spool / d
            if p.exists():
                # A request wrk gave up on may still be finishing in it:
                # it ends in the directory set aside.
                p.rename(trash / ("%s.%d" % (d, len(os.listdir(trash)))))
            if d not in ("outbox", "idempotency") + AREAS:
                p.mkdir(exist_ok=True)

    def add_key(self, client, key):
        """Another client of the instance, with its own API key."""
        with open(self.base / "keys", "a") as f:
            f.write("%s:%s:*\n" % (client, hashlib.sha256(key.encode()).hexdigest()))

    def suppress(self, client, channel, addresses):
        """Put addresses (normalized already: E.164 for sms) on client's
        list of channel, fast: the files lib/spool/suppress.c writes
        (msgspool-spool(5), Suppressions), suppressions/CLIENT/CHANNEL/
        NAME.json, NAME the address (these need no escape), written
        without a sync.  The lists are not set aside by clear()."""
        d = self.spool / "suppressions" / client / channel
        d.mkdir(parents=True, exist_ok=True)
        at = rfc3339(time.time())
        ns = time.time_ns()
        for i, addr in enumerate(addresses):
            if not SUPPRESS_NAME_RE.match(addr):
                raise ValueError("%r would need escaping" % addr)
            doc = {"version": 1, "id": "%016X%08X" % (ns + i, random.getrandbits(32)),
                   "channel": channel, "address": addr, "source": "manual",
                   "reason": "bench", "createdAt": at}
            (d / (addr + ".json")).write_text(json.dumps(doc))

    def queue_inbound(self, n, client, to, provider="twilio"):
        """Write n inbound SMS as the receipts program keeps them
        (lib/spool/inbox.c; msgspool-spool(5), Inbound messages): each
        in inbox/ID.json, and noted in inbox-new/ID.json for msgspoold
        to hand over, fast (no sync).  Their ids."""
        inbox, notes = self.spool / "inbox", self.spool / "inbox-new"
        inbox.mkdir(exist_ok=True)
        notes.mkdir(exist_ok=True)
        at = rfc3339(time.time())
        ids = []
        for i in range(n):
            mid = ulid()
            doc = {"version": 1, "id": mid, "direction": "inbound",
                   "client": client, "channel": "sms",
                   "from": "+49151%08d" % i, "to": to,
                   "text": "Yes, Tuesday at 10 is fine (%d)" % i,
                   "type": "text", "receivedAt": at, "provider": provider,
                   "providerMessageId": "SM%032x" % random.getrandbits(128),
                   "media": []}
            (inbox / (mid + ".json")).write_text(json.dumps(doc))
            (notes / (mid + ".json")).write_text(
                json.dumps({"version": 1, "id": mid}))
            ids.append(mid)
        return ids

    def queue_sms(self, n, state="new", due=None):
        """Write n SMS spool files as sms-deliver does, fast."""
        now = time.time()
        tmp = self.spool / "tmp"
        for i in range(n):
            mid = ulid()
            doc = {"version": 1, "id": mid, "channel": "sms", "client": CLIENT,
                   "created": rfc3339(now), "attempts": 0,
                   "nextAttempt": rfc3339(due or now), "lastError": None,
                   "providerReply": None,
                   "message": {"to": "+49151%08d" % i, "body": "bench %d" % i}}
            p = tmp / (mid + ".json")
            p.write_text(json.dumps(doc))
            if due:
                os.utime(p, (due, due))
            os.rename(p, self.spool / state / (mid + ".json"))

    def queue_email(self, n):
        now = time.time()
        tmp = self.spool / "tmp"
        for i in range(n):
            mid = ulid()
            html = "<p>Hello user %d, your account is ready.</p>" % i
            doc = {"version": 1, "id": mid, "channel": "email", "client": CLIENT,
                   "created": rfc3339(now), "attempts": 0,
                   "nextAttempt": rfc3339(now), "lastError": None,
                   "providerReply": None,
                   "message": {"from": "hello@example.com",
                               "to": "user%d@example.net" % i,
                               "subject": "Welcome %d" % i, "html": html,
                               "text": "Hello user %d, your account is ready.\n" % i,
                               "attachments": []}}
            p = tmp / (mid + ".json")
            p.write_text(json.dumps(doc))
            os.rename(p, self.spool / "new" / (mid + ".json"))


class Lighttpd:
    """lighttpd over the built CGI programs plus the no-op CGI."""

    def __init__(self, inst, cgi_dir, noop):
        self.run = inst.base / "run"
        (self.run / "empty").mkdir(parents=True, exist_ok=True)
        # The programs, linked afresh when another server of inst (an
        # earlier one, stopped) linked them.
        self.cgi = inst.base / "cgi-bin"
        self.cgi.mkdir(exist_ok=True)
        for old in os.listdir(self.cgi):
            os.unlink(self.cgi / old)
        for prog in os.listdir(cgi_dir):
            p = Path(cgi_dir) / prog
            if os.access(p, os.X_OK) and p.is_file() and "." not in prog:
                os.symlink(p, self.cgi / prog)
        os.symlink(noop, self.cgi / "noop")
        os.symlink(BIN / "naive", self.cgi / "naive")
        self.conf = self.run / "bench-lighttpd.conf"
        # The shipped config, plus routes for the baselines.
        self.conf.write_text('include "%s"\nurl.rewrite-once += ( "^/noop$" => "/cgi-bin/noop", '
                             '"^/naive$" => "/cgi-bin/naive" )\n'
                             'server.max-connections = 4096\n' % (ROOT / "conf" / "lighttpd.conf"))
        self.port = free_port()
        env = dict(os.environ, MSGSPOOL_CGI_DIR=str(self.cgi), MSGSPOOL_CONFIG=str(inst.conf),
                   MSGSPOOL_PORT=str(self.port), MSGSPOOL_RUNDIR=str(self.run))
        self.proc = subprocess.Popen(["lighttpd", "-D", "-f", str(self.conf)], env=env)
        if not listening(self.port):
            raise RuntimeError("lighttpd did not start")

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class LighttpdFcgi:
    """lighttpd with the shipped conf/lighttpd-fcgi.conf, starting the
    FastCGI responder named msgspool-fcgi in sbin_dir with `workers`
    workers (MSGSPOOL_FCGI_WORKERS): msgspool-fcgi, or the no-op responder
    linked under that name."""

    def __init__(self, inst, sbin_dir, workers, name="fcgi"):
        self.run = inst.base / ("run-%s-%d" % (name, workers))
        (self.run / "empty").mkdir(parents=True, exist_ok=True)
        self.conf = self.run / "bench-lighttpd-fcgi.conf"
        self.conf.write_text('include "%s"\nserver.max-connections = 4096\n'
                             % (ROOT / "conf" / "lighttpd-fcgi.conf"))
        self.port = free_port()
        env = dict(os.environ, MSGSPOOL_SBIN_DIR=str(sbin_dir),
                   MSGSPOOL_CONFIG=str(inst.conf), MSGSPOOL_PORT=str(self.port),
                   MSGSPOOL_RUNDIR=str(self.run),
                   MSGSPOOL_FCGI_WORKERS=str(workers))
        self.out = open(self.run / "lighttpd.out", "w")
        self.proc = subprocess.Popen(["lighttpd", "-D", "-f", str(self.conf)], env=env,
                                     stdout=self.out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if not listening(self.port):
            self.stop()
            raise RuntimeError("lighttpd (FastCGI) did not start")

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def workers_rss_kib(self):
        """The summed VmRSS of the responder's processes (lighttpd's
        children and theirs), in KiB."""
        total = 0
        for pid in _descendants(self.proc.pid):
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                pass
        return total

    def stop(self):
        # lighttpd, and the responder it started (its own session).
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.out.close()


def _descendants(pid):
    """pid's children, grandchildren and so on (from /proc)."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out

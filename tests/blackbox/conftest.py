"""
Black-box harness for msgspool: a throw-away instance (config, keys file,
templates, spool) in a temporary directory, a real web server on 127.0.0.1
running the CGI programs against it, and helpers to drive the daemon and
the CLI and to look at the spool.

Run from the repository root:

    /usr/bin/python3 -m pytest -q tests/blackbox
    MSGSPOOL_SERVER=nginx /usr/bin/python3 -m pytest -q tests/blackbox

Environment:
    MSGSPOOL_SERVER    the web server: lighttpd (default), nginx (with
                       fcgiwrap), apache or busybox running the CGI
                       programs, or lighttpd-fcgi or nginx-fcgi in front of
                       msgspool-fcgi (FastCGI mode); each runs with its own
                       config in a temporary directory, made from the
                       shipped one in conf/
    MSGSPOOL_CGI_DIR   directory of the CGI programs (default cgi-bin/,
                       or $O/cgi-bin/ when O is set, e.g. O=build/asan/)
    MSGSPOOL_BIN_DIR   directory holding msgspoold and msgspool
                       (default spooler/, or $O/spooler/)
    MSGSPOOL_FCGI_DIR  directory holding msgspool-fcgi (default fcgi/, or
                       $O/fcgi/)

busybox httpd cannot map the routes to programs (see
conf/busybox-httpd.conf): there each program is served at /cgi-bin/PROGRAM,
and Server.url() and Server.raw() send a request for a route there.
"""

import datetime
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
_O = os.environ.get("O", "")
CGI_DIR = Path(os.environ.get("MSGSPOOL_CGI_DIR") or (ROOT / _O / "cgi-bin"))
BIN_DIR = Path(os.environ.get("MSGSPOOL_BIN_DIR") or (ROOT / _O / "spooler"))
FCGI_DIR = Path(os.environ.get("MSGSPOOL_FCGI_DIR") or (ROOT / _O / "fcgi"))
CONF_DIR = ROOT / "conf"
LIGHTTPD_CONF = CONF_DIR / "lighttpd.conf"


def _which(name, fallback):
    return (shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
            or fallback)


LIGHTTPD = _which("lighttpd", "/usr/sbin/lighttpd")
NGINX = _which("nginx", "/usr/sbin/nginx")
FCGIWRAP = _which("fcgiwrap", "/usr/sbin/fcgiwrap")
APACHE = _which("apache2", "/usr/sbin/apache2")
BUSYBOX = _which("busybox", "/bin/busybox")
UNSHARE = _which("unshare", "/usr/bin/unshare")
SPAWN_FCGI = _which("spawn-fcgi", "/usr/bin/spawn-fcgi")

# The web server of this run (MSGSPOOL_SERVER) and the binary it needs.
SERVERS = {"lighttpd": LIGHTTPD, "nginx": NGINX, "apache": APACHE,
           "busybox": BUSYBOX, "lighttpd-fcgi": LIGHTTPD,
           "nginx-fcgi": NGINX}
SERVER = (os.environ.get("MSGSPOOL_SERVER") or "lighttpd").strip().lower()
# The web server in front (what the tests of its own ways look at), and
# whether msgspool-fcgi serves the routes (FastCGI mode) instead of the
# CGI programs.
FASTCGI = SERVER.endswith("-fcgi")
FRONT = SERVER[:-len("-fcgi")] if FASTCGI else SERVER

# conf/openapi.yaml: route -> CGI program (x-cgi-program).
ROUTES = {
    "/ping": "ping",
    "/templates": "templates",
    "/ott/v1/deliver": "ott-deliver",
    "/sms/v1/deliver": "sms-deliver",
    "/sms/v1/deliver/batch": "sms-batch",
    "/voice/v1/deliver": "voice-deliver",
    "/deliver": "email-deliver",
    "/email/v1/deliver": "email-deliver",
    "/email/v1/attachments": "attachments",
}
# Routes with a parameter: a prefix and the program that serves it.
PREFIX_ROUTES = {
    "/messages/": "messages",
    "/receipts/": "receipts",
}
PROGRAMS = sorted(set(ROUTES.values()) | set(PREFIX_ROUTES.values()))

STATES = ("tmp", "new", "deferred", "cur", "sent", "failed")
# A ULID: 26 characters of Crockford base32 (no I, L, O, U).
ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PROBLEM_PREFIX = "urn:msgspool:problem:"
WWW_AUTHENTICATE = 'ApiKey header="X-API-KEY"'
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")

HTTP_TIMEOUT = 15       # seconds for one request
START_TIMEOUT = 30      # seconds for the web server to answer /ping
START_TRIES = 5         # web server starts tried before giving up
PROC_TIMEOUT = 60       # seconds for one run of the daemon or the CLI

RECIPIENT = "+4915112345678"

# Clients of every instance: name -> scopes field of the keys file.
CLIENTS = {
    "acme": "*",
    "mailer": "email",
    "smsonly": "sms",
    "gone": "*:disabled",
    "other": "sms,ott,email,voice",
    "intl": "email",
}

# acme's email templates: id -> (Name, Subject, From, Tags, Created).
# Created None: the header is left out and the file's mtime applies.
ACME_TEMPLATES = {
    "welcome": ("Welcome", "Welcome, {{first_name}}!", "hello@acme.example",
                "onboarding,welcome", "2024-05-01T09:00:00Z"),
    "invoice": ("Monthly invoice", "Your invoice {{number}}",
                "billing@acme.example", "billing", "2023-01-15T12:30:00Z"),
    "reset-pw.v2": ("Password reset", "Reset your password",
                    "security@acme.example", "", "2025-02-20T08:00:00Z"),
    "legacy_1": ("Legacy", "Old news", "old@acme.example", "legacy", None),
}
LEGACY_MTIME = "2022-06-01T00:00:00Z"
INTL_NAME = "Grüße – € 😀"
OTHER_TEMPLATES = {
    "secret": ("Other's template", "Private", "ceo@other.example", "internal",
               "2024-01-01T00:00:00Z"),
}


# --------------------------------------------------------------- time

def parse_time(s):
    """An RFC 3339 / ISO 8601 string as an aware datetime."""
    assert isinstance(s, str), f"not a time string: {s!r}"
    t = s.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.datetime.fromisoformat(t)
    assert dt.tzinfo is not None, f"time without a zone: {s!r}"
    return dt


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(dt):
    """An aware datetime as 2026-11-23T10:00:00Z (whole seconds)."""
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def in_future(seconds):
    return rfc3339(utcnow() + datetime.timedelta(seconds=seconds))


def id_time(msgid):
    """The creation time a ULID encodes (first 10 characters, ms)."""
    ms = 0
    for c in msgid[:10]:
        ms = ms * 32 + CROCKFORD.index(c)
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


# ----------------------------------------------------------- instance

def _sha256(s):
    return hashlib.sha256(s.encode()).hexdigest()


def _template_text(name, subject, frm, tags, created, body):
    lines = [f"Name: {name}", f"Subject: {subject}", f"From: {frm}",
             f"Tags: {tags}"]
    if created is not None:
        lines.append(f"Created: {created}")
    return "\n".join(lines) + "\n\n" + body


class Instance:
    """One msgspool installation in a directory: config, keys, templates,
    spool.  keys maps a client name to its (plain) API key."""

    def __init__(self, base):
        self.base = Path(base)
        self.spool = self.base / "spool"
        self.keys_file = self.base / "keys"
        self.templates = self.base / "templates"
        self.conf = self.base / "msgspool.conf"
        self.base.mkdir(parents=True, exist_ok=True)
        self.keys = {c: secrets.token_urlsafe(32) for c in CLIENTS}
        self.write_conf()
        self.write_keys()
        self.write_templates()
        self.reset()

    # -- setup
    def write_conf(self, extra=""):
        self.conf.write_text(
            "# msgspool black-box test instance\n"
            f"spool = {self.spool}\n"
            f"keys = {self.keys_file}\n"
            f"templates = {self.templates}\n" + extra)

    def write_keys(self):
        lines = ["# client:sha256(key):scopes[:disabled]"]
        for c, scopes in CLIENTS.items():
            lines.append(f"{c}:{_sha256(self.keys[c])}:{scopes}")
        self.keys_file.write_text("\n".join(lines) + "\n")
        self.keys_file.chmod(0o600)

    def write_templates(self):
        body = ("<html><body><p>Hello {{first_name}},</p>"
                "<p>welcome to ACME &amp; friends.</p></body></html>\n")
        for client, tmpls in (("acme", ACME_TEMPLATES),
                              ("other", OTHER_TEMPLATES)):
            d = self.templates / client / "email"
            d.mkdir(parents=True, exist_ok=True)
            for tid, (name, subj, frm, tags, created) in tmpls.items():
                p = d / f"{tid}.tmpl"
                p.write_text(_template_text(name, subj, frm, tags, created,
                                            body))
                if created is None:
                    t = parse_time(LEGACY_MTIME).timestamp()
                    os.utime(p, (t, t))
        acme = self.templates / "acme"
        # Not email templates of acme: none of these may be listed.
        (acme / "email" / ".hidden.tmpl").write_text(_template_text(
            "Hidden", "x", "x@acme.example", "", "2020-01-01T00:00:00Z", "x"))
        (acme / "email" / "notes.txt").write_text("not a template\n")
        # An id no templateId could name ([A-Za-z0-9_.-]{1,128}).
        (acme / "email" / "bad id.tmpl").write_text(_template_text(
            "Bad id", "x", "x@acme.example", "", "2020-01-01T00:00:00Z", "x"))
        (acme / "ott").mkdir(exist_ok=True)
        (acme / "ott" / "otp.tmpl").write_text(
            "Name: OTP\nParameters: 1\nLanguage: en\n"
            "Provider-Template: otp_code\n\nYour code is {{1}}\n")
        # intl: one template in UTF-8, one written in Latin-1 by mistake.
        d = self.templates / "intl" / "email"
        d.mkdir(parents=True, exist_ok=True)
        (d / "utf8.tmpl").write_text(_template_text(
            INTL_NAME, "Grüße, {{name}}", "post@intl.example", "ä,ö",
            "2024-02-02T02:02:02Z", body), encoding="utf-8")
        (d / "latin1.tmpl").write_bytes(_template_text(
            "Gr\u00fc\u00dfe latin", "Caf\u00e9", "post@intl.example", "",
            "2024-03-03T03:03:03Z", "<p>caf\u00e9</p>").encode("latin-1"))
        # smsonly has an empty email directory, mailer none at all.
        (self.templates / "smsonly" / "email").mkdir(parents=True,
                                                     exist_ok=True)

    def reset(self):
        """Empty the spool (every state and the outbox), recreating
        missing subdirectories, and restore the config and keys files."""
        self.spool.mkdir(exist_ok=True)
        # The states, the outbox and the areas beside them (not uploads/:
        # an upload outlives the messages that use it).
        for sub in list(STATES) + ["outbox", "blobs", "receipts", "index",
                                   "events", "events-failed", "rates", "idempotency",
                                   "status"]:
            d = self.spool / sub
            if d.is_dir() and not d.is_symlink():
                shutil.rmtree(d)
            elif d.exists() or d.is_symlink():
                d.unlink()
        for sub in STATES:
            (self.spool / sub).mkdir(mode=0o700)
        self.write_conf()
        self.write_keys()

    # -- spool inspection
    def files(self, state):
        d = self.spool / state
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir())

    def ids(self, state):
        return [n[:-5] for n in self.files(state) if n.endswith(".json")]

    def counts(self):
        return {s: len(self.files(s)) for s in STATES}

    def where(self, msgid):
        """The states holding a file whose name starts with msgid."""
        return [s for s in STATES
                if any(n.startswith(msgid) for n in self.files(s))]

    def path(self, state, msgid):
        return self.spool / state / f"{msgid}.json"

    def load(self, state, msgid):
        return json.loads(self.path(state, msgid).read_bytes())

    def outbox(self):
        d = self.spool / "outbox"
        if not d.is_dir():
            return []
        return sorted(p for p in d.iterdir() if p.is_file())

    def outbox_for(self, msgid):
        return [p for p in self.outbox() if p.name.startswith(msgid)]

    # -- programs
    def _run(self, argv, env=None, timeout=PROC_TIMEOUT, input=None):
        e = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
        if env:
            e.update(env)
        prog = Path(argv[0])
        if not prog.exists():
            pytest.fail(f"not built: {prog} (run `make build`)")
        try:
            cp = subprocess.run([str(a) for a in argv], env=e, input=input,
                                capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{argv} did not finish in {timeout}s: {exc}")
        cp.out = cp.stdout.decode("utf-8", "replace")
        cp.err = cp.stderr.decode("utf-8", "replace")
        for mark in SANITIZER_MARKS:
            assert mark not in cp.err, f"sanitizer report from {argv}:\n{cp.err}"
        return cp

    def cli(self, *args, config=True, env=None):
        argv = [BIN_DIR / "msgspool"]
        if config:
            argv += ["-c", self.conf]
        return self._run(argv + list(args), env=env)

    def daemon_once(self, check=True):
        cp = self._run([BIN_DIR / "msgspoold", "-c", self.conf, "--once"])
        if check:
            assert cp.returncode == 0, (
                f"msgspoold --once exited {cp.returncode}\n{cp.err}")
        return cp


# ------------------------------------------------------------- server

def _reserve_port():
    """(socket, port): a free 127.0.0.1 port, held until the web server
    has it.  A port picked free and released at once can be taken by
    anything before the server binds it (a client's connect, another
    suite's bind(0)), and a server that then fails to bind it may leave
    the port answered by someone else.  Held by a socket bound with
    SO_REUSEADDR and not listening, the kernel gives it to no other
    socket, while a server that sets SO_REUSEADDR itself (lighttpd,
    nginx, Apache and busybox httpd all do) can still bind and listen
    on it.  Close the socket once the server listens."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
    except OSError:
        s.close()
        raise
    return s, s.getsockname()[1]


def _listening_sessions(port):
    """The session ids of the processes listening on 127.0.0.1:port (or
    any address), from /proc; None when /proc cannot tell."""
    inodes = set()
    try:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    next(f)
                    for line in f:
                        fields = line.split()
                        if fields[3] == "0A" and \
                                int(fields[1].rsplit(":", 1)[1], 16) == port:
                            inodes.add("socket:[%s]" % fields[9])
            except FileNotFoundError:
                continue
        sessions = set()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
                if not any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes
                           for fd in fds):
                    continue
                with open(f"/proc/{pid}/stat") as f:
                    # pid (comm) state ppid pgrp session ...
                    sessions.add(int(f.read().rsplit(")", 1)[1].split()[3]))
            except (OSError, ValueError, IndexError):
                continue
        return sessions
    except OSError:
        return None


def _user_name():
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return "nobody"


_USERNS_OK = None


def _userns_ok():
    """Whether unshare can make a user namespace here (apache as root)."""
    global _USERNS_OK
    if _USERNS_OK is None:
        try:
            _USERNS_OK = subprocess.run(
                [UNSHARE, "--user", "--map-user=65534", "--map-group=65534",
                 "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _USERNS_OK = False
    return _USERNS_OK


class Server:
    """A web server serving the CGI programs for one Instance on a free
    127.0.0.1 port: kind is lighttpd, nginx (with fcgiwrap), apache or
    busybox (default: MSGSPOOL_SERVER).  Its config is made in rundir
    from the one shipped in conf/, the way an operator would."""

    # Per kind: the files of rundir worth showing when a test fails, and
    # the one the programs' stderr goes to.
    LOGS = {
        "lighttpd": ("lighttpd.out", "lighttpd-error.log", "cgi-stderr.log"),
        "nginx": ("nginx.out", "nginx-error.log", "cgi-stderr.log"),
        "apache": ("apache2.out", "apache2-error.log"),
        "busybox": ("cgi-stderr.log",),
        # msgspool-fcgi's stderr: lighttpd's own, as lighttpd starts it.
        "lighttpd-fcgi": ("lighttpd.out", "lighttpd-error.log"),
        "nginx-fcgi": ("nginx.out", "nginx-error.log", "fcgi-stderr.log"),
    }
    CGI_STDERR = {"lighttpd": "cgi-stderr.log", "nginx": "cgi-stderr.log",
                  "apache": "apache2-error.log",
                  "busybox": "cgi-stderr.log",
                  "lighttpd-fcgi": "lighttpd.out",
                  "nginx-fcgi": "fcgi-stderr.log"}

    def __init__(self, inst, rundir, kind=None):
        self.kind = kind or SERVER
        if self.kind not in SERVERS:
            raise ValueError(f"unknown web server {self.kind!r}; "
                             f"one of {', '.join(SERVERS)}")
        self.inst = inst
        self.rundir = Path(rundir)
        (self.rundir / "empty").mkdir(parents=True, exist_ok=True)
        self.procs = []
        self.proc = None
        self.port = None
        self.session = requests.Session()
        self.session.trust_env = False          # no proxies, no netrc
        self._start()

    # -- starting and stopping
    def _env(self, port, config=True):
        env = dict(os.environ, MSGSPOOL_CGI_DIR=str(CGI_DIR),
                   MSGSPOOL_SBIN_DIR=str(FCGI_DIR),
                   MSGSPOOL_PORT=str(port), MSGSPOOL_RUNDIR=str(self.rundir))
        env.pop("MSGSPOOL_CONFIG", None)
        env.pop("MSGSPOOL_FCGI_WORKERS", None)
        if config:
            env["MSGSPOOL_CONFIG"] = str(self.inst.conf)
        return env

    def _spawn(self, argv, env, log):
        out = open(self.rundir / log, "ab")
        try:
            proc = subprocess.Popen(
                [str(a) for a in argv], env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=out, start_new_session=True)
        finally:
            out.close()
        self.procs.append(proc)
        return proc

    def _render(self, name, port):
        """conf/NAME with its @PLACEHOLDERS@ filled in, written to rundir."""
        text = (CONF_DIR / name).read_text()
        for k, v in (("CGI_DIR", CGI_DIR), ("CONFIG", self.inst.conf),
                     ("PORT", port), ("RUNDIR", self.rundir),
                     ("USER", _user_name()),
                     ("SOCKET", self.rundir / "msgspool-fcgi.sock")):
            text = text.replace(f"@{k}@", str(v))
        left = re.findall(r"@[A-Z_]+@", text)
        assert not left, f"conf/{name}: unknown placeholders {left}"
        path = self.rundir / name
        path.write_text(text)
        return path

    def _launch_lighttpd(self, port):
        self._spawn([LIGHTTPD, "-D", "-f", LIGHTTPD_CONF], self._env(port),
                    "lighttpd.out")

    def _launch_nginx(self, port):
        conf = self._render("nginx.conf", port)
        sock = self.rundir / "fcgiwrap.sock"
        if sock.exists() or sock.is_symlink():
            sock.unlink()
        # fcgiwrap's own environment has no MSGSPOOL_CONFIG: the
        # programs must get it from nginx's fastcgi_param.
        argv = [FCGIWRAP, "-c", "8", "-s", f"unix:{sock}"]
        for p in PROGRAMS:
            argv += ["-p", CGI_DIR / p]
        wrap = self._spawn(argv, self._env(port, config=False),
                           "cgi-stderr.log")
        deadline = time.monotonic() + START_TIMEOUT
        while not sock.exists() and wrap.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        self._spawn([NGINX, "-p", f"{self.rundir}/", "-c", conf,
                     "-e", self.rundir / "nginx-error.log"],
                    self._env(port, config=False), "nginx.out")

    def _launch_lighttpd_fcgi(self, port):
        # lighttpd starts msgspool-fcgi (bin-path) and restarts it.
        self._spawn([LIGHTTPD, "-D", "-f", CONF_DIR / "lighttpd-fcgi.conf"],
                    self._env(port), "lighttpd.out")

    def _launch_nginx_fcgi(self, port):
        # As README "CGI or FastCGI" shows for a host without systemd:
        # spawn-fcgi makes the socket and runs msgspool-fcgi on it (-n:
        # in the foreground, so that it is ours to stop), its config by
        # -c; nginx passes no MSGSPOOL_CONFIG.
        conf = self._render("nginx-fcgi.conf", port)
        sock = self.rundir / "msgspool-fcgi.sock"
        if sock.exists() or sock.is_symlink():
            sock.unlink()
        fcgi = self._spawn([SPAWN_FCGI, "-n", "-s", sock, "-M", "0600",
                            "--", FCGI_DIR / "msgspool-fcgi", "-c",
                            self.inst.conf],
                           self._env(port, config=False), "fcgi-stderr.log")
        deadline = time.monotonic() + START_TIMEOUT
        while not sock.exists() and fcgi.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        self._spawn([NGINX, "-p", f"{self.rundir}/", "-c", conf,
                     "-e", self.rundir / "nginx-error.log"],
                    self._env(port, config=False), "nginx.out")

    def _launch_apache(self, port):
        argv = [APACHE, "-DFOREGROUND", "-f", CONF_DIR / "apache2.conf"]
        if os.geteuid() == 0:
            # Apache never runs CGI programs as root: it would switch to
            # User www-data, which cannot read this root-owned instance.
            # In a user namespace where an unprivileged uid is our own
            # uid it runs, and its programs run, as the files' owner.
            if not _userns_ok():
                pytest.skip("apache: started as root, Apache runs CGI "
                            "programs only as its User, and no user "
                            "namespace can be made here (unshare --user "
                            "failed); run the suite as a non-root user")
            argv = [UNSHARE, "--user", "--map-user=65534",
                    "--map-group=65534"] + argv
        self._spawn(argv, self._env(port), "apache2.out")

    def _launch_busybox(self, port):
        www = self.rundir / "www"
        (www / "cgi-bin").mkdir(parents=True, exist_ok=True)
        for p in PROGRAMS:
            link = www / "cgi-bin" / p
            if not link.is_symlink():
                link.symlink_to(CGI_DIR / p)
        conf = self._render("busybox-httpd.conf", port)
        self._spawn([BUSYBOX, "httpd", "-f", "-p", f"127.0.0.1:{port}",
                     "-h", www, "-c", conf], self._env(port),
                    "cgi-stderr.log")

    def _start(self):
        binary = SERVERS[self.kind]
        if not os.access(binary, os.X_OK):
            pytest.fail(f"{self.kind}: {binary} is not installed "
                        "(make deps-test)")
        if self.kind.endswith("-fcgi") and \
                not os.access(FCGI_DIR / "msgspool-fcgi", os.X_OK):
            pytest.fail(f"{self.kind}: {FCGI_DIR}/msgspool-fcgi is not "
                        "built (make)")
        last = ""
        for _ in range(START_TRIES):
            hold, port = _reserve_port()
            try:
                getattr(self, "_launch_" + self.kind.replace("-", "_"))(
                    port)
                self.proc = self.procs[-1]
                why = self._wait_ready(port)
            finally:
                hold.close()
            if why is None:
                self.port = port
                return
            self._stop_procs()
            last = f"port {port}: {why}\n" + self.logs()
        raise RuntimeError(f"{self.kind} did not start in {START_TRIES} "
                           f"tries; the last:\n" + last)

    def _wait_ready(self, port):
        """None once our server listens on port and answers GET /ping
        through a program; else why not (it exited, someone else has the
        port, no answer within START_TIMEOUT)."""
        ours = {p.pid for p in self.procs}       # each its own session
        url = f"http://127.0.0.1:{port}{self.route('/ping')}"
        deadline = time.monotonic() + START_TIMEOUT
        owner_ok = False
        why = "no answer"
        while time.monotonic() < deadline:
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead:
                return f"{dead} exited"
            if not owner_ok:
                sessions = _listening_sessions(port)
                if sessions is None or sessions & ours:
                    owner_ok = True
                elif sessions:
                    return f"port taken by sessions {sorted(sessions)}"
            if owner_ok:
                try:
                    with requests.Session() as s:
                        s.trust_env = False
                        r = s.get(url, timeout=5)
                    if r.status_code == 200:
                        return None
                    why = f"GET /ping: {r.status_code}"
                except requests.RequestException as e:
                    why = f"GET /ping: {e}"
            time.sleep(0.05)
        return why

    @staticmethod
    def _signal_group(proc, sig):
        # Each server runs in its own session (start_new_session): its
        # process group holds the workers it forked too (fcgiwrap -c N,
        # Apache's children), which outlive a signal to the parent alone.
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _stop_procs(self):
        # The front server first, then what it talks to (fcgiwrap).
        for proc in reversed(self.procs):
            self._signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            # Whatever of the group is left (a worker that ignored TERM).
            self._signal_group(proc, signal.SIGKILL)
            if proc.poll() is None:
                proc.wait(5)
        self.procs = []
        self.proc = None

    def stop(self):
        self.session.close()
        self._stop_procs()

    def _read(self, name):
        p = self.rundir / name
        return p.read_text("utf-8", "replace") if p.exists() else ""

    def cgi_stderr(self):
        """What the programs wrote to stderr (with whatever else the
        server writes to the same file)."""
        return self._read(self.CGI_STDERR[self.kind])

    def logs(self):
        return f"=== {self.kind} ===\n" + "".join(
            f"--- {n} ---\n{self._read(n)[-6000:]}\n"
            for n in self.LOGS[self.kind])

    def route(self, path):
        """Where this server serves path (which may carry a query): the
        path itself, but /cgi-bin/PROGRAM under busybox."""
        if self.kind != "busybox":
            return path
        p, sep, query = path.partition("?")
        prog = ROUTES.get(p)
        if prog:
            return f"/cgi-bin/{prog}{sep}{query}"
        for prefix, prog in PREFIX_ROUTES.items():
            if p.startswith(prefix):
                return f"/cgi-bin/{prog}/{p[len(prefix):]}{sep}{query}"
        return path

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{self.route(path)}"

    # -- requests
    def request(self, method, path, client="acme", api_key=None,
                headers=None, timeout=HTTP_TIMEOUT, **kw):
        """client names a key of the instance (None: no X-API-KEY);
        api_key, when not None, is sent as it is instead."""
        h = dict(headers or {})
        if api_key is not None:
            h["X-API-KEY"] = api_key
        elif client is not None:
            h["X-API-KEY"] = self.inst.keys[client]
        r = self.session.request(method, self.url(path), headers=h,
                                 timeout=timeout, **kw)
        # Never reuse a connection: a server closes an idle one after a
        # few seconds (lighttpd: 5), and a request sent on it just then
        # fails with RemoteDisconnected, at random, when a test paused
        # (a daemon run) between two requests.  busybox httpd closes
        # every connection anyway, without saying so.
        self.session.close()
        return r

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post_json(self, path, obj, content_type="application/json", **kw):
        data = json.dumps(obj).encode()
        return self.post_raw(path, data, content_type=content_type, **kw)

    def post_raw(self, path, data, content_type="application/json",
                 headers=None, **kw):
        h = dict(headers or {})
        if content_type is not None:
            h["Content-Type"] = content_type
        r = self.request("POST", path, data=data, headers=h, **kw)
        if content_type is None:
            # requests adds no Content-Type for bytes; make sure.
            assert "Content-Type" not in r.request.headers
        return r

    def sms(self, client="acme", **fields):
        body = {"recipient": RECIPIENT, "messageBody": "hi"}
        body.update(fields)
        body = {k: v for k, v in body.items() if v is not _ABSENT}
        return self.post_json("/sms/v1/deliver", body, client=client)

    def raw(self, data, timeout=HTTP_TIMEOUT):
        """Send raw bytes on a new connection; returns (status, headers
        dict with lower-case names, body bytes).  The request line's
        target goes where this server serves it (route())."""
        line, crlf, rest = data.partition(b"\r\n")
        parts = line.split(b" ")
        if len(parts) == 3:
            parts[1] = self.route(parts[1].decode("latin-1")).encode(
                "latin-1")
            data = b" ".join(parts) + crlf + rest
        with socket.create_connection(("127.0.0.1", self.port),
                                      timeout=timeout) as s:
            s.sendall(data)
            buf = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return status, hdrs, body


class _Absent:
    def __repr__(self):
        return "ABSENT"


_ABSENT = _Absent()
ABSENT = _ABSENT        # srv.sms(recipient=ABSENT) leaves the field out


# ------------------------------------------------------------ asserts

def assert_problem(r, status, path=None):
    """r is an RFC 9457 problem with this status; when path is given,
    errors maps that JSON path to a non-empty list of strings."""
    assert r.status_code == status, (
        f"expected {status}, got {r.status_code}: {r.text[:500]}")
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip().lower() == "application/problem+json", (
        f"Content-Type {ctype!r}, body {r.text[:300]}")
    p = r.json()
    assert isinstance(p, dict), p
    assert isinstance(p.get("type"), str) and \
        p["type"].startswith(PROBLEM_PREFIX), p
    assert isinstance(p.get("title"), str) and p["title"], p
    assert p.get("status") == status and type(p["status"]) is int, p
    assert isinstance(p.get("detail"), str), p
    if "errors" in p and p["errors"] is not None:
        assert isinstance(p["errors"], dict), p
        for k, v in p["errors"].items():
            assert isinstance(v, list) and v, p
            assert all(isinstance(m, str) and m for m in v), p
    if path is not None:
        errs = p.get("errors") or {}
        assert path in errs, f"no errors[{path!r}] in {p}"
    return p


def assert_unauthorized(r):
    p = assert_problem(r, 401)
    assert r.headers.get("WWW-Authenticate") == WWW_AUTHENTICATE, r.headers
    return p


def assert_allow(r, allow):
    assert_problem(r, 405)
    got = [m.strip() for m in r.headers.get("Allow", "").split(",")]
    assert got == [allow], f"Allow: {r.headers.get('Allow')!r}"


def assert_nothing_queued(inst):
    """No message anywhere a request could have left one."""
    for s in ("tmp", "new", "deferred"):
        assert inst.files(s) == [], f"{s}/ holds {inst.files(s)}"


def assert_spool_file(inst, state, msgid, client="acme", to=RECIPIENT,
                      body=None):
    """The spool file of msgid in state: 0640 at most, JSON, the documented
    fields.  Returns the document."""
    p = inst.path(state, msgid)
    assert p.is_file(), f"no {state}/{msgid}.json; spool {inst.counts()}"
    mode = stat.S_IMODE(p.stat().st_mode)
    # The writer's, readable by its group at most (msgspool-spool(5)).
    assert mode & 0o7137 == 0 and mode & 0o600 == 0o600, \
        f"{p} has mode {oct(mode)}"
    doc = json.loads(p.read_bytes())
    assert isinstance(doc, dict)
    for k in ("version", "id", "channel", "client", "created", "attempts",
              "nextAttempt", "lastError", "providerReply", "message"):
        assert k in doc, f"{k!r} missing from {doc}"
    assert doc["version"] == 1
    assert doc["id"] == msgid
    assert doc["channel"] == "sms"
    assert doc["client"] == client
    assert isinstance(doc["attempts"], int)
    created = parse_time(doc["created"])
    assert abs((created - id_time(msgid)).total_seconds()) < 5, doc
    if state in ("new", "deferred") or doc["nextAttempt"] is not None:
        parse_time(doc["nextAttempt"])      # sent/ may say null
    assert isinstance(doc["message"], dict)
    assert doc["message"].get("to") == to, doc["message"]
    if body is not None:
        assert doc["message"].get("body") == body, doc["message"]
    return doc


def assert_id(msgid):
    assert isinstance(msgid, str) and ID_RE.match(msgid), \
        f"not a ULID: {msgid!r}"
    drift = abs((id_time(msgid) - utcnow()).total_seconds())
    assert drift < 120, f"id {msgid} encodes a time {drift:.0f}s away"


# ----------------------------------------------------------- fixtures

def pytest_configure(config):
    if SERVER not in SERVERS:
        raise pytest.UsageError(
            f"MSGSPOOL_SERVER={SERVER!r}: one of {', '.join(SERVERS)}")


def pytest_report_header(config):
    need = [CGI_DIR / p for p in ("ping", "templates", "sms-deliver",
                                  "sms-batch")]
    need += [BIN_DIR / "msgspoold", BIN_DIR / "msgspool"]
    missing = [str(p) for p in need if not os.access(p, os.X_OK)]
    if FASTCGI:
        need.append(FCGI_DIR / "msgspool-fcgi")
    lines = [f"msgspool: CGI {CGI_DIR}, bin {BIN_DIR}, "
             f"server {SERVER} {SERVERS.get(SERVER)}"]
    if missing:
        lines.append("msgspool: NOT BUILT: " + ", ".join(missing))
    return lines


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture(scope="session")
def instance(tmp_path_factory):
    return Instance(tmp_path_factory.mktemp("instance"))


@pytest.fixture(scope="session")
def _server(instance, tmp_path_factory):
    s = Server(instance, tmp_path_factory.mktemp("run"))
    yield s
    s.stop()


def _check_logs(request, server, start):
    """Print the logs when the test failed; fail it on a sanitizer
    report in the CGI stderr log written since start."""
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(server.logs())
    new = server.cgi_stderr()[start:]
    for mark in SANITIZER_MARKS:
        if mark in new:
            pytest.fail(f"sanitizer report in cgi-stderr.log:\n{new[-4000:]}")


@pytest.fixture
def srv(request, instance, _server):
    """The shared server with a clean spool and the original keys;
    srv.inst is its Instance."""
    instance.reset()
    start = len(_server.cgi_stderr())
    yield _server
    _check_logs(request, _server, start)


@pytest.fixture
def private(request, tmp_path):
    """A factory: a fresh Instance with its own web server, for tests that
    break the spool or change the keys.  Returns (server, instance)."""
    made = []

    def make():
        n = len(made)
        inst = Instance(tmp_path / f"inst{n}")
        s = Server(inst, tmp_path / f"run{n}")
        made.append(s)
        return s, inst

    yield make
    for s in made:
        s.stop()
        _check_logs(request, s, 0)

"""
Black-box harness for msgspool: a throw-away instance (config, keys file,
templates, spool) in a temporary directory, a real lighttpd on 127.0.0.1
running the CGI programs against it, and helpers to drive the daemon and
the CLI and to look at the spool.

Run from the repository root:

    /usr/bin/python3 -m pytest -q tests/blackbox

Environment:
    MSGSPOOL_CGI_DIR   directory of the CGI programs (default cgi-bin/,
                       or $O/cgi-bin/ when O is set, e.g. O=build/asan/)
    MSGSPOOL_BIN_DIR   directory holding msgspoold and msgspool
                       (default spooler/, or $O/spooler/)
"""

import datetime
import hashlib
import json
import os
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
LIGHTTPD_CONF = ROOT / "conf" / "lighttpd.conf"
LIGHTTPD = shutil.which("lighttpd") or "/usr/sbin/lighttpd"

STATES = ("tmp", "new", "deferred", "cur", "sent", "failed")
# A ULID: 26 characters of Crockford base32 (no I, L, O, U).
ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PROBLEM_PREFIX = "urn:msgspool:problem:"
WWW_AUTHENTICATE = 'ApiKey header="X-API-KEY"'
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")

HTTP_TIMEOUT = 15       # seconds for one request
START_TIMEOUT = 10      # seconds for lighttpd to answer
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
        for sub in list(STATES) + ["outbox"]:
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

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """lighttpd serving the CGI programs for one Instance."""

    def __init__(self, inst, rundir):
        self.inst = inst
        self.rundir = Path(rundir)
        (self.rundir / "empty").mkdir(parents=True, exist_ok=True)
        self.proc = None
        self.port = None
        self.session = requests.Session()
        self.session.trust_env = False          # no proxies, no netrc
        self._start()

    def _start(self):
        last = ""
        for _ in range(3):                       # a port may be taken
            port = _free_port()
            env = dict(os.environ, MSGSPOOL_CGI_DIR=str(CGI_DIR),
                       MSGSPOOL_CONFIG=str(self.inst.conf),
                       MSGSPOOL_PORT=str(port),
                       MSGSPOOL_RUNDIR=str(self.rundir))
            out = open(self.rundir / "lighttpd.out", "ab")
            proc = subprocess.Popen(
                [LIGHTTPD, "-D", "-f", str(LIGHTTPD_CONF)], env=env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                start_new_session=True)
            out.close()
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port),
                                             timeout=0.5).close()
                    self.proc, self.port = proc, port
                    return
                except OSError:
                    time.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            last = self.logs()
        raise RuntimeError("lighttpd did not start\n" + last)

    def stop(self):
        self.session.close()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def _read(self, name):
        p = self.rundir / name
        return p.read_text("utf-8", "replace") if p.exists() else ""

    def cgi_stderr(self):
        return self._read("cgi-stderr.log")

    def logs(self):
        return "".join(
            f"--- {n} ---\n{self._read(n)[-6000:]}\n"
            for n in ("lighttpd.out", "lighttpd-error.log", "cgi-stderr.log"))

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

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
        return self.session.request(method, self.url(path), headers=h,
                                    timeout=timeout, **kw)

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
        dict with lower-case names, body bytes)."""
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
    """The spool file of msgid in state: 0600, JSON, the documented
    fields.  Returns the document."""
    p = inst.path(state, msgid)
    assert p.is_file(), f"no {state}/{msgid}.json; spool {inst.counts()}"
    mode = stat.S_IMODE(p.stat().st_mode)
    assert mode == 0o600, f"{p} has mode {oct(mode)}"
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

def pytest_report_header(config):
    need = [CGI_DIR / p for p in ("ping", "templates", "sms-deliver",
                                  "sms-batch")]
    need += [BIN_DIR / "msgspoold", BIN_DIR / "msgspool"]
    missing = [str(p) for p in need if not os.access(p, os.X_OK)]
    lines = [f"msgspool: CGI {CGI_DIR}, bin {BIN_DIR}, lighttpd {LIGHTTPD}"]
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
    """A factory: a fresh Instance with its own lighttpd, for tests that
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

"""
A local stand-in for the provider HTTP APIs msgspoold talks to.

One threaded HTTP/1.1 server on 127.0.0.1 (a free port) answers, on one
port, as three providers would:

    Twilio            server.twilio_base   = server.url("/twilio")
        POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json
        POST {base}/2010-04-01/Accounts/{AccountSid}/Calls.json
    WhatsApp Cloud    server.whatsapp_base = server.url("/graph/v21.0")
        POST {base}/{PHONE_NUMBER_ID}/messages
    generic webhook   server.hook_url      = server.url("/hook")
        POST, any JSON object

Every request is checked against the provider's published API (path,
method, auth scheme and credentials, content type, required fields and
their formats). A request that breaks it is answered with the provider's
own 400/401/404 error body and listed in server.violations with a reason.
A valid request is answered "ok" (Twilio 201 resource, Graph 200) unless
the test scripted another outcome for its recipient:

    server.script("+4915112345678", ["ok", ("status", 400), ("429", 2),
                                     ("500",), ("503",), ("drop",),
                                     ("delay", 1.5)])

Usage:

    with Standin() as server:
        cfg = server.twilio_config("sms")      # [sms] section for msgspool
        ...
        server.wait_for(1, timeout=10, api="twilio")
        assert server.violations == []

or, in a test module, `from standin import standin_server` and take the
`standin_server` fixture.

Only the Python standard library is used (pytest only for the fixture).
"""

import base64
import binascii
import json
import math
import re
import secrets
import socket
import string
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["Standin", "standin_server", "CaseInsensitiveDict"]

DEFAULT_TWILIO_SID = "AC" + "0123456789abcdef" * 2
DEFAULT_TWILIO_TOKEN = "f00dfacef00dfacef00dfacef00dface"
DEFAULT_TWILIO_FROM = "+15005550006"
DEFAULT_WA_PHONE_ID = "106540352242922"
DEFAULT_WA_TOKEN = "EAAGstandin" + "0123456789ABCDEFabcdef" * 3
GRAPH_VERSION = "v21.0"

MAX_BODY = 64 * 1024 * 1024          # bytes read from one request at most
IDLE_TIMEOUT = 120                   # seconds a keep-alive socket may idle

E164_RE = re.compile(r"^\+[1-9][0-9]{1,14}$")
ALNUM_SENDER_RE = re.compile(r"^(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}$")
SHORT_CODE_RE = re.compile(r"^[0-9]{3,8}$")
MG_SID_RE = re.compile(r"^MG[0-9a-fA-F]{32}$")
WA_TO_RE = re.compile(r"^\+?[0-9]{5,15}$")
WA_LANG_RE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]{2,8})?$")
SAY_LANG_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
TWILIO_PATH_RE = re.compile(
    r"^/2010-04-01/Accounts/([^/]+)/(Messages|Calls)\.json$")
GRAPH_PATH_RE = re.compile(r"^/(v[0-9]+\.[0-9]+)/([^/]+)/([^/]+)$")

API_TWILIO_MESSAGES = "twilio.messages"
API_TWILIO_CALLS = "twilio.calls"
API_WHATSAPP = "whatsapp"
API_HOOK = "hook"
API_UNKNOWN = "unknown"

# GSM 03.38 default alphabet and its extension table (each extension
# character takes two septets), for Twilio's num_segments.
_GSM_BASIC = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")
_GSM_EXT = set("^{}\\[~]|€\f")

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
           "Oct", "Nov", "Dec")


def _rfc2822(t=None):
    """Twilio's date format: 'Thu, 30 Jul 2015 20:12:31 +0000'."""
    g = time.gmtime(time.time() if t is None else t)
    return "%s, %02d %s %04d %02d:%02d:%02d +0000" % (
        _DAYS[g.tm_wday], g.tm_mday, _MONTHS[g.tm_mon - 1], g.tm_year,
        g.tm_hour, g.tm_min, g.tm_sec)


def _num_segments(body):
    if all(c in _GSM_BASIC or c in _GSM_EXT for c in body):
        n = sum(2 if c in _GSM_EXT else 1 for c in body)
        single, multi = 160, 153
    else:
        n = len(body.encode("utf-16-le")) // 2
        single, multi = 70, 67
    if n <= single:
        return 1
    return math.ceil(n / multi)


def _random_alnum(n):
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


class CaseInsensitiveDict(dict):
    """Request headers: lookups ignore case; keys keep the sender's case.
    A header sent more than once is joined with ', '."""

    def __init__(self, pairs=()):
        super().__init__()
        self._lower = {}
        for k, v in pairs:
            if k.lower() in self._lower:
                orig = self._lower[k.lower()]
                super().__setitem__(orig, super().__getitem__(orig) + ", " + v)
            else:
                self._lower[k.lower()] = k
                super().__setitem__(k, v)

    def __getitem__(self, key):
        return super().__getitem__(self._lower[key.lower()])

    def __contains__(self, key):
        return isinstance(key, str) and key.lower() in self._lower

    def get(self, key, default=None):
        return self[key] if key in self else default


class _Reply:
    """What the stand-in answers to one request."""

    def __init__(self, status, body, headers=None, outcome="ok",
                 reason=None):
        self.status = status
        self.body = body                # dict (sent as JSON) or None
        self.headers = dict(headers or {})
        self.outcome = outcome          # ok, error, violation, rejected
        self.reason = reason            # why (violation / rejection)


class _Valid:
    """A request that follows the published API: its recipient (the
    scripting key) and how to build the provider's answers."""

    def __init__(self, recipient, success, error, reject=None):
        self.recipient = recipient
        self.success = success          # () -> _Reply
        self.error = error              # (status, step) -> _Reply
        self.reject = reject            # a provider-side rejection, or None


def _normalize_step(step):
    """Turn a script step into a tuple, checking it on the test's side."""
    if isinstance(step, bool):
        raise ValueError("bad script step %r" % (step,))
    if isinstance(step, int):
        step = ("status", step)
    if isinstance(step, str):
        step = (step,)
    if not isinstance(step, (tuple, list)) or not step:
        raise ValueError("bad script step %r" % (step,))
    step = tuple(step)
    kind = str(step[0])
    step = (kind,) + step[1:]
    if kind == "ok" and len(step) == 1:
        return step
    if kind == "status" and len(step) in (2, 3, 4) \
            and isinstance(step[1], int) and 100 <= step[1] <= 599:
        return step
    if kind == "429" and len(step) in (1, 2):
        return ("429", step[1] if len(step) == 2 else 1)
    if kind in ("500", "503") and len(step) in (1, 2):
        return step
    if kind == "drop" and len(step) == 1:
        return step
    if kind == "delay" and len(step) in (2, 3) \
            and isinstance(step[1], (int, float)) and step[1] >= 0:
        if len(step) == 3:
            return ("delay", step[1], _normalize_step(step[2]))
        return ("delay", step[1], ("ok",))
    raise ValueError("bad script step %r" % (step,))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner, addr):
        self.owner = owner
        super().__init__(addr, _Handler)

    def handle_error(self, request, client_address):
        import sys
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, socket.timeout, OSError)):
            return
        import traceback
        text = traceback.format_exc()
        self.owner._note_error(text)
        sys.stderr.write("standin: internal error\n" + text)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin/1.0"
    sys_version = ""
    timeout = IDLE_TIMEOUT

    def setup(self):
        super().setup()
        self.owner = self.server.owner
        self.conn_id = self.owner._conn_open(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            self.owner._conn_close(self.connection)

    def log_message(self, format, *args):   # quiet; requests are recorded
        pass

    def do_POST(self):
        self._handle()

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_POST

    # -- reading -------------------------------------------------------

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks, total = [], 0
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ConnectionError("eof in chunked body")
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n",
                                                             b""):
                        pass
                    break
                total += size
                if total > MAX_BODY:
                    raise ValueError("body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(3)
            return b"".join(chunks), None
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b"", None
        try:
            n = int(cl)
            if n < 0:
                raise ValueError
        except ValueError:
            return b"", "invalid Content-Length %r" % cl
        if n > MAX_BODY:
            return b"", "body of %d bytes is over the stand-in's limit" % n
        data = self.rfile.read(n)
        if len(data) != n:
            raise ConnectionError("short body")
        return data, None

    # -- main ----------------------------------------------------------

    def _handle(self):
        owner = self.owner
        owner._flight(+1)
        try:
            self._handle_inner(owner)
        finally:
            owner._flight(-1)

    def _handle_inner(self, owner):
        started = time.time()
        split = urllib.parse.urlsplit(self.path)
        path, query = split.path, split.query
        body, body_err = self._read_body()
        rec = {
            "api": API_UNKNOWN,
            "method": self.command,
            "path": path,
            "query": query,
            "headers": CaseInsensitiveDict(self.headers.items()),
            "body": body,
            "form": None,
            "json": None,
            "auth": _parse_auth(self.headers.get("Authorization")),
            "recipient": None,
            "outcome": None,
            "status": None,
            "response": None,
            "reason": None,
            "step": None,
            "connection": self.conn_id,
            "http_version": self.request_version,
            "time": started,
        }
        if body_err:
            reply = _Reply(400, {"error": body_err}, outcome="violation",
                           reason=body_err)
            valid = None
        else:
            valid, reply = owner._route(rec)

        step = None
        if valid is not None and reply is None:
            if valid.reject is not None:
                reply = valid.reject
            else:
                step = owner._next_step(valid.recipient)
                rec["step"] = step
                if step[0] == "delay":
                    owner._sleep(step[1])
                    step = step[2]
                if step[0] == "ok":
                    reply = valid.success()
                elif step[0] == "drop":
                    reply = None
                else:
                    reply = valid.error(step)

        if owner.delay_all:
            owner._sleep(owner.delay_all)

        if reply is None:               # scripted drop
            rec["outcome"] = "drop"
            owner._record(rec)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return

        rec["outcome"] = reply.outcome
        rec["status"] = reply.status
        rec["response"] = reply.body
        rec["reason"] = reply.reason
        if reply.outcome == "violation":
            owner._violation(rec, reply.reason)
        owner._record(rec)
        self._send(reply)

    def _send(self, reply):
        data = b""
        if reply.body is not None:
            data = json.dumps(reply.body).encode("utf-8")
        self.send_response(reply.status)
        headers = {"Content-Type": "application/json; charset=utf-8"}
        headers.update(reply.headers)
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()


def _parse_auth(header):
    if header is None:
        return None
    scheme, _, rest = header.strip().partition(" ")
    rest = rest.strip()
    if scheme.lower() == "basic":
        try:
            raw = base64.b64decode(rest, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return {"scheme": "basic", "raw": rest, "username": None,
                    "password": None}
        user, sep, pw = raw.partition(":")
        return {"scheme": "basic", "username": user,
                "password": pw if sep else None}
    if scheme.lower() == "bearer":
        return {"scheme": "bearer", "token": rest}
    return {"scheme": scheme.lower(), "raw": rest}


def _media_type(value):
    """('application/json', {'charset': 'utf-8'}) from a Content-Type."""
    if not value:
        return None, {}
    parts = value.split(";")
    params = {}
    for p in parts[1:]:
        k, _, v = p.strip().partition("=")
        params[k.strip().lower()] = v.strip().strip('"')
    return parts[0].strip().lower(), params


class Standin:
    """The provider stand-in. See the module docstring."""

    def __init__(self, *,
                 twilio_account_sid=DEFAULT_TWILIO_SID,
                 twilio_auth_token=DEFAULT_TWILIO_TOKEN,
                 twilio_from=DEFAULT_TWILIO_FROM,
                 twilio_numbers=None,
                 whatsapp_phone_number_id=DEFAULT_WA_PHONE_ID,
                 whatsapp_token=DEFAULT_WA_TOKEN,
                 whatsapp_templates=None,
                 host="127.0.0.1", port=0):
        self.twilio_account_sid = twilio_account_sid
        self.twilio_auth_token = twilio_auth_token
        self.twilio_from = twilio_from
        # Numbers the Twilio account owns; None accepts any valid From.
        self.twilio_numbers = (None if twilio_numbers is None
                               else set(twilio_numbers))
        self.whatsapp_phone_number_id = str(whatsapp_phone_number_id)
        self.whatsapp_token = whatsapp_token
        # {name: (language code or None, number of body parameters or None)};
        # None accepts any template.
        self.whatsapp_templates = whatsapp_templates
        self.delay_all = 0
        # Status callbacks, as Twilio makes them when a Messages request
        # carries StatusCallback: the MessageStatus values posted to it, in
        # this order (Twilio sends some twice and out of order), each
        # signed with X-Twilio-Signature; [] sends none.  What each POST
        # got back is in callback_results: (status, HTTP code or error).
        self.twilio_callbacks = []
        self.callback_results = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._requests = []
        self._violations = []
        self._errors = []
        self._scripts = {}
        self._conns = {}
        self._conn_seq = 0
        self._in_flight = 0
        self._stopping = threading.Event()
        self._httpd = _Server(self, (host, port))
        self.host, self.port = self._httpd.server_address[:2]
        self._thread = None

    # -- life ----------------------------------------------------------

    def start(self):
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                name="standin", daemon=True)
            self._thread.start()
        return self

    def stop(self):
        if self._thread is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._thread.join(5)
        self._thread = None
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()

    close = stop

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- addresses -----------------------------------------------------

    def url(self, path=""):
        return "http://%s:%d%s" % (self.host, self.port, path)

    @property
    def twilio_base(self):
        return self.url("/twilio")

    @property
    def whatsapp_base(self):
        return self.url("/graph/" + GRAPH_VERSION)

    @property
    def hook_url(self):
        return self.url("/hook")

    # -- msgspool config sections (msgspool.conf(5)) ---------------------

    def twilio_config(self, section="sms", from_number=None):
        return ("[%s]\nprovider = twilio\naccount-sid = %s\nauth-token = %s\n"
                "from = %s\napi-base = %s\n" % (
                    section, self.twilio_account_sid, self.twilio_auth_token,
                    from_number or self.twilio_from, self.twilio_base))

    def whatsapp_config(self, channel_type=1):
        return ("[ott.%s]\nprovider = whatsapp\nphone-number-id = %s\n"
                "token = %s\napi-base = %s\n" % (
                    channel_type, self.whatsapp_phone_number_id,
                    self.whatsapp_token, self.whatsapp_base))

    def hook_config(self, section="sms", headers=(), path="/hook"):
        text = "[%s]\nprovider = http\nurl = %s\n" % (section, self.url(path))
        for h in headers:
            text += "header = %s\n" % h
        return text

    # -- scripting -----------------------------------------------------

    def script(self, key, steps, then="ok"):
        """Outcomes for the next requests to recipient `key` (Twilio To,
        WhatsApp to, webhook message.to), one step a request; after them
        every request gets `then`. Replaces an earlier script for key."""
        norm = [_normalize_step(s) for s in steps]
        then = _normalize_step(then)
        with self._lock:
            self._scripts[key] = (norm, then)

    def _next_step(self, key):
        with self._lock:
            entry = self._scripts.get(key)
            if entry is None:
                return ("ok",)
            steps, then = entry
            if steps:
                return steps.pop(0)
            return then

    # -- records -------------------------------------------------------

    @property
    def requests(self):
        """Every request so far, in arrival of their answers (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def violations(self):
        """Requests that broke the published API: dicts with reason, api,
        method, path and the request record."""
        with self._lock:
            return list(self._violations)

    @property
    def errors(self):
        """Internal errors of the stand-in itself (tracebacks)."""
        with self._lock:
            return list(self._errors)

    @property
    def in_flight(self):
        with self._lock:
            return self._in_flight

    def sent(self, api=None):
        """Requests answered with success; api filters ('twilio' matches
        twilio.messages and twilio.calls)."""
        return [r for r in self.requests
                if r["outcome"] == "ok" and _api_match(r["api"], api)]

    def wait_for(self, n, timeout=10.0, api=None, ok=False):
        """Wait until n requests (only successful ones if ok) of api have
        been answered; return them. Raises AssertionError on timeout."""
        deadline = time.monotonic() + timeout

        def matching():
            return [r for r in self._requests
                    if _api_match(r["api"], api)
                    and (not ok or r["outcome"] == "ok")]
        with self._cond:
            while True:
                got = matching()
                if len(got) >= n:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    summary = ["%s %s %s -> %s %s" % (
                        r["api"], r["method"], r["path"], r["outcome"],
                        r["status"]) for r in self._requests[-10:]]
                    raise AssertionError(
                        "standin: waited %.1fs for %d %s%s request(s), got %d;"
                        " last: %s" % (timeout, n, "successful " if ok else "",
                                       api or "any", len(got), summary))
                self._cond.wait(min(left, 0.5))

    def reset(self):
        """Forget requests, violations, errors and scripts; delay_all = 0."""
        with self._lock:
            self._requests.clear()
            self._violations.clear()
            self._errors.clear()
            self._scripts.clear()
            self.delay_all = 0

    def _record(self, rec):
        with self._cond:
            self._requests.append(rec)
            self._cond.notify_all()

    def _violation(self, rec, reason):
        with self._lock:
            self._violations.append({"reason": reason, "api": rec["api"],
                                     "method": rec["method"],
                                     "path": rec["path"], "request": rec})

    def _note_error(self, text):
        with self._cond:
            self._errors.append(text)
            self._cond.notify_all()

    def _flight(self, d):
        with self._lock:
            self._in_flight += d

    def _conn_open(self, sock):
        with self._lock:
            self._conn_seq += 1
            self._conns[sock] = self._conn_seq
            return self._conn_seq

    def _conn_close(self, sock):
        with self._lock:
            self._conns.pop(sock, None)

    def _sleep(self, seconds):
        self._stopping.wait(seconds)

    # -- routing -------------------------------------------------------

    def _route(self, rec):
        """(valid, None) for a request to script, or (None, reply)."""
        path = rec["path"]
        if path == "/twilio" or path.startswith("/twilio/"):
            return self._twilio(rec, path[len("/twilio"):])
        if path.startswith("/graph/"):
            return self._whatsapp(rec, path[len("/graph"):])
        if path == "/hook" or path.startswith("/hook/"):
            return self._hook(rec)
        reason = "no provider API at %s" % path
        return None, _Reply(404, {"error": "not found", "path": path},
                            outcome="violation", reason=reason)

    # -- Twilio --------------------------------------------------------

    def _tw_error(self, status, code, message, outcome="violation",
                  reason=None, headers=None):
        body = {"code": code, "message": message,
                "more_info": "https://www.twilio.com/docs/errors/%d" % code,
                "status": status}
        h = {"Twilio-Request-Id": "RQ" + secrets.token_hex(16)}
        if status == 401:
            h["WWW-Authenticate"] = 'Basic realm="Twilio API"'
        h.update(headers or {})
        return _Reply(status, body, h, outcome=outcome,
                      reason=reason or message)

    def _twilio(self, rec, sub):
        m = TWILIO_PATH_RE.match(sub)
        if not m:
            rec["api"] = "twilio"
            return None, self._tw_error(
                404, 20404, "The requested resource %s was not found" % sub,
                reason="unknown Twilio path %s" % rec["path"])
        account, resource = m.group(1), m.group(2)
        rec["api"] = (API_TWILIO_MESSAGES if resource == "Messages"
                      else API_TWILIO_CALLS)
        if rec["method"] != "POST":
            return None, self._tw_error(
                405, 20004, "Method not allowed",
                reason="%s on %s; msgspool must POST" % (rec["method"],
                                                         resource))
        auth = rec["auth"]
        if auth is None:
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="no Authorization header (HTTP Basic required)")
        if auth["scheme"] != "basic":
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="auth scheme %r, HTTP Basic required" % auth["scheme"])
        if auth.get("username") != self.twilio_account_sid \
                or auth.get("password") != self.twilio_auth_token:
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="wrong Basic credentials (user %r)" %
                auth.get("username"))
        if account != self.twilio_account_sid:
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="account %r in path is not the authenticated account"
                % account)
        ctype, params = _media_type(rec["headers"].get("Content-Type"))
        problems = []
        pairs = []
        if ctype != "application/x-www-form-urlencoded":
            problems.append("Content-Type %r, expected "
                            "application/x-www-form-urlencoded" %
                            rec["headers"].get("Content-Type"))
        else:
            cs = params.get("charset", "utf-8").lower()
            if cs not in ("utf-8", "utf8"):
                problems.append("charset %r, expected utf-8" % cs)
            try:
                text = rec["body"].decode("ascii")
                pairs = urllib.parse.parse_qsl(
                    text, keep_blank_values=True, encoding="utf-8",
                    errors="strict")
            except UnicodeDecodeError:
                problems.append("form body is not percent-encoded UTF-8")
        form = {}
        for k, v in pairs:
            if k in form:
                problems.append("field %s given more than once" % k)
            else:
                form[k] = v
        rec["form"] = form
        rec["form_pairs"] = pairs
        if resource == "Messages":
            return self._twilio_message(rec, account, form, problems)
        return self._twilio_call(rec, account, form, problems)

    def _tw_scripted(self, rec, step, to):
        kind = step[0]
        if kind == "429":
            return self._tw_error(
                429, 20429, "Too Many Requests", outcome="error",
                headers={"Retry-After": str(step[1])})
        if kind == "500":
            return self._tw_error(500, 20500,
                                  "An internal server error has occurred",
                                  outcome="error")
        if kind == "503":
            h = {"Retry-After": str(step[1])} if len(step) > 1 else {}
            return self._tw_error(503, 20503, "Service Unavailable",
                                  outcome="error", headers=h)
        status = step[1]
        calls = rec["api"] == API_TWILIO_CALLS
        defaults = {
            400: (21211, "The 'To' number %s is not a valid phone number."
                  % to),
            401: (20003, "Authenticate"),
            403: ((21215, "Account not authorized to call %s. Perhaps you "
                   "need to enable some international permissions: "
                   "https://www.twilio.com/console/voice/calls/"
                   "geo-permissions/low-risk" % to) if calls else
                  (21408, "Permission to send an SMS has not been enabled "
                   "for the region indicated by the 'To' number: %s." % to)),
            404: (20404, "The requested resource %s was not found"
                  % rec["path"][len("/twilio"):]),
            405: (20004, "Method not allowed"),
            409: (20409, "Conflict"),
            429: (20429, "Too Many Requests"),
            500: (20500, "An internal server error has occurred"),
            503: (20503, "Service Unavailable"),
        }
        code, message = defaults.get(status, (20000 + status if status < 1000
                                              else status, "Error"))
        if len(step) > 2:
            code = step[2]
        if len(step) > 3:
            message = step[3]
        return self._tw_error(status, code, message, outcome="error")

    def _twilio_message(self, rec, account, form, problems):
        to, frm, body = form.get("To"), form.get("From"), form.get("Body")
        mgs = form.get("MessagingServiceSid")
        rec["recipient"] = to
        if problems:
            return None, self._tw_error(400, 21604 if not to else 20001,
                                        "A 'To' phone number is required."
                                        if not to else problems[0],
                                        reason="; ".join(problems))
        if not to:
            return None, self._tw_error(400, 21604,
                                        "A 'To' phone number is required.")
        if not E164_RE.match(to):
            return None, self._tw_error(
                400, 21211, "The 'To' number %s is not a valid phone number."
                % to)
        if not frm and not mgs:
            return None, self._tw_error(400, 21603,
                                        "A 'From' phone number is required.")
        if frm and not (E164_RE.match(frm) or ALNUM_SENDER_RE.match(frm)
                        or SHORT_CODE_RE.match(frm)):
            return None, self._tw_error(
                400, 21212, "The 'From' number %s is not a valid phone "
                "number, shortcode, or alphanumeric sender ID." % frm)
        if mgs and not MG_SID_RE.match(mgs):
            return None, self._tw_error(
                400, 21701, "The Messaging Service Sid %s is invalid." % mgs)
        if body is None or body == "":
            if not form.get("MediaUrl") and not form.get("ContentSid"):
                return None, self._tw_error(400, 21602,
                                            "Message body is required.")
            body = body or ""
        if len(body) > 1600:
            return None, self._tw_error(
                400, 21617, "The concatenated message body exceeds the 1600 "
                "character limit.")
        reject = None
        if self.twilio_numbers is not None and frm \
                and frm not in self.twilio_numbers:
            reject = self._tw_error(
                400, 21606, "The From phone number %s is not a valid, "
                "SMS-capable inbound phone number or short code for your "
                "account." % frm, outcome="rejected")

        def success():
            sid = "SM" + secrets.token_hex(16)
            if form.get("StatusCallback") and self.twilio_callbacks:
                self._call_back(form["StatusCallback"], account, sid, to,
                                frm, list(self.twilio_callbacks))
            now = _rfc2822()
            uri = "/2010-04-01/Accounts/%s/Messages/%s" % (account, sid)
            res = {
                "account_sid": account,
                "api_version": "2010-04-01",
                "body": body,
                "date_created": now,
                "date_sent": None,
                "date_updated": now,
                "direction": "outbound-api",
                "error_code": None,
                "error_message": None,
                "from": frm,
                "messaging_service_sid": mgs,
                "num_media": "0",
                "num_segments": str(_num_segments(body)),
                "price": None,
                "price_unit": "USD",
                "sid": sid,
                "status": "accepted" if mgs and not frm else "queued",
                "subresource_uris": {"media": uri + "/Media.json"},
                "to": to,
                "uri": uri + ".json",
            }
            return _Reply(201, res,
                          {"Twilio-Request-Id": "RQ" + secrets.token_hex(16)})

        return _Valid(to, success, lambda step: self._tw_scripted(
            rec, step, to), reject), None

    def _call_back(self, url, account, sid, to, frm, statuses):
        """POST Twilio's status callbacks for message sid to url, one
        after another, after the 201 went out (a thread of their own)."""
        import hashlib
        import hmac
        import urllib.request

        def run():
            time.sleep(0.2)
            for status in statuses:
                params = {"AccountSid": account, "ApiVersion": "2010-04-01",
                          "From": frm or "", "MessageSid": sid,
                          "MessageStatus": status, "SmsSid": sid,
                          "SmsStatus": status, "To": to}
                if status in ("failed", "undelivered"):
                    params["ErrorCode"] = "30003"
                data = url + "".join(k + params[k] for k in sorted(params))
                sig = base64.b64encode(hmac.new(
                    self.twilio_auth_token.encode(), data.encode(),
                    hashlib.sha1).digest()).decode()
                req = urllib.request.Request(
                    url, data=urllib.parse.urlencode(params).encode(),
                    headers={"X-Twilio-Signature": sig, "Content-Type":
                             "application/x-www-form-urlencoded",
                             "User-Agent": "TwilioProxy/1.1",
                             "Connection": "close"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        got = r.status
                except urllib.error.HTTPError as e:
                    got = e.code
                except OSError as e:
                    got = repr(e)
                with self._lock:
                    self.callback_results.append((status, got))
                    self._cond.notify_all()

        threading.Thread(target=run, daemon=True).start()

    def wait_callbacks(self, n, timeout=10.0):
        """Wait until n status callbacks were posted; return the results."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.callback_results) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%d of %d callbacks made: %r" % (
                        len(self.callback_results), n,
                        self.callback_results))
                self._cond.wait(left)
            return list(self.callback_results)

    def _twilio_call(self, rec, account, form, problems):
        to, frm = form.get("To"), form.get("From")
        twiml, url = form.get("Twiml"), form.get("Url")
        app = form.get("ApplicationSid")
        rec["recipient"] = to
        if problems:
            return None, self._tw_error(400, 21201 if not to else 20001,
                                        "No 'To' number is specified"
                                        if not to else problems[0],
                                        reason="; ".join(problems))
        if not to:
            return None, self._tw_error(400, 21201,
                                        "No 'To' number is specified")
        if not E164_RE.match(to):
            return None, self._tw_error(
                400, 21211, "Invalid 'To' Phone Number: %s" % to)
        if not frm:
            return None, self._tw_error(400, 21213,
                                        "No 'From' number is specified")
        if not E164_RE.match(frm):
            return None, self._tw_error(
                400, 21212, "Invalid 'From' Phone Number: %s" % frm)
        given = [n for n, v in (("Twiml", twiml), ("Url", url),
                                ("ApplicationSid", app)) if v]
        if not given:
            return None, self._tw_error(
                400, 21205, "A 'Url', 'Twiml', or 'ApplicationSid' "
                "parameter is required.")
        if len(given) > 1:
            return None, self._tw_error(
                400, 21205, "Only one of %s may be given." % ", ".join(given))
        if twiml is not None:
            if len(twiml) > 4000:
                return None, self._tw_error(
                    400, 32018, "Twiml size exceeded maximum allowed value "
                    "of 4000 characters")
            bad = _check_twiml(twiml)
            if bad:
                return None, self._tw_error(
                    400, 12100, "Document parse failure: %s" % bad,
                    reason="TwiML: %s" % bad)
            rec["twiml"] = _twiml_summary(twiml)
        if url is not None:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.netloc:
                return None, self._tw_error(
                    400, 21205, "Url is not a valid URL: %s" % url)
        reject = None
        if self.twilio_numbers is not None and frm not in self.twilio_numbers:
            reject = self._tw_error(
                400, 21210, "The source phone number provided, %s, is not "
                "yet verified for your account." % frm, outcome="rejected")

        def success():
            sid = "CA" + secrets.token_hex(16)
            now = _rfc2822()
            uri = "/2010-04-01/Accounts/%s/Calls/%s" % (account, sid)
            res = {
                "account_sid": account,
                "annotation": None,
                "answered_by": None,
                "api_version": "2010-04-01",
                "caller_name": None,
                "date_created": now,
                "date_updated": now,
                "direction": "outbound-api",
                "duration": None,
                "end_time": None,
                "forwarded_from": None,
                "from": frm,
                "from_formatted": frm,
                "group_sid": None,
                "parent_call_sid": None,
                "phone_number_sid": "PN" + secrets.token_hex(16),
                "price": None,
                "price_unit": "USD",
                "queue_time": "0",
                "sid": sid,
                "start_time": None,
                "status": "queued",
                "subresource_uris": {
                    "notifications": uri + "/Notifications.json",
                    "recordings": uri + "/Recordings.json",
                    "payments": uri + "/Payments.json",
                    "events": uri + "/Events.json",
                    "siprec": uri + "/Siprec.json",
                    "streams": uri + "/Streams.json",
                    "user_defined_message_subscriptions":
                        uri + "/UserDefinedMessageSubscriptions.json",
                    "user_defined_messages":
                        uri + "/UserDefinedMessages.json",
                },
                "to": to,
                "to_formatted": to,
                "trunk_sid": None,
                "uri": uri + ".json",
            }
            return _Reply(201, res,
                          {"Twilio-Request-Id": "RQ" + secrets.token_hex(16)})

        return _Valid(to, success, lambda step: self._tw_scripted(
            rec, step, to), reject), None

    # -- WhatsApp Cloud API ----------------------------------------------

    def _wa_error(self, status, code, message, details=None, outcome=
                  "violation", reason=None, headers=None, subcode=None,
                  etype="OAuthException"):
        err = {"message": message, "type": etype, "code": code}
        if subcode is not None:
            err["error_subcode"] = subcode
        if details is not None:
            err["error_data"] = {"messaging_product": "whatsapp",
                                 "details": details}
        err["fbtrace_id"] = "A" + _random_alnum(22)
        h = {"x-fb-trace-id": _random_alnum(11),
             "x-fb-request-id": "A" + _random_alnum(22),
             "facebook-api-version": GRAPH_VERSION}
        if status == 401:
            h["WWW-Authenticate"] = ('OAuth "Facebook Platform" '
                                     '"invalid_token" "%s"' % message)
        h.update(headers or {})
        return _Reply(status, {"error": err}, h, outcome=outcome,
                      reason=reason or (details or message))

    def _wa_param_error(self, details, code=100, reason=None):
        if code == 100:
            msg = "(#100) Invalid parameter"
        elif code == 131008:
            msg = "(#131008) Required parameter is missing"
        elif code == 131009:
            msg = "(#131009) Parameter value is not valid"
        else:
            msg = "(#%d) There was an issue with the parameters in your " \
                  "template." % code
        return None, self._wa_error(400, code, msg, details, reason=reason)

    def _whatsapp(self, rec, sub):
        rec["api"] = API_WHATSAPP
        m = GRAPH_PATH_RE.match(sub)
        if not m or m.group(3) != "messages":
            return None, self._wa_error(
                400, 2500, "Unknown path components: %s" % sub,
                reason="unknown Graph path %s" % rec["path"])
        version, phone_id = m.group(1), m.group(2)
        rec["graph_version"] = version
        if rec["method"] != "POST":
            return None, self._wa_error(
                400, 100, "Unsupported %s request." % rec["method"].lower(),
                etype="GraphMethodException",
                reason="%s on messages; msgspool must POST" % rec["method"])
        auth = rec["auth"]
        if auth is None:
            return None, self._wa_error(
                401, 190, "An access token is required to request this "
                "resource.",
                reason="no Authorization header (Bearer token required)")
        if auth["scheme"] != "bearer":
            return None, self._wa_error(
                401, 190, "Invalid OAuth access token - Cannot parse access "
                "token",
                reason="auth scheme %r, Bearer required" % auth["scheme"])
        if auth["token"] != self.whatsapp_token:
            return None, self._wa_error(
                401, 190, "Invalid OAuth access token - Cannot parse access "
                "token", reason="wrong Bearer token")
        if phone_id != self.whatsapp_phone_number_id:
            return None, self._wa_error(
                400, 100, "Unsupported post request. Object with ID '%s' "
                "does not exist, cannot be loaded due to missing "
                "permissions, or does not support this operation. Please "
                "read the Graph API documentation at "
                "https://developers.facebook.com/docs/graph-api" % phone_id,
                subcode=33, etype="GraphMethodException",
                reason="phone number id %r is not the configured %r" %
                (phone_id, self.whatsapp_phone_number_id))
        ctype, params = _media_type(rec["headers"].get("Content-Type"))
        if ctype != "application/json":
            return self._wa_param_error(
                "Content-Type %r, expected application/json" %
                rec["headers"].get("Content-Type"))
        try:
            doc = json.loads(rec["body"].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return self._wa_param_error("body is not JSON: %s" % e)
        rec["json"] = doc
        if not isinstance(doc, dict):
            return self._wa_param_error("body is not a JSON object")
        to = doc.get("to")
        if isinstance(to, str):
            rec["recipient"] = to
        if "messaging_product" not in doc:
            return self._wa_param_error(
                "The parameter messaging_product is required.")
        if doc["messaging_product"] != "whatsapp":
            return self._wa_param_error(
                "Param messaging_product must be 'whatsapp', got %r" %
                (doc["messaging_product"],))
        if "recipient_type" in doc and doc["recipient_type"] != "individual":
            return self._wa_param_error(
                "Param recipient_type must be 'individual', got %r" %
                (doc["recipient_type"],))
        if to is None:
            return self._wa_param_error("The parameter to is required.")
        if not isinstance(to, str) or not WA_TO_RE.match(to):
            return self._wa_param_error(
                "Param to must be a phone number of digits, got %r" % (to,))
        mtype = doc.get("type", "text")
        if mtype != "template":
            return self._wa_param_error(
                "msgspool sends template messages only; type is %r" %
                (mtype,), code=131009)
        tpl = doc.get("template")
        if tpl is None:
            return self._wa_param_error("template is required", 131008)
        if not isinstance(tpl, dict):
            return self._wa_param_error("template must be an object", 131009)
        name = tpl.get("name")
        if name is None:
            return self._wa_param_error("template['name'] is required",
                                        131008)
        if not isinstance(name, str) or not name or len(name) > 512:
            return self._wa_param_error(
                "template['name'] must be a non-empty string", 131009)
        lang = tpl.get("language")
        if lang is None:
            return self._wa_param_error("template['language'] is required",
                                        131008)
        if not isinstance(lang, dict) or "code" not in lang:
            return self._wa_param_error(
                "template['language'] must be an object with a code", 131008)
        if not isinstance(lang["code"], str) \
                or not WA_LANG_RE.match(lang["code"]):
            return self._wa_param_error(
                "template['language']['code'] %r is not a language code" %
                (lang["code"],), 131009)
        if "policy" in lang and lang["policy"] != "deterministic":
            return self._wa_param_error(
                "template['language']['policy'] must be 'deterministic'",
                131009)
        body_params = []
        comps = tpl.get("components")
        if comps is not None:
            if not isinstance(comps, list):
                return self._wa_param_error(
                    "template['components'] must be an array", 131009)
            seen = set()
            for i, c in enumerate(comps):
                where = "template['components'][%d]" % i
                if not isinstance(c, dict) or c.get("type") not in (
                        "header", "body", "button"):
                    return self._wa_param_error(
                        "%s must be an object of type header, body or button"
                        % where, 131009)
                if c["type"] != "button":
                    if c["type"] in seen:
                        return self._wa_param_error(
                            "%s: more than one %s component" %
                            (where, c["type"]), 131009)
                    seen.add(c["type"])
                else:
                    if c.get("sub_type") not in ("quick_reply", "url",
                                                 "copy_code", "flow",
                                                 "catalog", "mpm",
                                                 "voice_call") \
                            or "index" not in c:
                        return self._wa_param_error(
                            "%s: a button needs sub_type and index" % where,
                            131008)
                ps = c.get("parameters", [])
                if not isinstance(ps, list):
                    return self._wa_param_error(
                        "%s['parameters'] must be an array" % where, 131009)
                for j, p in enumerate(ps):
                    pw = "%s['parameters'][%d]" % (where, j)
                    if not isinstance(p, dict) or not isinstance(
                            p.get("type"), str):
                        return self._wa_param_error(
                            "%s must be an object with a type" % pw, 131008)
                    if p["type"] == "text":
                        t = p.get("text")
                        if not isinstance(t, str) or t == "":
                            return self._wa_param_error(
                                "%s['text'] must be a non-empty string" % pw,
                                131008)
                        if "\n" in t or "\t" in t or "     " in t:
                            return self._wa_param_error(
                                "Param text cannot have new-line/tab "
                                "characters or more than 4 consecutive "
                                "spaces (%s)" % pw, 132018)
                    elif p["type"] not in ("currency", "date_time", "image",
                                           "document", "video", "location",
                                           "payload", "coupon_code", "action"):
                        return self._wa_param_error(
                            "%s: unknown parameter type %r" % (pw, p["type"]),
                            131009)
                if c["type"] == "body":
                    body_params = [p.get("text") for p in ps]
        rec["template"] = {"name": name, "language": lang["code"],
                           "parameters": body_params}
        reject = None
        if self.whatsapp_templates is not None:
            known = self.whatsapp_templates.get(name)
            if known is None or (known[0] is not None
                                 and known[0] != lang["code"]):
                reject = self._wa_error(
                    404, 132001, "(#132001) Template name does not exist in "
                    "the translation", "template name (%s) does not exist in "
                    "%s" % (name, lang["code"]), outcome="rejected")
            elif known[1] is not None and known[1] != len(body_params):
                reject = self._wa_error(
                    400, 132000, "(#132000) Number of parameters does not "
                    "match the expected number of params",
                    "body: number of localizable_params (%d) does not match "
                    "the expected number of params (%d)" %
                    (len(body_params), known[1]), outcome="rejected")

        def success():
            return _Reply(200, {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
                "messages": [{"id": "wamid.HBgM" + _random_alnum(48),
                              "message_status": "accepted"}],
            }, {"Content-Type": "application/json; charset=UTF-8",
                "x-fb-trace-id": _random_alnum(11),
                "facebook-api-version": GRAPH_VERSION})

        def error(step):
            kind = step[0]
            if kind == "429":
                return self._wa_error(
                    429, 130429, "(#130429) Rate limit hit",
                    "Cloud API message throughput has been reached.",
                    outcome="error", headers={"Retry-After": str(step[1])})
            if kind == "500":
                return self._wa_error(500, 131000,
                                      "(#131000) Something went wrong",
                                      "Something went wrong",
                                      outcome="error")
            if kind == "503":
                h = {"Retry-After": str(step[1])} if len(step) > 1 else {}
                return self._wa_error(503, 131016,
                                      "(#131016) Service unavailable",
                                      "A service is temporarily unavailable.",
                                      outcome="error", headers=h)
            status = step[1]
            defaults = {
                400: (131030, "(#131030) Recipient phone number not in "
                      "allowed list", "Recipient phone number not in allowed "
                      "list: Add recipient phone number to recipient list "
                      "and try again."),
                401: (190, "Invalid OAuth access token - Cannot parse access "
                      "token", None),
                403: (10, "(#10) Application does not have permission for "
                      "this action", "Permission denied"),
                404: (100, "(#100) Invalid parameter", "Object not found"),
                408: (131000, "(#131000) Something went wrong",
                      "Request timed out"),
                429: (130429, "(#130429) Rate limit hit",
                      "Cloud API message throughput has been reached."),
                500: (131000, "(#131000) Something went wrong",
                      "Something went wrong"),
                503: (131016, "(#131016) Service unavailable",
                      "A service is temporarily unavailable."),
            }
            code, msg, det = defaults.get(
                status, (1, "An unknown error occurred",
                         "An unknown error occurred"))
            if len(step) > 2:
                code = step[2]
                msg = "(#%d) %s" % (code, step[3] if len(step) > 3 else
                                    "Error")
                det = step[3] if len(step) > 3 else det
            return self._wa_error(status, code, msg, det, outcome="error")

        return _Valid(to, success, error, reject), None

    # -- generic webhook -------------------------------------------------

    def _hook(self, rec):
        rec["api"] = API_HOOK

        def bad(reason, status=400):
            return None, _Reply(status, {"ok": False, "error": reason},
                                outcome="violation", reason=reason)
        if rec["method"] != "POST":
            return bad("%s on the webhook; POST expected" % rec["method"],
                       405)
        ctype, _ = _media_type(rec["headers"].get("Content-Type"))
        if ctype != "application/json":
            return bad("Content-Type %r, expected application/json" %
                       rec["headers"].get("Content-Type"), 415)
        try:
            doc = json.loads(rec["body"].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return bad("body is not JSON: %s" % e)
        rec["json"] = doc
        if not isinstance(doc, dict):
            return bad("body is not a JSON object")
        key = None
        msg = doc.get("message")
        if isinstance(msg, dict) and isinstance(msg.get("to"), str):
            key = msg["to"]
        elif isinstance(doc.get("to"), str):
            key = doc["to"]
        elif isinstance(doc.get("recipient"), str):
            key = doc["recipient"]
        rec["recipient"] = key

        def success():
            return _Reply(200, {"ok": True})

        def error(step):
            kind = step[0]
            h = {}
            if kind == "429":
                status, h = 429, {"Retry-After": str(step[1])}
            elif kind in ("500", "503"):
                status = int(kind)
                if len(step) > 1:
                    h = {"Retry-After": str(step[1])}
            else:
                status = step[1]
            return _Reply(status, {"ok": False,
                                   "error": "scripted %d" % status}, h,
                          outcome="error")

        return _Valid(key, success, error), None


def _api_match(api, want):
    if want is None:
        return True
    return api == want or api.startswith(want + ".")


def _check_twiml(twiml):
    """None if the TwiML is a <Response> with exactly one <Say> or <Play>
    (and nothing but <Pause> beside it), else the reason."""
    try:
        root = ET.fromstring(twiml.encode("utf-8"))
    except ET.ParseError as e:
        return "not well-formed XML (%s)" % e
    if root.tag != "Response":
        return "root element is <%s>, expected <Response>" % root.tag
    if (root.text or "").strip():
        return "text directly inside <Response>"
    verbs = list(root)
    sayplay = [v for v in verbs if v.tag in ("Say", "Play")]
    others = [v.tag for v in verbs if v.tag not in ("Say", "Play", "Pause")]
    if others:
        return "unexpected verb(s) %s" % ", ".join("<%s>" % t for t in others)
    if len(sayplay) != 1:
        return "%d <Say>/<Play> verbs, expected exactly one" % len(sayplay)
    v = sayplay[0]
    if v.tag == "Say":
        if not "".join(v.itertext()).strip():
            return "<Say> has no text"
        lang = v.get("language")
        if lang is not None and not SAY_LANG_RE.match(lang):
            return "<Say language=%r> is not a language tag" % lang
        for a in v.attrib:
            if a not in ("language", "voice", "loop"):
                return "<Say> has unknown attribute %s" % a
    else:
        if len(v):
            return "<Play> has child elements"
        u = urllib.parse.urlsplit((v.text or "").strip())
        if u.scheme != "https" or not u.netloc:
            return "<Play> URL %r is not an https URL" % (v.text,)
        for a in v.attrib:
            if a not in ("loop", "digits"):
                return "<Play> has unknown attribute %s" % a
    if "loop" in v.attrib and not v.get("loop").isdigit():
        return "loop=%r is not a number" % v.get("loop")
    return None


def _twiml_summary(twiml):
    root = ET.fromstring(twiml.encode("utf-8"))
    v = [e for e in root if e.tag in ("Say", "Play")][0]
    return {"verb": v.tag, "text": "".join(v.itertext()).strip(),
            "attrib": dict(v.attrib)}


try:
    import pytest
except ImportError:                     # pragma: no cover
    pytest = None

if pytest is not None:
    @pytest.fixture
    def standin_server():
        """A started Standin, stopped after the test."""
        with Standin() as server:
            yield server
else:                                   # pragma: no cover
    standin_server = None

"""The stand-ins' shared HTTP server: one threaded HTTP/1.1 server on
127.0.0.1 that records every request, routes it to the API it was sent
to (doubles/twilio.py, whatsapp.py, hook.py) and answers as scripted."""

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


DEFAULT_TWILIO_SID = "AC" + "0123456789abcdef" * 2


DEFAULT_TWILIO_TOKEN = "f00dfacef00dfacef00dfacef00dface"


DEFAULT_TWILIO_FROM = "+15005550006"


DEFAULT_WA_PHONE_ID = "106540352242922"


DEFAULT_WA_TOKEN = "EAAGstandin" + "0123456789ABCDEFabcdef" * 3


MAX_BODY = 64 * 1024 * 1024          # bytes read from one request at most


IDLE_TIMEOUT = 120                   # seconds a keep-alive socket may idle


E164_RE = re.compile(r"^\+[1-9][0-9]{1,14}$")


API_UNKNOWN = "unknown"


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
        self.then = None                # () run once it has been sent


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

    def verify_request(self, request, client_address):
        # failing("close"): closed as soon as it is accepted.
        return self.owner._accept_connection()

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
        failure = owner._failure
        if failure == ("close",):       # a kept-alive connection too
            owner._record(_closed_record(started, self.conn_id))
            self._cut()
            return
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

        if failure == ("hang",):
            if reply is not None and reply.outcome == "violation":
                owner._violation(rec, reply.reason)
            self._hang(rec)
            return

        step = None
        if valid is not None and reply is None:
            if failure is not None:
                step = failure
                rec["step"] = step
                reply = valid.error(step)
            elif valid.reject is not None:
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
            self._cut()
            return

        rec["outcome"] = reply.outcome
        rec["status"] = reply.status
        rec["response"] = reply.body
        rec["reason"] = reply.reason
        if reply.outcome == "violation":
            owner._violation(rec, reply.reason)
        owner._record(rec)
        self._send(reply)
        if reply.then is not None:
            reply.then()

    def _cut(self):
        """Close the connection unanswered."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _hang(self, rec):
        """failing("hang"): recorded as it came, never answered; the
        connection is closed once the mode changes or the stand-in
        stops."""
        owner = self.owner
        rec["outcome"] = "hang"
        owner._record(rec)
        with owner._cond:
            while owner._failure == ("hang",) \
                    and not owner._stopping.is_set():
                owner._cond.wait(0.1)
        self._cut()

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


def _closed_record(started, conn_id):
    """The record of a connection closed unread (failing("close"))."""
    return {"api": API_UNKNOWN, "method": None, "path": None, "query": None,
            "headers": CaseInsensitiveDict(), "body": b"", "form": None,
            "json": None, "auth": None, "recipient": None,
            "outcome": "close", "status": None, "response": None,
            "reason": None, "step": None, "connection": conn_id,
            "http_version": None, "time": started}


# failing(mode): the script step each mode answers with (retry_after
# filled in), or the mode itself for "close" and "hang".
_FAILURES = {"close": ("close",), "hang": ("hang",), "500": ("500",),
             "503": ("503",), "429": ("429", 1), "400": ("status", 400)}


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


def _api_match(api, want):
    if want is None:
        return True
    return api == want or api.startswith(want + ".")


class StandinBase:
    """One threaded HTTP/1.1 server on 127.0.0.1: connections, requests
    recorded, scripted outcomes, routing to the provider APIs that the
    classes of doubles/twilio.py, whatsapp.py and hook.py define."""

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
        # failing(mode): how every request is answered, or None (as
        # scripted).
        self._failure = None
        # Status callbacks, as Twilio makes them when a Messages request
        # carries StatusCallback: the MessageStatus values posted to it, in
        # this order (Twilio sends some twice and out of order), each
        # signed with X-Twilio-Signature; [] sends none.  An entry is a
        # MessageStatus, or (MessageStatus, ErrorCode) for a failed or
        # undelivered one (default 30003).  What each POST got back is in
        # callback_results: (status, HTTP code or error).
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

    def url(self, path=""):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def script(self, key, steps, then="ok"):
        """Outcomes for the next requests to recipient `key` (Twilio To,
        WhatsApp to, webhook message.to), one step a request; after them
        every request gets `then`. Replaces an earlier script for key."""
        norm = [_normalize_step(s) for s in steps]
        then = _normalize_step(then)
        with self._lock:
            self._scripts[key] = (norm, then)

    def failing(self, mode=None, retry_after=None):
        """From now on answer every request, whatever its recipient's
        script says, as a provider that cannot take it; None: as
        scripted again (a request hanging then is closed unanswered).

            "close"  each connection is closed as soon as it is accepted
                     (a kept-alive one at its next request), nothing
                     read or answered: curl sees an empty reply or a
                     reset
            "hang"   each request is read and never answered, until the
                     mode changes or the stand-in stops
            "500"    the API's own 500 (Twilio: code 20500)
            "503"    503, with Retry-After: retry_after when given
            "429"    the API's 429 (Twilio: code 20429, "Too Many
                     Requests"), Retry-After: retry_after or 1
            "400"    a permanent refusal: Twilio's 400 with code 21211
                     (not a valid phone number), the webhook's 400

        Every one is in requests: a connection closed at once with
        outcome "close" (api "unknown"), a hanging request with "hang"
        (recorded when it came), an answer with "error".  A request
        that breaks the published API is still answered as such (and
        listed in violations)."""
        if mode is None:
            step = None
        elif mode in _FAILURES:
            step = _FAILURES[mode]
            if retry_after is not None and mode in ("503", "429"):
                step = (mode, int(retry_after))
            elif retry_after is not None:
                raise ValueError("retry_after with failing(%r)" % mode)
        else:
            raise ValueError("bad failure mode %r" % (mode,))
        with self._cond:
            self._failure = step
            self._cond.notify_all()

    @property
    def attempts(self):
        """How many requests came, whatever their outcome, and
        connections closed at accept (failing("close"))."""
        with self._lock:
            return len(self._requests)

    def _accept_connection(self):
        """Whether to serve a connection just accepted; one refused is
        recorded (failing("close"))."""
        if self._failure != ("close",):
            return True
        self._record(_closed_record(time.time(), None))
        return False

    def _next_step(self, key):
        with self._lock:
            entry = self._scripts.get(key)
            if entry is None:
                return ("ok",)
            steps, then = entry
            if steps:
                return steps.pop(0)
            return then

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
        """Forget requests, violations, errors and scripts; delay_all = 0;
        no failure mode."""
        with self._lock:
            self._requests.clear()
            self._violations.clear()
            self._errors.clear()
            self._scripts.clear()
            self.delay_all = 0
            self._failure = None
            self._cond.notify_all()

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

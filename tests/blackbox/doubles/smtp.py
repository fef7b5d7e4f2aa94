"""
A real SMTP server for tests (aiosmtpd) on 127.0.0.1 and a free port.

It keeps every accepted message (envelope, raw bytes, and the message
parsed with email.policy.default), supports AUTH PLAIN/LOGIN without TLS
(auth_require_tls=False, loopback only), optional STARTTLS or implicit TLS
(SMTPS) with a throw-away self-signed certificate made by the `openssl`
command, and scripted failures per recipient:

    with SmtpSink(username="mailer", password="s3cret") as sink:
        sink.script("nobody@example.org", ["reject"])      # 550 at RCPT
        sink.script("busy@example.org", ["tempfail", "ok"])  # 451, then ok
        sink.script("spam@example.org", ["data-reject"])   # 554 at DATA
        ... msgspool config: sink.config("email") ...
        msg = sink.wait_for(1, timeout=10)[0]
        assert msg.message["Subject"] == "Hello"

or fail every message as a relay that cannot take mail now, whatever
the scripts say, until told otherwise:

    sink.failing("tempfail")    # 451 4.3.0 to every RCPT TO
    sink.failing("close")       # each connection closed at accept
    sink.failing("hang")        # accepted, never greeted
    sink.failing(None)          # as scripted again
    sink.attempts               # RCPT TOs seen, and connections cut

or, in a test module, `from doubles.smtp import smtp_sink` and take the
`smtp_sink` fixture.
"""

import asyncio
import atexit
import email
import email.policy
import logging
import shutil
import ssl
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

__all__ = ["SmtpSink", "Received", "smtp_sink", "make_cert", "OPENSSL"]

OPENSSL = shutil.which("openssl")
DATA_SIZE_LIMIT = 64 * 1024 * 1024

REPLIES = {
    "reject": ("rcpt", "550 5.1.1 no such user"),
    "tempfail": ("rcpt", "451 4.3.0 try again"),
    "data-reject": ("data", "554 5.6.0 message rejected"),
    "data-tempfail": ("data", "451 4.3.0 try again later"),
}

# aiosmtpd warns about AUTH without TLS on every connection; that is the
# point of a loopback test server.
logging.getLogger("mail.log").setLevel(logging.ERROR)

_cert_lock = threading.Lock()
_cert_dir = None


def make_cert():
    """(certfile, keyfile) of a self-signed certificate for localhost and
    127.0.0.1, made once per process with the openssl command."""
    global _cert_dir
    if OPENSSL is None:
        raise RuntimeError("no openssl command; TLS variants unavailable")
    with _cert_lock:
        if _cert_dir is None:
            d = Path(tempfile.mkdtemp(prefix="smtpsink-cert-"))
            atexit.register(shutil.rmtree, str(d), True)
            subprocess.run(
                [OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                 "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                check=True, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, timeout=30)
            _cert_dir = d
        return str(_cert_dir / "cert.pem"), str(_cert_dir / "key.pem")


class Received:
    """One accepted message."""

    def __init__(self, envelope, session, tls):
        self.mail_from = envelope.mail_from
        self.rcpt_tos = list(envelope.rcpt_tos)
        self.mail_options = list(envelope.mail_options)
        self.rcpt_options = list(envelope.rcpt_options)
        self.data = envelope.original_content      # raw bytes after DATA
        # Parsed with line ends as LF, so text parts read naturally; the
        # wire form (CRLF) stays in .data.
        self.message = email.message_from_bytes(
            self.data.replace(b"\r\n", b"\n"), policy=email.policy.default)
        self.peer = session.peer
        self.helo = session.host_name
        self.login = _text(getattr(session, "login_data", None))
        self.tls = tls
        self.time = time.time()

    @property
    def subject(self):
        return self.message["Subject"]

    @property
    def attachments(self):
        """[(filename, content type, bytes)] of the attachment parts."""
        out = []
        for part in self.message.iter_attachments() \
                if self.message.is_multipart() else ():
            out.extend(_attachments(part))
        return out

    def body(self, preferencelist=("plain", "html")):
        """The text of the preferred body part, or None."""
        part = self.message.get_body(preferencelist=preferencelist)
        return None if part is None else part.get_content()

    def __repr__(self):
        return "<Received from=%r to=%r subject=%r %d bytes>" % (
            self.mail_from, self.rcpt_tos, self.subject, len(self.data))


def _attachments(part):
    if part.is_multipart() and part.get_content_disposition() != \
            "attachment":
        out = []
        for sub in part.iter_parts():
            out.extend(_attachments(sub))
        return out
    if part.get_content_disposition() in ("attachment", "inline") \
            or part.get_filename():
        return [(part.get_filename(), part.get_content_type(),
                 part.get_payload(decode=True))]
    return []


def _text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v


class _Handler:
    def __init__(self, sink):
        self.sink = sink

    async def handle_MAIL(self, server, session, envelope, address,
                          mail_options):
        # AUTH is enforced here rather than by aiosmtpd's auth_required,
        # which warns on every connection when TLS is not required too.
        if self.sink.auth_required and not session.authenticated:
            return "530 5.7.0 Authentication required"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 2.1.0 OK"

    async def handle_RCPT(self, server, session, envelope, address,
                          rcpt_options):
        step = self.sink._next_step(address)
        self.sink._attempt()
        if step[0] == "delay":
            await asyncio.sleep(step[1])
            step = step[2]
        if step[0] == "rcpt":
            self.sink._refuse("rcpt", envelope, address, step[1])
            return step[1]
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        if step[0] == "data" and not hasattr(envelope, "sink_data_reply"):
            envelope.sink_data_reply = step[1]
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        reply = getattr(envelope, "sink_data_reply", None)
        if reply is not None:
            self.sink._refuse("data", envelope, list(envelope.rcpt_tos),
                              reply)
            return reply
        tls = server._tls_protocol is not None or self.sink.tls == "smtps"
        self.sink._accept(Received(envelope, session, tls))
        return "250 2.0.0 OK queued"


def _normalize_step(step):
    if isinstance(step, str):
        if step == "ok":
            return ("ok",)
        if step in REPLIES:
            return REPLIES[step]
    if isinstance(step, (tuple, list)) and step:
        step = tuple(step)
        if step[0] == "ok" and len(step) == 1:
            return step
        if step[0] in ("rcpt", "data") and len(step) == 2 \
                and isinstance(step[1], str) and step[1][:1] in "45":
            return step
        if step[0] == "delay" and len(step) in (2, 3) \
                and isinstance(step[1], (int, float)):
            nxt = _normalize_step(step[2]) if len(step) == 3 else ("ok",)
            return ("delay", step[1], nxt)
    raise ValueError("bad smtp script step %r" % (step,))


class _SMTP(SMTP):
    """aiosmtpd's SMTP session, cut short at its start when the sink is
    failing("close") (the connection closed) or failing("hang") (held,
    never greeted, closed when the mode changes or the sink stops)."""

    _cut = False

    def connection_made(self, transport):
        sink = self.event_handler.sink
        mode = sink._failure
        if mode in ("close", "hang"):
            self._cut = True
            sink._attempt()
            if mode == "close":
                transport.abort()
            else:
                sink._hold(transport)
            return
        super().connection_made(transport)

    def data_received(self, data):
        if not self._cut:
            super().data_received(data)

    def eof_received(self):
        if self._cut:
            return False
        return super().eof_received()

    def connection_lost(self, error):
        if not self._cut:
            super().connection_lost(error)


class _Controller(Controller):
    """aiosmtpd's Controller, bound to port 0 (the kernel picks a free
    port, no race) and told the port it got."""

    def factory(self):
        return _SMTP(self.handler, **self.SMTP_kwargs)

    def _create_server(self):
        coro = self.loop.create_server(self._factory_invoker,
                                       host=self.hostname, port=0,
                                       ssl=self.ssl_context)

        async def bind():
            srv = await coro
            self.port = srv.sockets[0].getsockname()[1]
            return srv
        return bind()


class SmtpSink:
    """The SMTP test server. See the module docstring."""

    def __init__(self, *, username=None, password=None, auth_required=None,
                 tls=None, require_starttls=False, host="127.0.0.1",
                 data_size_limit=DATA_SIZE_LIMIT):
        if tls not in (None, "starttls", "smtps"):
            raise ValueError("tls must be None, 'starttls' or 'smtps'")
        self.username = username
        self.password = password
        self.auth_required = (username is not None if auth_required is None
                              else auth_required)
        self.tls = tls
        self.host = host
        self.port = None
        self.cafile = None
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._messages = []
        self._refused = []
        self._auth_attempts = []
        self._scripts = {}
        self._failure = None
        self._attempts = 0
        self._held = []
        kwargs = dict(hostname=host, port=0, server_hostname="sink.test",
                      data_size_limit=data_size_limit,
                      auth_require_tls=False,
                      ready_timeout=10)
        if username is not None:
            kwargs["authenticator"] = self._authenticate
        if tls is not None:
            cert, key = make_cert()
            self.cafile = cert
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(cert, key)
            if tls == "starttls":
                kwargs["tls_context"] = ctx
                kwargs["require_starttls"] = require_starttls
            else:
                kwargs["ssl_context"] = ctx
        self._controller = _Controller(_Handler(self), **kwargs)
        self._running = False

    # -- life ----------------------------------------------------------

    def start(self):
        if not self._running:
            self._controller.start()
            self.port = self._controller.port
            self._running = True
        return self

    def stop(self):
        if self._running:
            self.failing(None)
            self._controller.stop()
            self._running = False

    close = stop

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        scheme = "smtps" if self.tls == "smtps" else "smtp"
        return "%s://%s:%d" % (scheme, self.host, self.port)

    def config(self, section="email", starttls=None):
        """The msgspool [email] section for this sink (msgspool.conf(5))."""
        if starttls is None:
            starttls = "yes" if self.tls == "starttls" else "no"
        text = "[%s]\nprovider = smtp\nurl = %s\nstarttls = %s\n" % (
            section, self.url, starttls)
        if self.username is not None:
            text += "username = %s\npassword = %s\n" % (self.username,
                                                        self.password)
        return text

    # -- scripting -----------------------------------------------------

    def script(self, rcpt, steps, then="ok"):
        """Outcomes for the next RCPT TO of address rcpt (case-insensitive),
        one step a RCPT; after them every RCPT gets `then`. Steps: "ok",
        "reject" (550 5.1.1), "tempfail" (451 4.3.0), "data-reject" (554 at
        DATA), "data-tempfail" (451 at DATA), ("rcpt", "5xx text"),
        ("data", "4xx text"), ("delay", seconds[, step])."""
        norm = [_normalize_step(s) for s in steps]
        then = _normalize_step(then)
        with self._lock:
            self._scripts[rcpt.lower()] = (norm, then)

    def failing(self, mode=None):
        """From now on fail every message, whatever its recipient's
        script says: "tempfail" (451 4.3.0 to every RCPT TO), "close"
        (each connection closed as soon as it is accepted, before the
        greeting), "hang" (accepted and never greeted, until the mode
        changes or the sink stops); None: as scripted again."""
        if mode not in (None, "tempfail", "close", "hang"):
            raise ValueError("bad failure mode %r" % (mode,))
        with self._lock:
            self._failure = mode
            held, self._held = self._held, []
        if mode != "hang":
            for t in held:
                self._controller.loop.call_soon_threadsafe(t.abort)

    @property
    def attempts(self):
        """The tries of a message it saw: every RCPT TO (accepted or
        refused) and every connection cut short by failing("close") or
        ("hang")."""
        with self._lock:
            return self._attempts

    def _attempt(self):
        with self._cond:
            self._attempts += 1
            self._cond.notify_all()

    def _hold(self, transport):
        with self._lock:
            self._held.append(transport)

    def _next_step(self, address):
        with self._lock:
            if self._failure == "tempfail":
                return REPLIES["tempfail"]
            entry = self._scripts.get(address.lower())
            if entry is None:
                return ("ok",)
            steps, then = entry
            return steps.pop(0) if steps else then

    # -- records -------------------------------------------------------

    @property
    def messages(self):
        """Accepted messages (Received), oldest first (a copy)."""
        with self._lock:
            return list(self._messages)

    @property
    def refused(self):
        """Refusals: dicts {stage: rcpt|data, mail_from, rcpt, reply}."""
        with self._lock:
            return list(self._refused)

    @property
    def auth_attempts(self):
        """AUTH attempts: dicts {mechanism, login, success}."""
        with self._lock:
            return list(self._auth_attempts)

    def wait_for(self, n, timeout=10.0):
        """Wait until n messages were accepted; return them. Raises
        AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._messages) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        "smtpsink: waited %.1fs for %d message(s), got %d; "
                        "refused: %r" % (timeout, n, len(self._messages),
                                         self._refused[-5:]))
                self._cond.wait(min(left, 0.5))
            return list(self._messages)

    def reset(self):
        self.failing(None)
        with self._lock:
            self._messages.clear()
            self._refused.clear()
            self._auth_attempts.clear()
            self._scripts.clear()
            self._attempts = 0

    def _accept(self, rec):
        with self._cond:
            self._messages.append(rec)
            self._cond.notify_all()

    def _refuse(self, stage, envelope, rcpt, reply):
        with self._cond:
            self._refused.append({"stage": stage,
                                  "mail_from": envelope.mail_from,
                                  "rcpt": rcpt, "reply": reply})
            self._cond.notify_all()

    def _authenticate(self, server, session, envelope, mechanism, auth_data):
        ok = False
        login = None
        if isinstance(auth_data, LoginPassword):
            login = _text(auth_data.login)
            ok = (mechanism in ("PLAIN", "LOGIN")
                  and login == self.username
                  and _text(auth_data.password) == self.password)
        with self._lock:
            self._auth_attempts.append({"mechanism": mechanism,
                                        "login": login, "success": ok})
        return AuthResult(success=ok, handled=False, auth_data=auth_data)


try:
    import pytest
except ImportError:                     # pragma: no cover
    pytest = None

if pytest is not None:
    @pytest.fixture
    def smtp_sink():
        """A started SmtpSink without AUTH or TLS, stopped after the test."""
        with SmtpSink() as sink:
            yield sink
else:                                   # pragma: no cover
    smtp_sink = None

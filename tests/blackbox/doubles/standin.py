"""A local stand-in for the provider HTTP APIs msgspoold talks to.

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

or, for every request whatever its recipient, fail as a provider that
cannot take messages now (or at all) until told otherwise:

    server.failing("close")         # each connection closed at accept
    server.failing("hang")          # read, never answered
    server.failing("503", retry_after=5)    # or "500", "429", "400"
    server.failing(None)            # as scripted again
    server.attempts                 # requests and closed connections

A port that nothing listens on (connections refused) is
doubles/ports.py's RefusedPort.

Usage:

    with Standin() as server:
        cfg = server.twilio_config("sms")      # [sms] section for msgspool
        ...
        server.wait_for(1, timeout=10, api="twilio")
        assert server.violations == []

or, in a test module, `from doubles.standin import standin_server` and take the
`standin_server` fixture.

Only the Python standard library is used (pytest only for the fixture).
"""

from doubles.server import CaseInsensitiveDict, StandinBase  # noqa: F401
from doubles.server import (DEFAULT_TWILIO_FROM, DEFAULT_TWILIO_SID,  # noqa: F401
                            DEFAULT_TWILIO_TOKEN, DEFAULT_WA_PHONE_ID,
                            DEFAULT_WA_TOKEN)
from doubles.twilio import TwilioAPI
from doubles.whatsapp import WhatsAppAPI
from doubles.hook import HookAPI

__all__ = ["Standin", "standin_server", "CaseInsensitiveDict",
           "DEFAULT_TWILIO_FROM", "DEFAULT_WA_TOKEN"]


class Standin(TwilioAPI, WhatsAppAPI, HookAPI, StandinBase):
    """The provider stand-in. See the module docstring."""


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

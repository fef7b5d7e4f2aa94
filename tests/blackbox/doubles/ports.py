"""A port on 127.0.0.1 that nothing listens on: a provider that is down.

A TCP socket bound to a free port and never put to listen() holds the
port, so no other program of the suite is given it, and the kernel
answers every connection to it with a reset (ECONNREFUSED: curl's
"Couldn't connect to server", an SMPP connect that fails at once).

    with RefusedPort() as down:
        conf = "[route.dead]\\nprovider = http\\nurl = %s\\n" % \\
            down.url("/hook")

Only the Python standard library.
"""

import socket

__all__ = ["RefusedPort"]


class RefusedPort:
    """A held port that refuses every connection. See the module
    docstring."""

    def __init__(self, host="127.0.0.1"):
        self.host = host
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind((host, 0))
        self.port = self._sock.getsockname()[1]

    def url(self, path="", scheme="http"):
        return "%s://%s:%d%s" % (scheme, self.host, self.port, path)

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

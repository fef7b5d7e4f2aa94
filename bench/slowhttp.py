"""slowhttp.py: an HTTP/1.1 stand-in that answers every POST after a fixed
delay, with keep-alive, for make bench (the spooler's throughput against a
provider that takes 50 ms), and as a client's webhook receiver. asyncio,
so thousands can wait at once; counts requests, connections and the most
requests in flight, and with record keeps each request.  DeadHTTP, a
provider that is down: it resets every connection, or never answers."""
import asyncio
import json
import socket
import struct
import sys
import threading
import time


class SlowHTTP:
    def __init__(self, delay=0.05, host="127.0.0.1", record=False):
        self.delay = delay
        # With record: (time it came, head, body) of each request.
        self.recorded = [] if record else None
        self.host = host
        self.port = None
        self.requests = 0
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop = None
        self._server = None
        self._thread = None
        self._ready = threading.Event()

    async def _handle(self, reader, writer):
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                if self.recorded is not None:
                    self.recorded.append((time.time(), head, body))
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                await asyncio.sleep(self.delay)
                self.in_flight -= 1
                self.requests += 1
                body = b'{"ok":true}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json"
                             b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def _run(self):
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, self.host, 0, backlog=1024))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        # Every connection's task ended while the loop runs, not left
        # pending for the collector to end on a closed loop (each one
        # printed "Event loop is closed" at exit).
        self._server.close()
        tasks = asyncio.all_tasks(self._loop)
        for t in tasks:
            t.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("slowhttp did not start")
        return self

    def stop(self):
        if self._loop:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def url(self, path="/hook"):
        return "http://%s:%d%s" % (self.host, self.port, path)


class DeadHTTP(SlowHTTP):
    """A provider that cannot take a message: with mode "reset" it accepts
    each connection and resets it at once (as a port nothing listens on
    refuses it, but counted); with "silent" it accepts and never answers,
    until the client gives up.  connections counts the attempts, and
    times keeps when each came (time.time())."""

    def __init__(self, mode="reset", host="127.0.0.1"):
        if mode not in ("reset", "silent"):
            raise ValueError("mode %r" % mode)
        super().__init__(0, host)
        self.mode = mode
        self.times = []

    async def _handle(self, reader, writer):
        self.connections += 1
        self.times.append(time.time())
        try:
            if self.mode == "reset":
                # SO_LINGER 0: close sends a RST, not a FIN.
                writer.get_extra_info("socket").setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                # Read what comes, answer nothing, until the peer closes.
                while await reader.read(65536):
                    pass
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


if __name__ == "__main__":
    s = SlowHTTP(float(sys.argv[1]) if len(sys.argv) > 1 else 0.05).start()
    print(json.dumps({"url": s.url()}), flush=True)
    threading.Event().wait()

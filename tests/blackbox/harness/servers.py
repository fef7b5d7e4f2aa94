"""The web servers: each kind started on a free 127.0.0.1 port in front of
an instance, its logs, and requests to it."""

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

from harness.env import *  # noqa: F401,F403
from harness.env import _which  # noqa: F401


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


def userns_ok():
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
            if not userns_ok():
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
        # Never reuse a connection: a server closes an idle one after a
        # few seconds (lighttpd: 5), and a request sent on it just then
        # fails with RemoteDisconnected, at random, when a test paused
        # (a daemon run) between two requests.  busybox httpd closes
        # every connection anyway, without saying so.  So each request
        # has a session of its own, closed after it, on the server's
        # cookies (the console's login): one shared by the threads of a
        # test would be closed under a request of another thread.
        with requests.Session() as s:
            s.trust_env = False                 # no proxies, no netrc
            s.cookies = self.session.cookies
            return s.request(method, self.url(path), headers=h,
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

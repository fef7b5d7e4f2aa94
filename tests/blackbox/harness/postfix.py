"""
A private Postfix instance for the black-box tests, the way bench/postfix.py
runs one: its own config, queue and data directories under a base
directory, every service unchrooted, its master in the foreground as a child
of ours (`postfix start-fg`, under a child subreaper), its log in
BASE/maillog through postlogd, stopped with `postfix stop`.  Nothing of the
system's Postfix (/etc/postfix/main.cf, its queue, port 25) is used or
touched; Debian's master.cf is only read, reduced to the services a relay
needs.

    pf = Postfix(base, relayhost="[127.0.0.1]:2525",
                 main="recipient_delimiter = +\n...",
                 master="msgspool unix - n n - - pipe\n  flags=... argv=...\n",
                 maps={"transport": "bounces@acme.example msgspool:\n"})
    pf.start()          # its smtpd on 127.0.0.1:pf.port
    ...
    pf.stop()

maps are written to BASE/etc/NAME and compiled with postmap (hash:), so
main.cf may say `transport_maps = hash:{etc}/transport` ({etc} and {base}
are filled in).  Postfix must run as root (user postfix for its daemons);
missing() says why it cannot run here.  Standard library only.
"""

import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

SBIN = "/usr/sbin"
DAEMON_DIR = "/usr/lib/postfix/sbin"
QUEUES = ("maildrop", "incoming", "active", "deferred", "hold", "corrupt")
START_TIMEOUT = 30

# The services a relaying instance needs, from Debian's master.cf (local,
# virtual, lmtp, tlsmgr, the port 25 smtpd and the sample pipe transports
# are left out); ours adds one smtpd on a free 127.0.0.1 port.
KEEP = {("pickup", "unix"), ("cleanup", "unix"), ("qmgr", "unix"),
        ("rewrite", "unix"), ("bounce", "unix"), ("defer", "unix"),
        ("trace", "unix"), ("verify", "unix"), ("flush", "unix"),
        ("proxymap", "unix"), ("proxywrite", "unix"), ("smtp", "unix"),
        ("relay", "unix"), ("showq", "unix"), ("error", "unix"),
        ("retry", "unix"), ("discard", "unix"), ("anvil", "unix"),
        ("scache", "unix"), ("postlog", "unix-dgram")}

MASTER_CF_FALLBACK = """\
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""

# `postfix start-fg` runs under this: a child subreaper, so that the
# daemons master leaves behind when it stops are reaped here rather than by
# PID 1 (which, in some sandboxes, never reaps).
REAPER = r"""
import ctypes, os, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except Exception:
    pass
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
rc = 1
while True:
    try:
        p, st = os.wait()
    except ChildProcessError:
        break
    if p == pid:
        rc = os.waitstatus_to_exitcode(st)
sys.exit(rc)
"""

MAIN_CF = """\
compatibility_level = 3.6
queue_directory = {base}/spool
data_directory = {base}/data
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = mta.msgspool.test
mydomain = msgspool.test
myorigin = $mydomain
mydestination =
relay_domains =
local_recipient_maps =
local_transport = error:5.1.1 local delivery is disabled
alias_maps =
alias_database =
inet_interfaces = loopback-only
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
relayhost = {relayhost}
smtp_tls_security_level = none
smtpd_tls_security_level = none
biff = no
maillog_file_prefixes = {base}
maillog_file = {base}/maillog
in_flow_delay = 0s
# Bounded in time: whatever is deferred is tried again within seconds.
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
"""


def missing():
    """None when a private Postfix can run here, else why not."""
    for tool in ("postfix", "postconf", "postmap", "postqueue"):
        if not os.access(os.path.join(SBIN, tool), os.X_OK):
            return ("Postfix is not installed (no %s/%s; `make deps-test` "
                    "installs the postfix package)" % (SBIN, tool))
    if not os.access(os.path.join(DAEMON_DIR, "master"), os.X_OK):
        return "Postfix is not installed (no %s/master)" % DAEMON_DIR
    try:
        pwd.getpwnam("postfix")
    except KeyError:
        return "no user postfix (is the postfix package installed?)"
    if os.geteuid() != 0:
        return "a Postfix instance is started as root only"
    return None


def _run(args, env, timeout=60):
    return subprocess.run([str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def reduced_master_cf():
    """Debian's /etc/postfix/master.cf reduced to KEEP, all unchrooted."""
    try:
        text = open("/etc/postfix/master.cf").read()
    except OSError:
        return MASTER_CF_FALLBACK
    entries, cur = [], None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0].isspace():
            if cur is not None:
                cur.append(line)
            continue
        cur = [line]
        entries.append(cur)
    out, seen = [], set()
    for e in entries:
        f = e[0].split()
        if len(f) < 8 or (f[0], f[1]) not in KEEP:
            continue
        f[4] = "n"
        seen.add((f[0], f[1]))
        out.append(" ".join(f[:8]) + (" " + " ".join(f[8:]) if f[8:] else ""))
        out.extend(e[1:])
    if seen != KEEP:
        return MASTER_CF_FALLBACK
    return "\n".join(out) + "\n"


def open_path_for(path):
    """Give o+x to the directories above path (and path) that lack it, so
    that unprivileged users (postfix, a pipe transport's user) can reach
    it; returns [(dir, old mode)] for restore_modes()."""
    changed = []
    p = os.path.abspath(path)
    while True:
        st = os.stat(p)
        if not st.st_mode & stat.S_IXOTH:
            if st.st_uid != os.geteuid():
                raise PermissionError("%s cannot be searched by other users "
                                      "and is not ours to change" % p)
            os.chmod(p, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)
            changed.append((p, stat.S_IMODE(st.st_mode)))
        parent = os.path.dirname(p)
        if parent == p:
            return changed
        p = parent


def restore_modes(changed):
    for p, mode in reversed(changed):
        try:
            os.chmod(p, mode)
        except OSError:
            pass


class Postfix:
    """One private instance; see the module docstring."""

    def __init__(self, base, relayhost, main="", master="", maps=None):
        self.base = os.path.abspath(str(base))
        self.etc = os.path.join(self.base, "etc")
        self.spool = os.path.join(self.base, "spool")
        self.maillog_path = os.path.join(self.base, "maillog")
        self.console = os.path.join(self.base, "postfix.console")
        self.relayhost = relayhost
        self.main_extra = main
        self.master_extra = master
        self.maps = dict(maps or {})
        self.env = dict(os.environ, MAIL_CONFIG=self.etc)
        self.env.pop("MSGSPOOL_CONFIG", None)
        self.port = None
        self.master = None
        self._restore = []

    def _fill(self, text):
        return text.replace("{base}", self.base).replace("{etc}", self.etc)

    # -- life
    def _configure(self, port):
        with open(os.path.join(self.etc, "main.cf"), "w") as f:
            f.write(MAIN_CF.format(base=self.base, relayhost=self.relayhost))
            f.write(self._fill(self.main_extra))
        with open(os.path.join(self.etc, "master.cf"), "w") as f:
            f.write(reduced_master_cf())
            f.write("127.0.0.1:%d inet n - n - - smtpd\n" % port)
            f.write(self._fill(self.master_extra))
        for name, text in self.maps.items():
            path = os.path.join(self.etc, name)
            with open(path, "w") as f:
                f.write(text)
            r = _run([os.path.join(SBIN, "postmap"), "-c", self.etc,
                      "hash:" + path], self.env)
            if r.returncode != 0:
                raise RuntimeError("postmap %s: %s" % (name, r.stdout +
                                                       r.stderr))
        r = _run([os.path.join(SBIN, "postfix"), "-c", self.etc, "check"],
                 self.env)
        if r.returncode != 0:
            raise RuntimeError("postfix check failed (rc %d): %s\n%s" % (
                r.returncode, (r.stdout + r.stderr)[-2000:],
                self.maillog()[-2000:]))

    def start(self):
        if missing():
            raise RuntimeError(missing())
        os.makedirs(self.etc, exist_ok=True)
        os.makedirs(self.spool, exist_ok=True)
        data = os.path.join(self.base, "data")
        os.makedirs(data, mode=0o700, exist_ok=True)
        pw = pwd.getpwnam("postfix")
        os.chown(data, pw.pw_uid, pw.pw_gid)
        os.chmod(self.base, 0o755)
        self._restore = open_path_for(self.base)
        last = ""
        try:
            for _ in range(3):
                port = free_port()
                self._configure(port)
                last = self._start_master(port)
                if last is None:
                    self.port = port
                    return self
                self._stop_master()
        except BaseException:
            self.stop()
            raise
        self.stop()
        raise RuntimeError("Postfix did not start: " + last)

    def _start_master(self, port):
        with open(self.console, "ab") as out:
            self.master = subprocess.Popen(
                [sys.executable or "/usr/bin/python3", "-c", REAPER,
                 os.path.join(SBIN, "postfix"), "-c", self.etc, "start-fg"],
                env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.master.poll() is not None:
                return "postfix start-fg exited %s: %s" % (
                    self.master.returncode, self.diagnostics())
            if self._master_running() and port_open(port) and \
                    os.path.exists(os.path.join(self.spool, "public",
                                                "pickup")):
                return None
            time.sleep(0.1)
        return "no smtpd on 127.0.0.1:%d after %ds: %s" % (
            port, START_TIMEOUT, self.diagnostics())

    def _master_running(self):
        """master -t exits 0 when no master of this instance runs."""
        try:
            return _run([os.path.join(DAEMON_DIR, "master"), "-c", self.etc,
                         "-t"], self.env, timeout=10).returncode != 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _kill_leftovers(self):
        """SIGKILL this instance's processes only: those whose environment
        names our config directory (master exports MAIL_CONFIG)."""
        tag = ("MAIL_CONFIG=%s" % self.etc).encode()
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    if tag in f.read().split(b"\0"):
                        os.kill(int(d), signal.SIGKILL)
            except OSError:
                pass

    def stop(self):
        self._stop_master()
        restore_modes(self._restore)
        self._restore = []

    def _stop_master(self):
        m, self.master = self.master, None
        if m is not None:
            if m.poll() is None:
                try:
                    _run([os.path.join(SBIN, "postfix"), "-c", self.etc,
                          "stop"], self.env, timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            try:
                m.wait(15)  # the reaper exits once every daemon is gone
            except subprocess.TimeoutExpired:
                self._kill_leftovers()
                try:
                    m.wait(10)
                except subprocess.TimeoutExpired:
                    m.kill()
                    m.wait(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def remove(self):
        shutil.rmtree(self.base, ignore_errors=True)

    # -- queue and log
    def flush(self):
        """postqueue -f: deferred mail is tried again now."""
        return _run([os.path.join(SBIN, "postqueue"), "-c", self.etc, "-f"],
                    self.env, timeout=30)

    def queued(self):
        """{queue: number of files} of the queue directories."""
        out = {}
        for q in QUEUES:
            out[q] = sum(len(files) for _, _, files in
                         os.walk(os.path.join(self.spool, q)))
        return out

    def queue_listing(self):
        try:
            r = _run([os.path.join(SBIN, "postqueue"), "-c", self.etc, "-p"],
                     self.env, timeout=30)
            return r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired) as e:
            return str(e)

    def maillog(self):
        try:
            with open(self.maillog_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def deliveries(self, to):
        """The maillog's delivery lines (status=...) for recipient to."""
        pat = re.compile(r" to=<%s>.* status=" % re.escape(to))
        return [ln for ln in self.maillog().splitlines() if pat.search(ln)]

    def diagnostics(self):
        try:
            console = open(self.console, errors="replace").read()[-2000:]
        except OSError:
            console = ""
        return ("\n--- postfix console ---\n%s\n--- maillog ---\n%s\n"
                "--- queue %s ---\n%s" % (console, self.maillog()[-6000:],
                                          self.queued(),
                                          self.queue_listing()[-2000:]))

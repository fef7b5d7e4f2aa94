"""Postfix as the reference for msgspool's spool-to-SMTP delivery.

start_smtp_sink(workdir) -> (proc, port)
    Postfix's smtp-sink on 127.0.0.1:PORT (backlog 1000), dropped to user
    nobody, run with -c: it prints running counters ("sess=N quit=N mesg=N",
    one update per "." / QUIT / session end, unbuffered, separated by CR) to
    workdir/smtp-sink.counters.  sink_messages(proc) reads the latest mesg=
    count, so a caller can count what arrived; postfix_delivery() uses it too
    (as a delta) when the sink was started here.

postfix_delivery(workdir, sink_port, n=10000) -> dict
    A private Postfix instance (own config, queue and data directories under
    workdir/postfix-XXXX, relayhost = [127.0.0.1]:sink_port, no local
    delivery, inet_interfaces = loopback-only, its log in maillog there
    through postlogd; `postfix -c DIR check` passes).  Its master runs in the
    foreground as our child (postfix start-fg) and is stopped with postfix
    stop.  n small messages (one recipient each, ~500 bytes, like msgspool's
    bench emails) are injected untimed over 4 SMTP sessions to a smtpd that
    listens on 127.0.0.1:free port for that purpose only (sendmail -bs, no
    listener, is the fallback; it is ~3x slower, as all goes through the one
    pickup process); a header_checks rule puts every message on hold.  Then
    all are released at once (postsuper -H ALL moves hold -> deferred,
    postqueue -f flushes deferred -> incoming and wakes qmgr) and the clock
    runs from the release until the queue directories are empty; Postfix's
    log must then show status=sent for all n, and the sink's counter is
    checked too when the sink was started here.  Returns {"n", "seconds",
    "msgs_per_s", "note"} or {"error": reason}.

Postfix's delivery knobs are left at their defaults, which are, in 3.7:
default_destination_concurrency_limit = 20 (at most 20 parallel smtp
deliveries to the single next hop [127.0.0.1]:port), initial_destination_
concurrency = 5 (slow start), default_process_limit = 100,
default_destination_recipient_limit = 50, smtp_connection_cache_on_demand =
yes (SMTP connections to the sink are reused), qmgr_message_active_limit =
20000.  Two settings differ from a stock install, neither touching delivery:
in_flow_delay = 0s (with mail parked on hold qmgr hands out no flow tokens,
and the default 1s would throttle injection), and all services run
unchrooted (chroot column n) so that nothing has to be copied into the queue
directory.  Postfix fsyncs every queue file it writes (in cleanup), and moves
files between queue directories with rename().

Postfix's processes run as user postfix, which must be able to reach the
queue directory: directories above it that lack the search (x) bit for
others, such as a tempfile.mkdtemp() directory, get o+x for the run and have
their mode restored afterwards.

Standard library only; run with /usr/bin/python3.
"""
import concurrent.futures
import os
import pwd
import re
import signal
import smtplib
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

SBIN = "/usr/sbin"
_SINKS = {}             # port -> counters file, for the sinks started here

# The services a relaying instance needs (KEEP, with MASTER_CF_FALLBACK
# when Debian's master.cf is not there) and the child subreaper `postfix
# start-fg` runs under (REAPER): the test harness's, one definition.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "blackbox"))
from harness.postfix import (KEEP, MASTER_CF_FALLBACK, REAPER,  # noqa: E402,F401
                             free_port as _free_port,
                             open_path_for as _open_path_for_postfix,
                             port_open as _port_open,
                             reduced_master_cf as _master_cf)

QUEUES = ("maildrop", "incoming", "active", "deferred", "hold")


# ---------------------------------------------------------------- smtp-sink





def start_smtp_sink(workdir):
    """smtp-sink on 127.0.0.1:free port; returns (proc, port) once it accepts."""
    os.makedirs(workdir, exist_ok=True)
    counters = os.path.join(workdir, "smtp-sink.counters")
    err = os.path.join(workdir, "smtp-sink.err")
    for _ in range(3):
        port = _free_port()
        cmd = [os.path.join(SBIN, "smtp-sink"), "-c"]
        if os.geteuid() == 0:
            cmd += ["-u", "nobody"]     # required when run as root
        cmd += ["127.0.0.1:%d" % port, "1000"]
        with open(counters, "wb") as out, open(err, "wb") as e:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=e)
        deadline = time.time() + 10
        while time.time() < deadline and proc.poll() is None:
            if _port_open(port):
                proc.counters = counters
                _SINKS[port] = counters
                return proc, port
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    raise RuntimeError("smtp-sink did not start: %s" % open(err, errors="replace").read()[-300:])


def _count_file(path):
    """Latest mesg= in an smtp-sink -c counters file (0 if none yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read().decode("ascii", "replace")
    except OSError:
        return None
    m = re.findall(r"mesg=(\d+)", tail)
    return int(m[-1]) if m else 0


def sink_messages(proc):
    """Messages smtp-sink has received so far (its -c counter)."""
    return _count_file(proc.counters)


# ---------------------------------------------------------------- Postfix

def _run(args, timeout=60, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          stdin=kw.pop("stdin", subprocess.DEVNULL), **kw)




def _main_cf(base, sink_port):
    return """\
compatibility_level = 3.6
queue_directory = {base}/spool
data_directory = {base}/data
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = bench.msgspool.test
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
relayhost = [127.0.0.1]:{port}
smtp_tls_security_level = none
biff = no
maillog_file_prefixes = {base}
maillog_file = {base}/maillog
in_flow_delay = 0s
header_checks = regexp:{base}/etc/hold_checks
""".format(base=base, port=sink_port)


def _message(i):
    return ("From: Bench <hello@example.com>\n"
            "To: user%d@example.org\n"
            "Subject: Welcome, user %d\n"
            "Message-ID: <bench-%d@bench.msgspool.test>\n"
            "Date: %s\n"
            "MIME-Version: 1.0\n"
            "Content-Type: text/html; charset=utf-8\n"
            "X-Bench: postfix\n"
            "\n"
            "<html><body><p>Hello user %d,</p><p>your account is ready.</p>"
            "<p>This is a small message of a few hundred bytes, one recipient, "
            "as in msgspool's SMTP benchmark.</p></body></html>\n"
            % (i, i, i, time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime()), i))


def _queue_count(spool):
    total = 0
    for q in QUEUES:
        for _, _, files in os.walk(os.path.join(spool, q)):
            total += len(files)
    return total


def _count_in(spool, q):
    return sum(len(f) for _, _, f in os.walk(os.path.join(spool, q)))


def _maildrop_names(spool):
    try:
        return sorted(os.listdir(os.path.join(spool, "maildrop")))[:5]
    except OSError:
        return []


def _maillog_counts(path):
    c = {"sent": 0, "deferred": 0, "bounced": 0}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = re.search(r" status=(sent|deferred|bounced) ", line)
                if m:
                    c[m.group(1)] += 1
    except OSError:
        pass
    return c


def _maillog_problems(path, k=3):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if re.search(r"(fatal|panic|error|warning):| status=(deferred|bounced) ", line):
                    out.append(line.strip())
    except OSError:
        pass
    return " | ".join(out[-k:])




def _master_running(confdir, env):
    """master -t exits 0 when no master of this instance is running."""
    try:
        return _run([os.path.join("/usr/lib/postfix/sbin", "master"), "-c", confdir, "-t"],
                    timeout=10, env=env).returncode != 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _kill_leftovers(confdir, spool, master_alive):
    """SIGKILL this instance's processes only: its master (from its pid file,
    only while master -t says it runs) and any process whose environment
    names our config directory (master exports MAIL_CONFIG to its children)."""
    pids = set()
    if master_alive:
        try:
            pids.add(int(open(os.path.join(spool, "pid", "master.pid")).read().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
    tag = ("MAIL_CONFIG=%s" % confdir).encode()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if tag in open("/proc/%s/environ" % d, "rb").read().split(b"\0"):
                    pids.add(int(d))
            except OSError:
                pass
    pids.discard(os.getpid())
    killed = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass
    return killed


def _smtp_over_pipe(confdir, env, numbers, timeout):
    """Submit one message per number through `sendmail -bs` (Postfix's smtpd in
    stand-alone mode on stdin/stdout, no listener); None or an error text."""
    p = subprocess.Popen([os.path.join(SBIN, "sendmail"), "-C", confdir, "-bs"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    watchdog = threading.Timer(timeout, p.kill)     # bounds every blocking read
    watchdog.start()
    try:
        def reply(expect):
            while True:
                line = p.stdout.readline()
                if not line:
                    raise RuntimeError("sendmail -bs closed the connection")
                if line[3:4] != b"-":
                    break
            if not line[:1] == expect:
                raise RuntimeError("sendmail -bs answered %r" % line.strip())

        def cmd(line, expect):
            p.stdin.write(line + b"\r\n")
            p.stdin.flush()
            reply(expect)

        reply(b"2")
        cmd(b"HELO bench.msgspool.test", b"2")
        for i in numbers:
            cmd(b"MAIL FROM:<hello@example.com>", b"2")
            cmd(b"RCPT TO:<user%d@example.org>" % i, b"2")
            cmd(b"DATA", b"3")
            body = _message(i).replace("\n", "\r\n").encode()   # no line starts with "."
            p.stdin.write(body + b".\r\n")
            p.stdin.flush()
            reply(b"2")
        cmd(b"QUIT", b"2")
        p.stdin.close()
        p.wait(30)
        return None
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        return "%s: %s" % (type(e).__name__, e)
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait(5)


def _smtp_session(port, numbers, timeout):
    """Submit one message per number over one SMTP session to our smtpd."""
    try:
        s = smtplib.SMTP("127.0.0.1", port, local_hostname="bench.msgspool.test",
                         timeout=timeout)
        try:
            for i in numbers:
                s.sendmail("hello@example.com", ["user%d@example.org" % i],
                           _message(i).replace("\n", "\r\n"))
        finally:
            s.quit()
        return None
    except (OSError, smtplib.SMTPException) as e:
        return "%s: %s" % (type(e).__name__, e)


def _inject(confdir, env, n, inject_port, streams=4):
    """n messages over `streams` parallel SMTP sessions to the instance's
    loopback smtpd; if that listener is not there, over sendmail -bs."""
    chunks = [range(k, n, streams) for k in range(streams)]
    timeout = max(120.0, n / 20.0)
    if _port_open(inject_port):
        how = "SMTP to 127.0.0.1:%d" % inject_port
        job = lambda c: _smtp_session(inject_port, c, 60)
    else:
        how = "sendmail -bs"
        job = lambda c: _smtp_over_pipe(confdir, env, c, timeout)
    with concurrent.futures.ThreadPoolExecutor(streams) as ex:
        errors = [e for e in ex.map(job, chunks) if e]
    return "%d x %s" % (streams, how), (errors[0] if errors else None)


def postfix_delivery(workdir, sink_port, n=10000):
    postfix = os.path.join(SBIN, "postfix")
    for tool in ("postfix", "postconf", "sendmail", "postqueue", "postsuper"):
        if not os.path.exists(os.path.join(SBIN, tool)):
            return {"error": "%s not installed (apt-get install -y postfix)" % tool}
    try:
        pwd.getpwnam("postfix")
    except KeyError:
        return {"error": "no postfix user (is the postfix package installed?)"}
    os.makedirs(workdir, exist_ok=True)
    base = tempfile.mkdtemp(prefix="postfix-", dir=workdir)
    os.chmod(base, 0o755)
    confdir = os.path.join(base, "etc")
    spool = os.path.join(base, "spool")
    maillog = os.path.join(base, "maillog")
    os.makedirs(confdir)
    os.makedirs(spool)
    os.makedirs(os.path.join(base, "data"), mode=0o700)
    pw = pwd.getpwnam("postfix")
    os.chown(os.path.join(base, "data"), pw.pw_uid, pw.pw_gid)
    env = dict(os.environ, MAIL_CONFIG=confdir)
    restore, master = [], None
    try:
        restore = _open_path_for_postfix(base)
        with open(os.path.join(confdir, "main.cf"), "w") as f:
            f.write(_main_cf(base, sink_port))
        inject_port = _free_port()
        with open(os.path.join(confdir, "master.cf"), "w") as f:
            f.write(_master_cf())
            # A loopback smtpd, used only to inject the messages before the run.
            f.write("127.0.0.1:%d inet n - n - - smtpd\n" % inject_port)
        with open(os.path.join(confdir, "hold_checks"), "w") as f:
            f.write("/^X-Bench: postfix/ HOLD\n")
        r = _run([postfix, "-c", confdir, "check"], timeout=60, env=env)
        if r.returncode != 0:
            return {"error": "postfix check failed (rc %d): %s %s" % (
                r.returncode, (r.stdout + r.stderr)[-400:], _maillog_problems(maillog))}
        with open(os.path.join(base, "postfix.console"), "wb") as out:
            master = subprocess.Popen([sys.executable or "/usr/bin/python3", "-c", REAPER,
                                       postfix, "-c", confdir, "start-fg"], env=env,
                                      stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while not (_master_running(confdir, env) and
                   os.path.exists(os.path.join(spool, "public", "pickup"))):
            if master.poll() is not None or time.time() > deadline:
                return {"error": "postfix start-fg failed (rc %s): %s %s" % (
                    master.poll(), open(os.path.join(base, "postfix.console"),
                                        errors="replace").read()[-300:],
                    _maillog_problems(maillog))}
            time.sleep(0.1)

        # Inject n messages; each lands on hold (header_checks HOLD).
        t_inj = time.time()
        how, err = _inject(confdir, env, n, inject_port)
        if err:
            return {"error": "injection failed: %s %s" % (err, _maillog_problems(maillog))}
        deadline = time.time() + max(120, n / 20)
        while True:
            counts = {q: _count_in(spool, q) for q in QUEUES}
            if counts["hold"] >= n and sum(counts.values()) == counts["hold"]:
                break
            if time.time() > deadline:
                return {"error": "injection did not settle on hold in time, queue %s: %s %s"
                        % (counts, _maildrop_names(spool), _maillog_problems(maillog))}
            time.sleep(0.1)
        inject_s = time.time() - t_inj
        if counts["hold"] != n:
            return {"error": "%d messages on hold, expected %d" % (counts["hold"], n)}

        sink_file = _SINKS.get(sink_port)
        sink_before = _count_file(sink_file) if sink_file else None

        # Release all at once and time until the queue is empty.
        t0 = time.time()
        r = _run([os.path.join(SBIN, "postsuper"), "-c", confdir, "-H", "ALL"], env=env)
        if r.returncode != 0:
            return {"error": "postsuper -H ALL failed: %s" % (r.stdout + r.stderr)[-300:]}
        t_h = time.time() - t0
        r = _run([os.path.join(SBIN, "postqueue"), "-c", confdir, "-f"], env=env)
        if r.returncode != 0:
            return {"error": "postqueue -f failed: %s" % (r.stdout + r.stderr)[-300:]}
        deadline = t0 + 300
        left = n
        while True:
            left = _queue_count(spool)
            if left == 0:
                break
            if time.time() > deadline:
                return {"error": "%d of %d messages still queued after 300 s (%s): %s"
                        % (left, n, {q: _count_in(spool, q) for q in QUEUES},
                           _maillog_problems(maillog))}
            time.sleep(0.01)
        seconds = time.time() - t0

        # Cross-checks (untimed): Postfix's log and, if started here, the sink.
        logged = _maillog_counts(maillog)
        deadline = time.time() + 10
        while logged["sent"] < n and time.time() < deadline:
            time.sleep(0.1)
            logged = _maillog_counts(maillog)
        received = None
        if sink_file:
            deadline = time.time() + 5
            while time.time() < deadline:
                received = _count_file(sink_file) - sink_before
                if received >= n:
                    break
                time.sleep(0.05)
        pq = _run([os.path.join(SBIN, "postqueue"), "-c", confdir, "-j"], env=env)
        if pq.stdout.strip():
            return {"error": "queue directories empty but postqueue -j lists mail: %s"
                    % pq.stdout[:300]}
        if logged["sent"] != n or logged["deferred"] or logged["bounced"]:
            return {"error": "maillog: %s for %d messages: %s"
                    % (logged, n, _maillog_problems(maillog))}
        note = ("Postfix %s, private instance, relayhost [127.0.0.1]:%d, default concurrency "
                "(20 per destination, slow start at 5, connection cache on); timed from "
                "release (postsuper -H ALL %.2f s + postqueue -f) to empty queue; "
                "maillog status=sent %d; %s; injection (untimed, %s) took %.1f s"
                % (_run([os.path.join(SBIN, "postconf"), "-h", "mail_version"],
                        env=env).stdout.strip(), sink_port, t_h, logged["sent"],
                   "smtp-sink counted %d" % received if received is not None
                   else "sink not started here, so not counted", how, inject_s))
        return {"n": n, "seconds": seconds, "msgs_per_s": n / seconds, "note": note}
    except Exception as e:  # a benchmark, never a crash
        return {"error": "%s: %s" % (type(e).__name__, e)}
    finally:
        if master is not None:
            if master.poll() is None:
                try:
                    _run([postfix, "-c", confdir, "stop"], timeout=30, env=env)
                except subprocess.TimeoutExpired:
                    pass
            try:
                master.wait(15)     # the reaper exits once every daemon is gone
            except subprocess.TimeoutExpired:
                _kill_leftovers(confdir, spool, _master_running(confdir, env))
                try:
                    master.wait(10)
                except subprocess.TimeoutExpired:
                    master.kill()
                    master.wait(5)
        for p, mode in reversed(restore):
            try:
                os.chmod(p, mode)
            except OSError:
                pass


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory(prefix="postfix-bench-") as w:
        sink, port = start_smtp_sink(os.path.join(w, "sink"))
        try:
            t = time.time()
            print(postfix_delivery(os.path.join(w, "postfix"), port, n))
            print("took %.1f s; smtp-sink received %s" % (time.time() - t, sink_messages(sink)))
        finally:
            sink.terminate()
            try:
                sink.wait(10)
            except subprocess.TimeoutExpired:
                sink.kill()
                sink.wait(5)

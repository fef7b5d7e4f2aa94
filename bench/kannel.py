"""Kannel's sendsms interface under wrk, for comparison with msgspool.

kannel_sendsms(workdir, duration=5, connections=16, threads=2) starts Debian's
bearerbox and smsbox (package kannel) with a kannel.conf generated in workdir,
loads http://127.0.0.1:PORT/cgi-bin/sendsms with wrk and returns
{"rps", "p50_ms", "p99_ms", "non2xx", "errors", "note"}, or {"error": reason}.

The setup, all on 127.0.0.1 and all files under workdir:
  - core group: admin, smsbox and the fake SMSC listen on loopback only;
    store-type = file (Kannel's store: every accepted message is appended to
    one file; Kannel flushes it with fflush(), it never fsyncs it).
  - one `fake` SMSC with no fakesmsc client connected: bearerbox accepts every
    message, keeps it in its outgoing queue (in memory) and in the store, and
    smsbox answers "3: Queued for later delivery" (HTTP 202).  With a client
    connected the answer would be "0: Accepted for delivery".
  - log-level 1 by default (info, which logs a line per sendsms request in
    smsbox.log, as production setups usually run; log_level=2 logs warnings
    only and gives Kannel about 30% more requests/s here); the console logs of
    both boxes go to files at warning level only (-v 2).

Standard library only; run with /usr/bin/python3.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

USER = "bench"
PASSWORD = "bench-pw"
ADMIN_PASSWORD = "bench-admin"
TO = "%2B4915112345678"
LOG_LEVEL = 1


def _free_ports(k):
    """k distinct free loopback ports (held open together so they differ)."""
    socks, ports = [], []
    try:
        for _ in range(k):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _stop(proc, grace=10):
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
    except OSError:
        pass


def _tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(l.strip() for l in f.readlines()[-n:])
    except OSError:
        return ""


def _ms(s):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", s)
    if not m:
        return None
    v, unit = float(m.group(1)), m.group(2)
    return {"us": v / 1000.0, "ms": v, "s": v * 1000.0, "m": v * 60000.0}[unit]


def parse_wrk(out):
    """Requests/sec, 50%/99% latency (ms), non-2xx responses and socket errors."""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"^\s*50%\s+(\S+)", out, re.M)
    p99 = re.search(r"^\s*99%\s+(\S+)", out, re.M)
    if not (rps and p50 and p99):
        return None
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors:(.*)", out)
    errors = sum(int(x) for x in re.findall(r"(\d+)", sock.group(1))) if sock else 0
    return {"rps": float(rps.group(1)), "p50_ms": _ms(p50.group(1)),
            "p99_ms": _ms(p99.group(1)),
            "non2xx": int(non2xx.group(1)) if non2xx else 0, "errors": errors}


def _write_conf(d, admin_port, smsbox_port, fake_port, sendsms_port, log_level):
    conf = os.path.join(d, "kannel.conf")
    with open(conf, "w") as f:
        f.write("""\
group = core
admin-port = {admin_port}
admin-interface = 127.0.0.1
admin-password = {admin_pw}
admin-deny-ip = "*.*.*.*"
admin-allow-ip = "127.0.0.1"
smsbox-port = {smsbox_port}
smsbox-interface = 127.0.0.1
box-deny-ip = "*.*.*.*"
box-allow-ip = "127.0.0.1"
store-type = file
store-location = "{d}/kannel.store"
log-file = "{d}/bearerbox.log"
log-level = {lvl}
access-log = "{d}/access.log"

group = smsc
smsc = fake
smsc-id = fake
port = {fake_port}
our-host = 127.0.0.1
connect-allow-ip = "127.0.0.1"

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = {smsbox_port}
sendsms-port = {sendsms_port}
sendsms-interface = 127.0.0.1
global-sender = 4915100000000
log-file = "{d}/smsbox.log"
log-level = {lvl}

group = sendsms-user
username = {user}
password = {pw}
""".format(d=d, admin_port=admin_port, admin_pw=ADMIN_PASSWORD,
           smsbox_port=smsbox_port, fake_port=fake_port,
           sendsms_port=sendsms_port, lvl=log_level, user=USER, pw=PASSWORD))
    return conf


def _get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace").strip()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace").strip()


def _store_messages(d):
    """Kannel's own count of messages in its store (admin status.txt)."""
    try:
        port = int(open(os.path.join(d, "admin.port")).read())
        _, body = _get("http://127.0.0.1:%d/status.txt?password=%s"
                       % (port, ADMIN_PASSWORD), timeout=5)
        m = re.search(r"store size (\d+)", body)
        return int(m.group(1)) if m else None
    except (OSError, ValueError):
        return None


def kannel_sendsms(workdir, duration=5, connections=16, threads=2, log_level=LOG_LEVEL):
    """See the module doc.  log_level: Kannel's log-level for both boxes (0 debug,
    1 info = a line per request, 2 warning); 2 gives Kannel about 30% more rps."""
    for tool in ("bearerbox", "smsbox", "wrk"):
        if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin"):
            return {"error": "%s not installed (apt-get install -y kannel wrk)" % tool}
    bearerbox = shutil.which("bearerbox", path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))
    smsbox = shutil.which("smsbox", path="/usr/sbin:/usr/bin:" + os.environ.get("PATH", ""))
    os.makedirs(workdir, exist_ok=True)
    d = tempfile.mkdtemp(prefix="kannel-", dir=workdir)
    admin_port, smsbox_port, fake_port, sendsms_port = _free_ports(4)
    with open(os.path.join(d, "admin.port"), "w") as f:
        f.write(str(admin_port))
    conf = _write_conf(d, admin_port, smsbox_port, fake_port, sendsms_port, log_level)
    url = ("http://127.0.0.1:%d/cgi-bin/sendsms?username=%s&password=%s&to=%s&text=bench"
           % (sendsms_port, USER, PASSWORD, TO))
    bb = sb = None
    bb_out = open(os.path.join(d, "bearerbox.console"), "w")
    sb_out = open(os.path.join(d, "smsbox.console"), "w")
    try:
        bb = subprocess.Popen([bearerbox, "-v", "2", conf], cwd=d, stdin=subprocess.DEVNULL,
                              stdout=bb_out, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while not _port_open(smsbox_port):
            if bb.poll() is not None or time.time() > deadline:
                return {"error": "bearerbox did not start (rc %s): %s"
                        % (bb.poll(), _tail(os.path.join(d, "bearerbox.console")))}
            time.sleep(0.1)
        sb = subprocess.Popen([smsbox, "-v", "2", conf], cwd=d, stdin=subprocess.DEVNULL,
                              stdout=sb_out, stderr=subprocess.STDOUT)
        # Wait (bounded) until sendsms answers with an accept.
        deadline = time.time() + 20
        status, body = None, ""
        while True:
            if sb.poll() is not None:
                return {"error": "smsbox exited (rc %s): %s"
                        % (sb.returncode, _tail(os.path.join(d, "smsbox.console")))}
            if _port_open(sendsms_port):
                try:
                    status, body = _get(url)
                    if 200 <= status < 300:
                        break
                except OSError as e:
                    status, body = None, str(e)
            if time.time() > deadline:
                return {"error": "sendsms did not accept within 20 s: %s %s"
                        % (status, body[:200])}
            time.sleep(0.2)
        if not re.match(r"^[03]:", body):
            return {"error": "unexpected sendsms answer: %s %s" % (status, body[:200])}
        first = "%d %s" % (status, body)
        cmd = ["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % duration,
               "--latency", "--timeout", "10s", url]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
        except subprocess.TimeoutExpired:
            return {"error": "wrk did not finish within %d s" % (duration + 60)}
        with open(os.path.join(d, "wrk.out"), "w") as f:
            f.write(r.stdout + r.stderr)
        res = parse_wrk(r.stdout)
        if res is None:
            return {"error": "could not parse wrk output (rc %d): %s"
                    % (r.returncode, (r.stdout + r.stderr)[-300:])}
        stored = _store_messages(d)
        total = re.search(r"(\d+) requests in", r.stdout)
        res["note"] = ("Kannel 1.4 bearerbox+smsbox, GET sendsms, answer '%s'; fake SMSC with "
                       "no client so messages are queued in memory and in store-type=file "
                       "(appended, fflush only, never fsynced); %s wrk requests, %s messages "
                       "in the store after the run; log-level %d"
                       % (first, total.group(1) if total else "?",
                          stored if stored is not None else "?", log_level))
        return res
    except Exception as e:  # a benchmark, never a crash
        return {"error": "%s: %s" % (type(e).__name__, e)}
    finally:
        _stop(sb)
        _stop(bb)
        bb_out.close()
        sb_out.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="kannel-bench-") as w:
        t0 = time.time()
        print(kannel_sendsms(w, duration=int(sys.argv[1]) if len(sys.argv) > 1 else 5))
        print("took %.1f s" % (time.time() - t0))

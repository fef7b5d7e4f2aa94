"""make bench: msgspool side by side with the limits of this machine and
with Kannel and Postfix, in one run, on 127.0.0.1.

Figures are ratios against baselines measured in the same run, because the
machine is shared and noisy.  Prints a table and writes bench/results.md.
These are benchmarks, not tests: nothing here fails the build.

    /usr/bin/python3 bench/run.py [--quick] [--only cgi,fcgi,...]
        [--dump FILE] [--from FILE] [--results PATH] [--record]
        [--baseline DIR]

run.py measures (the servers it runs are in instance.py); report.py
writes the markdown from what it measured.
"""
import argparse
import base64
import hashlib
import json
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
# What make built: the programs and the bench's own baselines
# (MSGSPOOL_BUILD, the Makefile's O, default build/).
BUILD = ROOT / (os.environ.get("MSGSPOOL_BUILD") or "build")
BIN = BUILD / "bench"
sys.path.insert(0, str(BENCH))

from instance import CLIENT, KEY, Instance, Lighttpd, LighttpdFcgi, ulid  # noqa: E402
from report import median, merge, render  # noqa: E402
from slowhttp import DeadHTTP, SlowHTTP  # noqa: E402


def stop_proc(p):
    """Stop a process we started: SIGTERM, then SIGKILL after 10 s."""
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def mkdir(path):
    """path, a directory made if it was none."""
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path)


def small_pdf(size):
    """A valid-looking PDF of about size bytes."""
    head = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"
    pad = b"% " + b"x" * 76 + b"\n"
    body = head + pad * ((size - len(head) - 20) // len(pad))
    return body + b"trailer\n<<>>\n%%EOF\n"



# wrk's threads (lua_twilio gives each its share of the forms).
WRK_THREADS = 2


def wrk(url, duration, script=None, connections=16, threads=WRK_THREADS):
    """Run wrk; returns rps, p50/p99 in ms, and non-2xx/error counts."""
    cmd = ["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % duration,
           "--latency", "--timeout", "10s"]
    if script:
        cmd += ["-s", str(script)]
    out = subprocess.run(cmd + [url], capture_output=True, text=True,
                         timeout=duration + 60).stdout

    def ms(s):
        m = re.match(r"([\d.]+)(us|ms|s)", s)
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v

    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", out)
    res = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
           "requests": int(done.group(1)),
           "seconds": float(done.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1,
                                               "m": 60}[done.group(3)],
           "p50_ms": ms(re.search(r"\s50%\s+(\S+)", out).group(1)),
           "p99_ms": ms(re.search(r"\s99%\s+(\S+)", out).group(1)),
           "non2xx": int((re.search(r"Non-2xx or 3xx responses: (\d+)", out) or [0, 0])[1]),
           "errors": sum(int(x) for x in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))}
    return res


def wrk_count(url, duration, script=None):
    """How many requests wrk completed in duration (for the long runs)."""
    r = wrk(url, duration, script)
    return int(r["rps"] * duration)


def lua_post(path, body, work, header=None, key=KEY):
    """A wrk script posting body as the bench client (or the client of
    key); with header, that header has a value of its own on every
    request (the script's request(): a tag of this script and its load,
    wrk's thread, a count)."""
    p = Path(work) / ("%s.lua" % abs(hash(path + str(len(body)) + (header or "") + key)))
    lua = ('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
           'wrk.headers["X-API-KEY"] = "%s"\nwrk.body = %s\n'
           % (key, json.dumps(body.decode() if isinstance(body, bytes) else body)))
    if header:
        lua += ('local threads, n = 0, 0\n'
                'local tag = string.format("%s-%%x", os.time())\n'
                'function setup(thread)\n'
                '  threads = threads + 1\n'
                '  thread:set("tid", threads)\n'
                'end\n'
                'function request()\n'
                '  n = n + 1\n'
                '  wrk.headers["%s"] = string.format("%%s-%%d-%%d", tag, tid, n)\n'
                '  return wrk.format()\n'
                'end\n' % (ulid(), header))
    p.write_text(lua)
    return p


def probe(url, body, key=KEY, headers=None, reply=False):
    """One POST of body as the bench client (or the client of key; no
    X-API-KEY when key is None; headers in place of a JSON body's, when
    given), or a GET when body is None: the reply's status and headers,
    and its body too when reply is true."""
    req = urllib.request.Request(url, data=body, headers=headers or dict(
        {"Content-Type": "application/json"}, **({"X-API-KEY": key} if key else {})))
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            out = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        out = e.code, e.headers, e.read()
    return out if reply else out[:2]



def alternating(cases, rounds, duration, after=None):
    """wrk on each of cases, (name, url, script, inst), in turn, rounds
    times, inst's spool cleared after each run: two rows a few seconds
    apart on a noisy disk differ by more than what they compare, and
    rounds that alternate them share the noise.  Every other round runs
    them in reverse order, so none always follows the same neighbour.
    Every run's wrk result, by name; after(name, inst), when given, is
    called on each run's spool before it is cleared, its dict added to
    the run's result.  A case whose inst is None writes nothing: no
    spool is cleared after it."""
    runs = {name: [] for name, _, _, _ in cases}
    for i in range(rounds):
        for name, url, script, inst in (cases if i % 2 == 0 else cases[::-1]):
            runs[name].append(wrk(url, duration, script))
            time.sleep(0.5)
            if after:
                runs[name][-1].update(after(name, inst))
            if inst is not None:
                inst.clear()
    return runs


# Rounds of what a rate and an Idempotency-Key cost: the rate's target
# (5 %) is finer than the noise of one round on a shared disk.
COST_ROUNDS = 5

# A client rate that no row reaches (lib/http/rate.c takes any N from 1 up to
# what a long holds; these rows run at a few thousand a second): every
# reply is a 202 and what is measured is the counting alone.
RATE = "1000000/s"


def costs(srv, inst, lim, linst, sms, work, rounds, duration):
    """What a client's rate and an Idempotency-Key cost POST
    /sms/v1/deliver, each in rounds alternating with the route without
    it.  srv and lim are servers (CGI or FastCGI) of the same client over
    inst and linst, whose config gives the client the rate RATE."""
    path = "/sms/v1/deliver"
    status, headers = probe(lim.url(path), sms)
    policy = headers.get("RateLimit-Policy") if status == 202 else None
    linst.clear()
    plain = lua_post(path, sms, work)
    rate = alternating([("without", srv.url(path), plain, inst),
                        ("with", lim.url(path), plain, linst)], rounds, duration)
    # Both sides give a header a new value every request, so wrk does the
    # same for each; only one of them is an Idempotency-Key.
    idem = alternating([("without", srv.url(path),
                         lua_post(path, sms, work, "X-Bench-Seq"), inst),
                        ("with", srv.url(path),
                         lua_post(path, sms, work, "Idempotency-Key"), inst)],
                       rounds, duration)
    return {"rounds": rounds, "seconds": duration, "rows": [
        {"name": "a client rate, `rate = %s` (never reached)" % RATE,
         "runs": rate, "target": 0.95, "policy": policy},
        {"name": "an Idempotency-Key, a new one every request",
         "runs": idem, "target": None}]}



def cgitime(prog, env, body, work, n):
    bf = Path(work) / "body"
    bf.write_bytes(body)
    e = dict(env, CONTENT_LENGTH=str(len(body)))
    out = subprocess.run([str(BIN / "cgitime"), str(n), str(bf), str(prog)],
                         env=e, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        return {"error": out.stderr.strip()}
    return {k: float(v) for k, v in (x.split("=") for x in out.stdout.split())}


CGI_PAIR_ROUNDS = 3


def bench_cgi(work, quick, cgi_dir):
    inst = Instance(Path(work) / "cgi")
    srv = Lighttpd(inst, cgi_dir, BIN / "noop")
    # The same client with a rate, for what counting it costs.
    linst = Instance(Path(work) / "cgi-rate", "[client.%s]\nrate = %s\n" % (CLIENT, RATE))
    dur = 3 if quick else 8
    sms = json.dumps({"recipient": "+4915112345678", "messageBody": "bench"}).encode()
    ott = json.dumps({"payload": [{"recipient": "49151%08d" % i, "templateID": "order",
                                   "templateParameters": ["Ann", "A-%d" % i], "channelType": 1}
                                  for i in range(100)]}).encode()
    pdf = small_pdf(100 * 1024)
    email = json.dumps({"templateId": "welcome", "payload": [
        {"recipient": "ann@example.com", "fields": {"name": "Ann"}}],
        "attachments": [{"attachmentName": "terms.pdf",
                         "content": base64.b64encode(pdf).decode()}]}).encode()
    cases = [
        ("no-op CGI (fork+exec limit)", "/noop", None, "noop", b"", "GET"),
        ("GET /ping", "/ping", None, "ping", b"", "GET"),
        ("naive durable C CGI (read body, tmp file, fsync, rename, fsync dir)",
         "/naive", sms, "naive", sms, "POST"),
        ("POST /sms/v1/deliver", "/sms/v1/deliver", sms, "sms-deliver", sms, "POST"),
        ("POST /ott/v1/deliver (batch of 100)", "/ott/v1/deliver", ott, "ott-deliver", ott, "POST"),
        ("POST /deliver (email, 100 KiB PDF)", "/deliver", email, "email-deliver", email, "POST"),
    ]
    rows = []
    base_env = {"REQUEST_METHOD": "GET", "MSGSPOOL_CONFIG": str(inst.conf),
                "HTTP_X_API_KEY": KEY, "CONTENT_TYPE": "application/json",
                "PATH": "/usr/bin:/bin"}
    try:
        for name, path, body, prog, tbody, method in cases:
            script = lua_post(path, body, work) if body else None
            r = wrk(srv.url(path), dur, script)
            time.sleep(0.5)
            inst.clear()
            env = dict(base_env, REQUEST_METHOD=method)
            t = cgitime(srv.cgi / prog, env, tbody, work, 100 if quick else 300)
            inst.clear()
            rows.append(dict(r, name=name, prog=prog, **t))
        # The target against the naive CGI compares two rows a few
        # seconds apart on a noisy disk: rounds alternate the two, and
        # the ratio is of their medians.
        runs = alternating([(prog, srv.url(path), lua_post(path, sms, work), inst)
                            for prog, path in (("naive", "/naive"),
                                               ("sms-deliver", "/sms/v1/deliver"))],
                           CGI_PAIR_ROUNDS, min(dur, 5))
        pair = {k: [r["rps"] for r in v] for k, v in runs.items()}
        med = {k: median(v) for k, v in pair.items()}
        lsrv = Lighttpd(linst, cgi_dir, BIN / "noop")
        try:
            cost = costs(srv, inst, lsrv, linst, sms, work, COST_ROUNDS, min(dur, 5))
        finally:
            lsrv.stop()
        for r in rows:
            if r["prog"] == "sms-deliver":
                r["pair"] = pair
                r["vs_naive"] = med["sms-deliver"] / med["naive"] if med["naive"] else 0
                r["costs"] = cost
    finally:
        srv.stop()
    # Diagnostic, not a target: the same sms-deliver with its spool on
    # tmpfs, where fsync costs nothing (and nothing is durable).  The gap
    # to the row above is what the two fsyncs of msgspool-spool(5),
    # Queueing, cost on this disk.
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        shm = Path(tempfile.mkdtemp(prefix="msgspool-bench-", dir="/dev/shm"))
        try:
            tinst = Instance(shm / "cgi")
            tsrv = Lighttpd(tinst, cgi_dir, BIN / "noop")
            try:
                r = wrk(tsrv.url("/sms/v1/deliver"), dur,
                        lua_post("/sms/v1/deliver", sms, work))
                time.sleep(0.5)
                tinst.clear()
                t = cgitime(tsrv.cgi / "sms-deliver",
                            dict(base_env, REQUEST_METHOD="POST",
                                 MSGSPOOL_CONFIG=str(tinst.conf)),
                            sms, work, 100 if quick else 300)
                rows.append(dict(r, name="POST /sms/v1/deliver, spool on tmpfs "
                                 "(diagnostic: no fsync cost, not durable)",
                                 prog="diagnostic", **t))
            finally:
                tsrv.stop()
        finally:
            shutil.rmtree(shm, ignore_errors=True)
    noop = rows[0]["rps"]
    for r in rows:
        r["ratio"] = r["rps"] / noop if noop else 0
    return rows


BASELINE_ROUNDS = 9


def bench_baseline(work, quick, base):
    """POST /sms/v1/deliver of this build and of the CGI programs of
    another (base: a build directory holding cgi-bin/, e.g. an older
    commit's, built by its own make), each under its own lighttpd over its
    own instance, in rounds that alternate them: what a change of the tree
    did to the route, in one run.  Their req/s by round and the ratio of
    the medians, this build over base."""
    # Its target (5 %) is finer than a round's noise on a shared disk: in
    # a full run more rounds, shorter, as the suppress section's.
    dur, rounds = 3, 3 if quick else BASELINE_ROUNDS
    sms = json.dumps({"recipient": "+4915112345678", "messageBody": "bench"}).encode()
    cases, servers = [], []
    try:
        for name, cgi_dir in (("this", BUILD / "cgi-bin"),
                              ("base", Path(base).resolve() / "cgi-bin")):
            inst = Instance(Path(work) / ("baseline-" + name))
            srv = Lighttpd(inst, cgi_dir, BIN / "noop")
            servers.append(srv)
            cases.append((name, srv.url("/sms/v1/deliver"),
                          lua_post("/sms/v1/deliver", sms, work), inst))
        runs = alternating(cases, rounds, dur)
    finally:
        for srv in servers:
            srv.stop()
    rps = {k: [r["rps"] for r in v] for k, v in runs.items()}
    med = {k: median(v) for k, v in rps.items()}
    return {"base": str(base), "rps": rps, "median": med, "seconds": dur,
            "ratio": med["this"] / med["base"] if med["base"] else 0,
            "this_rev": revision(ROOT),
            "base_rev": revision(Path(base).resolve().parent)}


def revision(tree):
    """The commit of the git tree (a work tree, or a build directory's
    parent), "+" when it has changes not committed; None when it is
    none."""
    try:
        p = subprocess.run(["git", "-C", str(tree), "describe", "--always",
                            "--dirty=+", "--abbrev=7"],
                           capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return p.stdout.strip() or None if p.returncode == 0 else None


FCGI_WORKERS = (1, 2, 4, 8, 16)
FCGI_ROUNDS = 3


def bench_fcgi(work, quick, cgi_rows):
    """FastCGI mode: msgspool-fcgi under lighttpd (mod_fastcgi) next to the
    no-op FastCGI responder under the same config; POST /sms/v1/deliver by
    the number of workers; the email and OTT routes, CGI (cgi_rows) vs
    FastCGI; the workers' RSS before and after a long run."""
    inst = Instance(Path(work) / "fcgi")
    linst = Instance(Path(work) / "fcgi-rate", "[client.%s]\nrate = %s\n" % (CLIENT, RATE))
    noop_dir = Path(work) / "noop-sbin"
    noop_dir.mkdir(exist_ok=True)
    os.symlink(BIN / "noop-fcgi", noop_dir / "msgspool-fcgi")
    dur = 3 if quick else 8
    sms = json.dumps({"recipient": "+4915112345678", "messageBody": "bench"}).encode()
    sms_lua = lua_post("/sms/v1/deliver", sms, work)
    out = {"sweep": [], "rows": []}
    # The workers: every accepted message is synced, so concurrency is
    # what lets the journal commit several at once.  Rounds interleave the
    # counts, and each count's median is taken: the disk of a shared
    # machine is noisy.
    runs = {n: [] for n in FCGI_WORKERS}
    disk = []
    for rnd in range(FCGI_ROUNDS):
        for n in FCGI_WORKERS:
            srv = LighttpdFcgi(inst, BUILD / "fcgi", n, "sweep%d" % rnd)
            try:
                runs[n].append(wrk(srv.url("/sms/v1/deliver"), min(dur, 5), sms_lua))
            finally:
                srv.stop()
            time.sleep(0.5)
            inst.clear()
        # The disk's own limit for the same promise, in the same round:
        # bench/durable queues as msgspool-spool(5) says, with nothing else.
        d = subprocess.run([str(BIN / "durable"), str(DEFAULT_FCGI_WORKERS),
                            str(min(dur, 5)), str(inst.spool)],
                           capture_output=True, text=True, timeout=120)
        inst.clear()
        if d.returncode == 0:
            disk.append(float(d.stdout.split("=")[1]))
    out["disk_rps"] = sorted(disk)[len(disk) // 2] if disk else None
    out["disk_all"] = disk
    for n in FCGI_WORKERS:
        rs = sorted(runs[n], key=lambda r: r["rps"])
        med = rs[len(rs) // 2]
        out["sweep"].append(dict(med, workers=n, all=[r["rps"] for r in runs[n]]))
    best = max(out["sweep"], key=lambda r: r["rps"])
    out["best_workers"] = best["workers"]
    workers = DEFAULT_FCGI_WORKERS
    ott = json.dumps({"payload": [{"recipient": "49151%08d" % i, "templateID": "order",
                                   "templateParameters": ["Ann", "A-%d" % i], "channelType": 1}
                                  for i in range(100)]}).encode()
    pdf = small_pdf(100 * 1024)
    email = json.dumps({"templateId": "welcome", "payload": [
        {"recipient": "ann@example.com", "fields": {"name": "Ann"}}],
        "attachments": [{"attachmentName": "terms.pdf",
                         "content": base64.b64encode(pdf).decode()}]}).encode()
    noop = LighttpdFcgi(inst, noop_dir, workers, "noop")
    try:
        base_ping = wrk(noop.url("/ping"), dur)
        base_sms = wrk(noop.url("/sms/v1/deliver"), dur, sms_lua)
    finally:
        noop.stop()
    srv = LighttpdFcgi(inst, BUILD / "fcgi", workers)
    try:
        ping = wrk(srv.url("/ping"), dur)
        out["rows"].append(dict(ping, name="GET /ping", base=base_ping["rps"]))
        r = wrk(srv.url("/sms/v1/deliver"), dur, sms_lua)
        out["rows"].append(dict(r, name="POST /sms/v1/deliver", base=base_sms["rps"]))
        out["sms_rps"] = r["rps"]
        inst.clear()
        # Messages a second when a client sends them 100 a request: one
        # durable commit (msgspool-spool(5)) for all of a request's files.
        smsb = json.dumps({"messages": [{"recipient": "+49151%08d" % i,
                                         "messageBody": "bench %d" % i}
                                        for i in range(100)]}).encode()
        r = wrk(srv.url("/sms/v1/deliver/batch"), dur,
                lua_post("/sms/v1/deliver/batch", smsb, work))
        time.sleep(0.5)
        inst.clear()
        out["rows"].append(dict(r, name="POST /sms/v1/deliver/batch (100 SMS)"))
        out["batch_msgs"] = r["rps"] * 100 if not (r["non2xx"] or r["errors"]) else None
        for name, path, body, prog in (
                ("POST /ott/v1/deliver (batch of 100)", "/ott/v1/deliver", ott, "ott-deliver"),
                ("POST /deliver (email, 100 KiB PDF)", "/deliver", email, "email-deliver")):
            r = wrk(srv.url(path), dur, lua_post(path, body, work))
            time.sleep(0.5)
            inst.clear()
            cgi = next((c["rps"] for c in cgi_rows if c["prog"] == prog), None)
            out["rows"].append(dict(r, name=name, cgi=cgi))
        lim = LighttpdFcgi(linst, BUILD / "fcgi", workers, "rate")
        try:
            out["costs"] = costs(srv, inst, lim, linst, sms, work, COST_ROUNDS, min(dur, 5))
        finally:
            lim.stop()
        # Nothing of a request stays: the workers' RSS after a warm-up
        # and after a long run of GET /ping and POST /sms/v1/deliver.
        wrk(srv.url("/sms/v1/deliver"), 2, sms_lua)
        inst.clear()
        rss0 = srv.workers_rss_kib()
        t0 = time.time()
        n = 0
        # A million requests in a full run (bounded in time all the same).
        want, deadline = (100000 if quick else 1000000), time.time() + 300
        while n < want and time.time() < deadline:
            n += wrk_count(srv.url("/sms/v1/deliver"), dur, sms_lua)
            inst.clear()
            n += wrk_count(srv.url("/ping"), dur)
        out["rss"] = {"requests": n, "seconds": time.time() - t0, "before_kib": rss0,
                      "after_kib": srv.workers_rss_kib()}
    finally:
        srv.stop()
        inst.clear()
    out["base_ping"] = base_ping
    out["base_sms"] = base_sms
    return out


def wait_until(pred, timeout, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def bench_http(work, quick):
    n = 2000 if quick else 10000
    srv = SlowHTTP(0.05).start()
    inst = Instance(Path(work) / "http", "concurrency = 128\n[sms]\nprovider = http\nurl = %s\n"
                    % srv.url())
    inst.queue_sms(n)
    t0 = time.time()
    p = subprocess.run([str(BUILD / "spooler" / "msgspoold"), "-c", str(inst.conf), "--once"],
                       capture_output=True, timeout=600)
    dt = time.time() - t0
    sent = inst.count("sent")
    srv.stop()
    return {"n": n, "sent": sent, "seconds": dt, "msgs_per_s": sent / dt,
            "connections": srv.connections, "max_in_flight": srv.max_in_flight,
            "rc": p.returncode}


def bench_smpp(work, quick):
    """Messages a second through one SMPP session (the smpp provider) to
    the stand-in SMSC of the tests (tests/blackbox/doubles/smsc.py, which
    checks every PDU), answering each submit_sm after 5 ms, by window."""
    sys.path.insert(0, str(ROOT / "tests" / "blackbox"))
    from doubles.smsc import Smsc
    n = 1000 if quick else 5000
    rows = []
    for window in (10, 100):
        with Smsc(system_id="bench", password="bench") as smsc:
            smsc.latency = 0.005
            # Enough claims in flight for the window to fill.
            conc = max(16, window + window // 4)
            inst = Instance(Path(work) / ("smpp%d" % window),
                            "concurrency = %d\n" % conc +
                            smsc.config(window=window))
            inst.queue_sms(n)
            t0 = time.time()
            p = subprocess.run([str(BUILD / "spooler" / "msgspoold"), "-c",
                                str(inst.conf), "--once"],
                               capture_output=True, timeout=600)
            dt = time.time() - t0
            sent = inst.count("sent")
            rows.append({"window": window, "n": n, "sent": sent,
                         "seconds": dt, "msgs_per_s": sent / dt,
                         "max_outstanding": smsc.max_outstanding,
                         "violations": len(smsc.violations),
                         "rc": p.returncode})
            # Kept until the run's end, as Instance.clear says: removing
            # its files slowed the next row's creates (window 100 ran at
            # half the rate of window 10 after it).
    return rows


def smtp_round(inst, n, daemon):
    """n emails queued in inst, sent by the msgspoold at daemon (--once)."""
    inst.queue_email(n)
    t0 = time.time()
    subprocess.run([str(daemon), "-c", str(inst.conf), "--once"],
                   capture_output=True, timeout=900)
    dt = time.time() - t0
    return {"n": n, "sent": inst.count("sent"), "failed": inst.count("failed"),
            "deferred": inst.count("deferred"), "seconds": dt,
            "msgs_per_s": inst.count("sent") / dt}


def bench_smtp(work, quick, base=None):
    """Rounds of ours then Postfix's, each on a fresh spool and queue: this
    machine's disk is shared and its speed swings from minute to minute, so
    each round's ratio compares neighbours and the verdict takes the
    median ratio.  With base (--baseline DIR), the msgspoold of that build
    too in each round, before ours in every other round: (ours, theirs,
    base's) a round."""
    import postfix
    n = 2000 if quick else 10000
    rounds = 1 if quick else 3
    sink, port = postfix.start_smtp_sink(str(Path(work) / "sink"))
    conf = ("concurrency = 16\n[email]\nprovider = smtp\n"
            "url = smtp://127.0.0.1:%d\nstarttls = no\n" % port)
    out = []
    try:
        for r in range(rounds):
            b = None
            if base and r % 2:
                b = smtp_round(Instance(Path(work) / ("smtpbase%d" % r), conf), n,
                               Path(base) / "spooler" / "msgspoold")
            ours = smtp_round(Instance(Path(work) / ("smtp%d" % r), conf), n,
                              BUILD / "spooler" / "msgspoold")
            if base and not r % 2:
                b = smtp_round(Instance(Path(work) / ("smtpbase%d" % r), conf), n,
                               Path(base) / "spooler" / "msgspoold")
            # Kept until the run's end (Instance.clear): removing 10,000
            # files here slowed the creates of the Postfix round after it.
            theirs = postfix.postfix_delivery(str(Path(work) / ("postfix%d" % r)), port, n)
            out.append((ours, theirs, b) if b else (ours, theirs))
            if "error" in theirs:
                break
    finally:
        sink.terminate()
        try:
            sink.wait(10)
        except subprocess.TimeoutExpired:
            sink.kill()
    return out


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def bench_scale(work, waiting):
    inst = Instance(Path(work) / ("scale%d" % waiting))
    inst.queue_sms(waiting, state="deferred", due=time.time() + 86400)
    d = subprocess.Popen([str(BUILD / "spooler" / "msgspoold"), "-c", str(inst.conf)],
                         stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)         # its first pass over deferred/
        pickups = []
        for _ in range(5):
            before = inst.count("sent")
            t0 = time.time()
            inst.queue_sms(1)
            ok = wait_until(lambda: inst.count("sent") > before, 10, 0.002)
            pickups.append(time.time() - t0 if ok else float("inf"))
            time.sleep(0.2)
        rss = rss_kib(d.pid)
    finally:
        d.terminate()
        d.wait(10)
    pickups.sort()
    return {"waiting": waiting, "rss_kib": rss, "pickup_s": pickups[len(pickups) // 2]}


def bench_kannel(work, quick, sms_rps_lighttpd):
    import kannel
    return kannel.kannel_sendsms(str(Path(work) / "kannel"), duration=3 if quick else 8)


# Issue 22: a client's suppression list at acceptance, inbound messages
# through the receipts route, message.received webhooks from msgspoold.

# The sms list of the client LISTED (a large sender's, after years of
# STOPs and bounces); the bench client's is empty.
SUPPRESSED = 100000
LISTED = "listed"
LISTED_KEY = "bench-listed-key-0123456789"
# Its target (5 %) is finer than a round's noise on a shared disk: in a
# full run more rounds, shorter, than the costs of section 1.
SUPPRESS_ROUNDS = 9


def suppress_checks(srv, listed):
    """That the lists are what the rows say, through the server: one of
    LISTED's suppressions answered by GET /suppressions/sms/ADDRESS (and
    none of the bench client's), a message to it refused 422, and the
    rows' recipient, on neither list, accepted for both clients.  The
    statuses by name, and whether all are as they should be."""
    one = listed[len(listed) // 2]
    url = srv.url("/suppressions/sms/" + urllib.parse.quote(one, safe=""))
    got = {}
    st, _, body = probe(url, None, key=LISTED_KEY, reply=True)
    got["GET one of them (listed)"] = st
    ok = st == 200 and json.loads(body or b"{}").get("address") == one
    got["GET it (bench)"] = probe(url, None)[0]
    sms = {"recipient": one, "messageBody": "bench"}
    got["POST to it (listed)"] = probe(srv.url("/sms/v1/deliver"),
                                       json.dumps(sms).encode(), key=LISTED_KEY)[0]
    sms["recipient"] = "+4915112345678"
    got["POST to the rows' recipient (listed)"] = probe(
        srv.url("/sms/v1/deliver"), json.dumps(sms).encode(), key=LISTED_KEY)[0]
    got["POST to it (bench)"] = probe(srv.url("/sms/v1/deliver"),
                                      json.dumps(sms).encode())[0]
    ok = ok and list(got.values()) == [200, 404, 422, 202, 202]
    return {"statuses": got, "ok": ok}


def lookup_us(dirs, name, n=20000, rounds=3):
    """What the list's size can change in a lookup: name (on no list)
    looked up by one open in each of dirs, (row, directory), a list's
    directory (suppressions/CLIENT/sms/) and an empty one on the same
    file system: microseconds an open, the median of rounds alternating
    them, by row.  What the rows' ratio cannot show under the disk's
    noise."""
    took = {row: [] for row, _ in dirs}
    for _ in range(rounds):
        for row, d in dirs:
            dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            try:
                t0 = time.perf_counter()
                for _ in range(n):
                    try:
                        os.close(os.open(name, os.O_RDONLY | os.O_NOFOLLOW,
                                         dir_fd=dfd))
                    except FileNotFoundError:
                        pass
                took[row].append((time.perf_counter() - t0) * 1e6 / n)
            finally:
                os.close(dfd)
    return {row: median(v) for row, v in took.items()}


def bench_suppress(work, quick):
    """POST /sms/v1/deliver for a client whose sms suppression list holds
    SUPPRESSED entries against the same route for a client whose list is
    empty, the same recipient (on neither list), over one spool, in
    alternating rounds, under CGI and under msgspool-fcgi: what the
    lookup at acceptance (msgspool-spool(5), Suppressions: one open
    whatever the list's size) costs a long list.  The lists are written
    as lib/spool/suppress.c lays them out (Instance.suppress: 100,000
    runs of msgspool suppress add would take minutes)."""
    dur, rounds = 3, COST_ROUNDS if quick else SUPPRESS_ROUNDS
    inst = Instance(Path(work) / "suppress")
    inst.add_key(LISTED, LISTED_KEY)
    listed = ["+4916%08d" % i for i in range(SUPPRESSED)]
    t0 = time.time()
    inst.suppress(LISTED, "sms", listed)
    out = {"entries": SUPPRESSED, "write_s": time.time() - t0,
           "rounds": rounds, "seconds": dur, "target": 0.95, "modes": [],
           "lookup_us": lookup_us((
               ("without", mkdir(Path(work) / "empty-list")),
               ("with", inst.spool / "suppressions" / LISTED / "sms")),
               "+4915112345678.json")}
    path = "/sms/v1/deliver"
    sms = json.dumps({"recipient": "+4915112345678", "messageBody": "bench"}).encode()
    without = lua_post(path, sms, work)
    with_ = lua_post(path, sms, work, key=LISTED_KEY)
    for mode in ("CGI", "msgspool-fcgi"):
        srv = (Lighttpd(inst, BUILD / "cgi-bin", BIN / "noop") if mode == "CGI"
               else LighttpdFcgi(inst, BUILD / "fcgi", DEFAULT_FCGI_WORKERS, "suppress"))
        try:
            checks = suppress_checks(srv, listed)
            inst.clear()
            runs = alternating([("without", srv.url(path), without, inst),
                                ("with", srv.url(path), with_, inst)],
                               rounds, dur)
        finally:
            srv.stop()
        out["modes"].append({"mode": mode, "checks": checks, "runs": runs})
    return out


# The Twilio account of the inbound rows, and the client's number.
TWILIO_SID = "AC" + "0123456789abcdef" * 2
TWILIO_TOKEN = "be9c4face0be9c4face0be9c4face0be"
PUBLIC_URL = "https://msg.example.com"
INBOUND_TO = "+15005550006"
INBOUND_ROUNDS = 3
# Signed forms, cycled by wrk's threads: more than a run posts, so that
# no MessageSid comes twice in one (every run has a spool of its own).
INBOUND_FORMS = 60000


def inbound_conf(extra=""):
    """The config of the inbound rows: the Twilio account whose auth
    token signs the forms, the public URL they are signed for, the
    bench client owning the number."""
    return ("public-url = %s\n%s[sms]\nprovider = twilio\naccount-sid = %s\n"
            "auth-token = %s\nfrom = %s\napi-base = http://127.0.0.1:9\n"
            "[client.%s]\ninbound = %s\n" % (PUBLIC_URL, extra, TWILIO_SID,
                                             TWILIO_TOKEN, INBOUND_TO, CLIENT,
                                             INBOUND_TO))


def twilio_forms(n):
    """n of Twilio's incoming-message webhook forms (as the stand-in of
    the tests posts them, doubles/twilio.py), each with a MessageSid of
    its own, signed as Twilio signs them (harness/receiptsign.py) for
    PUBLIC_URL/receipts/twilio: (X-Twilio-Signature, urlencoded body)."""
    sys.path.insert(0, str(ROOT / "tests" / "blackbox"))
    from harness.receiptsign import twilio_sig
    url = PUBLIC_URL + "/receipts/twilio"
    out = []
    for i in range(n):
        sid = "SM%032x" % random.getrandbits(128)
        form = {"ToCountry": "US", "ToState": "CA", "SmsMessageSid": sid,
                "NumMedia": "0", "ToCity": "", "FromZip": "", "SmsSid": sid,
                "FromState": "", "SmsStatus": "received", "FromCity": "",
                "Body": "Yes, Tuesday at 10 is fine (%d)" % i,
                "FromCountry": "DE", "To": INBOUND_TO, "ToZip": "",
                "NumSegments": "1", "MessageSid": sid, "AccountSid": TWILIO_SID,
                "From": "+49151%08d" % i, "ApiVersion": "2010-04-01"}
        out.append((twilio_sig(TWILIO_TOKEN, url, form),
                    urllib.parse.urlencode(form)))
    return out


def lua_twilio(forms, work):
    """A wrk script posting forms (twilio_forms), one after another:
    each of the WRK_THREADS threads reads its share of them (every
    WRK_THREADS-th line) at init and cycles through it."""
    data = Path(work) / "twilio-forms.txt"
    data.write_text("".join("%s\t%s\n" % f for f in forms))
    p = Path(work) / "twilio.lua"
    p.write_text(
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\n'
        'wrk.headers["User-Agent"] = "TwilioProxy/1.1"\n'
        'local threads, sigs, bodies, n, i = 0, {}, {}, 0, 0\n'
        'function setup(thread)\n'
        '  thread:set("tid", threads)\n'
        '  threads = threads + 1\n'
        'end\n'
        'function init(args)\n'
        '  local k = 0\n'
        '  for line in io.lines(%s) do\n'
        '    if k %% %d == tid then\n'
        '      local tab = line:find("\\t", 1, true)\n'
        '      n = n + 1\n'
        '      sigs[n] = line:sub(1, tab - 1)\n'
        '      bodies[n] = line:sub(tab + 1)\n'
        '    end\n'
        '    k = k + 1\n'
        '  end\n'
        'end\n'
        'function request()\n'
        '  i = i %% n + 1\n'
        '  wrk.headers["X-Twilio-Signature"] = sigs[i]\n'
        '  wrk.body = bodies[i]\n'
        '  return wrk.format()\n'
        'end\n' % (json.dumps(str(data)), WRK_THREADS))
    return p


def inbox_kept(inst):
    """The inbound messages inst's spool keeps, and their clients."""
    d = inst.spool / "inbox"
    if not d.is_dir():
        return []
    return [json.loads(Path(e.path).read_bytes()).get("client")
            for e in os.scandir(d)]


def bench_inbound(work, quick):
    """Inbound messages stored a second through POST /receipts/twilio
    (Twilio's signed incoming-message forms, a MessageSid of its own
    each), next to GET /ping of the same server, in alternating rounds,
    under CGI and under msgspool-fcgi: each request checks the
    signature, takes the MessageSid's index entry and keeps the message
    and its note durably before it answers (msgspool-spool(5), Inbound
    messages)."""
    dur = 3 if quick else 5
    inst = Instance(Path(work) / "inbound", inbound_conf())
    forms = twilio_forms(INBOUND_FORMS)
    script = lua_twilio(forms, work)
    out = {"rounds": INBOUND_ROUNDS, "seconds": dur, "forms": len(forms),
           "modes": []}

    def kept(name, inst):
        return {"kept": len(inbox_kept(inst))} if name == "inbound" else {}

    for mode in ("CGI", "msgspool-fcgi"):
        srv = (Lighttpd(inst, BUILD / "cgi-bin", BIN / "noop") if mode == "CGI"
               else LighttpdFcgi(inst, BUILD / "fcgi", DEFAULT_FCGI_WORKERS, "inbound"))
        try:
            # One of them, by hand: 200, TwiML, kept once, for the client.
            sig, body = twilio_forms(1)[0]
            st, h, reply = probe(srv.url("/receipts/twilio"), body.encode(), headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Twilio-Signature": sig}, reply=True)
            check = {"status": st, "type": h.get("Content-Type"),
                     "kept": inbox_kept(inst)}
            check["ok"] = (st == 200 and b"<Response" in reply and
                           check["kept"] == [CLIENT])
            inst.clear()
            runs = alternating([("ping", srv.url("/ping"), None, inst),
                                ("inbound", srv.url("/receipts/twilio"), script, inst)],
                               INBOUND_ROUNDS, dur, after=kept)
        finally:
            srv.stop()
        out["modes"].append({"mode": mode, "check": check, "runs": runs})
    return out


# The webhook receiver's secret (Standard Webhooks: whsec_, base64).
HOOK_SECRET = "whsec_" + base64.b64encode(b"the bench client's webhook secret").decode()


def hook_check(recorded, ids, kind="message.received"):
    """What the receiver got, against the messages ids (inbound ones by
    default): how many requests, distinct events, events of type kind of
    one of ids (each once), and correctly signed ones
    (harness/receiptsign.py)."""
    sys.path.insert(0, str(ROOT / "tests" / "blackbox"))
    from harness.receiptsign import stdwh_sig
    events, of, signed = set(), set(), 0
    for _, head, body in recorded:
        h = {}
        for line in head.decode("latin-1").split("\r\n")[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                h[k.strip().lower()] = v.strip()
        events.add(h.get("webhook-id"))
        try:
            doc = json.loads(body)
        except ValueError:
            continue
        if doc.get("type") == kind and \
                (doc.get("data") or {}).get("id") in ids:
            of.add(doc["data"]["id"])
        want = stdwh_sig(HOOK_SECRET, h.get("webhook-id", ""),
                         h.get("webhook-timestamp", ""), body)
        if want in h.get("webhook-signature", "").split(" "):
            signed += 1
    return {"requests": len(recorded), "events": len(events),
            "messages": len(of), "signed": signed}


def bench_received(work, quick):
    """message.received webhooks delivered a second by msgspoold to a
    receiver on 127.0.0.1 answering 200 at once: n inbound messages
    waiting in the inbox (written as the receipts program keeps them),
    timed from the daemon's start until the receiver has n, by
    concurrency (webhook transfers: a quarter of it)."""
    n = 2000 if quick else 10000
    limit = 120 if quick else 600
    rows = []
    for conc in (16, 128):
        hook = SlowHTTP(0, record=True).start()
        inst = Instance(Path(work) / ("received%d" % conc), inbound_conf(
            "concurrency = %d\n" % conc) + "webhook-url = %s\nwebhook-secret = %s\n"
            % (hook.url(), HOOK_SECRET))
        ids = set(inst.queue_inbound(n, CLIENT, INBOUND_TO))
        log = open(inst.base / "msgspoold.log", "wb")
        t0 = time.time()
        d = subprocess.Popen([str(BUILD / "spooler" / "msgspoold"), "-c", str(inst.conf)],
                             stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: hook.requests >= n or d.poll() is not None, limit, 0.01)
            dt = time.time() - t0
            # To the n-th request's coming, when it came.
            times = sorted(t for t, _, _ in hook.recorded)
            if len(times) >= n:
                dt = times[n - 1] - t0
        finally:
            stop_proc(d)
            log.close()
            hook.stop()
        got = hook_check(hook.recorded, ids)
        rows.append(dict(got, n=n, concurrency=conc, transfers=max(1, conc // 4),
                         seconds=dt, first_s=times[0] - t0 if times else None,
                         # The rate once they flow: from the first to the n-th.
                         flowing_per_s=(n - 1) / (times[n - 1] - times[0])
                         if len(times) >= n and times[n - 1] > times[0] else None,
                         per_s=got["messages"] / dt, timed_out=hook.requests < n,
                         rc=d.returncode, connections=hook.connections,
                         max_in_flight=hook.max_in_flight))
    return rows


# Issue 23: each client's list of its messages (GET /messages), the
# index the spool keeps of it, over a spool of 100,000 messages of 10
# clients written from the templates of a real run (bigspool.py).

LIST_CLIENTS = ["bench"] + ["bench%d" % i for i in range(1, 10)]
LIST_KEYS = dict([("bench", KEY)] + [("bench%d" % i, "bench-key-%d-0123456789" % i)
                                     for i in range(1, 10)])
# Its client whose receiver gets the webhooks of its sends.
HOOKED = "bench9"
LIST_ROUNDS = 3
# Sequential requests of each kind whose p50 is given.
LIST_LATENCY_N = 31
# GET /messages/{id} of this many of the bench client's messages, in turn.
LIST_SAMPLE = 1000
# The statuses of the states bigspool writes (conf/openapi.yaml, Status).
# "new-sent": written into new/, since sent by msgspoold (the file
# provider).
LIST_STATUS = {"new": "queued", "retrying": "retrying", "scheduled": "scheduled",
               "sent": "sent", "delivered": "delivered",
               "undelivered": "undelivered", "failed": "failed",
               "new-sent": "sent"}


def list_conf():
    """The config of the list section's spool, as the CGI programs read
    it: the Twilio account whose auth token signs the receipts (the
    messages were sent through it), the public URL they are signed for,
    the clients' keys."""
    return ("public-url = %s\n[sms]\nprovider = twilio\naccount-sid = %s\n"
            "auth-token = %s\nfrom = %s\napi-base = http://127.0.0.1:9\n"
            % (PUBLIC_URL, TWILIO_SID, TWILIO_TOKEN, INBOUND_TO))


def daemon_conf(inst, name, top="", sections=""):
    """A config of msgspoold over inst's spool, SMS through the file
    provider (into outbox/), so that what is measured is msgspoold's own
    work: top, its top-level keys; sections, more sections (a client's)."""
    p = inst.base / ("msgspoold-%s.conf" % name)
    p.write_text("spool = %s\nkeys = %s\ntemplates = %s\n%s[sms]\nprovider = file\n"
                 "[ott.1]\nprovider = file\n%s" % (
                     inst.spool, inst.base / "keys", inst.base / "templates",
                     top, sections))
    return p


def lua_get(paths, work, key=KEY, name="get"):
    """A wrk script of GETs of paths as the client of key, one after
    another: each of wrk's threads starts at a place of its own and
    cycles through them."""
    p = Path(work) / ("%s.lua" % name)
    p.write_text(
        'wrk.method = "GET"\n'
        'wrk.headers["X-API-KEY"] = "%s"\n'
        'local paths = {%s}\n'
        'local threads, i = 0, 0\n'
        'function setup(thread)\n'
        '  thread:set("tid", threads)\n'
        '  threads = threads + 1\n'
        'end\n'
        'function init(args)\n'
        '  i = (tid * 7919) %% #paths\n'
        'end\n'
        'function request()\n'
        '  i = i %% #paths + 1\n'
        '  return wrk.format(nil, paths[i])\n'
        'end\n' % (key, ", ".join(json.dumps(x) for x in paths)))
    return p


class Client:
    """Requests one after another on one kept-alive connection to a
    server, as a client of key: each's status, headers, body and
    milliseconds."""

    def __init__(self, srv, key=KEY):
        import http.client
        self.port = int(srv.url("/").split(":")[2].split("/")[0])
        self.key = key
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def get(self, path, headers=None):
        """GET path with headers (default: the client's X-API-KEY)."""
        import http.client
        t0 = time.perf_counter()
        for attempt in (0, 1):
            try:
                self.conn.request("GET", path, headers=headers if headers is not None
                                  else {"X-API-KEY": self.key})
                r = self.conn.getresponse()
                body = r.read()
                break
            except (http.client.HTTPException, ConnectionError):
                # The server closed the kept connection: once more anew.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                       timeout=60)
                if attempt:
                    raise
        ms = (time.perf_counter() - t0) * 1000
        if r.getheader("Connection", "").lower() == "close":
            self.conn.close()
        return r.status, r.headers, body, ms

    def json(self, path):
        st, h, body, ms = self.get(path)
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        return st, h, doc, ms

    def close(self):
        self.conn.close()


def list_ids(doc):
    return [m.get("id") for m in (doc or {}).get("messages") or []]


def list_checks(c, mine, reference):
    """That the lists are what was written, through the server, as the
    client of c (mine: its messages, oldest first, as bigspool.fill
    gives them): the newest page, a filter that matches nothing, a
    recipient's and a reference's messages, one message by its id, and a
    walk of the whole list (limit=500, the cursors) in which every
    message comes once, newest first, with its status.  The checks by
    name (ok, what was seen) and the seconds of the walk."""
    newest = [m[0] for m in reversed(mine)]
    got = {}
    st, h, doc, _ = c.json("/messages?limit=50")
    got["GET /messages?limit=50: the newest 50, a next cursor and Link"] = (
        st == 200 and list_ids(doc) == newest[:50] and bool(doc.get("next"))
        and 'rel="next"' in (h.get("Link") or ""),
        "%s, %d messages, next %s" % (st, len(list_ids(doc)), (doc or {}).get("next")))
    st, h, doc, _ = c.json("/messages?status=read")
    got["GET /messages?status=read: none (no SMS is read)"] = (
        st == 200 and list_ids(doc) == [] and (doc or {}).get("next") is None,
        "%s, %d messages" % (st, len(list_ids(doc))))
    to = mine[len(mine) // 2][2]
    want = [m[0] for m in reversed(mine) if m[2] == to]
    st, h, doc, _ = c.json("/messages?recipient=%s&limit=500"
                           % urllib.parse.quote(to, safe=""))
    got["GET /messages?recipient=: that recipient's %d" % len(want)] = (
        st == 200 and list_ids(doc) == want, "%s, %d messages" % (st, len(list_ids(doc))))
    if reference:
        m = mine[len(mine) // 3]
        st, h, doc, _ = c.json("/messages?reference=%s" % urllib.parse.quote(m[3]))
        got["GET /messages?reference=: the one message"] = (
            st == 200 and list_ids(doc) == [m[0]], "%s, %s" % (st, list_ids(doc)))
    m = mine[len(mine) // 4]
    st, h, doc, _ = c.json("/messages/%s" % m[0])
    got["GET /messages/{id}: the message, its status"] = (
        st == 200 and (doc or {}).get("id") == m[0] and
        doc.get("status") == LIST_STATUS[m[1]],
        "%s, %s" % (st, (doc or {}).get("status")))
    # The walk.
    t0 = time.time()
    seen, statuses, pages, path, st = [], {}, 0, "/messages?limit=500", 200
    while path and pages < 10 * len(mine) // 500 + 10:
        st, h, doc, _ = c.json(path)
        pages += 1
        if st != 200:
            break
        for x in (doc or {}).get("messages") or []:
            seen.append(x.get("id"))
            statuses[x.get("id")] = x.get("status")
        nxt = (doc or {}).get("next")
        path = "/messages?limit=500&after=%s" % nxt if nxt else None
    walk_s = time.time() - t0
    wrong = sum(1 for m in mine if statuses.get(m[0]) != LIST_STATUS[m[1]])
    got["a walk of the whole list: each once, newest first, its status"] = (
        st == 200 and seen == newest and wrong == 0,
        "%s, %d pages, %d messages of %d, %d with another status" % (
            st, pages, len(seen), len(mine), wrong))
    return {"checks": {k: {"ok": bool(v[0]), "seen": v[1]} for k, v in got.items()},
            "ok": all(v[0] for v in got.values()), "walk_s": walk_s,
            "walk_pages": pages}


def list_latency(c, cases, n):
    """Each of cases, (name, path), n times one after another on one
    connection: the p50 and the largest, in ms, by name, and the
    statuses that were not 200."""
    out = {}
    for name, path in cases:
        ms, bad = [], []
        for _ in range(n):
            st, _, _, t = c.get(path)
            ms.append(t)
            if st != 200:
                bad.append(st)
        out[name] = {"path": path, "p50_ms": median(ms), "max_ms": max(ms),
                     "n": n, "bad": bad[:5], "nbad": len(bad)}
    return out


def post_all(url, reqs, threads=16):
    """POST each of reqs, (path, headers, body), once, from threads
    threads on kept-alive connections: the statuses, by count, and the
    seconds it took."""
    import http.client
    from concurrent.futures import ThreadPoolExecutor
    port = int(url.split(":")[2].split("/")[0])
    shares = [reqs[i::threads] for i in range(threads)]

    def run(share):
        got = {}
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for path, headers, body in share:
            for attempt in (0, 1):
                try:
                    conn.request("POST", path, body=body, headers=headers)
                    r = conn.getresponse()
                    r.read()
                    break
                except (http.client.HTTPException, ConnectionError):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    if attempt:
                        raise
            got[str(r.status)] = got.get(str(r.status), 0) + 1
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
        conn.close()
        return got

    t0 = time.time()
    with ThreadPoolExecutor(threads) as ex:
        results = list(ex.map(run, shares))
    dt = time.time() - t0
    total = {}
    for g in results:
        for k, v in g.items():
            total[k] = total.get(k, 0) + v
    return total, dt


def run_daemon(conf, log, done, limit):
    """msgspoold over conf, from its start until done() (polled every
    10 ms, at most limit seconds) or its exit; stopped then.  The seconds
    to done, and its exit status."""
    d = subprocess.Popen([str(BUILD / "spooler" / "msgspoold"), "-c", str(conf)],
                         stdout=log, stderr=subprocess.STDOUT)
    t0 = time.time()
    try:
        ok = wait_until(lambda: done() or d.poll() is not None, limit, 0.01)
        dt = time.time() - t0
    finally:
        stop_proc(d)
    return dt, ok and d.returncode in (0, -15), d.returncode, t0


def list_receipts(inst, srv, mine, n, work):
    """Receipts applied a second: Twilio's signed status callbacks saying
    delivered, for n of the bench client's sent messages, POSTed to
    /receipts/twilio (each once, 16 at a time, msgspoold stopped), then
    msgspoold started and timed until receipts/ is empty; every message
    checked after."""
    import bigspool
    msgs = [m for m in mine if m[1] == "sent"][:n]
    reqs = []
    for mid, _, to, _, sid in msgs:
        path = "/receipts/twilio?id=%s" % mid
        hdr, form = bigspool.twilio_callback(PUBLIC_URL + path, TWILIO_TOKEN,
                                             TWILIO_SID, sid, to, INBOUND_TO,
                                             "delivered")
        reqs.append((path, hdr, form))
    statuses, post_s = post_all(srv.url("/"), reqs)
    rdir = inst.spool / "receipts"
    stored = inst.count("receipts") if rdir.is_dir() else 0
    times = []

    def left():
        k = sum(1 for _ in os.scandir(rdir)) if rdir.is_dir() else 0
        if k < stored and not times:
            times.append(time.time())
        return k == 0

    with open(inst.base / "msgspoold-receipts.log", "wb") as log:
        dt, ok, rc, t0 = run_daemon(daemon_conf(inst, "receipts"), log, left, 300)
    delivered = sum(1 for m in msgs if json.loads(
        (inst.spool / "sent" / (m[0] + ".json")).read_text()).get("receiptStatus")
        == "delivered")
    first = times[0] - t0 if times else None
    return {"n": len(msgs), "posted": statuses, "post_s": post_s, "stored": stored,
            "seconds": dt, "timed_out": not ok, "rc": rc, "delivered": delivered,
            "first_s": first,
            "flowing_per_s": (stored - 1) / (dt - first) if first is not None and
            dt > first and stored > 1 else None,
            "per_s": delivered / dt if dt else 0}


def list_webhooks(inst, srv, n, conc, work):
    """Webhook events delivered a second: n SMS of HOOKED queued through
    POST /sms/v1/deliver/batch (100 a request), then msgspoold (SMS
    through the file provider, concurrency conc) started and timed until
    the receiver on 127.0.0.1, answering 200 at once, has an event of
    each; every event checked (message.sent of one of them, once,
    signed)."""
    key = LIST_KEYS[HOOKED]
    ids, bad = [], 0
    for i in range(0, n, 100):
        batch = json.dumps({"messages": [
            {"recipient": "+4917%09d" % (i + j), "messageBody": "hook %d" % (i + j)}
            for j in range(min(100, n - i))]}).encode()
        st, _, reply = probe(srv.url("/sms/v1/deliver/batch"), batch, key=key, reply=True)
        if st != 200:
            bad += 1
            continue
        ids += [e.get("smsId") for e in json.loads(reply) if e.get("smsId")]
    hook = SlowHTTP(0, record=True).start()
    conf = daemon_conf(inst, "hook%d" % conc, "concurrency = %d\n" % conc,
                       "[client.%s]\nwebhook-url = %s\nwebhook-secret = %s\n" % (
                           HOOKED, hook.url(), HOOK_SECRET))
    try:
        with open(inst.base / ("msgspoold-hook%d.log" % conc), "wb") as log:
            dt, ok, rc, t0 = run_daemon(conf, log, lambda: hook.requests >= len(ids), 300)
    finally:
        hook.stop()
    times = sorted(t for t, _, _ in hook.recorded)
    if len(times) >= len(ids) and ids:
        dt = times[len(ids) - 1] - t0
    got = hook_check(hook.recorded, set(ids), "message.sent")
    return dict(got, n=len(ids), batches_refused=bad, concurrency=conc,
                transfers=max(1, conc // 4), seconds=dt,
                first_s=times[0] - t0 if times else None,
                flowing_per_s=(len(ids) - 1) / (times[len(ids) - 1] - times[0])
                if len(ids) > 1 and len(times) >= len(ids) and
                times[len(ids) - 1] > times[0] else None,
                per_s=got["messages"] / dt if dt else 0,
                timed_out=hook.requests < len(ids), rc=rc)


def bench_list(work, quick):
    """GET /messages (each client's list, from the index of its messages
    the spool keeps, msgspool-spool(5), Lists) over a spool of
    LIST_CLIENTS' messages, per_client each, most in sent/ (bigspool.py:
    copies of documents this build wrote in a real run), with the index
    built by msgspool reindex (timed); through CGI and msgspool-fcgi:
    checks of what the lists say, the p50 of single requests (a filter
    that matches nothing among a client's messages among them),
    GET /messages?limit=50 and GET /messages/{id} next to GET /ping in
    alternating rounds; then receipts applied a second and webhook events
    delivered a second by msgspoold over the same spool."""
    import bigspool
    per = 2000 if quick else 10000
    dur = 3 if quick else 5
    out = {"clients": len(LIST_CLIENTS), "per_client": per, "rounds": LIST_ROUNDS,
           "seconds": dur, "modes": []}
    tmpl, cap = bigspool.capture(work, BUILD, BIN)
    out["capture"] = cap
    if cap["error"]:
        return out
    inst = Instance(Path(work) / "list", list_conf())
    for client, key in LIST_KEYS.items():
        if client != CLIENT:
            inst.add_key(client, key)
    t0 = time.time()
    filled = bigspool.fill(inst, tmpl, LIST_CLIENTS, per)
    out["fill"] = {"seconds": time.time() - t0, "counts": filled["counts"]}
    mine = filled["messages"][CLIENT]
    total = per * len(LIST_CLIENTS)
    rnd = random.Random(23)
    sample = rnd.sample([m[0] for m in mine], min(LIST_SAMPLE, len(mine)))
    ref = mine[len(mine) // 3][3]
    to = mine[len(mine) // 2][2]
    # A deep page: the cursor in the middle of the list.
    middle = mine[len(mine) // 2][0]
    cases = [("GET /ping", "/ping"),
             ("GET /messages?limit=50", "/messages?limit=50"),
             ("GET /messages?status=read (matches none)", "/messages?status=read"),
             ("GET /messages?recipient=… (one number's)",
              "/messages?recipient=%s" % urllib.parse.quote(to, safe="")),
             ("GET /messages?limit=50&after=… (the middle of the list)",
              "/messages?limit=50&after=%s" % middle),
             ("GET /messages?limit=500", "/messages?limit=500"),
             ("GET /messages/{id}", "/messages/%s" % sample[0])]
    if ref:
        cases.insert(4, ("GET /messages?reference=… (one message's)",
                         "/messages?reference=%s" % urllib.parse.quote(ref)))
    # Before the lists are built: what GET /messages does without them
    # (a diagnostic: it reads the files), through CGI, once.
    srv = Lighttpd(inst, BUILD / "cgi-bin", BIN / "noop")
    try:
        c = Client(srv)
        st, _, doc, t = c.json("/messages?limit=50")
        c.close()
        out["unindexed"] = {"ms": t, "ok": st == 200 and list_ids(doc) == [
            m[0] for m in reversed(mine)][:50]}
    finally:
        srv.stop()
    t0 = time.time()
    p = subprocess.run([str(BUILD / "spooler" / "msgspool"), "-c", str(inst.conf),
                        "reindex"], capture_output=True, text=True, timeout=900)
    dt = time.time() - t0
    out["reindex"] = {"seconds": dt, "rc": p.returncode, "messages": total,
                      "per_s": total / dt if dt else 0,
                      "said": (p.stdout.strip().splitlines() or [""])[-1][:200],
                      "error": p.stderr.strip()[-300:] if p.returncode else None}
    # msgspoold once over the spool, as a running one would have: the
    # messages waiting in new/ sent (their lines then final), the lists
    # made good at its start; the rows after it time only their own work.
    t0 = time.time()
    with open(inst.base / "msgspoold-once.log", "wb") as log:
        p = subprocess.run([str(BUILD / "spooler" / "msgspoold"), "-c",
                            str(daemon_conf(inst, "once")), "--once"],
                           stdout=log, stderr=subprocess.STDOUT, timeout=600)
    out["once"] = {"seconds": time.time() - t0, "rc": p.returncode,
                   "new_left": inst.count("new")}
    mine = [(m[0], "new-sent" if m[1] == "new" else m[1]) + m[2:] for m in mine]
    ping, lst = None, lua_get(["/messages?limit=50"], work, name="list50")
    # A diagnostic beside the page of 50: the same look-up with a reply
    # of one message, so that what the page's size costs shows.
    one = lua_get(["/messages?limit=1"], work, name="list1")
    byid = lua_get(["/messages/%s" % x for x in sample], work, name="byid")
    # Every one of the client's messages in turn: more than the workers'
    # memo of replies holds (msgspool-fcgi(8), Per request), so most are
    # parsed and written anew: what a GET costs without it.
    byall = lua_get(["/messages/%s" % m[0] for m in mine], work, name="byall")
    for mode in ("CGI", "msgspool-fcgi"):
        srv = (Lighttpd(inst, BUILD / "cgi-bin", BIN / "noop") if mode == "CGI"
               else LighttpdFcgi(inst, BUILD / "fcgi", DEFAULT_FCGI_WORKERS, "list"))
        try:
            c = Client(srv)
            checks = list_checks(c, mine, bool(ref))
            latency = list_latency(c, cases, 11 if quick else LIST_LATENCY_N)
            sizes = {k: len(c.get(path)[2]) for k, path in (
                ("ping", "/ping"), ("list", "/messages?limit=50"),
                ("one", "/messages?limit=1"), ("id", "/messages/%s" % sample[0]))}
            c.close()
            runs = alternating([("ping", srv.url("/ping"), ping, None),
                                ("list", srv.url("/messages?limit=50"), lst, None),
                                ("one", srv.url("/messages?limit=1"), one, None),
                                ("id", srv.url("/messages/%s" % sample[0]), byid, None),
                                ("all", srv.url("/messages/%s" % sample[0]), byall, None)],
                               LIST_ROUNDS, dur)
        finally:
            srv.stop()
        out["modes"].append({"mode": mode, "checks": checks, "latency": latency,
                             "runs": runs, "bytes": sizes})
    # msgspoold over the same spool: receipts, then webhooks.
    srv = Lighttpd(inst, BUILD / "cgi-bin", BIN / "noop")
    try:
        out["receipts"] = list_receipts(inst, srv, mine, 500 if quick else 2000, work)
        out["webhooks"] = [list_webhooks(inst, srv, 500 if quick else 2000, conc, work)
                           for conc in (16, 128)]
    finally:
        srv.stop()
    return out


# Issue 25: GET /metrics (lib/spool/metrics.c) and the operator console's
# overview (cgi-bin/console.c) over the spool of the list section.

# Requests of each, alternating, on one kept-alive connection.
OPS_N = 51
OPS_KEY = "bench-ops-key-0123456789abcdef"
OPS_SECRET = "bench-console-secret-0123456789abcdef0123"
# The target: the p50 of each, in ms.
OPS_TARGET_MS = 100


def percentile(xs, q):
    """The q-quantile of xs, linear between the two nearest ranks."""
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def sign_in(srv, key):
    """GET /console (the sign-in form: its token and pre-session cookie),
    then POST /console/sign-in key=KEY: the session cookie's value, or
    None and what was answered."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", int(srv.url("/").split(":")[2]
                                                       .split("/")[0]), timeout=60)
    try:
        conn.request("GET", "/console")
        r = conn.getresponse()
        page = r.read().decode("utf-8", "replace")
        pre = re.match(r"msgspool_console_pre=([^;]+)", r.getheader("Set-Cookie") or "")
        tok = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        if not pre or not tok:
            return None, r.status
        conn.request("POST", "/console/sign-in", body=urllib.parse.urlencode(
            {"key": key, "csrf": tok.group(1)}),
            headers={"Content-Type": "application/x-www-form-urlencoded",
                     "Cookie": "msgspool_console_pre=" + pre.group(1)})
        r = conn.getresponse()
        r.read()
        m = re.match(r"msgspool_console=([^;]+)", r.getheader("Set-Cookie") or "")
        return (m.group(1) if r.status == 303 and m else None), r.status
    finally:
        conn.close()


def queue_total(text):
    """The sum of msgspool_queue_messages in a text of GET /metrics."""
    n = 0
    for line in text.splitlines():
        if line.startswith("msgspool_queue_messages{") or \
                line.startswith("msgspool_queue_messages "):
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def bench_ops(work, quick):
    """GET /metrics (as a key of the metrics scope, X-API-KEY) and GET
    /console (the overview, as a signed-in session of a key of the admin
    scope) over a spool of 100,000 messages (10,000 with --quick; the list
    section's, bench/bigspool.py), after msgspoold --once left its
    status/daemon.json: OPS_N of each, alternating, on one kept-alive
    connection, through CGI and msgspool-fcgi, GET /ping after each pair:
    p50, p99 and the largest;
    and before them the first GET /metrics, its cache of each state's
    channels (SPOOL/metrics/) not yet written."""
    import bigspool
    per = (10000 if quick else 100000) // len(LIST_CLIENTS)
    out = {"clients": len(LIST_CLIENTS), "per_client": per, "n": OPS_N,
           "target_ms": OPS_TARGET_MS, "modes": []}
    tmpl, cap = bigspool.capture(work, BUILD, BIN)
    out["capture"] = cap
    if cap["error"]:
        return out
    base = Path(work) / "ops"
    base.mkdir(parents=True, exist_ok=True)
    secret = base / "console.secret"
    secret.write_text(OPS_SECRET + "\n")
    secret.chmod(0o600)
    # A top-level key: before list_conf()'s [sms].
    inst = Instance(base, "console-secret-file = %s\n%s" % (secret, list_conf()))
    with open(inst.base / "keys", "a") as f:
        f.write("ops:%s:metrics,admin\n" % hashlib.sha256(OPS_KEY.encode()).hexdigest())
    t0 = time.time()
    filled = bigspool.fill(inst, tmpl, LIST_CLIENTS, per)
    out["fill"] = {"seconds": time.time() - t0, "counts": filled["counts"]}
    t0 = time.time()
    with open(inst.base / "msgspoold-once.log", "wb") as log:
        p = subprocess.run([str(BUILD / "spooler" / "msgspoold"), "-c",
                            str(daemon_conf(inst, "once")), "--once"],
                           stdout=log, stderr=subprocess.STDOUT, timeout=600)
    out["once"] = {"seconds": time.time() - t0, "rc": p.returncode,
                   "status": (inst.spool / "status" / "daemon.json").exists()}
    files = sum(inst.count(d) for d in ("new", "deferred", "sent", "failed"))
    out["files"] = files
    for mode in ("CGI", "msgspool-fcgi"):
        # Cold: the cache of the queue's channels not yet written.
        shutil.rmtree(inst.spool / "metrics", ignore_errors=True)
        srv = (Lighttpd(inst, BUILD / "cgi-bin", BIN / "noop") if mode == "CGI"
               else LighttpdFcgi(inst, BUILD / "fcgi", DEFAULT_FCGI_WORKERS, "ops"))
        row = {"mode": mode}
        try:
            c = Client(srv, OPS_KEY)
            st, _, body, ms = c.get("/metrics")
            text = body.decode("utf-8", "replace")
            beat = re.search(r"^msgspool_daemon_heartbeat_timestamp_seconds (\S+)",
                             text, re.M)
            row["cold"] = {"ms": ms, "status": st, "queue": queue_total(text),
                           "heartbeat": bool(beat and float(beat.group(1)) > 0)}
            cookie, sst = sign_in(srv, OPS_KEY)
            row["sign_in"] = sst
            hm = {"X-API-KEY": OPS_KEY}
            hc = {"Cookie": "msgspool_console=%s" % cookie}
            # GET /ping beside them: what the server and the machine's
            # load cost any request (the machine may be shared).
            times = {"metrics": [], "console": [], "ping": []}
            bad = {"metrics": [], "console": [], "ping": []}
            sizes = {}
            for _ in range(OPS_N):
                for name, path, h in (("metrics", "/metrics", hm),
                                      ("console", "/console", hc),
                                      ("ping", "/ping", hm)):
                    st, _, body, ms = c.get(path, h)
                    times[name].append(ms)
                    sizes[name] = len(body)
                    # The overview of a session (its Sign out), with
                    # msgspoold's heartbeat.
                    if st != 200 or (name == "console" and (
                            b"Sign out" not in body or b"heartbeat " not in body)):
                        bad[name].append(st)
            c.close()
        finally:
            srv.stop()
        for name in times:
            xs = times[name]
            row[name] = {"p50_ms": percentile(xs, 0.5), "p99_ms": percentile(xs, 0.99),
                         "max_ms": max(xs), "bytes": sizes.get(name, 0),
                         "nbad": len(bad[name]), "bad": bad[name][:5]}
        out["modes"].append(row)
    return out



# Issue 24: a channel's routes, failover at once to the next on a
# temporary failure, a breaker per route (msgspool.conf(5), Routes).

FAILOVER_ROUNDS = 3
# The first route's breaker: temporary failures in a row that take it
# out, and for how many seconds.
FAILOVER_BREAKER = 5
FAILOVER_BREAKER_TIME = 30
# The first route's timeout when it never answers (seconds).
FAILOVER_TIMEOUT = 1
# The longest a run may take: a build that tries every message on the
# silent route would wait out its timeout a message at a time.
FAILOVER_LIMIT = 120
# The rows: the fallback as the only route; in front of it, a first
# route that resets every connection, and one that never answers.
FAILOVER_MODES = ("alone", "reset", "silent")


def failover_conf(mode, first, spare):
    """The config of a row of mode: SMS through the http provider to
    spare (a SlowHTTP) alone, or through [sms] to first (a DeadHTTP),
    spare its fallback."""
    top = "concurrency = 128\n[sms]\nprovider = http\n"
    if mode == "alone":
        return top + "url = %s\n" % spare
    return top + ("url = %s\n%sfallback = spare\nbreaker = %d\nbreaker-time = %ds\n"
                  "[route.spare]\nchannel = sms\nprovider = http\nurl = %s\n" % (
                      first, "timeout = %d\n" % FAILOVER_TIMEOUT
                      if mode == "silent" else "", FAILOVER_BREAKER,
                      FAILOVER_BREAKER_TIME, spare))


def failover_spool(inst, first):
    """What msgspoold left in inst's spool: the files of each state; with
    first (the name of a route), the messages of sent/ by the route they
    went by, the events that name first (each attempt on it), and its
    status file (None when it wrote none)."""
    out = {"states": {st: inst.count(st) for st in ("new", "cur", "deferred",
                                                     "sent", "failed")},
           "routes": {}, "events_first": 0, "status": None}
    for st in ("sent", "deferred", "failed") if first else ():
        for e in os.scandir(inst.spool / st):
            try:
                doc = json.loads(Path(e.path).read_text())
            except (OSError, ValueError):
                continue
            if st == "sent":
                r = str(doc.get("route"))
                out["routes"][r] = out["routes"].get(r, 0) + 1
            out["events_first"] += sum(1 for ev in doc.get("events") or []
                                       if ev.get("route") == first)
    try:
        if first:
            out["status"] = json.loads(
                (inst.spool / "status" / ("route-%s.json" % first)).read_text())
    except (OSError, ValueError):
        pass
    return out


def failover_run(work, mode, rnd, n):
    """n SMS queued, then msgspoold --once timed until it exits, under
    the config of mode (failover_conf) over a spool of its own: what it
    sent a second, what the fallback answered, the connections the first
    route saw (its attempts) and when, from the daemon's start."""
    spare = SlowHTTP(0.05).start()
    dead = DeadHTTP(mode).start() if mode != "alone" else None
    try:
        inst = Instance(Path(work) / ("failover-%s-%d" % (mode, rnd)),
                        failover_conf(mode, dead.url("/") if dead else None,
                                      spare.url()))
        inst.queue_sms(n)
        # msgspoold's CPU time: the only child waited for meanwhile.
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        with open(inst.base / "msgspoold.log", "wb") as log:
            p = subprocess.Popen([str(BUILD / "spooler" / "msgspoold"), "-c",
                                  str(inst.conf), "--once"],
                                 stdout=log, stderr=subprocess.STDOUT)
            try:
                rc, timed_out = p.wait(FAILOVER_LIMIT), False
            except subprocess.TimeoutExpired:
                p.kill()
                rc, timed_out = p.wait(), True
        dt = time.time() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        spare.stop()
        if dead:
            dead.stop()
    got = failover_spool(inst, "sms" if dead else None)
    sent = got["states"]["sent"]
    log = (inst.base / "msgspoold.log").read_text(errors="replace").strip()
    return dict(got, mode=mode, n=n, sent=sent, seconds=dt,
                msgs_per_s=sent / dt if dt else 0, rc=rc, timed_out=timed_out,
                cpu_s=ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime,
                spare_requests=spare.requests, spare_connections=spare.connections,
                max_in_flight=spare.max_in_flight,
                attempts=dead.connections if dead else None,
                attempt_s=[round(t - t0, 3) for t in dead.times] if dead else None,
                log_tail=log.splitlines()[-1][:300] if rc not in (0, None) and log
                else None)


def bench_failover(work, quick):
    """msgspoold sending n SMS through the http provider to a provider
    answering after 50 ms (the bench's SlowHTTP, as in section http):
    as the channel's only route, and as the fallback of a first route
    that is down, one that resets every connection and one that never
    answers (timeout FAILOVER_TIMEOUT), its breaker FAILOVER_BREAKER in
    FAILOVER_BREAKER_TIME s; in FAILOVER_ROUNDS rounds that alternate the
    rows, each run on a spool of its own.  Every run's results, by row."""
    n = 1000 if quick else 10000
    runs = {m: [] for m in FAILOVER_MODES}
    for rnd in range(FAILOVER_ROUNDS):
        for mode in (FAILOVER_MODES if rnd % 2 == 0 else FAILOVER_MODES[::-1]):
            runs[mode].append(failover_run(work, mode, rnd, n))
    return {"n": n, "rounds": FAILOVER_ROUNDS, "breaker": FAILOVER_BREAKER,
            "breaker_time": FAILOVER_BREAKER_TIME, "timeout": FAILOVER_TIMEOUT,
            "runs": runs}

# Issue 27: durable enqueue.  msgspool-fcgi's POST /sms/v1/deliver next
# to the naive durable FastCGI responder (bench/durable-fcgi.c: the body
# to tmp/, fsync, rename into new/, fsync of new/, 202) behind the same
# lighttpd config with the same workers, in alternating rounds at each
# number of connections.
DURABLE_CONNS = (16, 64)
DURABLE_ROUNDS = 5


def sync_record(spool, slot=1):
    """The group commit's counts of a slot (msgspool-spool(5), Group
    commit: SPOOL/sync/HOST; 1 new/, 15 the file system's):
    (renames, syncs), or None."""
    try:
        names = os.listdir(Path(spool) / "sync")
        data = (Path(spool) / "sync" / names[0]).read_bytes()
    except (OSError, IndexError):
        return None
    if len(data) != 8 * 49:
        return None
    renamed = struct.unpack_from("=16Q", data, 8)
    syncs = struct.unpack_from("=16Q", data, 8 + 8 * 32)
    return renamed[slot], syncs[slot]


def purge_trash(inst):
    """Remove what inst.clear() set aside (a request finishing late may
    still write there: set aside under a name of its own first)."""
    gone = inst.base / ("gone-%s" % ulid())
    (inst.base / "trash").rename(gone)
    shutil.rmtree(gone, ignore_errors=True)


def durable_rounds(inst, work, sides, rounds, dur, conns, slot=1, purge=False):
    """POST /sms/v1/deliver through each side (name, sbin dir, config
    text or None) in alternating rounds at each number of connections:
    every run, and msgspool's group commit counts (slot) by connections.
    purge: the files of each run removed after it (a file system with a
    journal: ext4 skips the inodes freed lately only without one)."""
    sms = json.dumps({"recipient": "+4915112345678", "messageBody": "bench"}).encode()
    lua = lua_post("/sms/v1/deliver", sms, work)
    runs = {"%s/%d" % (side, c): [] for side, _, _ in sides for c in conns}
    syncs = {str(c): [0, 0] for c in conns}
    for rnd in range(rounds):
        for side, d, extra in (sides if rnd % 2 == 0 else sides[::-1]):
            inst.write_conf(extra or "")
            srv = LighttpdFcgi(inst, d, DEFAULT_FCGI_WORKERS, "durable-%s" % side)
            try:
                for c in conns:
                    before = sync_record(inst.spool, slot)
                    r = wrk(srv.url("/sms/v1/deliver"), dur, lua, connections=c)
                    r["queued"] = inst.count("new")
                    after = sync_record(inst.spool, slot)
                    if side == "msgspool-fcgi" and after is not None:
                        b = before or (0, 0)
                        syncs[str(c)][0] += after[0] - b[0]
                        syncs[str(c)][1] += after[1] - b[1]
                    runs["%s/%d" % (side, c)].append(r)
                    inst.clear()
            finally:
                srv.stop()
            # Not before: the responder keeps its directories open.
            if purge:
                purge_trash(inst)
    return runs, syncs


def own_fs(path, size_mib=4096):
    """A file system of its own at path: an ext4 image (with its journal,
    as mkfs.ext4 makes it) loop-mounted; the image's path, or None when
    this cannot be done here (not root, no loop device)."""
    img = Path(str(path) + ".img")
    if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
        return None
    path.mkdir(parents=True, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(size_mib << 20)
    # Its inode tables written now: no lazy init behind the rounds.
    for argv in (["mkfs.ext4", "-q", "-F", "-E",
                  "lazy_itable_init=0,lazy_journal_init=0", str(img)],
                 ["mount", "-o", "loop", str(img), str(path)]):
        if subprocess.run(argv, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode != 0:
            img.unlink()
            return None
    return img


# The ceilings set beside msgspool-fcgi (bench/durable-fcgi.c, "#
# durable-fcgi: MODE" in the config it reads): the responder without the
# sync of new/ (no sharing of directory syncs can do better), and the
# responder writing a batch's 100 files with nothing else.
CEILING_NODIR = "# durable-fcgi: nodir"
CEILING_BATCH = {"file": "# durable-fcgi: file 100",
                 "filesystem": "# durable-fcgi: filesystem 100"}


def batch_sides(sbin):
    """The sides of batch_rounds: msgspool-fcgi under each sync, and the
    responder's ceiling of each."""
    return ([(how, BUILD / "fcgi", "sync = %s" % how) for how in ("filesystem", "file")] +
            [("ceiling-" + how, sbin, CEILING_BATCH[how]) for how in ("filesystem", "file")])


def batch_rounds(inst, work, sides, rounds, dur, purge):
    """100 SMS a request (section 1b's body) through each side (name, sbin
    dir, config text) in alternating rounds: the runs of each, "msgs"
    their messages a second, and for msgspool-fcgi the file system syncs
    of its group commit (slot 15)."""
    smsb = json.dumps({"messages": [{"recipient": "+49151%08d" % i,
                                     "messageBody": "bench %d" % i}
                                    for i in range(100)]}).encode()
    lua = lua_post("/sms/v1/deliver/batch", smsb, work)
    out = {name: [] for name, _, _ in sides}
    for rnd in range(rounds):
        for name, d, conf in (sides if rnd % 2 == 0 else sides[::-1]):
            inst.write_conf(conf)
            srv = LighttpdFcgi(inst, d, DEFAULT_FCGI_WORKERS, "batch-" + name)
            try:
                before = sync_record(inst.spool, 15) or (0, 0)
                r = wrk(srv.url("/sms/v1/deliver/batch"), dur, lua)
                after = sync_record(inst.spool, 15) or (0, 0)
                r["msgs"] = r["rps"] * 100
                r["queued"] = inst.count("new")
                r["fs_syncs"] = 0 if name.startswith("ceiling") else after[1] - before[1]
                out[name].append(r)
            finally:
                srv.stop()
            inst.clear()
            if purge:
                purge_trash(inst)
    return out


def bench_durable(work, quick):
    inst = Instance(Path(work) / "durable")
    sbin = Path(work) / "durable-sbin"
    sbin.mkdir(exist_ok=True)
    os.symlink(BIN / "durable-fcgi", sbin / "msgspool-fcgi")
    dur = 3 if quick else 5
    rounds = 3 if quick else DURABLE_ROUNDS
    sides = [("msgspool-fcgi", BUILD / "fcgi", ""), ("responder", sbin, None),
             ("ceiling", sbin, CEILING_NODIR)]
    runs, syncs = durable_rounds(inst, work, sides, rounds, dur, DURABLE_CONNS)
    res = {"rounds": rounds, "duration": dur, "workers": DEFAULT_FCGI_WORKERS,
           "conns": list(DURABLE_CONNS), "runs": runs, "syncs": syncs}
    # Batches of 100 on the machine's disk: msgspool-fcgi under each sync,
    # and the responder writing the same number of files and nothing else.
    res["batch"] = batch_rounds(inst, work, batch_sides(sbin),
                                rounds, dur, False)
    # The same on a file system of the spool's own, where msgspool-fcgi
    # may sync the file system once for many (msgspool.conf(5), sync).
    base = Path(work) / "durable-fs"
    img = own_fs(base)
    if img is None:
        res["fs"] = None
        return res
    try:
        inst = Instance(base)
        sides = [("msgspool-fcgi", BUILD / "fcgi", ""), ("responder", sbin, None),
                 ("ceiling", sbin, CEILING_NODIR)]
        runs, syncs = durable_rounds(inst, work, sides, rounds, dur,
                                     DURABLE_CONNS, purge=True)
        res["fs"] = {"runs": runs, "syncs": syncs, "fstype": "ext4 (journal), loop",
                     "batch": batch_rounds(inst, work, batch_sides(sbin),
                                           rounds, dur, True)}
    finally:
        subprocess.run(["umount", str(base)])
        img.unlink()
    return res


DEFAULT_ONLY = ("cgi,fcgi,kannel,http,smpp,smtp,scale,suppress,inbound,received,"
                "list,failover,ops,durable")
# msgspool-fcgi's default number of workers (fcgi/msgspool-fcgi.c): the
# best of FCGI_WORKERS on the machine of bench/results.md.
DEFAULT_FCGI_WORKERS = 8


def measure(only, quick, baseline=None):
    """Run the sections of only (names as in --only); what they measured,
    for report.render: the machine at the start, each section's results
    under its name, the load at the end, the parameters the text names."""
    work = tempfile.mkdtemp(prefix="msgspool-bench-")
    res = {"only": only, "quick": quick,
           "params": {"cgi_pair_rounds": CGI_PAIR_ROUNDS, "fcgi_rounds": FCGI_ROUNDS,
                      "fcgi_workers": DEFAULT_FCGI_WORKERS},
           "started": {"time": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "release": os.uname().release, "cpus": os.cpu_count(),
                       "load": os.getloadavg()[0]}}
    try:
        sms_rps = None
        if "cgi" in only:
            res["cgi"] = bench_cgi(work, quick, BUILD / "cgi-bin")
            sms_rps = next(r["rps"] for r in res["cgi"] if r["prog"] == "sms-deliver")
        if "fcgi" in only:
            res["fcgi"] = bench_fcgi(work, quick, res.get("cgi", []))
        if "kannel" in only:
            res["kannel"] = bench_kannel(work, quick, sms_rps)
        if "http" in only:
            res["http"] = bench_http(work, quick)
        if "smpp" in only:
            res["smpp"] = bench_smpp(work, quick)
        if "smtp" in only:
            res["smtp"] = bench_smtp(work, quick, baseline)
        if baseline:
            res["baseline"] = bench_baseline(work, quick, baseline)
        if "scale" in only:
            res["scale"] = [bench_scale(work, 2000 if quick else 10000),
                            bench_scale(work, 20000 if quick else 100000)]
        if "suppress" in only:
            res["suppress"] = bench_suppress(work, quick)
        if "inbound" in only:
            res["inbound"] = bench_inbound(work, quick)
        if "received" in only:
            res["received"] = bench_received(work, quick)
        if "list" in only:
            res["list"] = bench_list(work, quick)
        if "failover" in only:
            res["failover"] = bench_failover(work, quick)
        if "ops" in only:
            res["ops"] = bench_ops(work, quick)
        if "durable" in only:
            res["durable"] = bench_durable(work, quick)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["load_end"] = os.getloadavg()[0]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="shorter runs")
    ap.add_argument("--only", default=DEFAULT_ONLY)
    ap.add_argument("--dump", metavar="FILE",
                    help="also write what was measured to FILE (JSON)")
    ap.add_argument("--from", dest="source", metavar="FILE",
                    help="measure nothing: the markdown of a --dump FILE")
    ap.add_argument("--results", metavar="PATH",
                    help="write the markdown to PATH, whatever the run")
    ap.add_argument("--record", action="store_true",
                    help="write the sections of this run into bench/results.md "
                    "(or --results PATH) in place of the same sections there, "
                    "keeping the others")
    ap.add_argument("--baseline", metavar="DIR",
                    help="also POST /sms/v1/deliver of the CGI programs of "
                    "the build DIR (another tree's), rounds alternating with "
                    "this build's; and with smtp, its msgspoold in each round")
    args = ap.parse_args()
    only = args.only.split(",")
    if args.source:
        res = json.loads(Path(args.source).read_text())
    else:
        res = measure(only, args.quick, args.baseline)
        if args.dump:
            Path(args.dump).write_text(json.dumps(res, indent=1) + "\n")
    text = render(res)
    print(text)
    b = res.get("baseline")
    if b:
        print("POST /sms/v1/deliver, this build against %s, rounds alternating:\n"
              "  this: %s req/s\n  base: %s req/s\n  this / base (medians): %.2f"
              % (b["base"], ", ".join("%.0f" % x for x in b["rps"]["this"]),
                 ", ".join("%.0f" % x for x in b["rps"]["base"]), b["ratio"]))
    if args.record:
        # The sections of this run in the record, beside those of others.
        path = Path(args.results) if args.results else BENCH / "results.md"
        s = res["started"]
        note = ("Measured apart from the rest of this file, by `bench/run.py "
                "--only %s%s%s --record` on %s, %s, %d CPUs, load average %.1f "
                "at the start and %.1f at the end." % (
                    ",".join(res["only"]), " --quick" if res["quick"] else "",
                    " --baseline %s" % res["baseline"]["base"]
                    if res.get("baseline") else "",
                    s["time"], s["release"], s["cpus"], s["load"], res["load_end"]))
        path.write_text(merge(path.read_text() if path.exists() else None,
                              text, note))
    elif args.results:
        Path(args.results).write_text(text)
    # Only a full run is the record; --quick and --only just print, but
    # for --record.
    elif (not args.source and not args.quick
          and set(only) == set(DEFAULT_ONLY.split(","))):
        (BENCH / "results.md").write_text(text)


if __name__ == "__main__":
    main()

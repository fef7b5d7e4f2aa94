"""The spool of the list section of make bench: many messages of several
clients, written fast, each file byte for byte as msgspool writes it.

capture() takes the templates from a real run of this build: SMS sent
through lighttpd and the CGI programs, then through msgspoold with the
twilio provider to the stand-in of the tests (tests/blackbox/doubles),
so that each state a message can be in (queued in new/, retrying or
scheduled in deferred/, sent, delivered and undelivered in sent/, failed
in failed/) has a document msgspool wrote, whatever its code writes
today.  fill() writes copies of them, each with an id, client,
recipient, text, provider id, reference and times of its own, by
replacing those values in the template's text: the rest of the file
(its keys, their order, the indentation, msgspool-spool(5), The
document) stays as msgspool wrote it.
"""
import calendar
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from instance import CROCKFORD, Instance, Lighttpd, rfc3339

ROOT = Path(__file__).resolve().parents[1]

# The templates' own values, each replaced in every copy; distinct enough
# that none is part of another value of the file.
T_CLIENT = "tmplclient"
T_KEY = "bench-template-key-0123456789"
T_BODY = "Template body 7f3a9c"
T_REFERENCE = "tmpl-ref-7f3a9c"
# Its recipient, by state ("sent": left sent, "delivered" and
# "undelivered": then given that receipt).
T_TO = {"new": "+4915100000001", "failed": "+4915100000002",
        "retrying": "+4915100000003", "scheduled": "+4915100000004",
        "sent": "+4915100000005", "delivered": "+4915100000006",
        "undelivered": "+4915100000007"}
# Where each state's files are.
STATE_DIR = {"new": "new", "retrying": "deferred", "scheduled": "deferred",
             "sent": "sent", "delivered": "sent", "undelivered": "sent",
             "failed": "failed"}
TIME_RE = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"')


def seconds(s):
    """The Unix time of s, a time as msgspool writes it."""
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def ulid_at(ms, rnd):
    """A ULID of the time ms (milliseconds), its random part from rnd."""
    return ("".join(CROCKFORD[(ms >> (45 - 5 * i)) & 31] for i in range(10)) +
            "".join(rnd.choice(CROCKFORD) for _ in range(16)))


def twilio_callback(url, token, account, sid, to, frm, status):
    """A Twilio status callback for message sid posted to url (as the
    stand-in of the tests makes them, doubles/twilio.py): the headers
    and the urlencoded form."""
    sys.path.insert(0, str(ROOT / "tests" / "blackbox"))
    from harness.receiptsign import twilio_sig
    form = {"AccountSid": account, "ApiVersion": "2010-04-01", "From": frm,
            "MessageSid": sid, "MessageStatus": status, "SmsSid": sid,
            "SmsStatus": status, "To": to}
    if status in ("failed", "undelivered"):
        form["ErrorCode"] = "30003"
    return ({"Content-Type": "application/x-www-form-urlencoded",
             "User-Agent": "TwilioProxy/1.1",
             "X-Twilio-Signature": twilio_sig(token, url, form)},
            urllib.parse.urlencode(form).encode())


def post(url, body, headers):
    """The status and body of a POST."""
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Template:
    """One state's document as msgspool wrote it: its text, the values
    fill() replaces in it, where it goes and the mode of its file."""

    def __init__(self, state, path, public):
        self.state = state
        self.text = Path(path).read_text()
        self.mode = os.stat(path).st_mode & 0o777
        doc = json.loads(self.text)
        self.doc = doc
        self.created = seconds(doc["created"])
        reply = doc.get("providerReply") or {}
        self.sid = reply.get("sid") if reply.get("provider") == "twilio" else None
        # The value-replacing pattern: the id, the client, the recipient,
        # the text, the reference, the provider's id, each time.
        self.times = {t: seconds(t) - self.created
                      for t in set(TIME_RE.findall(self.text))}
        self.next = doc.get("nextAttempt")
        vals = [doc["id"], '"%s"' % T_CLIENT, T_TO[state], T_BODY, T_REFERENCE]
        if self.sid:
            vals.append(self.sid)
        vals += ['"%s"' % t for t in self.times]
        self.pattern = re.compile("|".join(re.escape(v) for v in vals))
        self.has_reference = T_REFERENCE in self.text
        self.public = public


def capture(work, build, bin_dir):
    """Templates of every state from a real run of build (lighttpd over
    its CGI programs, msgspoold with the twilio provider to the stand-in):
    {state: Template}, and what the run said: whether the send route took
    a reference, and anything that went wrong (error)."""
    sys.path.insert(0, str(ROOT / "tests" / "blackbox"))
    from doubles.standin import Standin
    out = {"reference": False, "error": None}
    with Standin() as sd:
        public = "https://msg.example.com"
        inst = Instance(Path(work) / "list-templates",
                        "public-url = %s\n%s" % (public, sd.twilio_config("sms")))
        inst.add_key(T_CLIENT, T_KEY)
        srv = Lighttpd(inst, build / "cgi-bin", bin_dir / "noop")
        ids = {}
        try:
            for state in ("new", "failed", "retrying", "scheduled", "sent",
                          "delivered", "undelivered"):
                sms = {"recipient": T_TO[state], "messageBody": T_BODY,
                       "reference": T_REFERENCE}
                if state == "scheduled":
                    sms["sendAt"] = rfc3339(time.time() + 3 * 365 * 86400)
                hdr = {"Content-Type": "application/json", "X-API-KEY": T_KEY}
                st, body = post(srv.url("/sms/v1/deliver"), json.dumps(sms).encode(), hdr)
                if st == 400 and b'"reference"' in body:
                    del sms["reference"]
                    st, body = post(srv.url("/sms/v1/deliver"),
                                    json.dumps(sms).encode(), hdr)
                else:
                    out["reference"] = True
                if st not in (200, 202):
                    out["error"] = "POST /sms/v1/deliver: %d %s" % (st, body[:200])
                    return {}, out
                ids[state] = json.loads(body)["smsId"]
            # What sms-deliver wrote, before msgspoold sends it.
            tmpl = {"new": Template("new", inst.spool / "new" / (ids["new"] + ".json"),
                                    public)}
            sd.script(T_TO["failed"], [("status", 400)])
            sd.script(T_TO["retrying"], [("503",)])
            d = subprocess.run([str(build / "spooler" / "msgspoold"), "-c",
                                str(inst.conf), "--once"], capture_output=True,
                               text=True, timeout=60)
            where = {"failed": "failed", "retrying": "deferred",
                     "scheduled": "deferred", "sent": "sent"}
            for state, d_ in where.items():
                p = inst.spool / d_ / (ids[state] + ".json")
                if not p.exists():
                    out["error"] = "msgspoold did not leave %s in %s/: %s" % (
                        state, d_, d.stderr[-500:])
                    return {}, out
                tmpl[state] = Template(state, p, public)
            # The receipts of the two others, applied by msgspoold.
            for state in ("delivered", "undelivered"):
                p = inst.spool / "sent" / (ids[state] + ".json")
                sid = json.loads(p.read_text())["providerReply"]["sid"]
                url = "%s/receipts/twilio?id=%s" % (public, ids[state])
                hdr, form = twilio_callback(url, sd.twilio_auth_token,
                                            sd.twilio_account_sid, sid,
                                            T_TO[state], sd.twilio_from, state)
                st, body = post(srv.url("/receipts/twilio?id=%s" % ids[state]),
                                form, hdr)
                if st != 200:
                    out["error"] = "POST /receipts/twilio: %d %s" % (st, body[:200])
                    return {}, out
            d = subprocess.run([str(build / "spooler" / "msgspoold"), "-c",
                                str(inst.conf), "--once"], capture_output=True,
                               text=True, timeout=60)
            for state in ("delivered", "undelivered"):
                p = inst.spool / "sent" / (ids[state] + ".json")
                if json.loads(p.read_text()).get("receiptStatus") != state:
                    out["error"] = "msgspoold did not apply the %s receipt: %s" % (
                        state, d.stderr[-500:])
                    return {}, out
                tmpl[state] = Template(state, p, public)
        finally:
            srv.stop()
    return tmpl, out


# The shares of the states in the spool (the rest: delivered), by state.
# new/: the newest few of each client (msgspoold was stopped); deferred/:
# retrying (due within two hours) and scheduled (in years).
SHARES = (("failed", 0.05), ("retrying", 0.005), ("scheduled", 0.005),
          ("sent", 0.30), ("undelivered", 0.03))
NEW_PER_CLIENT = 20
# The recipients of a client: its messages go to this many numbers.
RECIPIENTS = 2000
# How far back the messages go (within the default retention of 7 days).
DAYS = 5


def fill(inst, templates, clients, per_client, seed=23):
    """Write per_client messages of each of clients into inst's spool,
    copies of templates (capture()), created over the last DAYS days,
    ids in the order of creation, in the shares of SHARES.  Nothing is
    synced, and index/ (the providers' ids of sent messages) is not
    written: a receipt of the twilio provider names its message's id.
    Returns what was written: counts by state, and for each client its
    messages as (id, state, recipient, reference, provider id), oldest
    first."""
    rnd = random.Random(seed)
    now = int(time.time())
    start = now - DAYS * 86400
    end = now - 600
    n = per_client * len(clients)
    # Times of creation, in ms, spread over the days; ids in that order.
    stamps = sorted(rnd.randrange(start * 1000, end * 1000) for _ in range(n))
    owners = [clients[i % len(clients)] for i in range(n)]
    rnd.shuffle(owners)
    counts, written = {}, {c: [] for c in clients}
    left = {c: per_client for c in clients}
    dirs = {s: inst.spool / d for s, d in STATE_DIR.items()}
    for d in dirs.values():
        d.mkdir(exist_ok=True)
    for ms, client in zip(stamps, owners):
        left[client] -= 1
        k = clients.index(client)
        if left[client] < NEW_PER_CLIENT:
            state = "new"
        else:
            r, state = rnd.random(), "delivered"
            for s, share in SHARES:
                if r < share:
                    state = s
                    break
                r -= share
        t = templates[state]
        mid = ulid_at(ms, rnd)
        created = ms // 1000
        to = "+49151%08d" % (k * 100000 + rnd.randrange(RECIPIENTS))
        ref = "order-%d-%d" % (k, per_client - left[client])
        sid = "SM%032x" % rnd.getrandbits(128) if t.sid else None
        # Each time of the template as far from its creation as it was,
        # but a retrying message's next attempt, due within two hours.
        due = now + rnd.randrange(3600, 7200)
        vals, mt = {}, None
        for ts, off in t.times.items():
            at = due if state == "retrying" and ts == t.next else created + off
            vals['"%s"' % ts] = '"%s"' % rfc3339(at)
            # A file's time, as msgspoold leaves it: when it was last
            # written, or in deferred/, when it is due.
            if state in ("retrying", "scheduled"):
                mt = at if ts == t.next else mt
            else:
                mt = at if mt is None else max(mt, at)
        vals.update({t.doc["id"]: mid, '"%s"' % T_CLIENT: '"%s"' % client,
                     T_TO[state]: to, T_BODY: "Your code is %06d" % rnd.randrange(10 ** 6),
                     T_REFERENCE: ref})
        if t.sid:
            vals[t.sid] = sid
        text = t.pattern.sub(lambda m: vals[m.group(0)], t.text)
        path = dirs[state] / (mid + ".json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, t.mode)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        os.utime(path, (mt, mt))
        counts[state] = counts.get(state, 0) + 1
        written[client].append((mid, state, to, ref if t.has_reference else None, sid))
    return {"counts": counts, "messages": written}

"""The secrets that check receipts, and what a receipt may carry
(msgspool.conf(5), Values and the provider sections; conf/openapi.yaml,
/receipts/{provider}): a secret is never empty nor weaker than its kind
needs.  An empty or short one, or an empty NAME-file, makes the receipts
of that section 403 (with a line on the programs' stderr) and msgspoold
refuse to start, naming the section and key; an empty NAME = beside a
NAME-file does not hide the file.  A WhatsApp webhook has each of its
statuses stored, however many its 64 KiB hold, and a status without a
Unix-seconds timestamp is taken at the time it arrived."""

import base64
import calendar
import json
import time
import urllib.parse

import pytest

from harness.receiptsign import meta_sig, stdwh_sig, twilio_sig
from openapi_check import check_reply

PUBLIC = "https://msg.example.com"
SID = "AC" + "0123456789abcdef" * 2
PHONE = "106540352242922"
APP_SECRET = "meta-app-secret-of-the-file"
HTTP_SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef01234567").decode()
SHORT_SECRET = "whsec_" + base64.b64encode(b"k").decode()


def _receipts(inst):
    d = inst.spool / "receipts"
    return sorted(d.glob("*.json")) if d.is_dir() else []


def _write_secret(inst, name, text):
    p = inst.base / name
    p.write_text(text)
    p.chmod(0o600)
    return p


# ---------------------------------------------------------------- twilio

def _twilio_conf(token_lines):
    return (f"public-url = {PUBLIC}\n[sms]\nprovider = twilio\n"
            f"account-sid = {SID}\n{token_lines}from = +15005550006\n")


def _twilio_post(srv, token):
    params = {"AccountSid": SID, "MessageSid": "SM" + "1" * 32,
              "MessageStatus": "delivered", "To": "+4915112340077",
              "From": "+15005550006", "ApiVersion": "2010-04-01"}
    url = f"{PUBLIC}/receipts/twilio"
    sig = twilio_sig(token, url, params)
    r = srv.request("POST", "/receipts/twilio", client=None,
                    data=urllib.parse.urlencode(params),
                    headers={"Content-Type":
                             "application/x-www-form-urlencoded",
                             "X-Twilio-Signature": sig})
    check_reply(r)
    return r


def test_twilio_empty_auth_token_is_403_and_logged(srv):
    """auth-token = with nothing: a receipt signed with the empty key
    (which anyone can compute) is refused, and why is logged."""
    srv.inst.write_conf(_twilio_conf("auth-token =\n"))
    start = len(srv.cgi_stderr())
    r = _twilio_post(srv, "")
    assert r.status_code == 403, r.text
    assert _receipts(srv.inst) == []
    log = srv.cgi_stderr()[start:]
    assert "[sms]" in log and "auth-token" in log and "empty" in log, log


def test_twilio_empty_auth_token_file_is_403(srv):
    empty = _write_secret(srv.inst, "twilio.token", "\n")
    srv.inst.write_conf(_twilio_conf(f"auth-token-file = {empty}\n"))
    start = len(srv.cgi_stderr())
    assert _twilio_post(srv, "").status_code == 403
    assert _receipts(srv.inst) == []
    log = srv.cgi_stderr()[start:]
    assert "[sms]" in log and "auth-token" in log, log


def test_twilio_empty_auth_token_beside_its_file_uses_the_file(srv):
    tok = _write_secret(srv.inst, "twilio.token", "real-twilio-token\n")
    srv.inst.write_conf(_twilio_conf(f"auth-token =\nauth-token-file = "
                                     f"{tok}\n"))
    assert _twilio_post(srv, "").status_code == 403
    r = _twilio_post(srv, "real-twilio-token")
    assert r.status_code == 200, r.text
    assert r.json() == {"stored": 1, "dropped": 0}


# -------------------------------------------------------------- whatsapp

def _wa_conf(extra):
    return (f"[ott.1]\nprovider = whatsapp\nphone-number-id = {PHONE}\n"
            f"token = graph-token\n{extra}")


def _wa_body(statuses):
    return json.dumps({"object": "whatsapp_business_account", "entry": [{
        "id": "102290129340398", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550783881",
                         "phone_number_id": PHONE},
            "statuses": statuses}}]}]}, separators=(",", ":")).encode()


def _wa_post(srv, body, secret, check=True):
    sig = meta_sig(secret, body)
    r = srv.request("POST", "/receipts/whatsapp", client=None, data=body,
                    headers={"Content-Type": "application/json",
                             "X-Hub-Signature-256": sig})
    if check:
        check_reply(r)
    return r


def _one_status():
    return _wa_body([{"id": "wamid.A1", "status": "delivered",
                      "timestamp": str(int(time.time())),
                      "recipient_id": "4915112340090"}])


def test_whatsapp_empty_app_secret_beside_its_file(srv):
    """The empty placeholder app-secret = beside the real
    app-secret-file: the file is used, so Meta's signature is taken and
    one made with the empty key refused."""
    f = _write_secret(srv.inst, "wa.app-secret", APP_SECRET + "\n")
    srv.inst.write_conf(_wa_conf(f"app-secret =\napp-secret-file = {f}\n"))
    body = _one_status()
    assert _wa_post(srv, body, "").status_code == 403
    assert _receipts(srv.inst) == []
    r = _wa_post(srv, body, APP_SECRET)
    assert r.status_code == 200, r.text
    assert r.json() == {"stored": 1, "dropped": 0}


def test_whatsapp_empty_app_secret_is_403_and_logged(srv):
    srv.inst.write_conf(_wa_conf("app-secret =\n"))
    start = len(srv.cgi_stderr())
    assert _wa_post(srv, _one_status(), "").status_code == 403
    assert _receipts(srv.inst) == []
    log = srv.cgi_stderr()[start:]
    assert "[ott.1]" in log and "app-secret" in log, log


@pytest.mark.parametrize("lines", ["verify-token =\n",
                                   "verify-token-file = EMPTY\n"])
def test_whatsapp_empty_verify_token_refuses_the_handshake(srv, lines):
    """An empty verify token verifies nothing: the handshake with an
    empty hub.verify_token is 403, its challenge not echoed."""
    empty = _write_secret(srv.inst, "wa.verify", "")
    srv.inst.write_conf(_wa_conf(lines.replace("EMPTY", str(empty))))
    start = len(srv.cgi_stderr())
    q = {"hub.mode": "subscribe", "hub.verify_token": "",
         "hub.challenge": "1158201444"}
    r = srv.get("/receipts/whatsapp?" + urllib.parse.urlencode(q),
                client=None)
    check_reply(r)
    assert r.status_code == 403, r.text
    assert "1158201444" not in r.text
    log = srv.cgi_stderr()[start:]
    assert "[ott.1]" in log and "verify-token" in log, log


def test_whatsapp_every_status_of_a_webhook_is_stored(srv):
    """1,500 statuses in one POST (as many as 64 KiB hold of short
    ones): each is stored, none dropped unsaid."""
    srv.inst.write_conf(_wa_conf(f"app-secret = {APP_SECRET}\n"))
    body = _wa_body([{"id": f"w{i}", "status": "read"}
                     for i in range(1500)])
    assert len(body) <= 64 * 1024
    r = _wa_post(srv, body, APP_SECRET)
    assert r.status_code == 200, r.text
    assert r.json() == {"stored": 1500, "dropped": 0}
    got = {json.loads(p.read_bytes())["providerMessageId"]
           for p in _receipts(srv.inst)}
    assert got == {f"w{i}" for i in range(1500)}


@pytest.mark.parametrize("ts", [None, "soon", "12abc", "", "-5", "0",
                                "99999999999999999999", 1795428004])
def test_whatsapp_status_without_unix_seconds_is_taken_now(srv, ts):
    """A timestamp that is not Unix seconds as a string (missing, not a
    number, zero, out of range, a JSON number) is no time of the
    status: the receipt's time is the time it arrived, never 1970."""
    srv.inst.write_conf(_wa_conf(f"app-secret = {APP_SECRET}\n"))
    st = {"id": "wamid.T1", "status": "read", "recipient_id": "4915112"}
    if ts is not None:
        st["timestamp"] = ts
    before = int(time.time())
    r = _wa_post(srv, _wa_body([st]), APP_SECRET)
    after = int(time.time())
    assert r.status_code == 200, r.text
    assert r.json() == {"stored": 1, "dropped": 0}
    (p,) = _receipts(srv.inst)
    at = json.loads(p.read_bytes())["at"]
    t = calendar.timegm(time.strptime(at, "%Y-%m-%dT%H:%M:%SZ"))
    assert before - 1 <= t <= after + 1, at


def test_whatsapp_status_timestamp_is_kept(srv):
    srv.inst.write_conf(_wa_conf(f"app-secret = {APP_SECRET}\n"))
    r = _wa_post(srv, _wa_body([{"id": "wamid.T2", "status": "read",
                                 "timestamp": "1795428004"}]), APP_SECRET)
    assert r.status_code == 200, r.text
    (p,) = _receipts(srv.inst)
    assert json.loads(p.read_bytes())["at"] == "2026-11-23T10:00:04Z"


# ------------------------------------------------------------------ http

def _http_post(srv, secret):
    body = json.dumps({"id": "prov-1", "status": "delivered"}).encode()
    ts = str(int(time.time()))
    r = srv.request("POST", "/receipts/http", client=None, data=body,
                    headers={"Content-Type": "application/json",
                             "webhook-id": "msg_1", "webhook-timestamp": ts,
                             "webhook-signature":
                             stdwh_sig(secret, "msg_1", ts, body)})
    check_reply(r)
    return r


def test_http_short_receipt_secret_is_403_and_refused_by_the_daemon(srv):
    """A receipt-secret of one byte: its receipts are 403 and msgspoold
    will not start with it, naming the section and key."""
    conf = ("[sms]\nprovider = http\nurl = http://127.0.0.1:9/\n"
            f"receipt-secret = {SHORT_SECRET}\n")
    srv.inst.write_conf(conf)
    start = len(srv.cgi_stderr())
    assert _http_post(srv, SHORT_SECRET).status_code == 403
    assert _receipts(srv.inst) == []
    log = srv.cgi_stderr()[start:]
    assert "[sms]" in log and "receipt-secret" in log, log
    cp = srv.inst.daemon_once(check=False)
    assert cp.returncode != 0, cp.err
    assert "[sms]" in cp.err and "receipt-secret" in cp.err, cp.err
    # 24 bytes, as msgspool.conf(5) asks: taken.
    srv.inst.write_conf(conf.replace(SHORT_SECRET, HTTP_SECRET))
    r = _http_post(srv, HTTP_SECRET)
    assert r.status_code == 200, r.text
    assert srv.inst.daemon_once(check=False).returncode == 0


# ----------------------------------------------------------- msgspoold

_SECTIONS = {
    "twilio": "[sms]\nprovider = twilio\naccount-sid = %s\nfrom = +1500555"
              "0006\n" % SID,
    "whatsapp": "[ott.1]\nprovider = whatsapp\nphone-number-id = %s\n" % PHONE,
    "smpp": "[sms]\nprovider = smpp\nhost = 127.0.0.1\nsystem-id = acme\n",
    "smtp": "[email]\nprovider = smtp\nurl = smtp://127.0.0.1:9\n"
            "username = mailer\n",
    "http": "[voice]\nprovider = http\nurl = http://127.0.0.1:9/\n",
    "client": "[client.acme]\nwebhook-url = http://127.0.0.1:9/\n",
}
_GOOD = {"twilio": "auth-token = t0k\n",
         "whatsapp": "token = t0k\napp-secret = s3c\nverify-token = v3r\n",
         "smpp": "password = secret\n", "smtp": "password = pw\n",
         "http": "", "client": f"webhook-secret = {HTTP_SECRET}\n"}


@pytest.mark.parametrize("provider,key,value", [
    ("twilio", "auth-token", ""),
    ("twilio", "auth-token-file", "EMPTY"),
    ("twilio", "auth-token-file", "BLANK"),
    ("whatsapp", "token", ""),
    ("whatsapp", "app-secret", ""),
    ("whatsapp", "verify-token", ""),
    ("whatsapp", "app-secret-file", "EMPTY"),
    ("smpp", "password", ""),
    ("smtp", "password", ""),
    ("http", "receipt-secret", ""),
    ("http", "receipt-secret", SHORT_SECRET),
    ("http", "receipt-secret", "not-whsec"),
    ("client", "webhook-secret", ""),
    ("client", "webhook-secret-file", "EMPTY"),
])
def test_daemon_refuses_an_empty_or_weak_secret(srv, provider, key, value):
    """msgspoold will not start with a secret that is empty, blank, an
    empty file or too short for its kind: it says which section and
    key.  (The same section with good secrets starts.)"""
    inst = srv.inst
    empty = _write_secret(inst, "empty.secret", "")
    blank = _write_secret(inst, "blank.secret", " \t\n")
    value = value.replace("EMPTY", str(empty)).replace("BLANK", str(blank))
    name = key[:-len("-file")] if key.endswith("-file") else key
    good = "".join(line + "\n" for line in _GOOD[provider].splitlines()
                   if not line.startswith(name + " "))
    inst.write_conf(_SECTIONS[provider] + good + f"{key} = {value}\n")
    cp = inst.daemon_once(check=False)
    assert cp.returncode != 0, cp.err
    section = _SECTIONS[provider].split("\n")[0]
    line = [ln for ln in cp.err.splitlines() if section in ln and name in ln]
    assert line, cp.err
    inst.write_conf(_SECTIONS[provider] + _GOOD[provider])
    cp = inst.daemon_once(check=False)
    assert cp.returncode == 0, cp.err

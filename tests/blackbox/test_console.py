"""The operator console (README.md, Operator console; msgspool.conf(5)
console-secret): off without its secret, sign-in with a key of the admin
scope only, the session cookie (tampered, expired, signed out), the CSRF
token of every POST (the sign-in's tied to a pre-session cookie), the
overview, and the security headers of every
page.  Under every web server setup: /console and /console/PAGE, a form
POST; under busybox httpd the console at /cgi-bin/console, its links,
forms and cookies there too."""

import hashlib
import json
import hmac
import math
import os
import re
import secrets
import struct
import time
import zlib

import pytest

from conftest import PROBLEM_PREFIX, SERVER, assert_problem
from openapi_check import check_reply
from delivery_support import wait_until
from test_unsubscribe import browser  # noqa: F401 - headless Chromium

SECRET = "the console secret of these tests, at least 24 bytes"
FORM = "application/x-www-form-urlencoded"
# Where the console is: busybox httpd serves the program at
# /cgi-bin/console only, and the console's links and cookies follow.
BASE = "/cgi-bin/console" if SERVER == "busybox" else "/console"
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' "
       "data:; form-action 'self'; frame-ancestors 'none'")


def problem(r, status, kind):
    p = assert_problem(r, status)
    assert p["type"] == PROBLEM_PREFIX + kind, p


def sha256(s):
    return hashlib.sha256(s.encode()).hexdigest()


def console_on(srv, on=True):
    """srv's instance with the console on (console-secret-file) and two
    more keys: ops (admin) and plain (sms).  Returns their keys."""
    inst = srv.inst
    text = ""
    if on:
        f = inst.base / "console.secret"
        f.write_text(SECRET + "\n")
        f.chmod(0o600)
        text = f"console-secret-file = {f.name}\n"
    inst.write_conf(text)
    keys = {"ops": secrets.token_urlsafe(32),
            "plain": secrets.token_urlsafe(32)}
    with open(inst.keys_file, "a") as fh:
        fh.write(f"ops:{sha256(keys['ops'])}:admin\n")
        fh.write(f"plain:{sha256(keys['plain'])}:sms\n")
    return keys


def req(srv, method, path, cookie=None, form=None, ctype=FORM, pre=None,
        check=True):
    h = {}
    jar = []
    if cookie is not None:
        jar.append(f"msgspool_console={cookie}")
    if pre is not None:
        jar.append(f"msgspool_console_pre={pre}")
    if jar:
        h["Cookie"] = "; ".join(jar)
    kw = {}
    if form is not None:
        kw["data"] = form
        if ctype is not None:
            h["Content-Type"] = ctype
    r = srv.request(method, path, client=None, headers=h,
                    allow_redirects=False, **kw)
    srv.session.cookies.clear()
    # Every answer is as conf/openapi.yaml says (check: a path it has).
    if check:
        check_reply(r)
    return r


def assert_page(r, status):
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Content-Security-Policy"] == CSP
    assert r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert "<script" not in r.text.lower()


def sign_in_form(srv, pre=None):
    """GET /console, not signed in: the sign-in form's pre-session cookie
    (the one sent, or pre when it was kept) and the form's token."""
    r = req(srv, "GET", "/console", pre=pre)
    assert_page(r, 200)
    m = re.search(r'action="' + BASE + r'/sign-in">\n<input type="hidden" '
                  r'name="csrf" value="([0-9a-f]{64})">', r.text)
    assert m, r.text
    set_cookie = r.headers.get("Set-Cookie", "")
    c = re.match(r"msgspool_console_pre=([^;]+);", set_cookie)
    if pre is None:
        assert c, r.headers
        for attr in ("HttpOnly", "SameSite=Strict", "Path=" + BASE,
                     "Max-Age=3600"):
            assert attr in set_cookie, set_cookie
        pre = c.group(1)
    return pre, m.group(1)


def pre_for(nonce, expiry, secret=SECRET):
    """A pre-session cookie and its form's token, made as the console
    makes them."""
    v = f"{nonce}.{expiry}"
    mac = hmac.new(secret.encode(), b"msgspool-console-pre:" + v.encode(),
                   hashlib.sha256).hexdigest()
    tok = hmac.new(secret.encode(), b"msgspool-console-sign-in:" +
                   v.encode(), hashlib.sha256).hexdigest()
    return f"{v}.{mac}", tok


def sign_in(srv, key):
    pre, tok = sign_in_form(srv)
    r = req(srv, "POST", "/console/sign-in", form={"key": key, "csrf": tok},
            pre=pre)
    assert r.status_code == 303, (r.status_code, r.text)
    assert r.headers["Location"] == BASE
    set_cookie = r.headers["Set-Cookie"]
    m = re.match(r"msgspool_console=([^;]+);", set_cookie)
    assert m, set_cookie
    for attr in ("HttpOnly", "SameSite=Strict", "Path=" + BASE):
        assert attr in set_cookie, set_cookie
    assert "Secure" not in set_cookie      # plain HTTP here
    return m.group(1)


def csrf(page, action):
    m = re.search(r'action="' + BASE + '/' + action +
                  r'"><input type="hidden" name="csrf" value="([0-9a-f]+)"',
                  page)
    assert m, page
    return m.group(1)


def cookie_for(client, expiry, secret=SECRET):
    v = f"{client}.{expiry}"
    mac = hmac.new(secret.encode(), b"msgspool-console:" + v.encode(),
                   hashlib.sha256).hexdigest()
    return f"{v}.{mac}"


def test_off_without_secret(srv):
    keys = console_on(srv, on=False)
    for path in ("/console", "/console/messages"):
        r = req(srv, "GET", path)
        problem(r, 404, "not-found")
    r = req(srv, "POST", "/console/sign-in", form={"key": keys["ops"]})
    problem(r, 404, "not-found")


def test_sign_in_form(srv):
    console_on(srv)
    r = req(srv, "GET", "/console")
    assert_page(r, 200)
    assert 'type="password" name="key"' in r.text
    assert f'action="{BASE}/sign-in"' in r.text


def test_sign_in_refused_without_admin(srv):
    keys = console_on(srv)
    pre, tok = sign_in_form(srv)
    for key in (keys["plain"], srv.inst.keys["acme"], "not-a-key", ""):
        r = req(srv, "POST", "/console/sign-in",
                form={"key": key, "csrf": tok}, pre=pre)
        assert_page(r, 403)
        assert "msgspool_console=" not in r.headers.get("Set-Cookie", "")
        assert 'name="key"' in r.text


def test_sign_in_token(srv):
    """The sign-in form's token and its pre-session cookie (a signed
    double submit): without either, with another's, a changed or an
    expired cookie, a good key is refused (403, the form again) and no
    session is made."""
    keys = console_on(srv)
    pre, tok = sign_in_form(srv)
    # The form again with the cookie it set: the same token, no new one.
    r = req(srv, "GET", "/console", pre=pre)
    assert "Set-Cookie" not in r.headers
    assert sign_in_form(srv, pre=pre) == (pre, tok)
    pre2, tok2 = sign_in_form(srv)
    assert (pre2, tok2) != (pre, tok)
    nonce, expiry, mac = pre.split(".")
    old_pre, old_tok = pre_for(nonce, int(time.time()) - 1)
    other_pre, other_tok = pre_for(nonce, expiry, secret="y" * 40)
    cases = [
        (None, tok),                    # no cookie (a cross-site POST)
        (pre, None),                    # no token
        (pre, ""),
        (pre, "0" * 64),
        (pre, tok2),                    # another form's token
        (pre2, tok),
        (f"{nonce}.{int(expiry) + 1}.{mac}", tok),     # changed
        (f"{nonce}.{expiry}.{'0' * 64}", tok),
        (old_pre, old_tok),             # expired
        (other_pre, other_tok),         # another secret
        ("garbage", tok),
    ]
    for p, t in cases:
        form = {"key": keys["ops"]}
        if t is not None:
            form["csrf"] = t
        r = req(srv, "POST", "/console/sign-in", form=form, pre=p)
        assert_page(r, 403)
        assert "msgspool_console=" not in r.headers.get("Set-Cookie", ""), \
            (p, t)
        assert "did not come from this console" in r.text, (p, t)
        assert 'name="key"' in r.text
    # Made as the console makes it, with the secret: good.
    p, t = pre_for("a" * 32, int(time.time()) + 600)
    r = req(srv, "POST", "/console/sign-in",
            form={"key": keys["ops"], "csrf": t}, pre=p)
    assert r.status_code == 303, r.text
    assert r.headers["Set-Cookie"].startswith("msgspool_console=ops.")


def test_sign_in_overview_sign_out(srv):
    keys = console_on(srv)
    srv.sms()
    cookie = sign_in(srv, keys["ops"])
    assert cookie.startswith("ops.")
    r = req(srv, "GET", "/console", cookie=cookie)
    assert_page(r, 200)
    assert "Overview" in r.text and "<strong>ops</strong>" in r.text
    assert re.search(r"<td>new</td><td>1</td>", r.text), r.text
    token = csrf(r.text, "sign-out")
    r = req(srv, "POST", "/console/sign-out", cookie=cookie,
            form={"csrf": token})
    assert r.status_code == 303
    assert r.headers["Location"] == BASE
    assert re.match(r"msgspool_console=;.*Max-Age=0",
                    r.headers["Set-Cookie"]), r.headers["Set-Cookie"]


def test_tampered_and_expired_cookies(srv):
    keys = console_on(srv)
    good = sign_in(srv, keys["ops"])
    client, expiry, mac = good.split(".")
    later = int(time.time()) + 3600
    bad = [
        f"acme.{expiry}.{mac}",                 # another client
        f"{client}.{int(expiry) + 1}.{mac}",    # a later expiry
        f"{client}.{expiry}.{'0' * 64}",        # another MAC
        cookie_for("ops", later, secret="x" * 40),  # another secret
        cookie_for("ops", int(time.time()) - 1),    # expired
        cookie_for("ops", int(time.time()) + 13 * 3600),  # too long
        "garbage", "", "...",
    ]
    assert req(srv, "GET", "/console", cookie=cookie_for("ops", later)) \
        .text.count("Overview") >= 1
    for c in bad:
        r = req(srv, "GET", "/console", cookie=c)
        assert_page(r, 200)
        assert 'name="key"' in r.text, c
        assert "Overview" not in r.text, c


def test_session_ends_with_its_key(srv):
    """A session whose client's key is disabled, or no longer admin, is
    over: the form again, its forms refused."""
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    page = req(srv, "GET", "/console", cookie=cookie).text
    token = csrf(page, "sign-out")
    text = srv.inst.keys_file.read_text()
    line = [ln for ln in text.splitlines() if ln.startswith("ops:")][0]
    for changed in (line + ":disabled", line.replace(":admin", ":sms")):
        srv.inst.keys_file.write_text(text.replace(line, changed))
        r = req(srv, "GET", "/console", cookie=cookie)
        assert_page(r, 200)
        assert 'name="key"' in r.text and "Overview" not in r.text
        r = req(srv, "POST", "/console/sign-out", cookie=cookie,
                form={"csrf": token})
        assert_page(r, 403)
    srv.inst.keys_file.write_text(text)
    r = req(srv, "GET", "/console", cookie=cookie)
    assert "Overview" in r.text


def test_post_without_token_refused(srv):
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    other = sign_in(srv, keys["ops"])
    page = req(srv, "GET", "/console", cookie=cookie).text
    token = csrf(page, "sign-out")
    for form in ({"other": "1"}, {"csrf": ""}, {"csrf": "0" * 64},
                 {"csrf": token.upper()}):
        r = req(srv, "POST", "/console/sign-out", cookie=cookie, form=form)
        assert_page(r, 403)
        assert "Set-Cookie" not in r.headers
    # A token is the session's: not another's, not without a cookie.
    if other != cookie:
        r = req(srv, "POST", "/console/sign-out", cookie=other,
                form={"csrf": token})
        assert_page(r, 403)
    r = req(srv, "POST", "/console/sign-out", form={"csrf": token})
    assert_page(r, 403)


def test_methods_of_each_path(srv):
    """A page is GET (and HEAD), a form POST: another method is 405 with
    the path's own Allow, before anything else."""
    console_on(srv)
    mid = "01M840Q7H2P5C7SYTHCZ984TVK"
    for path in ("/console", "/console/messages", "/console/messages/" +
                 mid, "/console/inbound", "/console/suppressions"):
        r = req(srv, "POST", path, form={"x": "1"})
        problem(r, 405, "method-not-allowed")
        assert r.headers["Allow"] == "GET, HEAD", path
        assert req(srv, "HEAD", path).status_code == 200, path
    for path in ("/console/sign-in", "/console/sign-out",
                 f"/console/messages/{mid}/cancel",
                 f"/console/messages/{mid}/retry",
                 "/console/suppressions/add", "/console/suppressions/remove"):
        r = req(srv, "GET", path)
        problem(r, 405, "method-not-allowed")
        assert r.headers["Allow"] == "POST", path


def test_bad_posts(srv):
    keys = console_on(srv)
    r = req(srv, "POST", "/console/sign-in", form=b'{"key":"x"}',
            ctype="application/json")
    problem(r, 415, "unsupported-media-type")
    r = req(srv, "POST", "/console/sign-in", form=b"key=%ff",
            ctype=FORM)
    problem(r, 400, "invalid-body")
    r = req(srv, "POST", "/console/nothing", form={"key": keys["ops"]},
            check=False)
    problem(r, 404, "not-found")
    r = req(srv, "GET", "/console/nothing", check=False)
    problem(r, 404, "not-found")
    r = req(srv, "DELETE", "/console")
    assert r.status_code == 405


def test_overview(srv):
    """Health, the queue by state and channel, the routes and their
    status files, the chart of the last 24 hours: every value from a
    file shown escaped."""
    keys = console_on(srv)
    inst = srv.inst
    conf = inst.conf.read_text()
    # A config whose routes are wrong: the error, escaped, in place.
    inst.conf.write_text(conf + "[sms]\nprovider = file\n"
                         "[route.eu]\nchannel = sms\nprovider = file\n"
                         "fallback = <nowhere>\n")
    cookie = sign_in(srv, keys["ops"])
    r = req(srv, "GET", "/console", cookie=cookie)
    assert_page(r, 200)
    assert "&lt;nowhere&gt;" in r.text and "<nowhere>" not in r.text
    inst.conf.write_text(conf + "[sms]\nprovider = file\n"
                         "[route.eu]\nchannel = sms\nprovider = file\n"
                         "prefix = 49\n")
    r = req(srv, "GET", "/console", cookie=cookie)
    assert_page(r, 200)
    assert "no heartbeat" in r.text
    assert "<rect" not in r.text and "<svg" in r.text
    assert re.search(r"<td>eu</td><td>sms</td><td>not reported", r.text)
    for _ in range(2):
        assert srv.sms().status_code == 202
    assert srv.sms(recipient="+4915112345679",
                   sendAt="2099-01-01T00:00:00Z").status_code == 200
    now = int(time.time())
    hour = now - now % 3600
    (inst.spool / "status").mkdir(exist_ok=True)
    (inst.spool / "status" / "daemon.json").write_text(json.dumps({
        "pid": 1, "host": "h", "version": "1.<script>x</script>",
        "started": now - 60, "heartbeat": now - 5,
        "hours": [{"hour": hour, "sent": 10, "delivered": 7, "failed": 2},
                  {"hour": hour - 3600, "sent": 4, "delivered": 0,
                   "failed": 0},
                  {"hour": hour - 48 * 3600, "sent": 99, "delivered": 0,
                   "failed": 0}]}))
    (inst.spool / "status" / "route-eu.json").write_text(json.dumps({
        "route": "eu", "state": "out", "since": "2026-01-01T00:00:00Z",
        "failures": 5, "lastError": "<script>alert(1)</script> & more"}))
    r = req(srv, "GET", "/console", cookie=cookie)
    assert_page(r, 200)
    t = r.text
    assert re.search(r"heartbeat \d+ s ago", t), t
    assert "1.&lt;script&gt;x&lt;/script&gt;" in t
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in t
    assert re.search(r"<td>new</td><td>2</td>", t), t
    assert re.search(r"<td>deferred</td><td>1</td>", t), t
    assert re.search(r'<tr class="ch-sms"><td>sms</td><td>2</td>'
                     r'<td>1</td><td>0</td></tr>', t), t
    assert re.search(r"<td>eu</td><td>sms</td><td>out</td>"
                     r"<td>2026-01-01T00:00:00Z</td><td>5</td>", t), t
    # Two hours of the 24 drawn (the one 48 hours ago is not): 4 bars.
    assert t.count("<rect") == 4, t
    assert "the highest is 10." in t
    assert "spool free" in t


SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_messages_across_clients(srv):
    """GET /console/messages lists every client's messages newest first,
    filtered; a message's page shows its document; values escaped."""
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    a = srv.sms(messageBody="body " + SCRIPT, reference="ref" + SCRIPT)
    assert a.status_code == 202, a.text
    b = srv.sms(client="other", reference="plain-ref")
    assert b.status_code == 202, b.text
    ida, idb = a.json()["smsId"], b.json()["smsId"]
    r = req(srv, "GET", "/console/messages", cookie=cookie)
    assert_page(r, 200)
    assert SCRIPT not in r.text and ("ref" + ESCAPED) in r.text
    assert r.text.index(idb) < r.text.index(ida)   # newest first
    assert "<td>acme</td>" in r.text and "<td>other</td>" in r.text
    r = req(srv, "GET", "/console/messages?reference=plain-ref&status=",
            cookie=cookie)
    assert_page(r, 200)
    assert idb in r.text and ida not in r.text
    r = req(srv, "GET", "/console/messages?client=acme", cookie=cookie)
    assert ida in r.text and idb not in r.text
    r = req(srv, "GET", "/console/messages?client=nobody", cookie=cookie)
    assert_page(r, 200)
    assert ida not in r.text and idb not in r.text
    r = req(srv, "GET", "/console/messages?client=%3Cscript%3E",
            cookie=cookie)
    assert_page(r, 400)
    assert "<script>" not in r.text
    r = req(srv, "GET", "/console/messages?channel=fax", cookie=cookie)
    assert_page(r, 400)
    r = req(srv, "GET", "/console/messages/" + ida, cookie=cookie)
    assert_page(r, 200)
    assert SCRIPT not in r.text and ("body " + ESCAPED) in r.text
    assert "<td>acme</td>" in r.text
    r = req(srv, "GET", "/console/messages/01M840Q7H2P5C7SYTHCZ984TVK",
            cookie=cookie)
    assert_page(r, 404)
    # Not signed in: the form, nothing of the messages.
    r = req(srv, "GET", "/console/messages/" + ida)
    assert_page(r, 200)
    assert 'name="key"' in r.text and ida not in r.text


def test_cancel_and_retry(srv):
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    mid = srv.sms().json()["smsId"]
    page = req(srv, "GET", "/console/messages/" + mid, cookie=cookie).text
    action = f"messages/{mid}/cancel"
    token = csrf(page, action)
    assert f'action="{BASE}/messages/{mid}/retry"' not in page
    # Without its token, or with another form's: refused, nothing changed.
    for form in ({"other": "1"}, {"csrf": "0" * 64},
                 {"csrf": csrf(page, "sign-out")}):
        r = req(srv, "POST", "/console/" + action, cookie=cookie, form=form)
        assert_page(r, 403)
        assert srv.inst.where(mid) == ["new"]
    r = req(srv, "POST", "/console/" + action, form={"csrf": token})
    assert_page(r, 403)
    assert srv.inst.where(mid) == ["new"]
    r = req(srv, "POST", "/console/" + action, cookie=cookie,
            form={"csrf": token})
    assert r.status_code == 303, r.text
    assert r.headers["Location"] == BASE + "/messages/" + mid
    assert srv.inst.where(mid) == ["failed"]
    assert "canceled" in json.dumps(srv.inst.load("failed", mid))
    # A canceled message is not retried: its client canceled it.
    page = req(srv, "GET", "/console/messages/" + mid, cookie=cookie).text
    r = req(srv, "POST", f"/console/messages/{mid}/retry", cookie=cookie,
            form={"csrf": csrf(page, f"messages/{mid}/retry")})
    assert_page(r, 409)
    assert srv.inst.where(mid) == ["failed"]
    # One waiting in deferred/: retried now, into new/.
    other = srv.sms().json()["smsId"]
    src = srv.inst.path("new", other)
    src.rename(srv.inst.path("deferred", other))
    page = req(srv, "GET", "/console/messages/" + other, cookie=cookie).text
    token = csrf(page, f"messages/{other}/retry")
    r = req(srv, "POST", f"/console/messages/{other}/retry", cookie=cookie,
            form={"other": "1"})
    assert_page(r, 403)
    assert srv.inst.where(other) == ["deferred"]
    r = req(srv, "POST", f"/console/messages/{other}/retry", cookie=cookie,
            form={"csrf": token})
    assert r.status_code == 303, r.text
    assert srv.inst.where(other) == ["new"]


def test_inbound_page(srv):
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    mid = "01M840Q7H2P5C7SYTHCZ984TVK"
    d = srv.inst.spool / "inbox"
    d.mkdir(exist_ok=True)
    (d / f"{mid}.json").write_text(json.dumps({
        "version": 1, "id": mid, "direction": "inbound", "client": "acme",
        "channel": "sms", "from": "+4915112345678", "to": "+4930123456",
        "text": "reply " + SCRIPT, "type": "text",
        "receivedAt": "2026-01-01T00:00:00Z", "provider": "http",
        "providerMessageId": None, "media": []}))
    r = req(srv, "GET", "/console/inbound", cookie=cookie)
    assert_page(r, 200)
    assert mid in r.text and "+4915112345678" in r.text
    assert SCRIPT not in r.text and ("reply " + ESCAPED) in r.text
    r = req(srv, "GET", "/console/inbound")
    assert_page(r, 200)
    assert mid not in r.text and 'name="key"' in r.text


def test_suppressions_page(srv):
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    page = req(srv, "GET", "/console/suppressions", cookie=cookie)
    assert_page(page, 200)
    add = {"client": "acme", "channel": "sms", "address": "+4915112345678",
           "reason": "asked " + SCRIPT}

    def api():
        r = srv.get("/suppressions")
        assert r.status_code == 200, r.text
        return r.json()["suppressions"]

    for form in (dict(add), dict(add, csrf="0" * 64),
                 dict(add, csrf=csrf(page.text, "sign-out"))):
        r = req(srv, "POST", "/console/suppressions/add", cookie=cookie,
                form=form)
        assert_page(r, 403)
    assert api() == []
    token = csrf(page.text, "suppressions/add")
    r = req(srv, "POST", "/console/suppressions/add", cookie=cookie,
            form=dict(add, csrf=token))
    assert r.status_code == 303, r.text
    assert r.headers["Location"] == BASE + "/suppressions"
    (s,) = api()
    assert (s["channel"], s["address"], s["source"]) == \
        ("sms", "+4915112345678", "manual")
    r = req(srv, "POST", "/console/suppressions/add", cookie=cookie,
            form=dict(add, csrf=token, address="not a number"))
    assert_page(r, 400)
    page = req(srv, "GET", "/console/suppressions", cookie=cookie)
    assert_page(page, 200)
    assert SCRIPT not in page.text and ("asked " + ESCAPED) in page.text
    assert "<td>acme</td>" in page.text
    rm = {"client": "acme", "channel": "sms", "address": "+4915112345678"}
    r = req(srv, "POST", "/console/suppressions/remove", cookie=cookie,
            form=dict(rm, csrf=token))      # the add's token: refused
    assert_page(r, 403)
    assert len(api()) == 1
    r = req(srv, "POST", "/console/suppressions/remove", cookie=cookie,
            form=dict(rm, csrf=csrf(page.text, "suppressions/remove")))
    assert r.status_code == 303, r.text
    assert api() == []


def screenshot_spool(srv):
    """A few messages of several states and a day of msgspoold's hours
    (status/daemon.json), for the overview's screenshot."""
    inst = srv.inst
    for i in range(3):
        assert srv.sms(reference=f"other-{i}").status_code == 202
    assert srv.sms(reference="later",
                   sendAt="2099-01-01T00:00:00Z").status_code == 200
    for state in ("sent", "sent", "failed"):
        mid = srv.sms(reference="done").json()["smsId"]
        inst.path("new", mid).rename(inst.path(state, mid))
    now = int(time.time())
    hour = now - now % 3600
    hours = []
    for h in range(24):     # a working day's curve, by the UTC hour
        t = hour - h * 3600
        day = max(0.0, math.sin(math.pi * ((t // 3600 % 24) - 5) / 16))
        sent = 12 + int(110 * day) + h * 7 % 9
        hours.append({"hour": t, "sent": sent,
                      "delivered": sent - 3 - h % 7, "failed": 1 + h % 4})
    (inst.spool / "status").mkdir(exist_ok=True)
    (inst.spool / "status" / "daemon.json").write_text(json.dumps({
        "pid": 1, "host": "gw1", "version": "0.1.0",
        "started": now - 86400, "heartbeat": now - 3, "hours": hours}))


def png_size(data):
    """The width and height of a PNG that is one (its signature, its
    IHDR, its image data inflating to more than one colour)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    assert len(set(zlib.decompress(idat))) > 16, "a PNG of one colour"
    return width, height


def test_in_a_browser(srv, browser, tmp_path):
    """Headless Chromium: sign in with the form, read the overview (its
    queue against the spool; its screenshot, README.md's, at
    MSGSPOOL_SCREENSHOT), find a message by its reference, cancel it
    with its button, retry a failed one, add and remove a suppression,
    sign out."""
    from selenium.webdriver.common.by import By

    keys = console_on(srv)
    mid = srv.sms(reference="find-me").json()["smsId"]
    srv.sms(reference="not-me")
    screenshot_spool(srv)
    browser.get(srv.url("/console"))
    # A page 1200 x 1200 (the window's frame added): the overview whole.
    browser.set_window_size(1200, 1200)
    frame = 1200 - browser.execute_script("return window.innerHeight")
    if frame > 0:
        browser.set_window_size(1200, 1200 + frame)
    assert browser.title == "Sign in - msgspool console"
    browser.find_element(By.NAME, "key").send_keys(keys["ops"])
    browser.find_element(By.CSS_SELECTOR, "form button").click()
    wait_until(lambda: browser.title == "Overview - msgspool console",
               timeout=15, what="the overview after signing in")
    assert "heartbeat" in browser.page_source
    # The queue's numbers are the spool's, state by state.
    rows = {}
    for tr in browser.find_elements(By.XPATH, "//h2[text()='Queue']"
                                    "/following-sibling::table[1]//tr"):
        tds = tr.find_elements(By.TAG_NAME, "td")
        if len(tds) == 2:
            rows[tds[0].text] = int(tds[1].text)
    for state in ("new", "deferred", "sent", "failed"):
        assert rows[state] == len(srv.inst.ids(state)), (state, rows)
    # 24 hours of bars (23 if the hour turned since): 3 bars an hour.
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg rect")) >= 69
    # The chart is in the screenshot, not below it.
    assert browser.execute_script(
        "return document.querySelector('svg').getBoundingClientRect()"
        ".bottom <= window.innerHeight")
    shot = os.environ.get("MSGSPOOL_SCREENSHOT") or tmp_path / "console.png"
    png = browser.get_screenshot_as_png()
    width, height = png_size(png)
    assert 1000 <= width <= 1200 and 1000 <= height <= 1200, (width, height)
    assert len(png) > 20000, len(png)
    with open(shot, "wb") as f:
        f.write(png)
    browser.find_element(By.LINK_TEXT, "Messages").click()
    wait_until(lambda: browser.title == "Messages - msgspool console",
               timeout=15, what="the list of messages")
    browser.find_element(By.NAME, "reference").send_keys("find-me")
    browser.find_element(By.XPATH, "//button[text()='Find']").click()
    wait_until(lambda: "reference=find-me" in browser.current_url,
               timeout=15, what="the list found by reference")
    links = browser.find_elements(By.XPATH, "//table//a")
    assert [a.text for a in links] == [mid]
    links[0].click()
    wait_until(lambda: browser.title == "Message - msgspool console",
               timeout=15, what="the message's page")
    browser.find_element(By.XPATH, "//button[text()='Cancel']").click()
    wait_until(lambda: srv.inst.where(mid) == ["failed"], timeout=15,
               what="the message canceled")
    wait_until(lambda: "canceled" in browser.page_source, timeout=15,
               what="the page of the canceled message")
    # A failed message sent again by its button.
    failed = srv.inst.ids("failed")
    gone = [m for m in failed if m != mid][0]
    browser.get(srv.url("/console/messages/" + gone))
    wait_until(lambda: browser.title == "Message - msgspool console",
               timeout=15, what="the failed message's page")
    browser.find_element(By.XPATH, "//button[text()='Retry now']").click()
    wait_until(lambda: srv.inst.where(gone) == ["new"], timeout=15,
               what="the failed message queued again")
    # A suppression added and removed with the forms.
    browser.find_element(By.LINK_TEXT, "Suppressions").click()
    wait_until(lambda: browser.title == "Suppressions - msgspool console",
               timeout=15, what="the suppressions")
    browser.find_element(By.NAME, "client").send_keys("acme")
    browser.find_element(By.NAME, "address").send_keys("+4915100000077")
    browser.find_element(By.XPATH, "//button[text()='Suppress']").click()
    wait_until(lambda: "+4915100000077" in browser.page_source, timeout=15,
               what="the suppression listed")
    assert srv.get("/suppressions/sms/%2B4915100000077").status_code == 200
    browser.find_element(By.XPATH, "//button[text()='Remove']").click()
    wait_until(lambda: "+4915100000077" not in browser.page_source,
               timeout=15, what="the suppression gone")
    assert srv.get("/suppressions/sms/%2B4915100000077").status_code == 404
    browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait_until(lambda: browser.title == "Sign in - msgspool console",
               timeout=15, what="the form after signing out")
    browser.get(srv.url("/console/messages"))
    assert browser.title == "Sign in - msgspool console"


def test_overview_of_msgspoold(srv):
    """What msgspoold writes (status/daemon.json) is what the overview
    shows: its heartbeat, its version, the hour's messages sent."""
    keys = console_on(srv)
    cookie = sign_in(srv, keys["ops"])
    assert srv.sms().status_code == 202
    srv.inst.daemon_once()
    wait_until(lambda: (srv.inst.spool / "status" / "daemon.json").exists(),
               timeout=15, what="msgspoold's status/daemon.json")
    doc = json.loads((srv.inst.spool / "status" / "daemon.json")
                     .read_text())
    r = req(srv, "GET", "/console", cookie=cookie)
    assert_page(r, 200)
    assert re.search(r"heartbeat -?\d+ s ago", r.text), r.text
    assert doc["version"] in r.text
    # The SMS msgspoold just sent, in this hour's bar.
    assert any(h.get("sent") for h in doc["hours"]), doc
    assert '<rect class="sent"' in r.text, r.text

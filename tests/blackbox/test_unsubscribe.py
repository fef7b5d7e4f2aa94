"""One-click unsubscribe (RFC 8058; conf/openapi.yaml /unsubscribe/{token},
msgspool.conf(5) list-unsubscribe): the List-Unsubscribe link of each email
of a client that asks for it, in the .eml of the file provider and in what
an SMTP relay receives, a POST to it as a mail program makes it (the
address suppressed for that client's email), the page a GET shows (which
changes nothing), tokens that do not verify, and the page in a real
browser.  Under every web server setup: the route, a POST with or without
a body, a page rather than a problem."""

import base64
import email
import email.policy
import hashlib
import hmac
import os
import re
import shutil
import tempfile
import urllib.parse

import pytest

from conftest import assert_problem
from delivery_support import wait_until
from doubles.smtp import SmtpSink
from email_routes import ANN, BOB, CY, eml, ids, item, post, reply, welcome
from openapi_check import check_reply, check_response

SECRET = "the unsubscribe secret of these tests, 48 bytes!"
ONE_CLICK = b"List-Unsubscribe=One-Click"
FORM = "application/x-www-form-urlencoded"
# An address whose page must escape it: & and ' are atext.
ODD = "o'neil&co@example.com"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(client, address, secret=SECRET.encode()):
    """A token as content/unsub.h makes it (conf/openapi.yaml,
    UnsubscribeToken), computed here on its own."""
    text = f"{client}:{address}".encode()
    mac = hmac.new(secret, b"msgspool-unsubscribe:" + text,
                   hashlib.sha256).digest()
    return b64url(text) + "." + b64url(mac)


def links_conf(srv, clients=("acme",), extra=""):
    """The config of srv's instance with public-url (where the tests reach
    it), unsubscribe-secret-file and list-unsubscribe = yes for clients."""
    inst = srv.inst
    secret = inst.base / "unsubscribe.secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    text = (f"public-url = http://127.0.0.1:{srv.port}/\n"
            f"unsubscribe-secret-file = {secret.name}\n" + extra)
    for c in clients:
        text += f"\n[client.{c}]\nlist-unsubscribe = yes\n"
    inst.write_conf(text)


def link_of(m):
    """The URL of a parsed message's List-Unsubscribe, checked as RFC 2369
    and RFC 8058 have it: one <https or http URL>, and the one-click
    List-Unsubscribe-Post beside it."""
    (lu,) = m.get_all("List-Unsubscribe")
    assert re.fullmatch(r"<[^<>\s]+>", str(lu)), lu
    assert m.get_all("List-Unsubscribe-Post") == \
        ["List-Unsubscribe=One-Click"], m.get_all("List-Unsubscribe-Post")
    return str(lu)[1:-1]


def raw_header(raw, name):
    """The header's line in raw bytes, unfolded: it must be one line."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    (line,) = [ln for ln in head.split(b"\r\n")
               if ln.lower().startswith(name.lower().encode() + b":")]
    return line.decode("ascii")


def path_of(srv, url):
    """The path of a link: the server at public-url serves it as it is
    (busybox httpd at /cgi-bin/unsubscribe/TOKEN, srv.route)."""
    parts = urllib.parse.urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == \
        f"http://127.0.0.1:{srv.port}", url
    assert parts.path.startswith("/unsubscribe/"), url
    if srv.kind != "busybox":
        assert srv.url(parts.path) == url
    return parts.path


def one_click(srv, path, data=ONE_CLICK, content_type=FORM, headers=None):
    """POST to a link as a mail program does (RFC 8058): no key, no
    cookie, the one field."""
    h = dict(headers or {})
    if content_type is not None:
        h["Content-Type"] = content_type
    return srv.request("POST", path, client=None, data=data, headers=h)


def suppressions(srv, client):
    """client's email suppressions, as GET /suppressions?channel=email
    gives them to it: {address: object}; and GET of each by its address
    gives the same."""
    r = srv.get("/suppressions?channel=email&limit=500", client=client)
    check_reply(r)
    assert r.status_code == 200, r.text
    got = {s["address"]: s for s in r.json()["suppressions"]}
    for addr, s in got.items():
        one = srv.get("/suppressions/email/" + urllib.parse.quote(addr, ""),
                      client=client)
        check_reply(one)
        assert one.status_code == 200 and one.json() == s, one.text
    return got


def page(r, status):
    """A page: status, HTML, the headers of conf/openapi.yaml; its text."""
    check_reply(r)
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert r.headers["Cache-Control"] == "no-store"
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert "form-action 'self'" in r.headers["Content-Security-Policy"]
    assert "Set-Cookie" not in r.headers and "Location" not in r.headers
    return r.text


def sent_to(srv, *recipients, client="acme"):
    """Queue an email of client to each recipient and send it (file
    provider); the message ids, in order."""
    if client == "acme":
        body = welcome(*[item(a, first_name="A") for a in recipients])
    else:
        body = {"html": "<p>Hello</p>", "subject": "News",
                "from": f"news@{client}.example",
                "payload": [item(a) for a in recipients]}
    out = reply(post(srv, body, client=client), len(recipients), "success")
    srv.inst.daemon_once()
    return ids(out)


# ------------------------------------------------ the link, and its POST

def test_each_email_carries_its_recipients_link_and_a_post_unsubscribes(srv):
    links_conf(srv)
    inst = srv.inst
    ann, bob = sent_to(srv, ANN, BOB)
    links = {}
    for mid, addr in ((ann, ANN), (bob, BOB)):
        m = eml(srv, mid)
        links[addr] = link_of(m)
        # The token names this recipient, for this client.
        assert links[addr].endswith("/unsubscribe/" + token("acme", addr))
        raw = inst.outbox_for(mid)[0].read_bytes()
        assert raw_header(raw, "List-Unsubscribe") == \
            f"List-Unsubscribe: <{links[addr]}>"
    assert suppressions(srv, "acme") == {}

    r = one_click(srv, path_of(srv, links[ANN]))
    text = page(r, 200)
    assert "Unsubscribed" in text and ANN in text
    got = suppressions(srv, "acme")
    assert list(got) == [ANN], got
    assert got[ANN]["source"] == "unsubscribe"
    assert got[ANN]["channel"] == "email"
    # Again: the same answer, the suppression as it was.
    page(one_click(srv, path_of(srv, links[ANN])), 200)
    assert suppressions(srv, "acme") == got
    # Bob's link is his own.
    page(one_click(srv, path_of(srv, links[BOB])), 200)
    assert sorted(suppressions(srv, "acme")) == sorted([ANN, BOB])


def test_smtp_sends_the_link_of_the_eml(srv):
    # One builder: what the relay receives carries the link the file
    # provider's .eml has for the same recipient.
    inst = srv.inst
    with SmtpSink() as sink:
        links_conf(srv, extra=sink.config("email", starttls="no"))
        out = reply(post(srv, welcome(item(CY, first_name="C"))), 1,
                    "success")
        inst.daemon_once()
        (got,) = sink.wait_for(1, timeout=10)
    assert inst.ids("sent") == ids(out)
    url = link_of(got.message)
    assert url == f"http://127.0.0.1:{srv.port}/unsubscribe/" + \
        token("acme", CY)
    assert raw_header(got.data, "List-Unsubscribe") == \
        f"List-Unsubscribe: <{url}>"
    links_conf(srv)
    (mid,) = sent_to(srv, CY)
    assert link_of(eml(srv, mid)) == url
    # RFC 8058 would have the field as multipart/form-data.
    boundary = "----msgspool-test"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; "
            f'name="List-Unsubscribe"\r\n\r\nOne-Click\r\n'
            f"--{boundary}--\r\n").encode()
    page(one_click(srv, path_of(srv, url), data=body,
                   content_type=f"multipart/form-data; boundary={boundary}"),
         200)
    assert list(suppressions(srv, "acme")) == [CY]


def test_a_post_with_no_body_unsubscribes(srv):
    links_conf(srv)
    path = "/unsubscribe/" + token("acme", ANN)
    page(one_click(srv, path, data=b"", content_type=None), 200)
    assert list(suppressions(srv, "acme")) == [ANN]
    # Without Content-Length too, where the server passes such a POST on:
    # lighttpd answers it 411 itself, CGI or FastCGI.
    path = "/unsubscribe/" + token("acme", BOB)
    status, hdrs, body = srv.raw(
        f"POST {path} HTTP/1.1\r\n"
        "Host: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    check_response("POST", srv.route(path), status, hdrs, body)
    if srv.kind.startswith("lighttpd"):
        assert status == 411, (status, body[:300])
        assert list(suppressions(srv, "acme")) == [ANN]
    else:
        assert status == 200, (status, body[:300])
        assert sorted(suppressions(srv, "acme")) == [ANN, BOB]


def test_a_client_without_list_unsubscribe_sends_no_link(srv):
    links_conf(srv, clients=("other",))
    (mid,) = sent_to(srv, ANN)
    m = eml(srv, mid)
    assert m["List-Unsubscribe"] is None
    assert m["List-Unsubscribe-Post"] is None


# -------------------------------------------------- the page of a GET

def test_a_get_shows_a_form_and_changes_nothing(srv):
    links_conf(srv)
    (mid,) = sent_to(srv, ODD)
    path = path_of(srv, link_of(eml(srv, mid)))
    assert path == "/unsubscribe/" + token("acme", ODD)
    for _ in range(3):
        text = page(srv.get(path, client=None), 200)
    # The address escaped, a form that posts the one field here.
    assert "o&#39;neil&amp;co@example.com" in text, text
    assert ODD not in text
    assert re.search(r'<form method="post">', text), text
    assert '<input type="hidden" name="List-Unsubscribe" ' \
        'value="One-Click">' in text
    assert "<script" not in text.lower()
    r = srv.request("HEAD", path, client=None)
    assert r.status_code == 200 and r.content == b""
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert suppressions(srv, "acme") == {}
    # What the form posts unsubscribes.
    page(one_click(srv, path), 200)
    assert list(suppressions(srv, "acme")) == [ODD]


# ------------------------------------------- tokens that do not verify

def test_a_token_with_one_byte_changed_is_404(srv):
    links_conf(srv)
    good = token("acme", ANN)
    bad = set()
    for i in (0, 5, len(good) // 2, good.index(".") - 1, good.index("."),
              good.index(".") + 1, len(good) - 2, len(good) - 1):
        c = good[i]
        bad.add(good[:i] + ("B" if c != "B" else "C") + good[i + 1:])
    bad |= {good[:-1], good + "A", good.split(".")[0],
            token("acme", ANN, b"another secret, 24 bytes or more"),
            token("acme", ANN)[:-2] + "xx"}
    for t in sorted(bad):
        assert t != good
        r = one_click(srv, "/unsubscribe/" + t)
        check_reply(r)
        p = assert_problem(r, 404)
        assert p["type"] == "urn:msgspool:problem:not-found", p
        text = page(srv.get("/unsubscribe/" + t, client=None), 404)
        assert "not valid" in text and "<form" not in text
    assert suppressions(srv, "acme") == {}
    page(one_click(srv, "/unsubscribe/" + good), 200)
    assert list(suppressions(srv, "acme")) == [ANN]


def test_a_token_of_another_clients_address_is_that_clients_alone(srv):
    links_conf(srv, clients=("acme", "other"))
    (a,) = sent_to(srv, ANN)
    (o,) = sent_to(srv, ANN, client="other")
    la, lo = link_of(eml(srv, a)), link_of(eml(srv, o))
    assert la != lo and lo.endswith(token("other", ANN))
    page(one_click(srv, path_of(srv, lo)), 200)
    assert list(suppressions(srv, "other")) == [ANN]
    assert suppressions(srv, "acme") == {}
    page(one_click(srv, path_of(srv, la)), 200)
    assert list(suppressions(srv, "acme")) == [ANN]


def test_without_a_secret_no_link_is_checked(srv):
    # A config that cannot check a link is the server's failure, never a
    # 404: the operator hears why.
    srv.inst.write_conf("public-url = http://127.0.0.1/\n")
    path = "/unsubscribe/" + token("acme", ANN)
    for r in (one_click(srv, path), srv.get(path, client=None)):
        check_reply(r)
        p = assert_problem(r, 500)
        assert p["detail"] == "the service is misconfigured"
    assert suppressions(srv, "acme") == {}
    assert "unsubscribe-secret" in srv.cgi_stderr()


# ------------------------------------------------------- msgspoold

@pytest.mark.parametrize("conf,why", [
    ("unsubscribe-secret = " + SECRET + "\n[client.acme]\n"
     "list-unsubscribe = yes\n",
     "[client.acme] list-unsubscribe = yes: no public-url"),
    ("public-url = https://msg.example.com\n[client.acme]\n"
     "list-unsubscribe = yes\n",
     "[client.acme] list-unsubscribe = yes: neither unsubscribe-secret "
     "nor unsubscribe-secret-file"),
    ("public-url = https://msg.example.com\nunsubscribe-secret = short\n"
     "[client.acme]\nlist-unsubscribe = yes\n",
     "unsubscribe-secret: shorter than 24 bytes"),
    ("public-url = https://msg.example.com\nunsubscribe-secret-file = "
     "empty.secret\n[client.acme]\nlist-unsubscribe = yes\n",
     "unsubscribe-secret-file: empty file"),
    ("public-url = https://msg.example.com\nunsubscribe-secret = "
     + SECRET + "\n[client.acme]\nlist-unsubscribe = sure\n",
     "[client.acme] list-unsubscribe: neither yes nor no"),
])
def test_msgspoold_refuses_a_client_without_what_its_links_need(srv, conf,
                                                                 why):
    (srv.inst.base / "empty.secret").write_text("")
    srv.inst.write_conf(conf)
    cp = srv.inst.daemon_once(check=False)
    assert cp.returncode != 0, cp.err
    assert why in cp.err, cp.err


# ------------------------------------------------ a person's browser

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture
def browser():
    """Debian's chromium, headless, through chromedriver and selenium,
    with a profile of its own; skipped, saying why, where it cannot run."""
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="apt-get install python3-selenium")
    from selenium.webdriver.chrome.service import Service
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not (os.access(binary, os.X_OK) and os.access(driver, os.X_OK)):
        pytest.skip("no chromium and chromedriver (apt-get install "
                    "chromium chromium-driver)")
    profile = tempfile.mkdtemp(prefix="msgspool-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for f in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(f)
    try:
        b = webdriver.Chrome(service=Service(driver), options=opts)
    except Exception as e:  # noqa: BLE001 - any failure to start is a skip
        shutil.rmtree(profile, ignore_errors=True)
        pytest.skip(f"chromium cannot run here: {str(e).splitlines()[0]}")
    b.set_page_load_timeout(30)
    try:
        yield b
    finally:
        b.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_the_page_in_a_browser_unsubscribes_with_its_button(srv, browser):
    from selenium.webdriver.common.by import By

    links_conf(srv)
    (mid,) = sent_to(srv, ODD)
    url = srv.url(path_of(srv, link_of(eml(srv, mid))))
    browser.get(url)
    assert browser.title == "Unsubscribe"
    assert ODD in browser.find_element(By.TAG_NAME, "p").text
    # Opening it changed nothing.
    assert suppressions(srv, "acme") == {}
    browser.find_element(By.TAG_NAME, "button").click()
    wait_until(lambda: browser.title == "Unsubscribed", timeout=15,
               what="the page after the button")
    assert browser.current_url == url
    assert ODD in browser.find_element(By.TAG_NAME, "p").text
    got = suppressions(srv, "acme")
    assert list(got) == [ODD] and got[ODD]["source"] == "unsubscribe"

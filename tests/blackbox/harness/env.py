"""The harness's settings: where the programs are, which web server, the
routes, the instance's clients and templates, and times as the API
writes them."""

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

ROOT = Path(__file__).resolve().parents[3]
_O = os.environ.get("O") or "build/"
CGI_DIR = Path(os.environ.get("MSGSPOOL_CGI_DIR") or (ROOT / _O / "cgi-bin"))
BIN_DIR = Path(os.environ.get("MSGSPOOL_BIN_DIR") or (ROOT / _O / "spooler"))
FCGI_DIR = Path(os.environ.get("MSGSPOOL_FCGI_DIR") or (ROOT / _O / "fcgi"))
CONF_DIR = ROOT / "conf"
LIGHTTPD_CONF = CONF_DIR / "lighttpd.conf"


def _which(name, fallback):
    return (shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
            or fallback)


LIGHTTPD = _which("lighttpd", "/usr/sbin/lighttpd")
NGINX = _which("nginx", "/usr/sbin/nginx")
FCGIWRAP = _which("fcgiwrap", "/usr/sbin/fcgiwrap")
APACHE = _which("apache2", "/usr/sbin/apache2")
BUSYBOX = _which("busybox", "/bin/busybox")
UNSHARE = _which("unshare", "/usr/bin/unshare")
SPAWN_FCGI = _which("spawn-fcgi", "/usr/bin/spawn-fcgi")

# The web server of this run (MSGSPOOL_SERVER) and the binary it needs.
SERVERS = {"lighttpd": LIGHTTPD, "nginx": NGINX, "apache": APACHE,
           "busybox": BUSYBOX, "lighttpd-fcgi": LIGHTTPD,
           "nginx-fcgi": NGINX}
SERVER = (os.environ.get("MSGSPOOL_SERVER") or "lighttpd").strip().lower()
# The web server in front (what the tests of its own ways look at), and
# whether msgspool-fcgi serves the routes (FastCGI mode) instead of the
# CGI programs.
FASTCGI = SERVER.endswith("-fcgi")
FRONT = SERVER[:-len("-fcgi")] if FASTCGI else SERVER

# conf/openapi.yaml: route -> CGI program (x-cgi-program).
ROUTES = {
    "/ping": "ping",
    "/templates": "templates",
    "/ott/v1/deliver": "ott-deliver",
    "/sms/v1/deliver": "sms-deliver",
    "/sms/v1/deliver/batch": "sms-batch",
    "/voice/v1/deliver": "voice-deliver",
    "/deliver": "email-deliver",
    "/email/v1/deliver": "email-deliver",
    "/email/v1/attachments": "attachments",
    "/suppressions": "suppressions",
    "/messages": "messages",
    "/metrics": "metrics",
    "/console": "console",
}
# Routes with a parameter: a prefix and the program that serves it.
PREFIX_ROUTES = {
    "/messages/": "messages",
    "/receipts/": "receipts",
    "/unsubscribe/": "unsubscribe",
    "/suppressions/": "suppressions",
    "/console/": "console",
}
PROGRAMS = sorted(set(ROUTES.values()) | set(PREFIX_ROUTES.values()))

STATES = ("tmp", "new", "deferred", "cur", "sent", "failed")
# A ULID: 26 characters of Crockford base32 (no I, L, O, U).
ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PROBLEM_PREFIX = "urn:msgspool:problem:"
WWW_AUTHENTICATE = 'ApiKey header="X-API-KEY"'
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")

HTTP_TIMEOUT = 15       # seconds for one request
START_TIMEOUT = 30      # seconds for the web server to answer /ping
START_TRIES = 5         # web server starts tried before giving up
PROC_TIMEOUT = 60       # seconds for one run of the daemon or the CLI

RECIPIENT = "+4915112345678"

# Clients of every instance: name -> scopes field of the keys file.
CLIENTS = {
    "acme": "*",
    "mailer": "email",
    "smsonly": "sms",
    "gone": "*:disabled",
    "other": "sms,ott,email,voice",
    "intl": "email",
}

# acme's email templates: id -> (Name, Subject, From, Tags, Created).
# Created None: the header is left out and the file's mtime applies.
ACME_TEMPLATES = {
    "welcome": ("Welcome", "Welcome, {{first_name}}!", "hello@acme.example",
                "onboarding,welcome", "2024-05-01T09:00:00Z"),
    "invoice": ("Monthly invoice", "Your invoice {{number}}",
                "billing@acme.example", "billing", "2023-01-15T12:30:00Z"),
    "reset-pw.v2": ("Password reset", "Reset your password",
                    "security@acme.example", "", "2025-02-20T08:00:00Z"),
    "legacy_1": ("Legacy", "Old news", "old@acme.example", "legacy", None),
}
LEGACY_MTIME = "2022-06-01T00:00:00Z"
INTL_NAME = "Grüße – € 😀"
OTHER_TEMPLATES = {
    "secret": ("Other's template", "Private", "ceo@other.example", "internal",
               "2024-01-01T00:00:00Z"),
}


# --------------------------------------------------------------- time

def parse_time(s):
    """An RFC 3339 / ISO 8601 string as an aware datetime."""
    assert isinstance(s, str), f"not a time string: {s!r}"
    t = s.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.datetime.fromisoformat(t)
    assert dt.tzinfo is not None, f"time without a zone: {s!r}"
    return dt


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(dt):
    """An aware datetime as 2026-11-23T10:00:00Z (whole seconds)."""
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def in_future(seconds):
    return rfc3339(utcnow() + datetime.timedelta(seconds=seconds))


def id_time(msgid):
    """The creation time a ULID encodes (first 10 characters, ms)."""
    ms = 0
    for c in msgid[:10]:
        ms = ms * 32 + CROCKFORD.index(c)
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


def fresh_window(rate, need=10):
    """Windows are fixed (msgspool.conf(5)): a count starts again at a
    multiple of the window.  A test that counts across a few requests
    waits for the next window when fewer than need seconds of this one
    are left, so the count it sees is not reset halfway."""
    unit = rate.rpartition("/")[2]
    window = {"s": 1, "min": 60, "h": 3600}.get(unit)
    if window is None or window == 1:
        return
    left = window - time.time() % window
    if left < need:
        time.sleep(left + 0.05)


# ----------------------------------------------------------- instance

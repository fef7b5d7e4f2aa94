"""The assertions the tests share: problems, the Allow header, what the
spool holds, ids."""

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


# ------------------------------------------------------------ asserts

def assert_problem(r, status, path=None):
    """r is an RFC 9457 problem with this status; when path is given,
    errors maps that JSON path to a non-empty list of strings."""
    assert r.status_code == status, (
        f"expected {status}, got {r.status_code}: {r.text[:500]}")
    ctype = r.headers.get("Content-Type", "")
    assert ctype.split(";")[0].strip().lower() == "application/problem+json", (
        f"Content-Type {ctype!r}, body {r.text[:300]}")
    p = r.json()
    assert isinstance(p, dict), p
    assert isinstance(p.get("type"), str) and \
        p["type"].startswith(PROBLEM_PREFIX), p
    assert isinstance(p.get("title"), str) and p["title"], p
    assert p.get("status") == status and type(p["status"]) is int, p
    assert isinstance(p.get("detail"), str), p
    if "errors" in p and p["errors"] is not None:
        assert isinstance(p["errors"], dict), p
        for k, v in p["errors"].items():
            assert isinstance(v, list) and v, p
            assert all(isinstance(m, str) and m for m in v), p
    if path is not None:
        errs = p.get("errors") or {}
        assert path in errs, f"no errors[{path!r}] in {p}"
    return p


def assert_unauthorized(r):
    p = assert_problem(r, 401)
    assert r.headers.get("WWW-Authenticate") == WWW_AUTHENTICATE, r.headers
    return p


def assert_allow(r, allow):
    """A 405 whose Allow is allow ("POST", "GET, HEAD")."""
    assert_problem(r, 405)
    got = [m.strip() for m in r.headers.get("Allow", "").split(",")]
    assert got == [m.strip() for m in allow.split(",")], \
        f"Allow: {r.headers.get('Allow')!r}"


def assert_nothing_queued(inst):
    """No message anywhere a request could have left one."""
    for s in ("tmp", "new", "deferred"):
        assert inst.files(s) == [], f"{s}/ holds {inst.files(s)}"


def assert_spool_file(inst, state, msgid, client="acme", to=RECIPIENT,
                      body=None):
    """The spool file of msgid in state: 0640 at most, JSON, the documented
    fields.  Returns the document."""
    p = inst.path(state, msgid)
    assert p.is_file(), f"no {state}/{msgid}.json; spool {inst.counts()}"
    mode = stat.S_IMODE(p.stat().st_mode)
    # The writer's, readable by its group at most (msgspool-spool(5)).
    assert mode & 0o7137 == 0 and mode & 0o600 == 0o600, \
        f"{p} has mode {oct(mode)}"
    doc = json.loads(p.read_bytes())
    assert isinstance(doc, dict)
    for k in ("version", "id", "channel", "client", "created", "attempts",
              "nextAttempt", "lastError", "providerReply", "message"):
        assert k in doc, f"{k!r} missing from {doc}"
    assert doc["version"] == 1
    assert doc["id"] == msgid
    assert doc["channel"] == "sms"
    assert doc["client"] == client
    assert isinstance(doc["attempts"], int)
    created = parse_time(doc["created"])
    assert abs((created - id_time(msgid)).total_seconds()) < 5, doc
    if state in ("new", "deferred") or doc["nextAttempt"] is not None:
        parse_time(doc["nextAttempt"])      # sent/ may say null
    assert isinstance(doc["message"], dict)
    assert doc["message"].get("to") == to, doc["message"]
    if body is not None:
        assert doc["message"].get("body") == body, doc["message"]
    return doc


def assert_id(msgid):
    assert isinstance(msgid, str) and ID_RE.match(msgid), \
        f"not a ULID: {msgid!r}"
    drift = abs((id_time(msgid) - utcnow()).total_seconds())
    assert drift < 120, f"id {msgid} encodes a time {drift:.0f}s away"

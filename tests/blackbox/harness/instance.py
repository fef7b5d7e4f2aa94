"""An msgspool instance in a directory (config, keys, templates, spool)
and the view of its spool the tests read."""

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

def _sha256(s):
    return hashlib.sha256(s.encode()).hexdigest()


def _template_text(name, subject, frm, tags, created, body):
    lines = [f"Name: {name}", f"Subject: {subject}", f"From: {frm}",
             f"Tags: {tags}"]
    if created is not None:
        lines.append(f"Created: {created}")
    return "\n".join(lines) + "\n\n" + body


class Instance:
    """One msgspool installation in a directory: config, keys, templates,
    spool.  keys maps a client name to its (plain) API key."""

    def __init__(self, base):
        self.base = Path(base)
        self.spool = self.base / "spool"
        self.keys_file = self.base / "keys"
        self.templates = self.base / "templates"
        self.conf = self.base / "msgspool.conf"
        self.base.mkdir(parents=True, exist_ok=True)
        self.keys = {c: secrets.token_urlsafe(32) for c in CLIENTS}
        self.write_conf()
        self.write_keys()
        self.write_templates()
        self.reset()

    # -- setup
    def write_conf(self, extra=""):
        self.conf.write_text(
            "# msgspool black-box test instance\n"
            f"spool = {self.spool}\n"
            f"keys = {self.keys_file}\n"
            f"templates = {self.templates}\n" + extra)

    def write_keys(self):
        lines = ["# client:sha256(key):scopes[:disabled]"]
        for c, scopes in CLIENTS.items():
            lines.append(f"{c}:{_sha256(self.keys[c])}:{scopes}")
        self.keys_file.write_text("\n".join(lines) + "\n")
        self.keys_file.chmod(0o600)

    def write_templates(self):
        body = ("<html><body><p>Hello {{first_name}},</p>"
                "<p>welcome to ACME &amp; friends.</p></body></html>\n")
        for client, tmpls in (("acme", ACME_TEMPLATES),
                              ("other", OTHER_TEMPLATES)):
            d = self.templates / client / "email"
            d.mkdir(parents=True, exist_ok=True)
            for tid, (name, subj, frm, tags, created) in tmpls.items():
                p = d / f"{tid}.tmpl"
                p.write_text(_template_text(name, subj, frm, tags, created,
                                            body))
                if created is None:
                    t = parse_time(LEGACY_MTIME).timestamp()
                    os.utime(p, (t, t))
        acme = self.templates / "acme"
        # Not email templates of acme: none of these may be listed.
        (acme / "email" / ".hidden.tmpl").write_text(_template_text(
            "Hidden", "x", "x@acme.example", "", "2020-01-01T00:00:00Z", "x"))
        (acme / "email" / "notes.txt").write_text("not a template\n")
        # An id no templateId could name ([A-Za-z0-9_.-]{1,128}).
        (acme / "email" / "bad id.tmpl").write_text(_template_text(
            "Bad id", "x", "x@acme.example", "", "2020-01-01T00:00:00Z", "x"))
        (acme / "ott").mkdir(exist_ok=True)
        (acme / "ott" / "otp.tmpl").write_text(
            "Name: OTP\nParameters: 1\nLanguage: en\n"
            "Provider-Template: otp_code\n\nYour code is {{1}}\n")
        # intl: one template in UTF-8, one written in Latin-1 by mistake.
        d = self.templates / "intl" / "email"
        d.mkdir(parents=True, exist_ok=True)
        (d / "utf8.tmpl").write_text(_template_text(
            INTL_NAME, "Grüße, {{name}}", "post@intl.example", "ä,ö",
            "2024-02-02T02:02:02Z", body), encoding="utf-8")
        (d / "latin1.tmpl").write_bytes(_template_text(
            "Gr\u00fc\u00dfe latin", "Caf\u00e9", "post@intl.example", "",
            "2024-03-03T03:03:03Z", "<p>caf\u00e9</p>").encode("latin-1"))
        # smsonly has an empty email directory, mailer none at all.
        (self.templates / "smsonly" / "email").mkdir(parents=True,
                                                     exist_ok=True)

    def reset(self):
        """Empty the spool (every state and the outbox), recreating
        missing subdirectories, and restore the config and keys files."""
        self.spool.mkdir(exist_ok=True)
        # The states, the outbox and the areas beside them (not uploads/:
        # an upload outlives the messages that use it).
        for sub in list(STATES) + ["outbox", "blobs", "receipts", "index",
                                   "events", "events-failed", "rates", "idempotency",
                                   "claims", "status", "suppressions",
                                   "inbox", "inbox-new", "inbox-parts",
                                   "lists", "metrics"]:
            d = self.spool / sub
            if d.is_dir() and not d.is_symlink():
                shutil.rmtree(d)
            elif d.exists() or d.is_symlink():
                d.unlink()
        for sub in STATES:
            (self.spool / sub).mkdir(mode=0o700)
        self.write_conf()
        self.write_keys()

    # -- spool inspection
    def files(self, state):
        d = self.spool / state
        if not d.is_dir():
            return []
        return sorted(p.name for p in d.iterdir())

    def ids(self, state):
        return [n[:-5] for n in self.files(state) if n.endswith(".json")]

    def counts(self):
        return {s: len(self.files(s)) for s in STATES}

    def where(self, msgid):
        """The states holding a file whose name starts with msgid."""
        return [s for s in STATES
                if any(n.startswith(msgid) for n in self.files(s))]

    def path(self, state, msgid):
        return self.spool / state / f"{msgid}.json"

    def load(self, state, msgid):
        return json.loads(self.path(state, msgid).read_bytes())

    def outbox(self):
        d = self.spool / "outbox"
        if not d.is_dir():
            return []
        return sorted(p for p in d.iterdir() if p.is_file())

    def outbox_for(self, msgid):
        return [p for p in self.outbox() if p.name.startswith(msgid)]

    # -- programs
    def _run(self, argv, env=None, timeout=PROC_TIMEOUT, input=None):
        e = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
        if env:
            e.update(env)
        prog = Path(argv[0])
        if not prog.exists():
            pytest.fail(f"not built: {prog} (run `make build`)")
        try:
            cp = subprocess.run([str(a) for a in argv], env=e, input=input,
                                capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{argv} did not finish in {timeout}s: {exc}")
        cp.out = cp.stdout.decode("utf-8", "replace")
        cp.err = cp.stderr.decode("utf-8", "replace")
        for mark in SANITIZER_MARKS:
            assert mark not in cp.err, f"sanitizer report from {argv}:\n{cp.err}"
        return cp

    def cli(self, *args, config=True, env=None):
        argv = [BIN_DIR / "msgspool"]
        if config:
            argv += ["-c", self.conf]
        return self._run(argv + list(args), env=env)

    def daemon_once(self, check=True):
        cp = self._run([BIN_DIR / "msgspoold", "-c", self.conf, "--once"])
        if check:
            assert cp.returncode == 0, (
                f"msgspoold --once exited {cp.returncode}\n{cp.err}")
        return cp


# ------------------------------------------------------------- server

#!/usr/bin/python3
"""
seeds.py: make the seed corpora of the request targets from the requests
the black-box tests send.

    /usr/bin/python3 tests/fuzz/seeds.py [PYTEST ARGS...]

runs the black-box tests of the POST routes (against the programs that
MSGSPOOL_CGI_DIR names, as they would run anyway) with every request body
recorded, then keeps for each program a few dozen of them: distinct, the
smallest first, at most 8 KiB, each attachmentId rewritten to the upload
of fuzz_request.c's scratch instance, and a receipt's body after the
byte that names its provider there.  Files are named bb-HASH; other
seeds in the corpus directories (hand-*) are left alone.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
TESTS = ["test_sms.py", "test_sms_batch.py", "test_ott.py", "test_voice.py",
         "test_email.py", "test_email_attachments.py", "test_email_sent.py",
         "test_attachments_upload.py", "test_receipts.py"]
PROGRAMS = ("sms-deliver", "sms-batch", "ott-deliver", "voice-deliver",
            "email-deliver", "attachments", "receipts")
PROVIDERS = ["twilio", "whatsapp", "http"]
PER_PROGRAM = 40
MAX_SIZE = 8192
# fuzz_request.c's instance: its upload and the ids its templates have.
UPLOAD_ID = "01J000000000000000000ATTCH"


class Recorder:
    """A pytest plugin: every body the harness sends, by program."""

    def __init__(self):
        self.bodies = {}
        self.patched = False

    def pytest_runtest_setup(self, item):
        if self.patched:
            return
        conftest = sys.modules["conftest"]
        request = conftest.Server.request
        recorder = self

        def recording(srv, method, path, *args, **kw):
            route = path.partition("?")[0]
            prog = conftest.ROUTES.get(route)
            data = kw.get("data")
            if route.startswith("/receipts/"):
                # fuzz_request.c: the provider as the first byte.
                provider = route[len("/receipts/"):]
                prog = "receipts" if provider in PROVIDERS else None
                if prog and isinstance(data, bytes):
                    data = bytes([PROVIDERS.index(provider)]) + data
            if method == "POST" and prog and isinstance(data, bytes):
                recorder.bodies.setdefault(prog, []).append(data)
            return request(srv, method, path, *args, **kw)

        conftest.Server.request = recording
        self.patched = True


def adapt(data):
    """The body, its attachmentIds naming the fuzz instance's upload."""
    if data[:1] in (b"\0", b"\1", b"\2"):
        return data              # a receipt: as the provider sent it
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return data              # kept as it is: bad JSON is worth a seed

    changed = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "attachmentId" and isinstance(x, str) and \
                        x != UPLOAD_ID:
                    v[k] = UPLOAD_ID
                    changed.append(k)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(body)
    # The bytes as sent (escapes, lone surrogates) unless rewritten.
    return json.dumps(body).encode() if changed else data


def main(args):
    rec = Recorder()
    tests = [str(ROOT / "tests" / "blackbox" / t) for t in TESTS]
    pytest.main(["-q", "-p", "no:cacheprovider"] + tests + args,
                plugins=[rec])
    for prog, bodies in sorted(rec.bodies.items()):
        if prog not in PROGRAMS:
            continue
        seen = {}
        for b in bodies:
            b = adapt(b)
            if len(b) <= MAX_SIZE:
                seen.setdefault(hashlib.sha1(b).hexdigest()[:16], b)
        keep = sorted(seen.items(), key=lambda kv: (len(kv[1]), kv[0]))
        # The smallest half and an even spread of the rest.
        n = min(PER_PROGRAM, len(keep))
        small = keep[:n // 2]
        rest = keep[n // 2:]
        step = max(1, len(rest) // max(1, n - len(small)))
        chosen = small + rest[::step][:n - len(small)]
        d = CORPUS / f"request-{prog}"
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("bb-*"):
            old.unlink()
        for h, b in chosen:
            (d / f"bb-{h}").write_bytes(b)
        print(f"seeds: {d.relative_to(ROOT)}: {len(chosen)} of "
              f"{len(bodies)} bodies")


if __name__ == "__main__":
    os.chdir(ROOT)
    main(sys.argv[1:])

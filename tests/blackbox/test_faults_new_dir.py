"""
Fault tests (issue 9, "Fault tests in make check"), against the real
programs: what may be found in new/ besides spool files
(msgspool-spool(5)): a FIFO, a symbolic link (to a private file, to a
valid document outside the spool), a directory, an empty file, bad JSON,
a wrong version, a name that is not an id, a document whose id is not its
name (defects 2, 3, 4); msgspoold and the CLI leave each alone or move it
aside, and the running daemon goes on past a FIFO.  The spool's other
faults: test_faults.py.
"""

import json
import os
import secrets
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import (BIN_DIR, RECIPIENT, SANITIZER_MARKS, STATES,
                      Instance)
from delivery_support import (daemons, make_doc, new_id, queue_sms,
                              wait_until, where)

__all__ = ["daemons"]   # the fixture, imported for pytest

RUN_TIMEOUT = 30        # seconds for msgspoold --once or msgspool list here
R2 = "+4915112345679"


# ------------------------------------------------ what new/ may hold

BAD_KINDS = ["fifo", "symlink-private", "symlink-document", "directory",
             "empty", "bad-json", "wrong-version", "name-not-an-id",
             "id-not-its-name", "id-path-traversal"]


class Planted:
    """One bad entry in new/ and what must never come of it."""

    def __init__(self, inst, outside, kind):
        self.kind = kind
        self.token = secrets.token_hex(8)
        # In the planted document: never in the outbox or sent/.
        self.marker = "PLANTED-%s-%s" % (kind, self.token)
        # In a private file outside the spool: never in any output or
        # file of the spool (a link to it is never read through).
        self.secret = None
        self.outside_files = []
        self.pwned = None
        new = inst.spool / "new"
        self.name = new_id() + ".json"
        doc = make_doc("sms", {"to": "+4915112399999",
                               "body": self.marker})
        if kind == "fifo":
            os.mkfifo(new / self.name, 0o600)
        elif kind == "symlink-private":
            # A short word of letters first: what a leak shows first (a
            # JSON parser's error says "near 'word'").
            self.secret = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz")
                                  for _ in range(8))
            target = outside / ("private-%s" % self.token)
            target.write_text("%s = the root password\n" % self.secret)
            target.chmod(0o600)
            self.outside_files.append(target)
            (new / self.name).symlink_to(target)
        elif kind == "symlink-document":
            self.name = doc["id"] + ".json"
            target = outside / self.name
            target.write_text(json.dumps(doc))
            target.chmod(0o600)
            self.outside_files.append(target)
            (new / self.name).symlink_to(target)
        elif kind == "directory":
            (new / self.name).mkdir()
            (new / self.name / "inner.json").write_text(json.dumps(doc))
        elif kind == "empty":
            (new / self.name).write_bytes(b"")
        elif kind == "bad-json":
            (new / self.name).write_text('{"version": 1, "id": "%s' %
                                         self.marker)
        elif kind == "wrong-version":
            doc["version"] = 99
            self.name = doc["id"] + ".json"
            (new / self.name).write_text(json.dumps(doc))
        elif kind == "name-not-an-id":
            self.name = "not-an-id.json"
            (new / self.name).write_text(json.dumps(doc))
        elif kind == "id-not-its-name":
            doc["id"] = new_id()        # valid, but not this file's
            (new / self.name).write_text(json.dumps(doc))
        elif kind == "id-path-traversal":
            self.pwned = "pwned-%s" % self.token
            doc["id"] = "/../../../%s" % self.pwned
            (new / self.name).write_text(json.dumps(doc))
        else:
            raise ValueError(kind)
        self.outside_bytes = {p: p.read_bytes() for p in self.outside_files}


def _tree(root, skip):
    """Regular files under root (not under skip): path -> (size, mtime)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if Path(dirpath, d) not in skip]
        for f in filenames:
            p = Path(dirpath, f)
            st = p.lstat()
            out[p] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns)
    return out


def _regular_files(root):
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            p = Path(dirpath, f)
            if stat.S_ISREG(p.lstat().st_mode):
                yield p


def _cli(inst, *args):
    env = {k: v for k, v in os.environ.items() if k != "MSGSPOOL_CONFIG"}
    argv = [str(BIN_DIR / "msgspool"), "-c", str(inst.conf)] + list(args)
    try:
        cp = subprocess.run(argv, env=env, capture_output=True,
                            timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail("msgspool %s did not finish in %ds (it hangs)" % (
            " ".join(args), RUN_TIMEOUT))
    out = (cp.stdout + cp.stderr).decode("utf-8", "replace")
    for mark in SANITIZER_MARKS:
        assert mark not in out, "sanitizer report:\n" + out
    return cp.returncode, out


def _once(daemons, inst):
    d = daemons.start(inst.conf, once=True)
    try:
        rc = d.proc.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        d.kill()
        pytest.fail("msgspoold --once did not finish in %ds (it hangs); "
                    "spool: %s\n%s" % (RUN_TIMEOUT, inst.counts(),
                                       d.log()[-3000:]))
    d.check_sanitizers()
    return rc, d.log()


def _assert_contained(inst, planted, outputs):
    """Nothing of planted reached the outbox, sent/, an output or any
    file in the spool, and nothing outside the spool changed."""
    if planted.secret:
        head = planted.secret
        for text in outputs:
            assert head not in text, (
                "a file outside the spool was read through a link:\n" +
                text[-3000:])
        for p in _regular_files(inst.spool):
            assert head.encode() not in p.read_bytes(), (
                "a file outside the spool was read through a link into "
                "%s" % p)
    for state in ("outbox", "sent"):
        for p in _regular_files(inst.spool / state):
            assert planted.marker.encode() not in p.read_bytes(), (
                "the planted entry was delivered: %s" % p)
    for p, data in planted.outside_bytes.items():
        assert p.read_bytes() == data, "%s outside the spool changed" % p
    sent = inst.spool / "sent" / planted.name
    assert not (sent.exists() and not sent.is_symlink() and
                stat.S_ISREG(sent.lstat().st_mode)), (
        "the planted entry was sent: %s" % sent)
    assert inst.files("cur") == [], inst.files("cur")


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_bad_entry_in_new(tmp_path, daemons, kind):
    # Deep enough that ../../../ from the outbox stays inside tmp_path.
    inst = Instance(tmp_path / "a" / "b" / "inst")
    (inst.spool / "outbox").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    good = [queue_sms(inst.spool, "+491511234%04d" % i, "good %d" % i)
            for i in range(2)]
    planted = Planted(inst, outside, kind)
    skip = {inst.spool, tmp_path / "daemon-logs"}
    before = _tree(tmp_path, skip)
    outputs = []

    rc, out = _cli(inst, "list")
    outputs.append(out)
    assert rc == 0, "msgspool list: exit %d\n%s" % (rc, out)
    rc, log = _once(daemons, inst)
    outputs.append(log)
    rc2, out = _cli(inst, "list")
    outputs.append(out)
    show_id = planted.name[:26]
    _, out = _cli(inst, "show", show_id)
    outputs.append(out)

    # The good messages went out, each once.
    for msgid in good:
        assert where(inst.spool, msgid) == ["sent"], (
            msgid, inst.counts(), log[-2000:])
    assert sorted(p.name for p in inst.outbox()) == \
        sorted(m + ".json" for m in good), (inst.outbox(), log[-2000:])
    assert rc == 0, "msgspoold --once exited %d\n%s" % (rc, log)
    assert rc2 == 0, "msgspool list after the run: exit %d" % rc2
    # The bad entry: moved aside to failed/ with a log line naming it,
    # or skipped (left where it was); never gone.
    places = [s for s in STATES + ("outbox",)
              if os.path.lexists(inst.spool / s / planted.name)]
    assert places in (["new"], ["failed"]), (
        "%s is in %s, not in new/ (skipped) or failed/ (set aside)\n%s" % (
            planted.name, places or "no state", log[-3000:]))
    if places == ["failed"]:
        assert planted.name in log, (
            "%s set aside with no log line naming it:\n%s" % (
                planted.name, log[-3000:]))
    _assert_contained(inst, planted, outputs)
    after = _tree(tmp_path, skip)
    changed = {str(p) for p in set(after) | set(before)
               if after.get(p) != before.get(p)}
    assert not changed, "written outside the spool: %s" % sorted(changed)
    if planted.pwned:
        assert not list(Path("/").glob(planted.pwned + "*")), \
            "written at /" + planted.pwned


def test_fifo_does_not_stop_the_running_daemon(inst_fifo, daemons):
    # Defect 2, the foreground daemon: a FIFO found at start and one that
    # appears while it runs; the messages beside them still go out, and
    # SIGTERM still stops it.
    inst = inst_fifo
    os.mkfifo(inst.spool / "new" / (new_id() + ".json"), 0o600)
    first = queue_sms(inst.spool, RECIPIENT, "beside a fifo")
    d = daemons.start(inst.conf)
    wait_until(lambda: where(inst.spool, first) == ["sent"] or
               not d.alive(), RUN_TIMEOUT,
               what="the first message sent beside a FIFO")
    assert d.alive(), d.log()[-3000:]
    os.mkfifo(inst.spool / "new" / (new_id() + ".json"), 0o600)
    second = queue_sms(inst.spool, R2, "after a fifo")
    wait_until(lambda: where(inst.spool, second) == ["sent"] or
               not d.alive(), RUN_TIMEOUT,
               what="the second message sent after a FIFO appeared")
    assert d.alive(), d.log()[-3000:]
    d.signal(signal.SIGTERM)
    try:
        rc = d.proc.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        d.kill()
        pytest.fail("msgspoold did not stop on SIGTERM (a FIFO in new/)")
    assert rc == 0, d.log()[-3000:]
    assert inst.files("cur") == []


@pytest.fixture
def inst_fifo(tmp_path):
    inst = Instance(tmp_path / "inst")
    (inst.spool / "outbox").mkdir()
    return inst

"""
Fault tests (issue 9, "Fault tests in make check"), against the real
programs:

- a full and a read-only spool (a small tmpfs mounted on the instance's
  spool, filled, or remounted read-only) for every POST route: 503 with
  Retry-After, a problem document, nothing left in tmp/, new/ or
  deferred/ (conf/openapi.yaml); a batch of which some entries could be queued
  is a 200 with per-entry errors;
- a spool write failure (EROFS, EACCES) is a 5xx, never a 4xx
  (defect 5);
- msgspoold --once on a read-only spool exits non-zero and says why
  (defect 10);

Mounting needs root (or CAP_SYS_ADMIN); where it cannot be done the
tests that need it are skipped and say why.  The kill -9 loops are in
test_crash.py; what new/ may hold besides spool files in
test_faults_new_dir.py.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (RECIPIENT, SANITIZER_MARKS, UNSHARE, Instance, Server,
                      userns_ok, assert_problem, in_future)
from channels_support import OTT_CONF
from delivery_support import daemons, queue_sms, where

__all__ = ["daemons"]   # the fixture, imported for pytest

MOUNT = shutil.which("mount") or "/bin/mount"
UMOUNT = shutil.which("umount") or "/bin/umount"
FS_SIZE = "512k"        # the small spool's tmpfs
RUN_TIMEOUT = 30        # seconds for msgspoold --once or msgspool list here
R2 = "+4915112345679"


# ------------------------------------------------------------- mounts

def _run(*argv, check=True):
    cp = subprocess.run([str(a) for a in argv], capture_output=True,
                        text=True, timeout=30)
    if check and cp.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(map(str, argv)),
                                       cp.stderr.strip()))
    return cp


_MOUNT_WHY = None


def _cannot_mount():
    """None when a tmpfs can be mounted and remounted read-only here,
    else why not."""
    global _MOUNT_WHY
    if _MOUNT_WHY is None:
        d = tempfile.mkdtemp(prefix="msgspool-mount-")
        try:
            _run(MOUNT, "-t", "tmpfs", "-o", "size=64k", "tmpfs", d)
            try:
                _run(MOUNT, "-o", "remount,ro", d)
                _MOUNT_WHY = ""
            finally:
                _run(UMOUNT, d, check=False)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            _MOUNT_WHY = ("cannot mount a tmpfs here (needs root or "
                          "CAP_SYS_ADMIN): %s" % e)
        finally:
            try:
                os.rmdir(d)
            except OSError:
                pass
    return _MOUNT_WHY or None


def need_mount():
    why = _cannot_mount()
    if why:
        pytest.skip(why)


class SmallFs:
    """A tmpfs of FS_SIZE mounted on path (an instance's spool)."""

    def __init__(self, path, size=FS_SIZE):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        _run(MOUNT, "-t", "tmpfs", "-o", "size=%s,mode=0700" % size,
             "tmpfs", self.path)
        self.mounted = True

    def remount(self, *opts):
        _run(MOUNT, "-o", ",".join(("remount",) + opts), self.path)

    def readonly(self):
        self.remount("ro")

    def writable(self):
        self.remount("rw")

    def fill(self):
        """Fill the filesystem: writes of data fail with ENOSPC."""
        chunk = b"\0" * 65536
        with open(self.path / "filler", "ab", buffering=0) as f:
            for size in (65536, 4096, 1):
                while True:
                    try:
                        f.write(chunk[:size])
                    except OSError as e:
                        if e.errno != 28:   # ENOSPC
                            raise
                        break
        st = os.statvfs(self.path)
        assert st.f_bavail == 0, "the spool is not full"

    def limit_inodes(self, more):
        """Let only `more` further files or directories be made."""
        st = os.statvfs(self.path)
        used = st.f_files - st.f_ffree
        self.remount("nr_inodes=%d" % (used + more))

    def unlimit_inodes(self):
        self.remount("nr_inodes=1000000")

    def clear(self):
        """Writable again, and empty."""
        self.writable()
        self.unlimit_inodes()
        for p in self.path.iterdir():
            if p.is_dir() and not p.is_symlink():
                for q in p.iterdir():
                    if q.is_dir() and not q.is_symlink():
                        shutil.rmtree(q)
                    else:
                        q.unlink()
            else:
                p.unlink()

    def umount(self):
        if self.mounted:
            if _run(UMOUNT, self.path, check=False).returncode != 0:
                _run(UMOUNT, "-l", self.path, check=False)
            self.mounted = False


# ---------------------------------------------------- the POST routes

def b64(data):
    return base64.b64encode(data).decode("ascii")


# Every POST route with a request that the healthy spool queues:
# name -> (route, body, status on success).
REQUESTS = {
    "sms": ("/sms/v1/deliver",
            {"recipient": RECIPIENT, "messageBody": "hello"}, 202),
    "sms-scheduled": ("/sms/v1/deliver",
                      {"recipient": RECIPIENT, "messageBody": "later",
                       "sendAt": None}, 200),
    "sms-batch": ("/sms/v1/deliver/batch",
                  {"messages": [{"recipient": RECIPIENT,
                                 "messageBody": "one"},
                                {"recipient": R2, "messageBody": "two"}]},
                  200),
    "sms-batch-of-one": ("/sms/v1/deliver/batch",
                         {"messages": [{"recipient": RECIPIENT,
                                        "messageBody": "one"}]}, 200),
    "ott": ("/ott/v1/deliver",
            {"payload": [{"recipient": "4915112345678", "templateID": "otp",
                          "templateParameters": ["123456"],
                          "channelType": 1},
                         {"recipient": "4915112345679", "templateID": "otp",
                          "templateParameters": ["654321"],
                          "channelType": 1}]}, 200),
    "voice": ("/voice/v1/deliver",
              {"recipient": RECIPIENT, "message": "hello"}, 202),
    "voice-campaign": ("/voice/v1/deliver",
                       {"campaignName": "c", "recipients": [RECIPIENT, R2],
                        "message": "hello"}, 202),
    "deliver": ("/deliver",
                {"from": "shop@acme.example", "subject": "Hi",
                 "html": "<p>Hello</p>",
                 "payload": [{"recipient": "ann@example.org"}]}, 200),
    "deliver-two": ("/deliver",
                    {"from": "shop@acme.example", "subject": "Hi",
                     "html": "<p>Hello</p>",
                     "payload": [{"recipient": "ann@example.org"},
                                 {"recipient": "bob@example.org"}],
                     "attachments": [{"attachmentName": "a.txt",
                                      "content": b64(b"attached\n")}]}, 200),
    "email-v1": ("/email/v1/deliver",
                 {"from": "shop@acme.example", "subject": "Hi",
                  "html": "<p>Hello</p>",
                  "recipients": [{"to": "ann@example.org"}]}, 200),
    "attachments": ("/email/v1/attachments",
                    {"attachmentName": "a.txt",
                     "content": b64(b"uploaded\n")}, 201),
}


def request_body(name):
    route, body, status = REQUESTS[name]
    body = json.loads(json.dumps(body))
    if "sendAt" in body:
        body["sendAt"] = in_future(3600)
    return route, body, status


def queued_files(inst):
    """Every file a request may have left: tmp/, new/, deferred/ and the
    uploads."""
    out = {s: inst.files(s) for s in ("tmp", "new", "deferred")}
    up = inst.spool / "uploads"
    out["uploads"] = sorted(str(p.relative_to(up)) for p in up.rglob("*")
                            if not p.is_dir()) if up.is_dir() else []
    return out


def assert_nothing_left(inst):
    left = {k: v for k, v in queued_files(inst).items() if v}
    assert not left, "left in the spool: %s" % left


def assert_retry_after(r):
    ra = (r.headers.get("Retry-After") or "").strip()
    assert ra, "no Retry-After: %s" % dict(r.headers)
    if ra.isdigit():
        assert int(ra) > 0, ra
    else:
        from email.utils import parsedate_to_datetime
        parsedate_to_datetime(ra)


# ------------------------------------------------------------ fixtures

class UserNsServer(Server):
    """A web server whose processes (and so the CGI programs) run in a
    user namespace as an unprivileged uid mapped to ours: root's
    permission bypass is gone, so a spool directory without write
    permission gives EACCES as it would to www-data."""

    def _spawn(self, argv, env, log):
        if Path(str(argv[0])).name != Path(UNSHARE).name:
            argv = [UNSHARE, "--user", "--map-user=65534",
                    "--map-group=65534"] + list(argv)
        return super()._spawn(argv, env, log)


def _check_cgi_log(server, start):
    new = server.cgi_stderr()[start:]
    for mark in SANITIZER_MARKS:
        assert mark not in new, "sanitizer report:\n" + new[-4000:]


@pytest.fixture(scope="module")
def _small(tmp_path_factory):
    """One instance whose spool is a small tmpfs, and its web server."""
    need_mount()
    base = tmp_path_factory.mktemp("small")
    inst = Instance(base / "inst")
    fs = SmallFs(inst.spool)
    try:
        inst.reset()
        srv = Server(inst, base / "run")
    except BaseException:
        fs.umount()
        raise
    srv.fs = fs
    yield srv
    srv.stop()
    fs.umount()


@pytest.fixture
def small(request, _small):
    """The small-spool server, its spool writable and empty, [ott.1]
    configured."""
    _small.fs.clear()
    _small.inst.reset()
    _small.inst.write_conf(OTT_CONF)
    start = len(_small.cgi_stderr())
    yield _small
    if getattr(request.node, "rep_call", None) is not None and \
            request.node.rep_call.failed:
        print(_small.logs())
    _small.fs.clear()
    _check_cgi_log(_small, start)


# ------------------------------------------- full and read-only spool

@pytest.mark.parametrize("name", list(REQUESTS))
def test_healthy_small_spool_queues(small, name):
    # The control: each request is queued on this spool when it is not
    # full, so a 503 below is the fault's doing.
    route, body, status = request_body(name)
    r = small.post_json(route, body)
    assert r.status_code == status, r.text
    assert queued_files(small.inst)["tmp"] == []
    if name == "attachments":
        assert queued_files(small.inst)["uploads"], r.text
    else:
        assert small.inst.files("new") or small.inst.files("deferred")


@pytest.mark.parametrize("fault", ["full", "readonly"])
@pytest.mark.parametrize("name", list(REQUESTS))
def test_spool_fault_is_503(small, name, fault):
    route, body, _ = request_body(name)
    if fault == "full":
        small.fs.fill()
    else:
        small.fs.readonly()
    r = small.post_json(route, body)
    assert_problem(r, 503)
    assert_retry_after(r)
    assert_nothing_left(small.inst)


def test_batch_partly_queued_is_200_with_per_entry_errors(small):
    # Room for three more files: of six entries some are queued, the
    # rest fail each with a reason, in a 200 (conf/openapi.yaml).
    msgs = [{"recipient": "+49151123456%02d" % i, "messageBody": "m%d" % i}
            for i in range(6)]
    # The client's list made first (msgspool-spool(5), Lists: its
    # directory, head and segment), as on any spool in use; that
    # message then taken away, so that new/ holds the batch's alone.
    r = small.post_json("/sms/v1/deliver", msgs[0])
    assert r.status_code == 202, r.text
    (small.inst.spool / "new" / (r.json()["smsId"] + ".json")).unlink()
    small.fs.limit_inodes(3)
    r = small.post_json("/sms/v1/deliver/batch", {"messages": msgs})
    small.fs.unlimit_inodes()
    assert r.status_code == 200, r.text
    out = r.json()
    assert [e["recipient"] for e in out] == [m["recipient"] for m in msgs]
    queued = [e["smsId"] for e in out if e["status"] == "Queued"]
    failed = [e for e in out if e["status"] == "error"]
    assert queued and failed, out
    assert len(queued) + len(failed) == len(msgs), out
    for e in failed:
        assert isinstance(e["error"], str) and e["error"].strip(), e
    assert small.inst.ids("new") == sorted(queued), out
    assert small.inst.files("tmp") == []


# ----------------------------------------- a write failure is not 4xx

@pytest.mark.parametrize("how", ["erofs", "eacces-tmp", "eacces-new"])
def test_spool_write_failure_is_5xx_not_400(private, tmp_path, how):
    # Defect 5: EACCES answered 400 "the SMS has invalid fields".
    if how == "erofs":
        need_mount()
        srv, inst = private()
        fs = SmallFs(inst.spool)
        try:
            inst.reset()
            fs.readonly()
            r = srv.sms()
            fs.writable()
            left = queued_files(inst)
        finally:
            fs.umount()
    else:
        if os.geteuid() != 0:
            srv, inst = private()
        elif not userns_ok():
            pytest.skip("root bypasses permissions and no user namespace "
                        "can be made here (unshare --user failed)")
        else:
            inst = Instance(tmp_path / "userns-inst")
            srv = UserNsServer(inst, tmp_path / "userns-run")
        try:
            d = inst.spool / ("tmp" if how == "eacces-tmp" else "new")
            d.chmod(0o500)
            try:
                r = srv.sms()
            finally:
                d.chmod(0o700)
            left = queued_files(inst)
        finally:
            if isinstance(srv, UserNsServer):
                srv.stop()
                _check_cgi_log(srv, 0)
    assert 500 <= r.status_code <= 599, (
        "a spool write failure must be 5xx, got %d: %s" % (r.status_code,
                                                           r.text))
    assert_problem(r, r.status_code)
    if r.status_code == 503:
        assert_retry_after(r)
    assert not any(left.values()), left


# ------------------------------------------------ the daemon, read-only

def test_once_on_read_only_spool_fails_and_says_why(tmp_path, daemons):
    # Defect 10: it exited 0 silently, the message left in new/.
    need_mount()
    inst = Instance(tmp_path / "inst")
    fs = SmallFs(inst.spool)
    try:
        inst.reset()
        (inst.spool / "outbox").mkdir()
        msgid = queue_sms(inst.spool, RECIPIENT, "stuck")
        fs.readonly()
        d = daemons.start(inst.conf, once=True)
        rc = d.wait(RUN_TIMEOUT)
        d.check_sanitizers()
        log = d.log()
        assert rc != 0, "msgspoold --once exited 0 on a read-only spool:\n" + \
            log
        assert re.search(r"read-only|EROFS", log, re.I), (
            "no log line saying the spool is read-only:\n" + log)
        fs.writable()
        assert where(inst.spool, msgid) == ["new"]
        daemons.once(inst.conf)
        assert where(inst.spool, msgid) == ["sent"]
    finally:
        fs.umount()

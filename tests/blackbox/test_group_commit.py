"""
Group commit (msgspool-spool(5), "Group commit" and Queueing): the
processes of a host that queue at once share one sync of new/; none is
told its message is accepted before a sync begun after its own rename
has ended.

The fault build of sms-deliver (make check-build: tests/fault/) is run
as a web server runs a CGI program, several at once.  One of them is
stopped (MSGSPOOL_STOP, SIGSTOP) at each step of a group commit, its
own step or the writer's, while it holds the record's lock or not; the
others queue meanwhile; then it is killed (SIGKILL).  Every message a
process was told was accepted is in new/, whole; the record counts every
rename as synced; nothing waits forever on a dead writer.  The kills at
every fault point one after another (each write, rename and sync, the
group commit's among them) are test_list.py's
test_killed_at_every_fault_point.

Under sync = filesystem (msgspool.conf(5)) the same holds of the file
system's syncs, with the batch program (16 messages a request): each
batch counts its files' write and their names in the record's slot 15.

No web server changes any of this: it runs once, under lighttpd.
"""

import json
import os
import signal
import struct
import subprocess
import time

import pytest

from conftest import CGI_DIR, RECIPIENT, SERVER
from harness.asserts import assert_nothing_queued, assert_problem

pytestmark = pytest.mark.skipif(
    SERVER != "lighttpd",
    reason="no web server involved: the group commit runs once, under "
           "lighttpd")

FAULT_SMS = CGI_DIR.parent / "tests" / "fault" / "sms-deliver"
FAULT_BATCH = CGI_DIR.parent / "tests" / "fault" / "sms-batch"
DEADLINE = 20           # seconds for any process to reach a state
FCNTL = 72              # x86_64 fcntl(2): a process waiting for the lock
MAGIC = 0x6d7364736e633032
NEW = 1                 # enum spool_dir: SPOOL_NEW
FS = 15                 # the record's slot of the file system's syncs
BATCH = 16              # SPOOL_SYNCFS_MIN: sync = filesystem syncs it so
STEPS = ["dsync: counted, waiting for the writer",
         "dsync: the writer, before its sync",
         "dsync: the writer, synced, not yet recorded"]


def _env(inst, stop=None, batch=False):
    if batch:
        data = json.dumps({"messages": [
            {"recipient": RECIPIENT, "messageBody": "grouped %d" % i}
            for i in range(BATCH)]})
    else:
        data = json.dumps({"recipient": RECIPIENT, "messageBody": "grouped"})
    path = "/sms/v1/deliver/batch" if batch else "/sms/v1/deliver"
    env = {"PATH": "/usr/bin:/bin", "MSGSPOOL_CONFIG": str(inst.conf),
           "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "POST",
           "REQUEST_URI": path, "SCRIPT_NAME": path,
           "CONTENT_TYPE": "application/json",
           "CONTENT_LENGTH": str(len(data)),
           "HTTP_X_API_KEY": inst.keys["acme"]}
    if stop is not None:
        env["MSGSPOOL_STOP"] = stop
    return env, data.encode()


def _start(inst, stop=None, batch=False):
    env, data = _env(inst, stop, batch)
    prog = FAULT_BATCH if batch else FAULT_SMS
    p = subprocess.Popen([str(prog)], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(data)
    p.stdin.close()
    p.stdin = None          # all given: communicate() only reads
    return p


def _state(pid):
    """The process's state letter (R, S, T, ...), None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _syscall(pid):
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[0]
    except (OSError, IndexError):
        return None


def _wait(pred, what):
    deadline = time.time() + DEADLINE
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.01)
    pytest.fail("waited %d s for %s" % (DEADLINE, what))


def _accepted(p):
    """The id a finished process was told was accepted (202)."""
    out, err = p.communicate(timeout=DEADLINE)
    assert p.returncode == 0, (p.returncode, err[-500:])
    head, _, body = out.decode().replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("Status: 202"), out[:300]
    return json.loads(body)["smsId"]


def _accepted_batch(p):
    """The ids a finished batch was told were accepted (200, each
    Queued)."""
    out, err = p.communicate(timeout=DEADLINE)
    assert p.returncode == 0, (p.returncode, err[-500:])
    head, _, body = out.decode().replace("\r\n", "\n").partition("\n\n")
    assert head.startswith("Status: 200"), out[:300]
    assert all(e["status"] == "Queued" for e in json.loads(body)), body
    ids = [e["smsId"] for e in json.loads(body)]
    assert len(ids) == BATCH
    return ids


def _record(inst, slot=NEW):
    """The counts of a slot (new/'s by default) in the host's record:
    (renamed, synced)."""
    names = os.listdir(inst.spool / "sync")
    assert len(names) == 1, names
    data = (inst.spool / "sync" / names[0]).read_bytes()
    assert len(data) == 8 * 49, len(data)
    magic, = struct.unpack_from("=Q", data, 0)
    assert magic == MAGIC
    renamed = struct.unpack_from("=16Q", data, 8)
    synced = struct.unpack_from("=16Q", data, 8 + 8 * 16)
    return renamed[slot], synced[slot]


def _whole(inst, mid):
    doc = json.loads((inst.spool / "new" / (mid + ".json")).read_text())
    assert doc["id"] == mid
    return doc


def _stop_start_kill(inst, step, batch=False):
    """One process stopped at step; three others started meanwhile
    (waiting for the stopped one's lock when it holds it); the stopped
    one killed.  The others, running on."""
    stopped = _start(inst, step, batch)
    _wait(lambda: _state(stopped.pid) == "T", "the stop at " + step)
    others = [_start(inst, batch=batch) for _ in range(3)]
    if step != STEPS[0]:
        # The stopped one holds the lock: the others, their renames not
        # synced, wait for it in fcntl(2).
        _wait(lambda: all(_syscall(o.pid) == str(FCNTL) for o in others),
              "the others to wait for the writer's lock")
        assert all(o.poll() is None for o in others)
    os.kill(stopped.pid, signal.SIGKILL)
    stopped.wait(DEADLINE)
    assert stopped.returncode == -signal.SIGKILL
    return others


@pytest.fixture
def inst(srv):
    if not FAULT_SMS.is_file():
        pytest.fail("%s: the fault build is missing (make check-build)"
                    % FAULT_SMS)
    return srv.inst


@pytest.mark.parametrize("step", STEPS)
def test_a_process_stopped_and_killed_at_each_step(inst, step):
    # The record made, so that every process below counts in it.
    first = _accepted(_start(inst))
    renamed0, synced0 = _record(inst)
    assert synced0 == renamed0
    others = _stop_start_kill(inst, step)
    ids = [_accepted(o) for o in others]
    for mid in [first] + ids:
        _whole(inst, mid)
    renamed, synced = _record(inst)
    # Each process's rename counted (the killed one's too: it counts
    # before it stops at any step), and every count synced by the last.
    assert renamed - renamed0 == 4, (renamed0, renamed)
    assert synced == renamed, (synced, renamed)
    assert os.listdir(inst.spool / "tmp") == []


def test_many_at_once_all_accepted_and_synced(inst):
    _accepted(_start(inst))
    renamed0, _ = _record(inst)
    procs = [_start(inst) for _ in range(24)]
    ids = [_accepted(p) for p in procs]
    assert len(set(ids)) == 24
    for mid in ids:
        _whole(inst, mid)
    renamed, synced = _record(inst)
    assert renamed - renamed0 == 24
    assert synced == renamed


@pytest.mark.parametrize("step", STEPS)
def test_sync_filesystem_batch_stopped_and_killed_at_each_step(inst, step):
    """sync = filesystem (msgspool.conf(5)): batches of 16 share the
    file system's syncs, of their files and then of their names.  One
    stopped at each step of the first and killed: the others' messages
    are all in new/, whole, every count synced, tmp/ empty."""
    inst.write_conf("sync = filesystem")
    _accepted(_start(inst))                 # the record made
    fs0, new0 = _record(inst, FS), _record(inst)
    first = _accepted_batch(_start(inst, batch=True))
    renamed0, synced0 = _record(inst, FS)
    # A batch's files, then its names: two counts, and new/ not synced.
    assert (renamed0 - fs0[0], synced0 - fs0[1]) == (2, 2)
    assert _record(inst) == new0
    others = _stop_start_kill(inst, step, batch=True)
    ids = [i for o in others for i in _accepted_batch(o)]
    for mid in first + ids:
        _whole(inst, mid)
    # The killed one's files were unnamed: gone with it, never in new/.
    assert len(os.listdir(inst.spool / "new")) == 1 + 4 * BATCH
    renamed, synced = _record(inst, FS)
    # The killed one counted its files (it stops after counting); each
    # other its files and its names.
    assert renamed - renamed0 == 1 + 3 * 2, (renamed0, renamed)
    assert synced == renamed, (synced, renamed)
    assert os.listdir(inst.spool / "tmp") == []


def test_sync_filesystem_single_message_syncs_its_file(srv):
    """Under sync = filesystem a commit of fewer than 16 files syncs as
    under file: its file, and new/ shared."""
    inst = srv.inst
    inst.write_conf("sync = filesystem")
    _accepted(_start(inst))
    fs0, new0 = _record(inst, FS), _record(inst)
    r = srv.post_json("/sms/v1/deliver", {"recipient": RECIPIENT,
                                          "messageBody": "one"})
    assert r.status_code == 202, r.text
    _whole(inst, r.json()["smsId"])
    assert _record(inst, FS) == fs0
    assert _record(inst)[0] == new0[0] + 1


@pytest.mark.parametrize("value", ["fs", "", "Filesystem", "file system"])
def test_sync_of_another_value_is_the_servers_fault(srv, value):
    """A sync that is neither file nor filesystem: a send is the
    server's error (500, nothing queued), and msgspoold will not start."""
    inst = srv.inst
    inst.write_conf("sync = %s\n" % value)
    r = srv.post_json("/sms/v1/deliver", {"recipient": RECIPIENT,
                                          "messageBody": "no"})
    assert_problem(r, 500)
    assert_nothing_queued(inst)
    cp = inst.daemon_once(check=False)
    assert cp.returncode != 0
    assert "sync" in cp.err, cp.err

"""msgspoold --once with the file provider, and the msgspool CLI, on spool
files made through the HTTP API (msgspoold(8), msgspool(8),
msgspool-spool(5))."""

import datetime
import hashlib
import json
import shutil
import stat

import pytest

from conftest import (RECIPIENT, assert_problem, assert_spool_file,
                      assert_unauthorized, in_future, parse_time, rfc3339,
                      utcnow)


def _queue(srv, text="hi", recipient=RECIPIENT, client="acme", **kw):
    r = srv.sms(client=client, recipient=recipient, messageBody=text, **kw)
    assert r.status_code in (200, 202), r.text
    return r.json()["smsId"]


def _fail_by_hand(inst, sid):
    """Move a sent message into failed/ the way an operator could."""
    shutil.move(inst.path("sent", sid), inst.path("failed", sid))


# ------------------------------------------------------------- daemon

def test_once_sends_queued_message(srv):
    inst = srv.inst
    sid = _queue(srv, text="HelloOutbox123", recipient="+4915199887766")
    inst.daemon_once()
    assert inst.files("new") == []
    assert inst.files("cur") == []
    assert inst.files("sent") == [sid + ".json"]
    doc = assert_spool_file(inst, "sent", sid, to="+4915199887766",
                            body="HelloOutbox123")
    assert doc["attempts"] >= 1, doc
    out = inst.outbox_for(sid)
    assert len(out) == 1, [p.name for p in inst.outbox()]
    data = out[0].read_bytes()
    assert b"HelloOutbox123" in data
    assert b"4915199887766" in data


def test_once_with_nothing_to_do(srv):
    srv.inst.daemon_once()
    assert all(n == 0 for n in srv.inst.counts().values())


def test_once_sends_several(srv):
    inst = srv.inst
    ids = [_queue(srv, text=f"Msg{i}x", recipient=f"+49151000000{i:02d}")
           for i in range(4)]
    inst.daemon_once()
    assert inst.ids("sent") == sorted(ids)
    assert inst.files("new") == []
    for i, sid in enumerate(ids):
        out = inst.outbox_for(sid)
        assert len(out) == 1, sid
        assert f"Msg{i}x".encode() in out[0].read_bytes()


def test_two_daemons_never_send_one_file_twice(srv):
    import subprocess
    from conftest import BIN_DIR
    inst = srv.inst
    msgs = [{"recipient": "+49151%08d" % i, "messageBody": f"Twice{i}x"}
            for i in range(60)]
    r = srv.post_json("/sms/v1/deliver/batch", {"messages": msgs})
    assert r.status_code == 200, r.text
    ids = [e["smsId"] for e in r.json()]
    argv = [str(BIN_DIR / "msgspoold"), "-c", str(inst.conf), "--once"]
    procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for _ in range(2)]
    errs = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        errs.append(err.decode("utf-8", "replace"))
        assert p.returncode == 0, errs
    assert inst.ids("sent") == sorted(ids), (inst.counts(), errs)
    assert inst.files("new") == [] and inst.files("cur") == []
    for sid in ids:
        assert len(inst.outbox_for(sid)) == 1, sid
    assert len(inst.outbox()) == len(ids)
    for sid in ids:
        assert inst.load("sent", sid)["attempts"] == 1, sid


def test_once_keeps_scheduled_in_deferred(srv):
    inst = srv.inst
    later = _queue(srv, text="Later", sendAt=in_future(3600))
    now = _queue(srv, text="NowNow")
    inst.daemon_once()
    assert inst.files("deferred") == [later + ".json"]
    assert inst.files("sent") == [now + ".json"]
    assert inst.outbox_for(later) == []
    doc = assert_spool_file(inst, "deferred", later, body="Later")
    assert doc["attempts"] == 0


def test_once_sends_deferred_message_when_due(srv):
    inst = srv.inst
    sid = _queue(srv, text="DueNow", sendAt=in_future(3600))
    p = inst.path("deferred", sid)
    doc = json.loads(p.read_bytes())
    doc["nextAttempt"] = rfc3339(utcnow() - datetime.timedelta(minutes=1))
    p.write_text(json.dumps(doc))
    inst.daemon_once()
    assert inst.files("deferred") == []
    assert inst.files("sent") == [sid + ".json"]
    assert len(inst.outbox_for(sid)) == 1


def test_once_ignores_tmp(srv):
    inst = srv.inst
    junk = inst.spool / "tmp" / "01ARZ3NDEKTSV4RRFFQ69G5FAV.json"
    junk.write_text("{half written")
    sid = _queue(srv)
    inst.daemon_once()
    assert junk.exists() and junk.read_text() == "{half written"
    assert inst.files("sent") == [sid + ".json"]


def test_once_creates_missing_subdirs(srv):
    inst = srv.inst
    sid = _queue(srv, text="Recreate")
    for s in ("sent", "failed", "cur"):
        shutil.rmtree(inst.spool / s)
    inst.daemon_once()
    for s in ("sent", "failed", "cur"):
        assert (inst.spool / s).is_dir(), s
    assert inst.files("sent") == [sid + ".json"]


def test_once_recovers_claim_left_in_cur(srv):
    # A claim left by a dead daemon returns to new/ (and is then due).
    inst = srv.inst
    sid = _queue(srv, text="Orphaned")
    shutil.move(inst.path("new", sid), inst.path("cur", sid))
    inst.daemon_once()
    assert inst.files("cur") == []
    assert inst.where(sid) in (["new"], ["sent"]), inst.counts()


def test_once_survives_a_corrupt_file(srv):
    inst = srv.inst
    bad = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    inst.path("new", bad).write_text("{not json")
    wrongver = "01ARZ3NDEKTSV4RRFFQ69G5FAW"
    good = _queue(srv, text="StillSent")
    doc = inst.load("new", good)
    doc["id"] = wrongver
    doc["version"] = 99
    inst.path("new", wrongver).write_text(json.dumps(doc))
    inst.path("new", wrongver).chmod(0o600)
    inst.daemon_once(check=False)
    assert inst.files("sent") == [good + ".json"]
    assert len(inst.outbox_for(good)) == 1
    assert bad not in inst.ids("sent") and wrongver not in inst.ids("sent")
    assert inst.outbox_for(bad) == [] and inst.outbox_for(wrongver) == []


def test_file_provider_dir_from_config(srv, tmp_path):
    inst = srv.inst
    out = tmp_path / "elsewhere"
    out.mkdir()
    inst.write_conf(f"[sms]\nprovider = file\ndir = {out}\n")
    try:
        sid = _queue(srv, text="ElsewhereText")
        inst.daemon_once()
    finally:
        inst.write_conf()
    assert inst.files("sent") == [sid + ".json"]
    files = [p for p in out.iterdir() if p.name.startswith(sid)]
    assert len(files) == 1, list(out.iterdir())
    assert b"ElsewhereText" in files[0].read_bytes()
    assert inst.outbox_for(sid) == []


def test_provider_failure_defers_with_backoff(srv):
    # The file provider cannot write (outbox is a file): a temporary
    # failure, so deferred/ with the error inside and a later next try.
    inst = srv.inst
    (inst.spool / "outbox").write_text("in the way\n")
    sid = _queue(srv, text="Blocked")
    inst.daemon_once()
    assert inst.files("sent") == [] and inst.files("new") == []
    assert inst.files("deferred") == [sid + ".json"]
    doc = assert_spool_file(inst, "deferred", sid, body="Blocked")
    assert doc["attempts"] == 1
    assert isinstance(doc["lastError"], str) and doc["lastError"]
    assert parse_time(doc["nextAttempt"]) > utcnow()
    # Not due yet: another run leaves it alone.
    inst.daemon_once()
    assert inst.files("deferred") == [sid + ".json"]
    assert inst.load("deferred", sid)["attempts"] == 1
    # list shows the attempt count and the error.
    line = [ln for ln in inst.cli("list").out.splitlines() if sid in ln]
    assert len(line) == 1 and "deferred" in line[0].split(), line
    # Fixed by the operator, retried by hand, then sent.
    (inst.spool / "outbox").unlink()
    assert inst.cli("retry", sid).returncode == 0
    assert inst.files("new") == [sid + ".json"]
    inst.daemon_once()
    assert inst.files("sent") == [sid + ".json"]
    assert inst.load("sent", sid)["attempts"] == 2


def test_provider_failure_past_max_age_fails(srv):
    inst = srv.inst
    inst.write_conf("max-age = 1s\n")
    (inst.spool / "outbox").write_text("in the way\n")
    sid = _queue(srv, text="TooOld")
    # Aged, not waited for: max-age counts from the file's created
    # (msgspool-spool(5)), set 2 s back (within the 5 s of its id that
    # assert_spool_file allows), in place so the file keeps its owner.
    p = inst.path("new", sid)
    doc = json.loads(p.read_bytes())
    doc["created"] = rfc3339(parse_time(doc["created"]) -
                             datetime.timedelta(seconds=2))
    p.write_text(json.dumps(doc) + "\n")
    inst.daemon_once()
    assert inst.files("deferred") == [] and inst.files("sent") == []
    assert inst.files("failed") == [sid + ".json"]
    doc = assert_spool_file(inst, "failed", sid, body="TooOld")
    assert isinstance(doc["lastError"], str) and doc["lastError"]
    cp = inst.cli("retry", "--failed")
    assert cp.returncode == 0, cp.err
    assert inst.files("new") == [sid + ".json"]


def test_sent_file_is_private(srv):
    sid = _queue(srv)
    srv.inst.daemon_once()
    p = srv.inst.path("sent", sid)
    assert stat.S_IMODE(p.stat().st_mode) & 0o7137 == 0


# ---------------------------------------------------------------- CLI

def test_list_shows_queued_and_scheduled(srv):
    inst = srv.inst
    a = _queue(srv, recipient="+4915111111111")
    b = _queue(srv, recipient="+4915122222222", sendAt=in_future(3600))
    cp = inst.cli("list")
    assert cp.returncode == 0, cp.err
    lines = cp.out.splitlines()
    la = [ln for ln in lines if a in ln]
    lb = [ln for ln in lines if b in ln]
    assert len(la) == 1 and len(lb) == 1, cp.out
    assert "new" in la[0].split() and "sms" in la[0].split(), la[0]
    assert "+4915111111111" in la[0], la[0]
    assert "deferred" in lb[0].split(), lb[0]
    assert "+4915122222222" in lb[0], lb[0]


def test_list_empty_spool(srv):
    cp = srv.inst.cli("list")
    assert cp.returncode == 0, cp.err


def test_list_shows_sent_and_failed(srv):
    inst = srv.inst
    a = _queue(srv)
    b = _queue(srv)
    inst.daemon_once()
    _fail_by_hand(inst, b)
    cp = inst.cli("list")
    assert cp.returncode == 0, cp.err
    la = [ln for ln in cp.out.splitlines() if a in ln]
    lb = [ln for ln in cp.out.splitlines() if b in ln]
    assert len(la) == 1 and "sent" in la[0].split(), cp.out
    assert len(lb) == 1 and "failed" in lb[0].split(), cp.out


def test_config_from_environment(srv):
    sid = _queue(srv)
    cp = srv.inst.cli("list", config=False,
                      env={"MSGSPOOL_CONFIG": str(srv.inst.conf)})
    assert cp.returncode == 0, cp.err
    assert sid in cp.out


def test_version_is_the_changelogs(srv):
    """msgspool --version (and -V) gives the version of the newest entry
    of debian/changelog, its one place, without reading a config."""
    from conftest import ROOT
    first = (ROOT / "debian" / "changelog").read_text().split("\n", 1)[0]
    version = first.split("(", 1)[1].split(")", 1)[0]
    for opt in ("--version", "-V"):
        cp = srv.inst.cli(opt, config=False,
                          env={"MSGSPOOL_CONFIG": "/nonexistent"})
        assert cp.returncode == 0, cp.err
        assert cp.out == f"msgspool {version}\n"


def test_show_prints_the_json(srv):
    sid = _queue(srv, text="ShowMe")
    cp = srv.inst.cli("show", sid)
    assert cp.returncode == 0, cp.err
    doc = json.loads(cp.out)
    assert doc["id"] == sid
    assert doc["message"]["body"] == "ShowMe"
    # Everything in the file, perhaps with more (such as the state).
    stored = srv.inst.load("new", sid)
    assert {k: doc.get(k) for k in stored} == stored
    assert doc.get("state", "new") == "new"


def test_show_finds_sent_message(srv):
    sid = _queue(srv)
    srv.inst.daemon_once()
    cp = srv.inst.cli("show", sid)
    assert cp.returncode == 0, cp.err
    assert json.loads(cp.out)["id"] == sid


@pytest.mark.parametrize("verb", ["show", "delete", "retry"])
@pytest.mark.parametrize("bad", ["01ARZ3NDEKTSV4RRFFQ69G5FAV", "nope",
                                 "../../etc/passwd"])
def test_unknown_id_is_exit_1(srv, verb, bad):
    cp = srv.inst.cli(verb, bad)
    assert cp.returncode == 1, (cp.returncode, cp.out, cp.err)
    assert cp.err.strip(), "no reason on stderr"
    assert len(cp.err.strip().splitlines()) == 1, cp.err


def test_delete_removes_the_message(srv):
    inst = srv.inst
    keep = _queue(srv)
    gone = _queue(srv)
    cp = inst.cli("delete", gone)
    assert cp.returncode == 0, cp.err
    assert inst.where(gone) == []
    assert inst.files("new") == [keep + ".json"]
    assert inst.cli("show", gone).returncode == 1


def test_delete_several_and_scheduled(srv):
    inst = srv.inst
    a = _queue(srv)
    b = _queue(srv, sendAt=in_future(3600))
    cp = inst.cli("delete", a, b)
    assert cp.returncode == 0, cp.err
    assert inst.where(a) == [] and inst.where(b) == []


def test_retry_failed_message_by_id(srv):
    inst = srv.inst
    sid = _queue(srv, text="AgainPlease")
    inst.daemon_once()
    _fail_by_hand(inst, sid)
    cp = inst.cli("retry", sid)
    assert cp.returncode == 0, cp.err
    assert inst.files("failed") == []
    assert inst.files("new") == [sid + ".json"]
    doc = inst.load("new", sid)
    assert parse_time(doc["nextAttempt"]) <= utcnow() + \
        datetime.timedelta(seconds=2)
    assert stat.S_IMODE(inst.path("new", sid).stat().st_mode) & 0o7137 == 0
    # And the daemon sends it again.
    for p in inst.outbox_for(sid):
        p.unlink()
    inst.daemon_once()
    assert inst.files("sent") == [sid + ".json"]
    assert len(inst.outbox_for(sid)) == 1


def test_retry_deferred_message_is_due_now(srv):
    inst = srv.inst
    sid = _queue(srv, text="NotYet", sendAt=in_future(86400))
    cp = inst.cli("retry", sid)
    assert cp.returncode == 0, cp.err
    assert inst.files("deferred") == []
    assert inst.files("new") == [sid + ".json"]
    inst.daemon_once()
    assert inst.files("sent") == [sid + ".json"]


def test_retry_all_failed(srv):
    inst = srv.inst
    ids = [_queue(srv) for _ in range(3)]
    inst.daemon_once()
    for sid in ids[:2]:
        _fail_by_hand(inst, sid)
    cp = inst.cli("retry", "--failed")
    assert cp.returncode == 0, cp.err
    assert inst.files("failed") == []
    assert inst.ids("new") == sorted(ids[:2])
    assert inst.ids("sent") == [ids[2]]


def test_retry_failed_with_nothing_failed(srv):
    cp = srv.inst.cli("retry", "--failed")
    assert cp.returncode == 0, cp.err


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["show"],
                                  ["retry"], ["delete"], ["key"],
                                  ["key", "add", "x"], ["key", "disable"],
                                  ["-x", "list"], ["-c"]])
def test_usage_errors_exit_1(srv, args):
    cp = srv.inst.cli(*args)
    assert cp.returncode == 1, (args, cp.returncode, cp.out, cp.err)
    # msgspool(8), EXIT STATUS: the reason, on one line.
    assert len(cp.err.strip().splitlines()) == 1, cp.err


def test_missing_config_file_fails(srv, tmp_path):
    cp = srv.inst.cli("-c", str(tmp_path / "nope.conf"), "list",
                      config=False)
    assert cp.returncode != 0
    assert cp.err.strip()


# ---------------------------------------------------------- keys

def test_key_add_then_use_it(private):
    srv, inst = private()
    cp = inst.cli("key", "add", "newco", "sms")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    assert key and len(key.split()) == 1, cp.out
    # The key is never stored, its hash is.
    text = inst.keys_file.read_text()
    assert key not in text
    assert hashlib.sha256(key.encode()).hexdigest() in text
    # Existing keys keep working.
    assert srv.sms(client="acme").status_code == 202
    r = srv.post_json("/sms/v1/deliver",
                      {"recipient": RECIPIENT, "messageBody": "from newco"},
                      client=None, api_key=key)
    assert r.status_code == 202, r.text
    sid = r.json()["smsId"]
    assert_spool_file(inst, "new", sid, client="newco", body="from newco")
    r = srv.get("/templates", client=None, api_key=key)
    assert r.status_code == 200 and r.json() == [], r.text


def test_key_add_scopes_are_enforced(private):
    srv, inst = private()
    cp = inst.cli("key", "add", "mailonly", "email")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    r = srv.post_json("/sms/v1/deliver",
                      {"recipient": RECIPIENT, "messageBody": "x"},
                      client=None, api_key=key)
    assert_problem(r, 403)
    assert inst.files("new") == []


def test_key_add_keeps_keys_file_private(private):
    _, inst = private()
    assert inst.cli("key", "add", "newco", "*").returncode == 0
    mode = stat.S_IMODE(inst.keys_file.stat().st_mode)
    assert mode & 0o077 == 0, oct(mode)


def test_key_add_bad_scope_fails(private):
    _, inst = private()
    before = inst.keys_file.read_text()
    cp = inst.cli("key", "add", "newco", "bogus")
    assert cp.returncode != 0
    assert cp.err.strip()
    assert inst.keys_file.read_text() == before


def test_key_add_bad_client_name_fails(private):
    _, inst = private()
    before = inst.keys_file.read_text()
    cp = inst.cli("key", "add", "bad:name", "sms")
    assert cp.returncode != 0
    assert inst.keys_file.read_text() == before


def test_key_disable(private):
    srv, inst = private()
    assert srv.sms(client="acme").status_code == 202
    cp = inst.cli("key", "disable", "acme")
    assert cp.returncode == 0, cp.err
    assert_problem(srv.sms(client="acme"), 403)
    assert_problem(srv.get("/templates", client="acme"), 403)
    # Other clients are untouched.
    assert srv.sms(client="other").status_code == 202


def test_key_disable_added_key(private):
    srv, inst = private()
    key = inst.cli("key", "add", "temp", "sms").out.strip()
    body = {"recipient": RECIPIENT, "messageBody": "x"}
    r = srv.post_json("/sms/v1/deliver", body, client=None, api_key=key)
    assert r.status_code == 202, r.text
    assert inst.cli("key", "disable", "temp").returncode == 0
    r = srv.post_json("/sms/v1/deliver", body, client=None, api_key=key)
    assert_problem(r, 403)


def test_key_disable_unknown_client_fails(private):
    _, inst = private()
    cp = inst.cli("key", "disable", "nobody")
    assert cp.returncode != 0
    assert cp.err.strip()


def test_unknown_key_still_401_after_key_add(private):
    srv, inst = private()
    assert inst.cli("key", "add", "newco", "sms").returncode == 0
    r = srv.post_json("/sms/v1/deliver",
                      {"recipient": RECIPIENT, "messageBody": "x"},
                      client=None, api_key="not-the-key")
    assert_unauthorized(r)


def test_concurrent_key_adds_all_survive(private):
    import subprocess
    from conftest import BIN_DIR
    srv, inst = private()
    argv = [str(BIN_DIR / "msgspool"), "-c", str(inst.conf), "key", "add"]
    procs = [subprocess.Popen(argv + [f"par{i}", "sms"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(8)]
    keys = {}
    for i, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        assert p.returncode == 0, err
        keys[f"par{i}"] = out.decode().strip()
    text = inst.keys_file.read_text()
    for client, key in keys.items():
        assert hashlib.sha256(key.encode()).hexdigest() in text, client
        r = srv.post_json("/sms/v1/deliver",
                          {"recipient": RECIPIENT, "messageBody": client},
                          client=None, api_key=key)
        assert r.status_code == 202, (client, r.text)
        assert_spool_file(inst, "new", r.json()["smsId"], client=client,
                          body=client)
    # The original clients are all still there.
    assert srv.sms(client="acme").status_code == 202
    assert_problem(srv.sms(client="gone"), 403)

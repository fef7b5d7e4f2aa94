"""The files msgspool rewrites keep their owner, group and mode
(msgspool(8), FILES REWRITTEN): the keys file after `key add` and `key
disable`, a webhook secret after `webhook-secret`; where that cannot be
done the command refuses and leaves the old file as it was.  Run as root:
the files are handed to nobody and nogroup, as an installation hands
them to the web server's and the daemon's users."""

import grp
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import BIN_DIR, CGI_DIR, Instance

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: files change owners")


def _ids():
    try:
        return pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    except KeyError:
        pytest.skip("no user nobody or group nogroup here")


@pytest.fixture
def inst():
    """An instance in a directory others may enter (a test's tmp_path is
    root's alone), so that programs run as nobody reach its files."""
    base = Path(tempfile.mkdtemp(prefix="msgspool-owners-"))
    base.chmod(0o755)
    yield Instance(base)
    shutil.rmtree(base, ignore_errors=True)


def _owner(path):
    st = path.stat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def _as(uid, gid):
    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return drop


def _templates_as(inst, uid, gid, key):
    """GET /templates by the CGI program run as uid:gid: the status."""
    env = {"PATH": "/usr/bin:/bin", "MSGSPOOL_CONFIG": str(inst.conf),
           "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET",
           "REQUEST_URI": "/templates", "SCRIPT_NAME": "/templates",
           "HTTP_X_API_KEY": key}
    cp = subprocess.run([str(CGI_DIR / "templates")], env=env,
                        capture_output=True, timeout=60,
                        preexec_fn=_as(uid, gid))
    head = cp.stdout.split(b"\n", 1)[0].decode()
    assert head.startswith("Status: "), (cp.stdout[:200], cp.stderr)
    return int(head.split()[1])


def _cli(inst, *args, uid=None, gid=None):
    cp = subprocess.run([str(BIN_DIR / "msgspool"), "-c", str(inst.conf)]
                        + list(args), capture_output=True, timeout=60,
                        preexec_fn=_as(uid, gid) if uid is not None
                        else None)
    cp.out = cp.stdout.decode()
    cp.err = cp.stderr.decode()
    return cp


def _leftovers(path):
    return sorted(p.name for p in path.parent.iterdir()
                  if p.name.startswith(path.name + "."))


def test_key_add_and_disable_keep_the_keys_files_owner_group_and_mode(inst):
    """A keys file root:nogroup 0640, which the CGI programs read as
    nobody through their group: still so after key add and key disable,
    and the new key works, then is refused, in a CGI program run as
    nobody."""
    nobody, nogroup = _ids()
    keys = inst.keys_file
    os.chown(keys, 0, nogroup)
    keys.chmod(0o640)
    assert _templates_as(inst, nobody, nogroup, inst.keys["acme"]) == 200
    cp = _cli(inst, "key", "add", "newco", "sms")
    assert cp.returncode == 0, cp.err
    key = cp.out.strip()
    assert _templates_as(inst, nobody, nogroup, key) == 200
    assert _owner(keys) == (0, nogroup, 0o640)
    cp = _cli(inst, "key", "disable", "newco")
    assert cp.returncode == 0, cp.err
    assert _owner(keys) == (0, nogroup, 0o640)
    assert _templates_as(inst, nobody, nogroup, key) == 403
    assert _templates_as(inst, nobody, nogroup, inst.keys["acme"]) == 200
    assert _leftovers(keys) == []


def test_key_add_keeps_an_owner_other_than_root(inst):
    nobody, nogroup = _ids()
    keys = inst.keys_file
    os.chown(keys, nobody, nogroup)
    keys.chmod(0o600)
    cp = _cli(inst, "key", "add", "newco", "sms")
    assert cp.returncode == 0, cp.err
    assert _owner(keys) == (nobody, nogroup, 0o600)
    assert _templates_as(inst, nobody, nogroup, cp.out.strip()) == 200


def test_webhook_secret_keeps_its_files_owner_group_and_mode(inst):
    """A secret owned by the daemon's user (here nobody:nogroup 0600)
    stays its, readable by it, after `msgspool webhook-secret`."""
    nobody, nogroup = _ids()
    secret = inst.base / "acme-webhook"
    secret.write_text("whsec_" + "A" * 44 + "\n")
    os.chown(secret, nobody, nogroup)
    secret.chmod(0o600)
    inst.write_conf("\n[client.acme]\nwebhook-url = http://127.0.0.1:9/\n"
                    f"webhook-secret-file = {secret}\n")
    cp = _cli(inst, "webhook-secret", "acme")
    assert cp.returncode == 0, cp.err
    new = cp.out.strip()
    assert new.startswith("whsec_")
    assert _owner(secret) == (nobody, nogroup, 0o600)
    read = subprocess.run(["cat", str(secret)], capture_output=True,
                          preexec_fn=_as(nobody, nogroup), timeout=60)
    assert read.returncode == 0, read.stderr
    assert read.stdout.decode().strip() == new
    assert _leftovers(secret) == []


def test_new_files_are_made_as_before(inst):
    """No old file: a keys file 0640 less the umask, a secret 0600, both
    the caller's."""
    inst.keys_file.unlink()
    secret = inst.base / "acme-webhook"
    inst.write_conf("\n[client.acme]\nwebhook-url = http://127.0.0.1:9/\n"
                    f"webhook-secret-file = {secret}\n")
    mask = os.umask(0o022)
    try:
        assert _cli(inst, "key", "add", "newco", "sms").returncode == 0
        assert _cli(inst, "webhook-secret", "acme").returncode == 0
    finally:
        os.umask(mask)
    assert _owner(inst.keys_file) == (0, 0, 0o640)
    assert _owner(secret) == (0, 0, 0o600)


def test_refuses_when_the_owner_cannot_be_kept(inst):
    """Run as nobody on files it may write but whose owner (root) it
    cannot give to another file: a one-line reason, exit 1, the old file
    untouched, nothing left beside it."""
    nobody, nogroup = _ids()
    os.chown(inst.base, nobody, nogroup)
    keys = inst.keys_file
    os.chown(keys, 0, nogroup)
    keys.chmod(0o660)
    before = keys.read_bytes()
    ino = keys.stat().st_ino
    secret = inst.base / "acme-webhook"
    secret.write_text("whsec_" + "A" * 44 + "\n")
    os.chown(secret, 0, nogroup)
    secret.chmod(0o660)
    inst.write_conf("\n[client.acme]\nwebhook-url = http://127.0.0.1:9/\n"
                    f"webhook-secret-file = {secret}\n")
    for args, path, old in ((("key", "add", "newco", "sms"), keys, before),
                            (("key", "disable", "acme"), keys, before),
                            (("webhook-secret", "acme"), secret,
                             secret.read_bytes())):
        ino = path.stat().st_ino
        cp = _cli(inst, *args, uid=nobody, gid=nogroup)
        assert cp.returncode == 1, (args, cp.out, cp.err)
        assert cp.out == ""
        lines = cp.err.splitlines()
        assert len(lines) == 1 and str(path) in lines[0], (args, cp.err)
        assert "owner" in lines[0], cp.err
        assert path.read_bytes() == old
        assert path.stat().st_ino == ino
        assert _owner(path) == (0, nogroup, 0o660)
        assert _leftovers(path) == []

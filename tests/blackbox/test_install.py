"""make install / make uninstall into a temporary DESTDIR: the FHS tree of
README "Deploying under a web server", its modes, the substituted
service files, an edited config kept by a second install, and the spool
kept by uninstall."""
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "/usr/local"
SYSCONF = PREFIX + "/etc"
SPOOL = "/var/spool/msgspool"
CGI = ("ping", "templates", "sms-deliver", "sms-batch", "ott-deliver",
       "voice-deliver", "email-deliver", "attachments")


def make(*args, dest):
    r = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT),
                        "PREFIX=" + PREFIX, "DESTDIR=" + str(dest)] + list(args),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.fixture(scope="module")
def dest(tmp_path_factory):
    d = tmp_path_factory.mktemp("destdir")
    make("install", dest=d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_programs(dest):
    for prog in CGI:
        p = dest / ("." + PREFIX) / "lib/msgspool/cgi-bin" / prog
        assert p.is_file() and mode(p) == 0o755, p
    for p in (dest / ("." + PREFIX) / "sbin/msgspoold",
              dest / ("." + PREFIX) / "sbin/msgspool-fcgi",
              dest / ("." + PREFIX) / "bin/msgspool"):
        assert p.is_file() and mode(p) == 0o755, p


def test_installed_cgi_answers(dest):
    ping = dest / ("." + PREFIX) / "lib/msgspool/cgi-bin/ping"
    r = subprocess.run([str(ping)], env={"REQUEST_METHOD": "GET"},
                       capture_output=True, timeout=10)
    assert r.returncode == 0
    assert r.stdout.startswith(b"Status: 200 OK\r\n")
    assert r.stdout.endswith(b"\r\n\r\npong")


def test_no_cgi_links_libcurl(dest):
    for prog in CGI:
        p = dest / ("." + PREFIX) / "lib/msgspool/cgi-bin" / prog
        out = subprocess.run(["ldd", str(p)], capture_output=True,
                             text=True).stdout
        assert "libcurl" not in out, prog
        if prog not in ("email-deliver", "attachments"):
            assert "libmagic" not in out, prog
        # FastCGI is msgspool-fcgi's alone: a CGI stays one small exec.
        assert "libfcgi" not in out, prog


def test_fcgi_refuses_a_terminal_as_its_socket(dest):
    # Started by hand, without a socket from a web server, spawn-fcgi or
    # a socket unit, and without -s: a usage error, not a hang.
    fcgi = dest / ("." + PREFIX) / "sbin/msgspool-fcgi"
    r = subprocess.run([str(fcgi)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r
    assert "no FastCGI socket" in r.stderr, r.stderr


def test_share(dest):
    share = dest / ("." + PREFIX) / "share/msgspool"
    for name in ("msgspool.conf", "keys", "lighttpd.conf", "msgspoold.service",
                 "msgspool.cron", "templates/demo/email/welcome.tmpl",
                 "lighttpd-fcgi.conf", "nginx-fcgi.conf",
                 "msgspool-fcgi.socket", "msgspool-fcgi.service"):
        assert (share / name).is_file(), name


def test_service_files_substituted(dest):
    share = dest / ("." + PREFIX) / "share/msgspool"
    unit = (share / "msgspoold.service").read_text()
    assert "ExecStart=%s/sbin/msgspoold -c %s/msgspool/msgspool.conf" % (
        PREFIX, SYSCONF) in unit
    assert "ReadWritePaths=%s" % SPOOL in unit
    assert "ProtectSystem=strict" in unit and "User=msgspool" in unit
    assert not re.search(r"@[A-Z_]+@", unit), "unsubstituted placeholder"
    sock = (share / "msgspool-fcgi.socket").read_text()
    assert "ListenStream=/run/msgspool/fcgi.sock" in sock
    assert "SocketGroup=www-data" in sock and "SocketMode=0660" in sock
    fcgi = (share / "msgspool-fcgi.service").read_text()
    assert "ExecStart=%s/sbin/msgspool-fcgi -c %s/msgspool/msgspool.conf" % (
        PREFIX, SYSCONF) in fcgi
    assert "StandardInput=socket" in fcgi and "User=www-data" in fcgi
    assert "ReadWritePaths=%s" % SPOOL in fcgi
    for text in (sock, fcgi):
        assert not re.search(r"@[A-Z_]+@", text), "unsubstituted placeholder"
    cron = (share / "msgspool.cron").read_text()
    line = [l for l in cron.splitlines() if l and not l.startswith("#")]
    assert len(line) == 1
    assert line[0].split()[:5] == ["*"] * 5
    assert "%s/sbin/msgspoold --once -c %s/msgspool/msgspool.conf" % (
        PREFIX, SYSCONF) in line[0]


def test_config_and_secrets(dest):
    etc = dest / ("." + SYSCONF) / "msgspool"
    conf = (etc / "msgspool.conf").read_text()
    assert "spool = %s" % SPOOL in conf
    assert "keys = %s/msgspool/keys" % SYSCONF in conf
    assert (etc / "keys").is_file()
    assert mode(etc / "secrets") == 0o700


def test_spool_modes(dest):
    spool = dest / ("." + SPOOL)
    assert mode(spool) == 0o750
    # The CGI user writes here (cur/ and failed/: a client's cancel).
    # Also receipts/ (the receipts program), events/ (a cancel's event)
    # rates/ (each client's rate, counted by the send programs),
    # idempotency/ (the records of Idempotency-Key), suppressions/
    # (each client's lists, written by the suppressions program), and
    # inbox/, inbox-new/ and index/ (inbound messages kept by the
    # receipts program, once by their provider's id), lists/ (each
    # client's messages, added to by the send programs) and metrics/
    # (GET /metrics' cache, a cancel's count), sync/ (the group commit's
    # record of each host).
    for d in ("tmp", "new", "deferred", "uploads", "blobs", "cur",
              "failed", "receipts", "events", "rates", "idempotency",
              "suppressions", "inbox", "inbox-new", "index", "lists",
              "metrics", "sync"):
        assert mode(spool / d) == 0o2770, d
    # The CGI user reads here (a client's GET /messages/{id}).
    for d in ("sent", "events-failed", "status", "inbox-parts"):
        assert mode(spool / d) == 0o2750, d
    assert mode(spool / "outbox") == 0o700      # the daemon's alone
    # The same script lays out the Debian package's spool.
    mkspool = dest / ("." + PREFIX) / "lib/msgspool/mkspool"
    assert mkspool.is_file() and mode(mkspool) == 0o755


def test_spool_has_every_area(dest):
    """Every directory of the spool the sources name (an area's
    *_AREA or a spool_area() call) is one install makes: a program
    cannot make it in a root of mode 0750 that is not its user's, as in
    the Debian package, where the CGI programs would answer 500."""
    named = set()
    for src in list((ROOT / "lib").rglob("*.[ch]")) + \
            list((ROOT / "spooler").rglob("*.[ch]")):
        text = src.read_text("utf-8", errors="replace")
        named |= set(re.findall(r'#define\s+\w+_AREA\s+"([^"/]+)"', text))
        named |= set(re.findall(r'(?:spool_area|mkdirat)\([^,()]+,\s*"([^"/]+)"',
                                text))
    assert {"lists", "metrics", "claims"} <= named, named   # the parse works
    spool = dest / ("." + SPOOL)
    missing = sorted(d for d in named if not (spool / d).is_dir())
    assert not missing, f"conf/mkspool.sh does not make: {missing}"


def test_second_install_keeps_edited_config(tmp_path):
    make("install", dest=tmp_path)
    etc = tmp_path / ("." + SYSCONF) / "msgspool"
    (etc / "msgspool.conf").write_text("# mine\nspool = /srv/spool\n")
    (etc / "keys").write_text("acme:" + "0" * 64 + ":sms\n")
    make("install", dest=tmp_path)
    assert (etc / "msgspool.conf").read_text() == "# mine\nspool = /srv/spool\n"
    assert (etc / "keys").read_text() == "acme:" + "0" * 64 + ":sms\n"


def test_uninstall_keeps_spool_and_config(tmp_path):
    make("install", dest=tmp_path)
    spool = tmp_path / ("." + SPOOL)
    (spool / "new" / "01M8000000000000000000000A.json").write_text("{}")
    make("uninstall", dest=tmp_path)
    assert not (tmp_path / ("." + PREFIX) / "sbin/msgspoold").exists()
    assert not (tmp_path / ("." + PREFIX) / "sbin/msgspool-fcgi").exists()
    assert not (tmp_path / ("." + PREFIX) / "bin/msgspool").exists()
    assert not (tmp_path / ("." + PREFIX) / "lib/msgspool").exists()
    assert not (tmp_path / ("." + PREFIX) / "share/msgspool").exists()
    assert (spool / "new" / "01M8000000000000000000000A.json").exists()
    assert (tmp_path / ("." + SYSCONF) / "msgspool/msgspool.conf").exists()

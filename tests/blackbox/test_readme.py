"""
Every example of README.md works as written (issue 9, defect 13), against
an instance set up the way `make run` sets one up (tests/run-local.sh):
its config, a `demo` key with its scopes, the sample templates of
templates/, the file provider for every channel.

Three kinds of example are found by parsing README.md, not listed here:

- the shell blocks that call the API with curl (the `make run` session):
  every command of such a block runs with sh in a directory laid out like
  the repository after `make run` (.run/demo-key, spool/, build/ the
  programs built), the address 127.0.0.1:8080 replaced by the test
  server's; msgspoold --once runs after each curl that sends, and before
  each curl (what an earlier command left, a receipt, is applied), as
  the `make run` daemon would;
- the ```json request bodies: POSTed to the route the text just before
  the block names (`POST /deliver`); a problem document (an error reply)
  is not a request;
- the inline request bodies (SMS: `{...}`): POSTed to the route of the
  paragraph's label (LABELS).

Each must be answered 2xx with every entry queued, and every message it
queued must reach sent/ and spool/outbox/ after msgspoold --once (or wait
in deferred/ when the example schedules it).
"""

import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from conftest import BIN_DIR, ID_RE, ROOT, STATES, Server

README = ROOT / "README.md"
RUN_LOCAL = ROOT / "tests" / "run-local.sh"
RUN_ADDR = "http://127.0.0.1:8080"        # make run's default PORT
# The label of a paragraph holding an inline request body -> its route.
LABELS = {"SMS": "/sms/v1/deliver", "OTT": "/ott/v1/deliver",
          "Voice": "/voice/v1/deliver", "Email": "/deliver"}
# Members of a reply that name a queued message.
ID_KEYS = ("smsId", "messageId", "callId")
CMD_TIMEOUT = 60


# ------------------------------------------------------------ parsing

def _blocks(text):
    """The fenced code blocks of text: (language, body, prose before the
    block since the previous one)."""
    out, prose, lang, body = [], [], None, None
    for line in text.splitlines():
        if body is None:
            m = re.match(r"^```(\S*)\s*$", line)
            if m:
                lang, body = m.group(1), []
            else:
                prose.append(line)
        elif line.startswith("```"):
            out.append((lang, "\n".join(body), "\n".join(prose)))
            prose, lang, body = [], None, None
        else:
            body.append(line)
    assert body is None, "README.md: a code block is not closed"
    return out


def _prose(text):
    """README.md without its code blocks."""
    return re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.M | re.S)


def _commands(body):
    """The commands of a shell block: continuation lines joined, comment
    lines kept apart as ("#", text) so that a reply shown after a command
    can be checked."""
    cmds, cur = [], ""
    for line in body.splitlines():
        if not cur and line.lstrip().startswith("#"):
            cmds.append(("#", line.lstrip()[1:].strip()))
            continue
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        if cur.strip():
            cmds.append(("sh", cur.strip()))
        cur = ""
    assert not cur, f"README.md: a command ends in a backslash: {cur!r}"
    return cmds


def _is_curl(cmd):
    return cmd.split(None, 1)[0] == "curl"


def shell_examples():
    return [(i, body) for i, (lang, body, _) in enumerate(_blocks(
        README.read_text("utf-8"))) if lang in ("sh", "shell", "bash", "")
        and any(k == "sh" and _is_curl(c) for k, c in _commands(body))]


def json_examples():
    """(route, body) of every ```json block that is a request."""
    out = []
    for lang, body, before in _blocks(README.read_text("utf-8")):
        if lang != "json":
            continue
        doc = json.loads(body)          # an example that does not parse fails
        if isinstance(doc, dict) and "type" in doc and "status" in doc:
            continue                    # a problem document: a reply
        routes = re.findall(r"`POST (/[^`\s]*)`", before)
        assert routes, ("README.md: a JSON example with no `POST /route` "
                        f"named before it:\n{body[:200]}")
        out.append((routes[-1], body))
    return out


def inline_examples():
    """(label, route, text) of every inline `{...}` that parses as JSON."""
    out = []
    for para in re.split(r"\n\s*\n", _prose(README.read_text("utf-8"))):
        for m in re.finditer(r"`([^`]+)`", para):
            s = m.group(1)
            if not s.lstrip().startswith("{"):
                continue
            try:
                json.loads(s)
            except ValueError:
                continue                # a schematic: {"smsId","status"}
            label = re.match(r"\s*(\w+)\s*:", para)
            assert label and label.group(1) in LABELS, (
                "README.md: an inline request body in a paragraph with no "
                f"known label (add it to LABELS): {para[:200]!r}")
            out.append((label.group(1), LABELS[label.group(1)], s))
    return out


# ----------------------------------------------------------- instance

def _make_run_config(top):
    """The config tests/run-local.sh writes, for a repository at top."""
    script = RUN_LOCAL.read_text()
    m = re.search(r'cat >"\$run/msgspool\.conf" <<(\w+)\n(.*?)\n\1\n',
                  script, re.S)
    assert m, "tests/run-local.sh: no msgspool.conf here-document"
    # $PORT: make run's default, of RUN_ADDR.
    conf = m.group(2).replace("$top", str(top)).replace(
        "$run", str(top / ".run")).replace("$PORT", RUN_ADDR.split(":")[-1])
    assert "$" not in conf, f"run-local.sh: unexpanded config:\n{conf}"
    m = re.search(r"\\n(\w+):%s:(\S+?)\\n", script)
    assert m, "tests/run-local.sh: no demo key line"
    return conf, m.group(1), m.group(2)


class MakeRun:
    """A repository laid out as after `make run`: top/templates (the
    real ones), top/.run/{msgspool.conf,keys,demo-key}, top/spool/."""

    def __init__(self, top):
        self.top = Path(top)
        run = self.top / ".run"
        (run / "empty").mkdir(parents=True)
        shutil.copytree(ROOT / "templates", self.top / "templates")
        self.spool = self.top / "spool"
        for d in STATES + ("outbox",):
            (self.spool / d).mkdir(parents=True)
        text, self.client, scopes = _make_run_config(self.top)
        self.conf = run / "msgspool.conf"
        self.conf.write_text(text)
        self.key = secrets.token_urlsafe(33)
        (run / "keys").write_text("%s:%s:%s\n" % (
            self.client, hashlib.sha256(self.key.encode()).hexdigest(),
            scopes))
        (run / "demo-key").write_text(self.key + "\n")
        # build/: the programs, as make run builds them (BIN_DIR's O).
        (self.top / "build").symlink_to(BIN_DIR.parent,
                                        target_is_directory=True)
        # The key of the demo's unsubscribe links, as make run makes it.
        (run / "unsubscribe.secret").write_text(secrets.token_urlsafe(32) +
                                                "\n")

    def files(self, state):
        return sorted(p.name for p in (self.spool / state).iterdir())

    def daemon_once(self):
        cp = subprocess.run([str(BIN_DIR / "msgspoold"), "-c", str(self.conf),
                             "--once"], capture_output=True, text=True,
                            timeout=CMD_TIMEOUT,
                            env={k: v for k, v in os.environ.items()
                                 if k != "MSGSPOOL_CONFIG"})
        assert cp.returncode == 0, f"msgspoold --once: {cp.stderr}"
        return cp


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    run = MakeRun(tmp_path_factory.mktemp("make-run"))
    srv = Server(types.SimpleNamespace(conf=run.conf),
                 tmp_path_factory.mktemp("make-run-server"))
    run.srv = srv
    yield run
    srv.stop()


@pytest.fixture
def mr(made):
    for d in STATES + ("outbox",):
        for p in (made.spool / d).iterdir():
            p.unlink()
    # The clients' lists of what was just removed.
    shutil.rmtree(made.spool / "lists", ignore_errors=True)
    return made


# ------------------------------------------------------------- checks

def _ids(reply):
    """The message ids a reply names, and every per-entry failure."""
    ids, bad = [], []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ID_KEYS and isinstance(x, str) and ID_RE.match(x):
                    ids.append(x)
            if str(v.get("status", "")).lower() in ("error", "failed") or \
                    v.get("error") or \
                    v.get("overallStatus", "success") != "success":
                bad.append(v)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(reply)
    return ids, bad


def _delivered(mr, status, reply, what):
    """reply (status, JSON) queued messages, and each reached sent/ and
    the outbox (or waits in deferred/ when scheduled)."""
    assert 200 <= status < 300, f"{what}: HTTP {status}: {reply}"
    ids, bad = _ids(reply)
    assert not bad, f"{what}: entries not queued: {bad}"
    assert ids, f"{what}: no message id in the reply {reply}"
    mr.daemon_once()
    for msgid in ids:
        name = msgid + ".json"
        if name in mr.files("deferred"):
            continue                    # scheduled (sendAt in the future)
        assert name in mr.files("sent"), (
            f"{what}: {msgid} not in sent/: " + str(
                {s: mr.files(s) for s in STATES}) + _failed(mr))
        assert any(n.startswith(msgid) for n in mr.files("outbox")), (
            f"{what}: nothing for {msgid} in outbox/")
    return ids


def _failed(mr):
    return "".join("\nfailed/%s: %s" % (n, (mr.spool / "failed" / n)
                                         .read_text()[:600])
                   for n in mr.files("failed"))


def _post(mr, route, text):
    r = mr.srv.post_raw(route, text.encode("utf-8"), client=None,
                        api_key=mr.key)
    try:
        body = r.json()
    except ValueError:
        body = r.text
    return r.status_code, body


# -------------------------------------------------------------- tests

def test_readme_has_examples():
    # The parsers below found what they are meant to find.
    assert shell_examples(), "no curl example in README.md"
    assert json_examples(), "no JSON request example in README.md"
    assert inline_examples(), "no inline request example in README.md"


@pytest.mark.parametrize("block", [b for _, b in shell_examples()],
                         ids=[f"block{i}" for i, _ in shell_examples()])
def test_shell_example(mr, block):
    last = None                         # (command, reply) of the last curl
    for kind, cmd in _commands(block):
        if kind == "#":
            # A reply shown after a curl: same members, same status.
            text = cmd.strip()
            if last and text.startswith("{"):
                shown = json.loads(text)
                got = last[1]
                assert isinstance(got, dict) and set(got) == set(shown), (
                    f"{last[0]}: README shows {shown}, got {got}")
                for k, v in shown.items():
                    if not (isinstance(v, str) and ID_RE.match(v)):
                        assert got[k] == v, (k, shown, got)
            continue
        run = cmd
        if _is_curl(cmd):
            assert RUN_ADDR in cmd, f"a curl example not to {RUN_ADDR}: {cmd}"
            # The make run daemon applied what was due meanwhile.
            mr.daemon_once()
            run = re.sub(re.escape(RUN_ADDR) + r"(/[^\s'\"]*)",
                         lambda m: mr.srv.url(m.group(1)), cmd)
            run += " -w '\\n%{http_code}'"
        cp = subprocess.run(["sh", "-c", run], cwd=mr.top,
                            capture_output=True, text=True,
                            timeout=CMD_TIMEOUT)
        assert cp.returncode == 0, (
            f"README command failed ({cp.returncode}): {cmd}\n{cp.stderr}")
        if not _is_curl(cmd):
            continue
        out, _, code = cp.stdout.rpartition("\n")
        status = int(code)
        try:
            reply = json.loads(out)
        except ValueError:
            reply = out
        last = (cmd, reply)
        # A body posted as a provider posts it (/receipts/) queues
        # nothing: answered 2xx, like a GET.
        if (" -d " in f" {cmd} " or "--data" in cmd) and \
                "/receipts/" not in cmd:
            _delivered(mr, status, reply, cmd)
        else:
            assert 200 <= status < 300, f"{cmd}: HTTP {status}: {out}"


@pytest.mark.parametrize("route,body", json_examples(),
                         ids=[r for r, _ in json_examples()])
def test_json_example(mr, route, body):
    status, reply = _post(mr, route, body)
    _delivered(mr, status, reply, f"POST {route} {body}")


@pytest.mark.parametrize("label,route,body", inline_examples(),
                         ids=[lb for lb, _, _ in inline_examples()])
def test_inline_example(mr, label, route, body):
    status, reply = _post(mr, route, body)
    _delivered(mr, status, reply, f"{label}: POST {route} {body}")

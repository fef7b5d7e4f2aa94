"""pytest fixtures of the black-box suite; the harness is in harness/
(instance, web servers, assertions), the stand-ins for providers in
doubles/.  Tests import the harness's names from here too."""

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
from harness.instance import *  # noqa: F401,F403
from harness.servers import *  # noqa: F401,F403
from harness.servers import _ABSENT  # noqa: F401
from harness.asserts import *  # noqa: F401,F403


# ----------------------------------------------------------- fixtures

# The files that test what a web server changes, and so run under all six
# server setups (tests/run-all.sh, `-m webserver`); the rest of the suite
# runs under lighttpd (CGI) and lighttpd in front of msgspool-fcgi, since
# what it tests happens behind the server, in the programs and msgspoold.
# README.md ("Tests") says the same.
WEBSERVER_FILES = {
    # the server's own ways: headers, bodies, methods, its own errors,
    # the CGI environment, odd paths
    "test_webserver.py",
    # odd paths, normalised by each server and routed the same by all
    "test_paths.py",
    # HEAD, which some servers answer themselves
    "test_head.py",
    # the persistent process behind lighttpd's and nginx's FastCGI
    "test_fcgi.py",
    # a request to every route: the server's routing of every path
    "test_openapi_live.py",
    # /messages/{id} with GET and DELETE, /messages with a query string
    # and the Link of its next page: a path parameter, a query and a
    # method the servers route
    "test_messages.py",
    # /suppressions/{channel}/{address} with GET, PUT and DELETE: a
    # percent-encoded address in the path, a PUT with or without a body
    "test_suppressions.py",
    # client= on /messages/{id} and /suppressions/...: a query the
    # server passes on beside a path parameter
    "test_admin_client.py",
    # /receipts/{provider}: signatures over the URL and the form body as
    # the server passes them on
    "test_receipts.py",
    # /console and /console/messages/ID/ACTION: a path of any depth, a
    # query, a form POST, cookies
    "test_console.py",
    # headers of the reply (RateLimit, Retry-After) through the server
    "test_ratelimit.py",
    # /unsubscribe/{token}: a POST from a mail program or a page's form,
    # with or without a body, and the page a GET gets
    "test_unsubscribe.py",
    # /metrics: Authorization: Bearer as each server passes it on
    "test_metrics.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in WEBSERVER_FILES:
            item.add_marker(pytest.mark.webserver)


def pytest_configure(config):
    if SERVER not in SERVERS:
        raise pytest.UsageError(
            f"MSGSPOOL_SERVER={SERVER!r}: one of {', '.join(SERVERS)}")


def pytest_report_header(config):
    need = [CGI_DIR / p for p in ("ping", "templates", "sms-deliver",
                                  "sms-batch")]
    need += [BIN_DIR / "msgspoold", BIN_DIR / "msgspool"]
    missing = [str(p) for p in need if not os.access(p, os.X_OK)]
    if FASTCGI:
        need.append(FCGI_DIR / "msgspool-fcgi")
    lines = [f"msgspool: CGI {CGI_DIR}, bin {BIN_DIR}, "
             f"server {SERVER} {SERVERS.get(SERVER)}"]
    if missing:
        lines.append("msgspool: NOT BUILT: " + ", ".join(missing))
    return lines


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


@pytest.fixture(scope="session")
def instance(tmp_path_factory):
    return Instance(tmp_path_factory.mktemp("instance"))


@pytest.fixture(scope="session")
def _server(instance, tmp_path_factory):
    s = Server(instance, tmp_path_factory.mktemp("run"))
    yield s
    s.stop()


def _check_logs(request, server, start):
    """Print the logs when the test failed; fail it on a sanitizer
    report in the CGI stderr log written since start."""
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        print(server.logs())
    new = server.cgi_stderr()[start:]
    for mark in SANITIZER_MARKS:
        if mark in new:
            pytest.fail(f"sanitizer report in cgi-stderr.log:\n{new[-4000:]}")


@pytest.fixture
def srv(request, instance, _server):
    """The shared server with a clean spool and the original keys;
    srv.inst is its Instance."""
    instance.reset()
    start = len(_server.cgi_stderr())
    yield _server
    _check_logs(request, _server, start)


@pytest.fixture
def private(request, tmp_path):
    """A factory: a fresh Instance with its own web server, for tests that
    break the spool or change the keys.  Returns (server, instance)."""
    made = []

    def make():
        n = len(made)
        inst = Instance(tmp_path / f"inst{n}")
        s = Server(inst, tmp_path / f"run{n}")
        made.append(s)
        return s, inst

    yield make
    for s in made:
        s.stop()
        _check_logs(request, s, 0)

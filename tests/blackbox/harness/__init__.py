"""
Black-box harness for msgspool: a throw-away instance (config, keys file,
templates, spool) in a temporary directory, a real web server on 127.0.0.1
running the CGI programs against it, and helpers to drive the daemon and
the CLI and to look at the spool.

Run from the repository root:

    /usr/bin/python3 -m pytest -q tests/blackbox
    MSGSPOOL_SERVER=nginx /usr/bin/python3 -m pytest -q tests/blackbox

Environment:
    MSGSPOOL_SERVER    the web server: lighttpd (default), nginx (with
                       fcgiwrap), apache or busybox running the CGI
                       programs, or lighttpd-fcgi or nginx-fcgi in front of
                       msgspool-fcgi (FastCGI mode); each runs with its own
                       config in a temporary directory, made from the
                       shipped one in conf/
    MSGSPOOL_CGI_DIR   directory of the CGI programs (default build/cgi-bin/,
                       or $O/cgi-bin/ when O is set, e.g. O=build/asan/)
    MSGSPOOL_BIN_DIR   directory holding msgspoold and msgspool
                       (default build/spooler/, or $O/spooler/)
    MSGSPOOL_FCGI_DIR  directory holding msgspool-fcgi (default
                       build/fcgi/, or $O/fcgi/)

busybox httpd cannot map the routes to programs (see
conf/busybox-httpd.conf): there each program is served at /cgi-bin/PROGRAM,
and Server.url() and Server.raw() send a request for a route there.
"""

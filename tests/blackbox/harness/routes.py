"""The routes msgspool serves, and their operations in conf/openapi.yaml
(read with openapi_check; needs Debian's python3-yaml)."""

import openapi_check as oc

# The routes msgspool serves: method, path, CGI program, scope.  The same
# table is in README.md (The API) and each web server's config maps them.
ROUTES = [
    ("GET", "/ping", "ping", "none"),
    ("GET", "/templates", "templates", "any valid key"),
    ("POST", "/ott/v1/deliver", "ott-deliver", "ott"),
    ("POST", "/sms/v1/deliver", "sms-deliver", "sms"),
    ("POST", "/sms/v1/deliver/batch", "sms-batch", "sms"),
    ("POST", "/voice/v1/deliver", "voice-deliver", "voice"),
    ("POST", "/deliver", "email-deliver", "email"),
    ("POST", "/email/v1/deliver", "email-deliver", "email"),
    ("POST", "/email/v1/attachments", "attachments", "email"),
    ("GET", "/messages", "messages", "any valid key"),
    ("GET", "/messages/{id}", "messages", "any valid key"),
    ("DELETE", "/messages/{id}", "messages", "any valid key"),
    ("POST", "/receipts/{provider}", "receipts", "none: the provider's signature"),
    ("GET", "/receipts/{provider}", "receipts", "none: the provider's signature"),
    ("GET", "/unsubscribe/{token}", "unsubscribe", "none: the token"),
    ("POST", "/unsubscribe/{token}", "unsubscribe", "none: the token"),
    ("GET", "/metrics", "metrics", "metrics"),
    ("GET", "/suppressions", "suppressions", "any valid key"),
    ("GET", "/suppressions/{channel}/{address}", "suppressions", "any valid key"),
    ("PUT", "/suppressions/{channel}/{address}", "suppressions", "any valid key"),
    ("DELETE", "/suppressions/{channel}/{address}", "suppressions", "any valid key"),
    # The operator console: HTML pages and forms, a session of a key of
    # the admin scope (its sign-in form, without one).
    ("GET", "/console", "console", "none: a session"),
    ("POST", "/console/sign-in", "console", "none: a key of admin"),
    ("POST", "/console/sign-out", "console", "none: a session"),
    ("GET", "/console/messages", "console", "none: a session"),
    ("GET", "/console/messages/{id}", "console", "none: a session"),
    ("POST", "/console/messages/{id}/cancel", "console", "none: a session"),
    ("POST", "/console/messages/{id}/retry", "console", "none: a session"),
    ("GET", "/console/inbound", "console", "none: a session"),
    ("GET", "/console/suppressions", "console", "none: a session"),
    ("POST", "/console/suppressions/add", "console", "none: a session"),
    ("POST", "/console/suppressions/remove", "console", "none: a session"),
]
# Each path, and the methods it allows in the order Allow names them
# (HEAD after GET: every GET route answers HEAD, conf/openapi.yaml).
PATHS = {}
for _m, _p, _, _ in ROUTES:
    PATHS.setdefault(_p, []).append(_m)
    if _m == "GET":
        PATHS[_p].append("HEAD")
# A message id for the concrete path of /messages/{id}.
SOME_ID = "01M840Q7H2P5C7SYTHCZ984TVK"

DOC = oc.load_document()


def op(method, path):
    return DOC["paths"][path][method.lower()]


def response(method, path, status):
    r = op(method, path)["responses"][str(status)]
    return oc._deref(DOC, r, [])[0]

"""
Check real replies of msgspool against its OpenAPI description,
conf/openapi.yaml.

    from openapi_check import check_response, check_reply
    r = srv.post_json("/sms/v1/deliver", {...})
    check_reply(r)                      # a requests.Response
    check_response("POST", "/sms/v1/deliver", r.status_code, r.headers,
                   r.content)           # the same, by parts

The path is the one the request went to, with or without its query: a
route as the document names it (/sms/v1/deliver), a concrete path of a
templated route (/messages/01M840Q7H2P5C7SYTHCZ984TVK for /messages/{id},
/receipts/twilio?id=... for /receipts/{provider}), or, under busybox
httpd, which cannot map routes, the program itself (/cgi-bin/sms-deliver;
/cgi-bin/messages/01M840Q7H2P5C7SYTHCZ984TVK for /messages/{id};
/cgi-bin/receipts/twilio for /receipts/{provider}).

check_response raises AssertionError, naming the operation and what is
wrong, when
  - the path is not in the document, or the method is not an operation of
    that path and the status is not 405 (another method is always 405, with
    an Allow header naming the documented methods, HEAD after GET: a HEAD
    is checked as the GET, without its body);
  - a 2xx answers a path whose parameters do not match their schemas, an
    operation's own over its path's (the program took what the document
    says is not an id, a provider it does not have, or a GET /receipts/
    other than whatsapp);
  - the status is not documented for the operation;
  - a header the response documents as required is missing, or a
    documented header's value does not match its schema;
  - the Content-Type is not one the response documents;
  - the body is not valid JSON (JSON and problem+json) or UTF-8 text
    (text/plain), or does not match the schema (JSON Schema Draft 2020-12,
    $ref resolved within the document).

Needs Debian's python3-yaml and python3-jsonschema (4.10 in Debian 12;
newer versions, with the referencing package, work too).
"""

import json
import re
import warnings
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "conf" / "openapi.yaml"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch",
           "trace")

# The document is registered under this URI so that a schema taken from
# anywhere in it resolves its "#/components/..." references against it.
_BASE = "urn:msgspool:openapi"

_cache = {}


def load_document(path=DOCUMENT):
    """The parsed document (cached by path)."""
    path = Path(path)
    if path not in _cache:
        with open(path, "rb") as f:
            _cache[path] = yaml.safe_load(f)
    return _cache[path]


def operations(doc=None):
    """Every (METHOD, path) the document describes, in document order."""
    doc = load_document() if doc is None else doc
    return [(m.upper(), p) for p, item in (doc.get("paths") or {}).items()
            for m in item if m in METHODS]


# ---------------------------------------------------------- references

def _pointer(parts):
    return "#" + "".join(
        "/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _resolve_pointer(doc, ref):
    """The object a local reference ("#/components/...") names."""
    if not ref.startswith("#/"):
        raise AssertionError(f"openapi: only local $ref is supported: {ref}")
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise AssertionError(f"openapi: dangling $ref {ref}")
    return node


def _deref(doc, obj, where):
    """Follow an OpenAPI (non-schema) $ref chain; returns (obj, where)
    where "where" is the list of keys leading to obj in the document."""
    seen = set()
    while isinstance(obj, dict) and "$ref" in obj:
        ref = obj["$ref"]
        if ref in seen:
            raise AssertionError(f"openapi: $ref loop at {ref}")
        seen.add(ref)
        obj = _resolve_pointer(doc, ref)
        where = [p.replace("~1", "/").replace("~0", "~")
                 for p in ref[2:].split("/")]
    return obj, where


def _validator(doc, where):
    """A Draft 2020-12 validator for the schema at keys "where"."""
    wrapper = {"$ref": _BASE + _pointer(where)}
    cls = jsonschema.Draft202012Validator
    fmt = jsonschema.FormatChecker()
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:         # jsonschema < 4.18 (Debian 12: 4.10)
        resolver = jsonschema.RefResolver(_BASE, doc, store={_BASE: doc})
        return cls(wrapper, resolver=resolver, format_checker=fmt)
    registry = Registry().with_resource(
        _BASE, Resource.from_contents(doc, default_specification=DRAFT202012))
    return cls(wrapper, registry=registry, format_checker=fmt)


def validate_value(value, where, doc=None):
    """Errors (strings) of value against the schema at keys "where"."""
    doc = load_document() if doc is None else doc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        v = _validator(doc, where)
        errs = sorted(v.iter_errors(value),
                      key=lambda e: (list(e.absolute_path), e.message))
    return [_describe(e) for e in errs]


def _describe(err):
    """One line for a validation error, the deepest useful cause first."""
    causes = [err]
    # oneOf/anyOf: say why the closest branch failed too.
    if err.context:
        best = jsonschema.exceptions.best_match(err.context)
        if best is not None:
            causes.append(best)
    out = []
    for e in causes:
        at = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]"
                     for p in e.absolute_path) or "(the body)"
        schema_at = "/".join(str(p) for p in e.absolute_schema_path)
        msg = e.message
        if len(msg) > 300:
            msg = msg[:300] + "..."
        out.append(f"at {at}: {msg} (schema {schema_at})")
    return "; because ".join(out)


# ------------------------------------------------------------- lookups

def _match_template(tmpl, path):
    """The path parameters ({name: value}) when the concrete path fits the
    templated one (each {name} one segment), else None."""
    names = re.findall(r"\{([^/{}]+)\}", tmpl)
    rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "([^/]+)", re.escape(tmpl)) + "$"
    m = re.match(rx, path)
    return dict(zip(names, m.groups())) if m else None


def _path_item(doc, path):
    """(template, path item, path parameters) for a concrete path, or
    (None, None, None).  A program reached directly (busybox httpd cannot
    map routes) stands for a route whose operations name it in
    x-cgi-program: /cgi-bin/PROGRAM for the first such route,
    /cgi-bin/PROGRAM/REST for its templated route whose fixed part, then
    REST, fits the template (/cgi-bin/messages/ID: /messages/{id};
    /cgi-bin/receipts/twilio: /receipts/{provider}), or a route under the
    program's own name (/cgi-bin/console/messages: /console/messages)."""
    paths = doc.get("paths") or {}
    if path in paths:
        return path, paths[path], {}
    for tmpl, item in paths.items():
        params = _match_template(tmpl, path)
        if params is not None:
            return tmpl, item, params
    m = re.fullmatch(r"/cgi-bin/([A-Za-z0-9_.-]+)(/.*)?", path)
    if m:
        prog, rest = m.group(1), m.group(2)
        # A program whose routes are under its own name
        # (/cgi-bin/console/messages: /console/messages).
        own = "/" + prog + (rest or "")
        for tmpl, item in paths.items():
            params = _match_template(tmpl, own)
            if params is not None and any(
                    isinstance(o, dict) and o.get("x-cgi-program") == prog
                    for k, o in item.items() if k in METHODS):
                return tmpl, item, params
        for tmpl, item in paths.items():
            if not any(isinstance(o, dict) and o.get("x-cgi-program") == prog
                       for k, o in item.items() if k in METHODS):
                continue
            if rest is None:
                return tmpl, item, {}
            if "{" in tmpl:
                fixed = tmpl[:tmpl.index("{")].rstrip("/")
                params = _match_template(tmpl, fixed + rest)
                if params is not None:
                    return tmpl, item, params
    return None, None, None


def _path_parameters(doc, item, op):
    """{name: (parameter, keys to it)} of the path parameters of an
    operation (its own over its path item's)."""
    out = {}
    for where, params in (("item", item.get("parameters")),
                          ("op", op.get("parameters"))):
        for i, p in enumerate(params or []):
            p, pwhere = _deref(doc, p, [where, i])
            if p.get("in") == "path":
                out[p["name"]] = (p, pwhere)
    return out


def _media_type(value):
    return (value or "").split(";")[0].strip().lower()


def _lower_headers(headers):
    out = {}
    for k, v in (headers or {}).items():
        out[str(k).lower()] = str(v)
    return out


def _header_value(raw, schema):
    """A header's text as the type its schema asks for."""
    t = schema.get("type") if isinstance(schema, dict) else None
    if t == "integer" and re.fullmatch(r"[0-9]+", raw.strip()):
        return int(raw.strip())
    return raw.strip()


# --------------------------------------------------------------- check

def allowed_methods(item):
    """The methods a path item allows, as a 405's Allow names them: its
    operations in order, HEAD after GET (every GET answers HEAD too)."""
    out = []
    for m in item:
        if m in METHODS:
            out.append(m.upper())
            if m == "get" and "head" not in item:
                out.append("HEAD")
    return out


def check_response(method, path, status, headers, body_bytes, doc=None):
    """Assert that one reply matches the document; see the module text.
    Returns the parsed body (JSON value or text) on success."""
    doc = load_document() if doc is None else doc
    method = method.upper()
    path = urlsplit(path).path or path
    status = int(status)
    hdrs = _lower_headers(headers)
    body_bytes = body_bytes or b""
    op_name = f"{method} {path}"

    tmpl, item, params = _path_item(doc, path)
    if item is None:
        raise AssertionError(
            f"openapi: {op_name}: path not in conf/openapi.yaml "
            f"(documented: {sorted(doc.get('paths') or {})})")
    allowed = allowed_methods(item)
    op = item.get(method.lower())
    where_op = ["paths", tmpl, method.lower()]
    if op is None and method == "HEAD" and "get" in item:
        # HEAD is answered as GET is, without the body (RFC 9110 9.3.2).
        op = item["get"]
        where_op = ["paths", tmpl, "get"]
    if op is None:
        # Another method: the document can only say so through the 405
        # every operation of this path documents.
        if status != 405:
            raise AssertionError(
                f"openapi: {op_name} -> {status}: {method} is not an "
                f"operation of {tmpl} (documented: {allowed}); only 405 "
                f"is documented for other methods")
        op = item[allowed[0].lower()]
        where_op = ["paths", tmpl, allowed[0].lower()]
        got = [m.strip() for m in hdrs.get("allow", "").split(",")
               if m.strip()]
        if sorted(got) != sorted(allowed):
            raise AssertionError(
                f"openapi: {op_name} -> 405: Allow is "
                f"{hdrs.get('allow')!r}, the document has {allowed}")
        op_name += f" (405 of {allowed[0]} {tmpl})"

    responses = op.get("responses") or {}
    key = str(status)
    if key not in responses:
        key = f"{status // 100}XX"
    if key not in responses:
        key = "default"
    if key not in responses:
        raise AssertionError(
            f"openapi: {op_name} -> {status}: status not documented "
            f"(documented: {sorted(responses)}); body: "
            f"{body_bytes[:300]!r}")
    resp, where = _deref(doc, responses[key], where_op + ["responses", key])
    label = f"{op_name} -> {status}"

    # A success means the program took the path's parameters: they must be
    # what the document says they are.
    if 200 <= status < 300 and params:
        declared = _path_parameters(doc, item, op)
        for name, value in params.items():
            if name not in declared:
                raise AssertionError(
                    f"openapi: {label}: path parameter {{{name}}} of "
                    f"{tmpl} is not declared")
            p, pwhere = declared[name]
            if pwhere[0] == "item":
                pwhere = ["paths", tmpl, "parameters", pwhere[1]]
            elif pwhere[0] == "op":
                pwhere = where_op + ["parameters", pwhere[1]]
            if "schema" in p:
                errs = validate_value(unquote(value), pwhere + ["schema"],
                                      doc)
                if errs:
                    raise AssertionError(
                        f"openapi: {label}: path parameter {name} "
                        f"{value!r}: " + " | ".join(errs))

    # Headers.
    for name, h in (resp.get("headers") or {}).items():
        h, hwhere = _deref(doc, h, where + ["headers", name])
        present = name.lower() in hdrs
        if h.get("required") and not present:
            raise AssertionError(
                f"openapi: {label}: required header {name} is missing "
                f"(got {sorted(hdrs)})")
        if present and "schema" in h:
            value = _header_value(hdrs[name.lower()], h["schema"])
            errs = validate_value(value, hwhere + ["schema"], doc)
            if errs:
                raise AssertionError(
                    f"openapi: {label}: header {name}: "
                    f"{hdrs[name.lower()]!r}: " + " | ".join(errs))

    # Body.
    content = resp.get("content") or {}
    if method == "HEAD":
        return None
    if not content:
        if body_bytes:
            raise AssertionError(
                f"openapi: {label}: a body ({len(body_bytes)} bytes) where "
                f"the document has none")
        return None
    ctype = _media_type(hdrs.get("content-type"))
    media = {_media_type(k): (k, v) for k, v in content.items()}
    if ctype not in media:
        wild = ctype.split("/")[0] + "/*"
        if wild in media:
            ctype = wild
        elif "*/*" in media:
            ctype = "*/*"
        else:
            raise AssertionError(
                f"openapi: {label}: Content-Type "
                f"{hdrs.get('content-type')!r} not documented "
                f"(documented: {sorted(content)})")
    mkey, mt = media[ctype]
    try:
        text = body_bytes.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError(
            f"openapi: {label}: body is not UTF-8: {e}") from None
    real = _media_type(hdrs.get("content-type"))
    if real == "application/json" or real.endswith("+json"):
        try:
            value = json.loads(text)
        except ValueError as e:
            raise AssertionError(
                f"openapi: {label}: body is not JSON ({e}): "
                f"{text[:300]!r}") from None
    else:
        value = text
    if "schema" in mt:
        errs = validate_value(value, where + ["content", mkey, "schema"],
                              doc)
        if errs:
            shown = "\n  ".join(errs[:8])
            more = f"\n  ... and {len(errs) - 8} more" if len(errs) > 8 \
                else ""
            raise AssertionError(
                f"openapi: {label} ({mkey}): body does not match the "
                f"schema:\n  {shown}{more}\nbody: {text[:500]}")
    return value


def check_reply(r, path=None, doc=None):
    """check_response for a requests.Response: the method from the request
    it answers, the path too unless given (the route, when the server was
    reached at another URL)."""
    if path is None:
        path = urlsplit(r.request.url).path
    return check_response(r.request.method, path, r.status_code, r.headers,
                          r.content, doc=doc)

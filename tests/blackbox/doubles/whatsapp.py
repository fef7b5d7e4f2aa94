"""The WhatsApp Cloud API stand-in: POST /graph/vNN.N/{PHONE_NUMBER_ID}/messages,
checked against Meta's published Graph API, answered with its error
objects."""

import base64
import binascii
import json
import math
import re
import secrets
import socket
import string
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from doubles.server import (_Reply, _Valid, _media_type, _random_alnum)  # noqa: F401


GRAPH_VERSION = "v21.0"


WA_TO_RE = re.compile(r"^\+?[0-9]{5,15}$")


WA_LANG_RE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]{2,8})?$")


GRAPH_PATH_RE = re.compile(r"^/(v[0-9]+\.[0-9]+)/([^/]+)/([^/]+)$")


API_WHATSAPP = "whatsapp"


class WhatsAppAPI:
    """Mixed into Standin (doubles/standin.py)."""

    @property
    def whatsapp_base(self):
        return self.url("/graph/" + GRAPH_VERSION)

    def whatsapp_config(self, channel_type=1):
        return ("[ott.%s]\nprovider = whatsapp\nphone-number-id = %s\n"
                "token = %s\napi-base = %s\n" % (
                    channel_type, self.whatsapp_phone_number_id,
                    self.whatsapp_token, self.whatsapp_base))

    def _wa_error(self, status, code, message, details=None, outcome=
                  "violation", reason=None, headers=None, subcode=None,
                  etype="OAuthException"):
        err = {"message": message, "type": etype, "code": code}
        if subcode is not None:
            err["error_subcode"] = subcode
        if details is not None:
            err["error_data"] = {"messaging_product": "whatsapp",
                                 "details": details}
        err["fbtrace_id"] = "A" + _random_alnum(22)
        h = {"x-fb-trace-id": _random_alnum(11),
             "x-fb-request-id": "A" + _random_alnum(22),
             "facebook-api-version": GRAPH_VERSION}
        if status == 401:
            h["WWW-Authenticate"] = ('OAuth "Facebook Platform" '
                                     '"invalid_token" "%s"' % message)
        h.update(headers or {})
        return _Reply(status, {"error": err}, h, outcome=outcome,
                      reason=reason or (details or message))

    def _wa_param_error(self, details, code=100, reason=None):
        if code == 100:
            msg = "(#100) Invalid parameter"
        elif code == 131008:
            msg = "(#131008) Required parameter is missing"
        elif code == 131009:
            msg = "(#131009) Parameter value is not valid"
        else:
            msg = "(#%d) There was an issue with the parameters in your " \
                  "template." % code
        return None, self._wa_error(400, code, msg, details, reason=reason)

    def _whatsapp(self, rec, sub):
        rec["api"] = API_WHATSAPP
        m = GRAPH_PATH_RE.match(sub)
        if not m or m.group(3) != "messages":
            return None, self._wa_error(
                400, 2500, "Unknown path components: %s" % sub,
                reason="unknown Graph path %s" % rec["path"])
        version, phone_id = m.group(1), m.group(2)
        rec["graph_version"] = version
        if rec["method"] != "POST":
            return None, self._wa_error(
                400, 100, "Unsupported %s request." % rec["method"].lower(),
                etype="GraphMethodException",
                reason="%s on messages; msgspool must POST" % rec["method"])
        auth = rec["auth"]
        if auth is None:
            return None, self._wa_error(
                401, 190, "An access token is required to request this "
                "resource.",
                reason="no Authorization header (Bearer token required)")
        if auth["scheme"] != "bearer":
            return None, self._wa_error(
                401, 190, "Invalid OAuth access token - Cannot parse access "
                "token",
                reason="auth scheme %r, Bearer required" % auth["scheme"])
        if auth["token"] != self.whatsapp_token:
            return None, self._wa_error(
                401, 190, "Invalid OAuth access token - Cannot parse access "
                "token", reason="wrong Bearer token")
        if phone_id != self.whatsapp_phone_number_id:
            return None, self._wa_error(
                400, 100, "Unsupported post request. Object with ID '%s' "
                "does not exist, cannot be loaded due to missing "
                "permissions, or does not support this operation. Please "
                "read the Graph API documentation at "
                "https://developers.facebook.com/docs/graph-api" % phone_id,
                subcode=33, etype="GraphMethodException",
                reason="phone number id %r is not the configured %r" %
                (phone_id, self.whatsapp_phone_number_id))
        ctype, params = _media_type(rec["headers"].get("Content-Type"))
        if ctype != "application/json":
            return self._wa_param_error(
                "Content-Type %r, expected application/json" %
                rec["headers"].get("Content-Type"))
        try:
            doc = json.loads(rec["body"].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return self._wa_param_error("body is not JSON: %s" % e)
        rec["json"] = doc
        if not isinstance(doc, dict):
            return self._wa_param_error("body is not a JSON object")
        to = doc.get("to")
        if isinstance(to, str):
            rec["recipient"] = to
        if "messaging_product" not in doc:
            return self._wa_param_error(
                "The parameter messaging_product is required.")
        if doc["messaging_product"] != "whatsapp":
            return self._wa_param_error(
                "Param messaging_product must be 'whatsapp', got %r" %
                (doc["messaging_product"],))
        if "recipient_type" in doc and doc["recipient_type"] != "individual":
            return self._wa_param_error(
                "Param recipient_type must be 'individual', got %r" %
                (doc["recipient_type"],))
        if to is None:
            return self._wa_param_error("The parameter to is required.")
        if not isinstance(to, str) or not WA_TO_RE.match(to):
            return self._wa_param_error(
                "Param to must be a phone number of digits, got %r" % (to,))
        mtype = doc.get("type", "text")
        if mtype != "template":
            return self._wa_param_error(
                "msgspool sends template messages only; type is %r" %
                (mtype,), code=131009)
        tpl = doc.get("template")
        if tpl is None:
            return self._wa_param_error("template is required", 131008)
        if not isinstance(tpl, dict):
            return self._wa_param_error("template must be an object", 131009)
        name = tpl.get("name")
        if name is None:
            return self._wa_param_error("template['name'] is required",
                                        131008)
        if not isinstance(name, str) or not name or len(name) > 512:
            return self._wa_param_error(
                "template['name'] must be a non-empty string", 131009)
        lang = tpl.get("language")
        if lang is None:
            return self._wa_param_error("template['language'] is required",
                                        131008)
        if not isinstance(lang, dict) or "code" not in lang:
            return self._wa_param_error(
                "template['language'] must be an object with a code", 131008)
        if not isinstance(lang["code"], str) \
                or not WA_LANG_RE.match(lang["code"]):
            return self._wa_param_error(
                "template['language']['code'] %r is not a language code" %
                (lang["code"],), 131009)
        if "policy" in lang and lang["policy"] != "deterministic":
            return self._wa_param_error(
                "template['language']['policy'] must be 'deterministic'",
                131009)
        body_params = []
        comps = tpl.get("components")
        if comps is not None:
            if not isinstance(comps, list):
                return self._wa_param_error(
                    "template['components'] must be an array", 131009)
            seen = set()
            for i, c in enumerate(comps):
                where = "template['components'][%d]" % i
                if not isinstance(c, dict) or c.get("type") not in (
                        "header", "body", "button"):
                    return self._wa_param_error(
                        "%s must be an object of type header, body or button"
                        % where, 131009)
                if c["type"] != "button":
                    if c["type"] in seen:
                        return self._wa_param_error(
                            "%s: more than one %s component" %
                            (where, c["type"]), 131009)
                    seen.add(c["type"])
                else:
                    if c.get("sub_type") not in ("quick_reply", "url",
                                                 "copy_code", "flow",
                                                 "catalog", "mpm",
                                                 "voice_call") \
                            or "index" not in c:
                        return self._wa_param_error(
                            "%s: a button needs sub_type and index" % where,
                            131008)
                ps = c.get("parameters", [])
                if not isinstance(ps, list):
                    return self._wa_param_error(
                        "%s['parameters'] must be an array" % where, 131009)
                for j, p in enumerate(ps):
                    pw = "%s['parameters'][%d]" % (where, j)
                    if not isinstance(p, dict) or not isinstance(
                            p.get("type"), str):
                        return self._wa_param_error(
                            "%s must be an object with a type" % pw, 131008)
                    if p["type"] == "text":
                        t = p.get("text")
                        if not isinstance(t, str) or t == "":
                            return self._wa_param_error(
                                "%s['text'] must be a non-empty string" % pw,
                                131008)
                        if "\n" in t or "\t" in t or "     " in t:
                            return self._wa_param_error(
                                "Param text cannot have new-line/tab "
                                "characters or more than 4 consecutive "
                                "spaces (%s)" % pw, 132018)
                    elif p["type"] not in ("currency", "date_time", "image",
                                           "document", "video", "location",
                                           "payload", "coupon_code", "action"):
                        return self._wa_param_error(
                            "%s: unknown parameter type %r" % (pw, p["type"]),
                            131009)
                if c["type"] == "body":
                    body_params = [p.get("text") for p in ps]
        rec["template"] = {"name": name, "language": lang["code"],
                           "parameters": body_params}
        reject = None
        if self.whatsapp_templates is not None:
            known = self.whatsapp_templates.get(name)
            if known is None or (known[0] is not None
                                 and known[0] != lang["code"]):
                reject = self._wa_error(
                    404, 132001, "(#132001) Template name does not exist in "
                    "the translation", "template name (%s) does not exist in "
                    "%s" % (name, lang["code"]), outcome="rejected")
            elif known[1] is not None and known[1] != len(body_params):
                reject = self._wa_error(
                    400, 132000, "(#132000) Number of parameters does not "
                    "match the expected number of params",
                    "body: number of localizable_params (%d) does not match "
                    "the expected number of params (%d)" %
                    (len(body_params), known[1]), outcome="rejected")

        def success():
            return _Reply(200, {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
                "messages": [{"id": "wamid.HBgM" + _random_alnum(48),
                              "message_status": "accepted"}],
            }, {"Content-Type": "application/json; charset=UTF-8",
                "x-fb-trace-id": _random_alnum(11),
                "facebook-api-version": GRAPH_VERSION})

        def error(step):
            kind = step[0]
            if kind == "429":
                return self._wa_error(
                    429, 130429, "(#130429) Rate limit hit",
                    "Cloud API message throughput has been reached.",
                    outcome="error", headers={"Retry-After": str(step[1])})
            if kind == "500":
                return self._wa_error(500, 131000,
                                      "(#131000) Something went wrong",
                                      "Something went wrong",
                                      outcome="error")
            if kind == "503":
                h = {"Retry-After": str(step[1])} if len(step) > 1 else {}
                return self._wa_error(503, 131016,
                                      "(#131016) Service unavailable",
                                      "A service is temporarily unavailable.",
                                      outcome="error", headers=h)
            status = step[1]
            defaults = {
                400: (131030, "(#131030) Recipient phone number not in "
                      "allowed list", "Recipient phone number not in allowed "
                      "list: Add recipient phone number to recipient list "
                      "and try again."),
                401: (190, "Invalid OAuth access token - Cannot parse access "
                      "token", None),
                403: (10, "(#10) Application does not have permission for "
                      "this action", "Permission denied"),
                404: (100, "(#100) Invalid parameter", "Object not found"),
                408: (131000, "(#131000) Something went wrong",
                      "Request timed out"),
                429: (130429, "(#130429) Rate limit hit",
                      "Cloud API message throughput has been reached."),
                500: (131000, "(#131000) Something went wrong",
                      "Something went wrong"),
                503: (131016, "(#131016) Service unavailable",
                      "A service is temporarily unavailable."),
            }
            code, msg, det = defaults.get(
                status, (1, "An unknown error occurred",
                         "An unknown error occurred"))
            if len(step) > 2:
                code = step[2]
                msg = "(#%d) %s" % (code, step[3] if len(step) > 3 else
                                    "Error")
                det = step[3] if len(step) > 3 else det
            return self._wa_error(status, code, msg, det, outcome="error")

        return _Valid(to, success, error, reject), None

    def whatsapp_incoming(self, post_to, app_secret, messages, statuses=(),
                          display_number=None):
        """Messages people sent to the business number (and statuses beside
        them, as Meta mixes them), posted as the Cloud API webhook does:
        one entry, one change of field messages whose value holds the
        metadata, the senders' contacts and messages[], signed with
        X-Hub-Signature-256 (the app's secret) and posted to post_to.
        Meta wants a 200: anything else is listed in violations (Meta
        would retry it).  Returns (msgspool's Answer, the body)."""
        from doubles.originate import post
        from harness.receiptsign import meta_sig

        value = {"messaging_product": "whatsapp", "metadata": {
            "display_phone_number": display_number or WA_DISPLAY_NUMBER,
            "phone_number_id": self.whatsapp_phone_number_id}}
        if messages:
            value["contacts"] = [
                {"profile": {"name": "Person %s" % m.get("from")},
                 "wa_id": m.get("from")} for m in messages]
            value["messages"] = list(messages)
        if statuses:
            value["statuses"] = list(statuses)
        body = {"object": "whatsapp_business_account",
                "entry": [{"id": "102290129340398", "changes": [
                    {"field": "messages", "value": value}]}]}
        raw = json.dumps(body).encode()
        answer = post(post_to, raw, {
            "Content-Type": "application/json",
            "X-Hub-Signature-256": meta_sig(app_secret, raw),
            "User-Agent": "facebookexternalua"})
        if answer.status != 200:
            self._violation({"api": "whatsapp.webhook", "method": "POST",
                             "path": post_to},
                            "HTTP %d to a webhook (Meta retries it)" %
                            answer.status)
        return answer, body


# ------------------------------------------------------- incoming messages

# The business number a stand-in's phone number id stands for (metadata).
WA_DISPLAY_NUMBER = "15550783881"


def _wamid():
    return "wamid.HBgN" + _random_alnum(40)


def wa_text(frm, body, wamid=None, timestamp=None):
    """A text a person sent (Cloud API webhook, messages[] of type text)."""
    return {"from": frm, "id": wamid or _wamid(),
            "timestamp": timestamp or str(int(time.time())),
            "type": "text", "text": {"body": body}}


def wa_button(frm, text, payload="p", wamid=None):
    """A quick-reply button of a template pressed (type button)."""
    return {"from": frm, "id": wamid or _wamid(),
            "timestamp": str(int(time.time())), "type": "button",
            "context": {"from": WA_DISPLAY_NUMBER, "id": _wamid()},
            "button": {"payload": payload, "text": text}}


def wa_interactive(frm, title, kind="button_reply", wamid=None):
    """A reply button or a list row chosen (type interactive, kind
    button_reply or list_reply)."""
    return {"from": frm, "id": wamid or _wamid(),
            "timestamp": str(int(time.time())), "type": "interactive",
            "interactive": {"type": kind, kind: {"id": "choice-1",
                                                 "title": title}}}


def wa_media(frm, kind, media_id, mime="image/jpeg", caption=None,
             wamid=None):
    """An image, audio, video, document or sticker: the media's id to
    fetch from the Graph API, never its bytes."""
    media = {"mime_type": mime, "sha256": secrets.token_hex(32),
             "id": media_id}
    if caption is not None:
        media["caption"] = caption
    return {"from": frm, "id": wamid or _wamid(),
            "timestamp": str(int(time.time())), "type": kind, kind: media}


def wa_location(frm, lat=52.52, lon=13.405, wamid=None):
    return {"from": frm, "id": wamid or _wamid(),
            "timestamp": str(int(time.time())), "type": "location",
            "location": {"latitude": lat, "longitude": lon,
                         "name": "Alexanderplatz"}}

"""The stand-in of the generic webhook (the `http` provider): POST /hook,
any JSON object."""

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

from doubles.server import (_Reply, _Valid, _media_type)  # noqa: F401


API_HOOK = "hook"


class HookAPI:
    """Mixed into Standin (doubles/standin.py)."""

    @property
    def hook_url(self):
        return self.url("/hook")

    def hook_config(self, section="sms", headers=(), path="/hook"):
        text = "[%s]\nprovider = http\nurl = %s\n" % (section, self.url(path))
        for h in headers:
            text += "header = %s\n" % h
        return text

    def _hook(self, rec):
        rec["api"] = API_HOOK

        def bad(reason, status=400):
            return None, _Reply(status, {"ok": False, "error": reason},
                                outcome="violation", reason=reason)
        if rec["method"] != "POST":
            return bad("%s on the webhook; POST expected" % rec["method"],
                       405)
        ctype, _ = _media_type(rec["headers"].get("Content-Type"))
        if ctype != "application/json":
            return bad("Content-Type %r, expected application/json" %
                       rec["headers"].get("Content-Type"), 415)
        try:
            doc = json.loads(rec["body"].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return bad("body is not JSON: %s" % e)
        rec["json"] = doc
        if not isinstance(doc, dict):
            return bad("body is not a JSON object")
        key = None
        msg = doc.get("message")
        if isinstance(msg, dict) and isinstance(msg.get("to"), str):
            key = msg["to"]
        elif isinstance(doc.get("to"), str):
            key = doc["to"]
        elif isinstance(doc.get("recipient"), str):
            key = doc["recipient"]
        rec["recipient"] = key

        def success():
            return _Reply(200, {"ok": True})

        def error(step):
            kind = step[0]
            h = {}
            if kind == "429":
                status, h = 429, {"Retry-After": str(step[1])}
            elif kind in ("500", "503"):
                status = int(kind)
                if len(step) > 1:
                    h = {"Retry-After": str(step[1])}
            else:
                status = step[1]
            return _Reply(status, {"ok": False,
                                   "error": "scripted %d" % status}, h,
                          outcome="error")

        return _Valid(key, success, error), None

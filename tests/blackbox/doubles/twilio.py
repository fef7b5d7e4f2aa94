"""The Twilio stand-in: Messages and Calls (the 2010-04-01 API) under
/twilio, checked against Twilio's published API; status callbacks signed
with X-Twilio-Signature; TwiML checked."""

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

from doubles.server import (E164_RE, _Reply, _Valid, _media_type)  # noqa: F401


ALNUM_SENDER_RE = re.compile(r"^(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}$")


SHORT_CODE_RE = re.compile(r"^[0-9]{3,8}$")


MG_SID_RE = re.compile(r"^MG[0-9a-fA-F]{32}$")


SAY_LANG_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


TWILIO_PATH_RE = re.compile(
    r"^/2010-04-01/Accounts/([^/]+)/(Messages|Calls)\.json$")


API_TWILIO_MESSAGES = "twilio.messages"


API_TWILIO_CALLS = "twilio.calls"


# GSM 03.38 default alphabet and its extension table (each extension
# character takes two septets), for Twilio's num_segments.
_GSM_BASIC = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")


_GSM_EXT = set("^{}\\[~]|€\f")


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
           "Oct", "Nov", "Dec")


def _rfc2822(t=None):
    """Twilio's date format: 'Thu, 30 Jul 2015 20:12:31 +0000'."""
    g = time.gmtime(time.time() if t is None else t)
    return "%s, %02d %s %04d %02d:%02d:%02d +0000" % (
        _DAYS[g.tm_wday], g.tm_mday, _MONTHS[g.tm_mon - 1], g.tm_year,
        g.tm_hour, g.tm_min, g.tm_sec)


def _num_segments(body):
    if all(c in _GSM_BASIC or c in _GSM_EXT for c in body):
        n = sum(2 if c in _GSM_EXT else 1 for c in body)
        single, multi = 160, 153
    else:
        n = len(body.encode("utf-16-le")) // 2
        single, multi = 70, 67
    if n <= single:
        return 1
    return math.ceil(n / multi)


def _check_twiml(twiml):
    """None if the TwiML is a <Response> with exactly one <Say> or <Play>
    (and nothing but <Pause> beside it), else the reason."""
    try:
        root = ET.fromstring(twiml.encode("utf-8"))
    except ET.ParseError as e:
        return "not well-formed XML (%s)" % e
    if root.tag != "Response":
        return "root element is <%s>, expected <Response>" % root.tag
    if (root.text or "").strip():
        return "text directly inside <Response>"
    verbs = list(root)
    sayplay = [v for v in verbs if v.tag in ("Say", "Play")]
    others = [v.tag for v in verbs if v.tag not in ("Say", "Play", "Pause")]
    if others:
        return "unexpected verb(s) %s" % ", ".join("<%s>" % t for t in others)
    if len(sayplay) != 1:
        return "%d <Say>/<Play> verbs, expected exactly one" % len(sayplay)
    v = sayplay[0]
    if v.tag == "Say":
        if not "".join(v.itertext()).strip():
            return "<Say> has no text"
        lang = v.get("language")
        if lang is not None and not SAY_LANG_RE.match(lang):
            return "<Say language=%r> is not a language tag" % lang
        for a in v.attrib:
            if a not in ("language", "voice", "loop"):
                return "<Say> has unknown attribute %s" % a
    else:
        if len(v):
            return "<Play> has child elements"
        u = urllib.parse.urlsplit((v.text or "").strip())
        if u.scheme != "https" or not u.netloc:
            return "<Play> URL %r is not an https URL" % (v.text,)
        for a in v.attrib:
            if a not in ("loop", "digits"):
                return "<Play> has unknown attribute %s" % a
    if "loop" in v.attrib and not v.get("loop").isdigit():
        return "loop=%r is not a number" % v.get("loop")
    return None


def _twiml_summary(twiml):
    root = ET.fromstring(twiml.encode("utf-8"))
    v = [e for e in root if e.tag in ("Say", "Play")][0]
    return {"verb": v.tag, "text": "".join(v.itertext()).strip(),
            "attrib": dict(v.attrib)}


class TwilioAPI:
    """Mixed into Standin (doubles/standin.py)."""

    @property
    def twilio_base(self):
        return self.url("/twilio")

    def twilio_config(self, section="sms", from_number=None):
        return ("[%s]\nprovider = twilio\naccount-sid = %s\nauth-token = %s\n"
                "from = %s\napi-base = %s\n" % (
                    section, self.twilio_account_sid, self.twilio_auth_token,
                    from_number or self.twilio_from, self.twilio_base))

    def _tw_error(self, status, code, message, outcome="violation",
                  reason=None, headers=None):
        body = {"code": code, "message": message,
                "more_info": "https://www.twilio.com/docs/errors/%d" % code,
                "status": status}
        h = {"Twilio-Request-Id": "RQ" + secrets.token_hex(16)}
        if status == 401:
            h["WWW-Authenticate"] = 'Basic realm="Twilio API"'
        h.update(headers or {})
        return _Reply(status, body, h, outcome=outcome,
                      reason=reason or message)

    def _twilio(self, rec, sub):
        m = TWILIO_PATH_RE.match(sub)
        if not m:
            rec["api"] = "twilio"
            return None, self._tw_error(
                404, 20404, "The requested resource %s was not found" % sub,
                reason="unknown Twilio path %s" % rec["path"])
        account, resource = m.group(1), m.group(2)
        rec["api"] = (API_TWILIO_MESSAGES if resource == "Messages"
                      else API_TWILIO_CALLS)
        if rec["method"] != "POST":
            return None, self._tw_error(
                405, 20004, "Method not allowed",
                reason="%s on %s; msgspool must POST" % (rec["method"],
                                                         resource))
        auth = rec["auth"]
        if auth is None:
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="no Authorization header (HTTP Basic required)")
        if auth["scheme"] != "basic":
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="auth scheme %r, HTTP Basic required" % auth["scheme"])
        if auth.get("username") != self.twilio_account_sid \
                or auth.get("password") != self.twilio_auth_token:
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="wrong Basic credentials (user %r)" %
                auth.get("username"))
        if account != self.twilio_account_sid:
            return None, self._tw_error(
                401, 20003, "Authenticate",
                reason="account %r in path is not the authenticated account"
                % account)
        ctype, params = _media_type(rec["headers"].get("Content-Type"))
        problems = []
        pairs = []
        if ctype != "application/x-www-form-urlencoded":
            problems.append("Content-Type %r, expected "
                            "application/x-www-form-urlencoded" %
                            rec["headers"].get("Content-Type"))
        else:
            cs = params.get("charset", "utf-8").lower()
            if cs not in ("utf-8", "utf8"):
                problems.append("charset %r, expected utf-8" % cs)
            try:
                text = rec["body"].decode("ascii")
                pairs = urllib.parse.parse_qsl(
                    text, keep_blank_values=True, encoding="utf-8",
                    errors="strict")
            except UnicodeDecodeError:
                problems.append("form body is not percent-encoded UTF-8")
        form = {}
        for k, v in pairs:
            if k in form:
                problems.append("field %s given more than once" % k)
            else:
                form[k] = v
        rec["form"] = form
        rec["form_pairs"] = pairs
        if resource == "Messages":
            return self._twilio_message(rec, account, form, problems)
        return self._twilio_call(rec, account, form, problems)

    def _tw_scripted(self, rec, step, to):
        kind = step[0]
        if kind == "429":
            return self._tw_error(
                429, 20429, "Too Many Requests", outcome="error",
                headers={"Retry-After": str(step[1])})
        if kind == "500":
            return self._tw_error(500, 20500,
                                  "An internal server error has occurred",
                                  outcome="error")
        if kind == "503":
            h = {"Retry-After": str(step[1])} if len(step) > 1 else {}
            return self._tw_error(503, 20503, "Service Unavailable",
                                  outcome="error", headers=h)
        status = step[1]
        calls = rec["api"] == API_TWILIO_CALLS
        defaults = {
            400: (21211, "The 'To' number %s is not a valid phone number."
                  % to),
            401: (20003, "Authenticate"),
            403: ((21215, "Account not authorized to call %s. Perhaps you "
                   "need to enable some international permissions: "
                   "https://www.twilio.com/console/voice/calls/"
                   "geo-permissions/low-risk" % to) if calls else
                  (21408, "Permission to send an SMS has not been enabled "
                   "for the region indicated by the 'To' number: %s." % to)),
            404: (20404, "The requested resource %s was not found"
                  % rec["path"][len("/twilio"):]),
            405: (20004, "Method not allowed"),
            409: (20409, "Conflict"),
            429: (20429, "Too Many Requests"),
            500: (20500, "An internal server error has occurred"),
            503: (20503, "Service Unavailable"),
        }
        code, message = defaults.get(status, (20000 + status if status < 1000
                                              else status, "Error"))
        if len(step) > 2:
            code = step[2]
        if len(step) > 3:
            message = step[3]
        return self._tw_error(status, code, message, outcome="error")

    def _twilio_message(self, rec, account, form, problems):
        to, frm, body = form.get("To"), form.get("From"), form.get("Body")
        mgs = form.get("MessagingServiceSid")
        rec["recipient"] = to
        if problems:
            return None, self._tw_error(400, 21604 if not to else 20001,
                                        "A 'To' phone number is required."
                                        if not to else problems[0],
                                        reason="; ".join(problems))
        if not to:
            return None, self._tw_error(400, 21604,
                                        "A 'To' phone number is required.")
        if not E164_RE.match(to):
            return None, self._tw_error(
                400, 21211, "The 'To' number %s is not a valid phone number."
                % to)
        if not frm and not mgs:
            return None, self._tw_error(400, 21603,
                                        "A 'From' phone number is required.")
        if frm and not (E164_RE.match(frm) or ALNUM_SENDER_RE.match(frm)
                        or SHORT_CODE_RE.match(frm)):
            return None, self._tw_error(
                400, 21212, "The 'From' number %s is not a valid phone "
                "number, shortcode, or alphanumeric sender ID." % frm)
        if mgs and not MG_SID_RE.match(mgs):
            return None, self._tw_error(
                400, 21701, "The Messaging Service Sid %s is invalid." % mgs)
        if body is None or body == "":
            if not form.get("MediaUrl") and not form.get("ContentSid"):
                return None, self._tw_error(400, 21602,
                                            "Message body is required.")
            body = body or ""
        if len(body) > 1600:
            return None, self._tw_error(
                400, 21617, "The concatenated message body exceeds the 1600 "
                "character limit.")
        reject = None
        if self.twilio_numbers is not None and frm \
                and frm not in self.twilio_numbers:
            reject = self._tw_error(
                400, 21606, "The From phone number %s is not a valid, "
                "SMS-capable inbound phone number or short code for your "
                "account." % frm, outcome="rejected")

        def success():
            sid = "SM" + secrets.token_hex(16)
            now = _rfc2822()
            uri = "/2010-04-01/Accounts/%s/Messages/%s" % (account, sid)
            res = {
                "account_sid": account,
                "api_version": "2010-04-01",
                "body": body,
                "date_created": now,
                "date_sent": None,
                "date_updated": now,
                "direction": "outbound-api",
                "error_code": None,
                "error_message": None,
                "from": frm,
                "messaging_service_sid": mgs,
                "num_media": "0",
                "num_segments": str(_num_segments(body)),
                "price": None,
                "price_unit": "USD",
                "sid": sid,
                "status": "accepted" if mgs and not frm else "queued",
                "subresource_uris": {"media": uri + "/Media.json"},
                "to": to,
                "uri": uri + ".json",
            }
            reply = _Reply(201, res, {"Twilio-Request-Id":
                                      "RQ" + secrets.token_hex(16)})
            if form.get("StatusCallback") and self.twilio_callbacks:
                callbacks = list(self.twilio_callbacks)
                reply.then = lambda: self._call_back(
                    form["StatusCallback"], account, sid, to, frm, callbacks)
            return reply

        return _Valid(to, success, lambda step: self._tw_scripted(
            rec, step, to), reject), None

    def _call_back(self, url, account, sid, to, frm, statuses):
        """POST Twilio's status callbacks for message sid to url, one
        after another (a thread of their own); called once the 201 went
        out (the reply's then)."""
        import hashlib
        import hmac
        import urllib.request

        def run():
            for status in statuses:
                code = "30003"
                if isinstance(status, tuple):
                    status, code = status
                params = {"AccountSid": account, "ApiVersion": "2010-04-01",
                          "From": frm or "", "MessageSid": sid,
                          "MessageStatus": status, "SmsSid": sid,
                          "SmsStatus": status, "To": to}
                if status in ("failed", "undelivered"):
                    params["ErrorCode"] = code
                data = url + "".join(k + params[k] for k in sorted(params))
                sig = base64.b64encode(hmac.new(
                    self.twilio_auth_token.encode(), data.encode(),
                    hashlib.sha1).digest()).decode()
                req = urllib.request.Request(
                    url, data=urllib.parse.urlencode(params).encode(),
                    headers={"X-Twilio-Signature": sig, "Content-Type":
                             "application/x-www-form-urlencoded",
                             "User-Agent": "TwilioProxy/1.1",
                             "Connection": "close"})
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        got = r.status
                except urllib.error.HTTPError as e:
                    got = e.code
                except OSError as e:
                    got = repr(e)
                with self._lock:
                    self.callback_results.append((status, got))
                    self._cond.notify_all()

        threading.Thread(target=run, daemon=True).start()

    def wait_callbacks(self, n, timeout=10.0):
        """Wait until n status callbacks were posted; return the results."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.callback_results) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%d of %d callbacks made: %r" % (
                        len(self.callback_results), n,
                        self.callback_results))
                self._cond.wait(left)
            return list(self.callback_results)

    def twilio_incoming(self, post_to, signed_url, frm, to, body,
                        media=(), sid=None):
        """An SMS (or MMS) that a phone sent to the account's number to,
        posted as Twilio's "a message comes in" webhook does: its form
        (MessageSid, SmsStatus received, From, To, Body, NumMedia,
        MediaUrlN and MediaContentTypeN for each (url, type) of media),
        signed with X-Twilio-Signature over signed_url (the URL Twilio
        was given) and posted to post_to.  sid: the same one again for a
        repeated delivery.  Twilio wants TwiML back: anything but a 200
        text/xml <Response> is listed in violations.  Returns (msgspool's
        Answer, the form)."""
        from doubles.originate import post
        from harness.receiptsign import twilio_sig

        sid = sid or "SM" + secrets.token_hex(16)
        form = {"ToCountry": "US", "ToState": "CA", "SmsMessageSid": sid,
                "NumMedia": str(len(media)), "ToCity": "", "FromZip": "",
                "SmsSid": sid, "FromState": "", "SmsStatus": "received",
                "FromCity": "", "Body": body, "FromCountry": "DE",
                "To": to, "ToZip": "", "NumSegments": "1",
                "MessageSid": sid, "AccountSid": self.twilio_account_sid,
                "From": frm, "ApiVersion": "2010-04-01"}
        for i, (url, ctype) in enumerate(media):
            form["MediaUrl%d" % i] = url
            form["MediaContentType%d" % i] = ctype
        answer = post(post_to, urllib.parse.urlencode(form).encode(), {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": twilio_sig(self.twilio_auth_token,
                                             signed_url, form),
            "User-Agent": "TwilioProxy/1.1"})
        why = None
        if answer.status != 200:
            why = "HTTP %d to an incoming message" % answer.status
        elif answer.content_type not in ("text/xml", "application/xml"):
            why = "Content-Type %r, not TwiML (Twilio error 12300)" % (
                answer.content_type,)
        else:
            try:
                root = ET.fromstring(answer.body)
                if root.tag != "Response":
                    why = "<%s> is not a TwiML <Response>" % root.tag
            except ET.ParseError as e:
                why = "TwiML that is not XML (%s)" % e
        if why is not None:
            self._violation({"api": "twilio.incoming", "method": "POST",
                             "path": post_to}, why)
        return answer, form

    def _twilio_call(self, rec, account, form, problems):
        to, frm = form.get("To"), form.get("From")
        twiml, url = form.get("Twiml"), form.get("Url")
        app = form.get("ApplicationSid")
        rec["recipient"] = to
        if problems:
            return None, self._tw_error(400, 21201 if not to else 20001,
                                        "No 'To' number is specified"
                                        if not to else problems[0],
                                        reason="; ".join(problems))
        if not to:
            return None, self._tw_error(400, 21201,
                                        "No 'To' number is specified")
        if not E164_RE.match(to):
            return None, self._tw_error(
                400, 21211, "Invalid 'To' Phone Number: %s" % to)
        if not frm:
            return None, self._tw_error(400, 21213,
                                        "No 'From' number is specified")
        if not E164_RE.match(frm):
            return None, self._tw_error(
                400, 21212, "Invalid 'From' Phone Number: %s" % frm)
        given = [n for n, v in (("Twiml", twiml), ("Url", url),
                                ("ApplicationSid", app)) if v]
        if not given:
            return None, self._tw_error(
                400, 21205, "A 'Url', 'Twiml', or 'ApplicationSid' "
                "parameter is required.")
        if len(given) > 1:
            return None, self._tw_error(
                400, 21205, "Only one of %s may be given." % ", ".join(given))
        if twiml is not None:
            if len(twiml) > 4000:
                return None, self._tw_error(
                    400, 32018, "Twiml size exceeded maximum allowed value "
                    "of 4000 characters")
            bad = _check_twiml(twiml)
            if bad:
                return None, self._tw_error(
                    400, 12100, "Document parse failure: %s" % bad,
                    reason="TwiML: %s" % bad)
            rec["twiml"] = _twiml_summary(twiml)
        if url is not None:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.netloc:
                return None, self._tw_error(
                    400, 21205, "Url is not a valid URL: %s" % url)
        reject = None
        if self.twilio_numbers is not None and frm not in self.twilio_numbers:
            reject = self._tw_error(
                400, 21210, "The source phone number provided, %s, is not "
                "yet verified for your account." % frm, outcome="rejected")

        def success():
            sid = "CA" + secrets.token_hex(16)
            now = _rfc2822()
            uri = "/2010-04-01/Accounts/%s/Calls/%s" % (account, sid)
            res = {
                "account_sid": account,
                "annotation": None,
                "answered_by": None,
                "api_version": "2010-04-01",
                "caller_name": None,
                "date_created": now,
                "date_updated": now,
                "direction": "outbound-api",
                "duration": None,
                "end_time": None,
                "forwarded_from": None,
                "from": frm,
                "from_formatted": frm,
                "group_sid": None,
                "parent_call_sid": None,
                "phone_number_sid": "PN" + secrets.token_hex(16),
                "price": None,
                "price_unit": "USD",
                "queue_time": "0",
                "sid": sid,
                "start_time": None,
                "status": "queued",
                "subresource_uris": {
                    "notifications": uri + "/Notifications.json",
                    "recordings": uri + "/Recordings.json",
                    "payments": uri + "/Payments.json",
                    "events": uri + "/Events.json",
                    "siprec": uri + "/Siprec.json",
                    "streams": uri + "/Streams.json",
                    "user_defined_message_subscriptions":
                        uri + "/UserDefinedMessageSubscriptions.json",
                    "user_defined_messages":
                        uri + "/UserDefinedMessages.json",
                },
                "to": to,
                "to_formatted": to,
                "trunk_sid": None,
                "uri": uri + ".json",
            }
            return _Reply(201, res,
                          {"Twilio-Request-Id": "RQ" + secrets.token_hex(16)})

        return _Valid(to, success, lambda step: self._tw_scripted(
            rec, step, to), reject), None

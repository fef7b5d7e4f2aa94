"""Receipts signed as the providers sign them (msgspool.conf(5),
public-url; conf/openapi.yaml, /receipts/{provider}), computed with
Python's hmac and base64, not the project's code."""

import base64
import hashlib
import hmac

__all__ = ["twilio_sig", "meta_sig", "stdwh_sig"]


def twilio_sig(token, url, params):
    """X-Twilio-Signature: base64(HMAC-SHA1(auth token, the URL followed
    by each parameter's name and value, sorted by name))."""
    data = url + "".join(k + params[k] for k in sorted(params))
    mac = hmac.new(token.encode(), data.encode(), hashlib.sha1).digest()
    return base64.b64encode(mac).decode()


def meta_sig(secret, body):
    """X-Hub-Signature-256: sha256= and the hex HMAC-SHA256 of the raw
    body with the app secret."""
    return "sha256=" + hmac.new(secret.encode(), body,
                                hashlib.sha256).hexdigest()


def stdwh_sig(secret, msg_id, ts, body):
    """Standard Webhooks 1.0: v1, and base64(HMAC-SHA256(the decoded
    whsec_ secret, id.timestamp.body))."""
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body,
                   hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()

"""What the providers post to msgspool of their own accord (an incoming
message, a status), as the real services post it: one HTTP request to
msgspool's URL, signed by the caller (harness/receiptsign.py), and what
msgspool answered.  The Twilio and WhatsApp stand-ins
(doubles/twilio.py, whatsapp.py) build the bodies; only the Python
standard library is used here."""

import json
import urllib.error
import urllib.request

__all__ = ["Answer", "post"]

TIMEOUT = 15        # seconds for msgspool's answer


class Answer:
    """msgspool's answer: status, headers (names lower case), body."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.body = body

    @property
    def content_type(self):
        return self.headers.get("content-type", "").split(";")[0].strip()

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<Answer %d %s %r>" % (self.status, self.content_type,
                                      self.body[:200])


def post(url, body, headers):
    """POST body (bytes) to url with headers; msgspool's Answer, whatever
    its status."""
    req = urllib.request.Request(url, data=body, headers=dict(
        headers, Connection="close"), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            return Answer(r.status, dict(r.headers), r.read())
    except urllib.error.HTTPError as e:
        return Answer(e.code, dict(e.headers), e.read())

"""Bounces for msgspool-bounce(8): RFC 3464 delivery status notifications
as Postfix writes them, and the program run on one."""

from harness.env import BIN_DIR

__all__ = ["dsn", "returned_message", "returned_headers", "run_bounce"]


def dsn(action, status, diag, returned=None, rcpt="bob@example.org",
        to="bounces@acme.example"):
    """A bounce as Postfix writes one: multipart/report with a text part,
    message/delivery-status (Action, Status, Diagnostic-Code of rcpt) and
    the returned message or headers (returned, a part, or None)."""
    parts = [
        "Content-Type: text/plain; charset=us-ascii\n\n"
        "I'm sorry to have to inform you that your message could not\n"
        "be delivered to one or more recipients.\n",
        "Content-Type: message/delivery-status\n\n"
        "Reporting-MTA: dns; mx.acme.example\n"
        "X-Postfix-Queue-ID: 4F1A2B3C\n"
        "Arrival-Date: Mon, 23 Nov 2026 10:00:00 +0000 (UTC)\n"
        "\n"
        f"Final-Recipient: rfc822; {rcpt}\n"
        f"Original-Recipient: rfc822;{rcpt}\n"
        f"Action: {action}\n"
        f"Status: {status}\n"
        "Remote-MTA: dns; mail.example.org\n"
        f"Diagnostic-Code: smtp; {diag}\n"]
    if returned is not None:
        parts.append(returned)
    b = "=_report_boundary"
    text = ("From: MAILER-DAEMON@mx.acme.example (Mail Delivery System)\n"
            f"To: {to}\nSubject: Undelivered Mail Returned to Sender\n"
            "MIME-Version: 1.0\nContent-Type: multipart/report; "
            f'report-type=delivery-status; boundary="{b}"\n\n'
            "This is a MIME-encapsulated message.\n\n")
    for part in parts:
        text += f"--{b}\n{part}\n"
    return (text + f"--{b}--\n").encode()


def returned_message(mid, to="bob@example.org"):
    """The returned message part: message/rfc822 with msgspool's
    Message-ID for message mid."""
    return ("Content-Type: message/rfc822\n\nFrom: news@acme.example\n"
            f"To: {to}\nMessage-ID: <{mid}@acme.example>\n"
            "Subject: Hello\n\nHi\n")


def returned_headers(mid):
    """The returned headers part: text/rfc822-headers with msgspool's
    Message-ID for message mid."""
    return ("Content-Type: text/rfc822-headers\n\nFrom: news@acme.example\n"
            f"Message-ID: <{mid}@acme.example>\nSubject: Hello\n")


def run_bounce(inst, data, *args):
    """msgspool-bounce -c CONFIG ARGS of instance inst with data on its
    stdin: the CompletedProcess (out, err as text)."""
    return inst._run([BIN_DIR / "msgspool-bounce", "-c", inst.conf] +
                     list(args), input=data)

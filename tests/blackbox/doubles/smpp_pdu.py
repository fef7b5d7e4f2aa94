"""
SMPP v3.4 PDUs for the stand-in SMSC (smsc.py), from the public protocol
standard (SMPP Developers Forum, issue 1.2: 3.2 PDU format, 5.1 command
ids and statuses, 5.2 parameters, 5.3 TLVs) and GSM 03.38 / 3GPP TS
23.038 (the default alphabet): the codes, the GSM decoder, a Reader that
checks each field of a body as it reads it (a Violation, with the status
to answer, when one breaks the standard), and the builders of a PDU and
of a C-Octet String.
"""

import struct


# Command ids (SMPP 3.4, 5.1.2.1).
GENERIC_NACK = 0x80000000
BIND_TRANSCEIVER = 0x00000009
BIND_TRANSCEIVER_RESP = 0x80000009
SUBMIT_SM = 0x00000004
SUBMIT_SM_RESP = 0x80000004
DELIVER_SM = 0x00000005
DELIVER_SM_RESP = 0x80000005
UNBIND = 0x00000006
UNBIND_RESP = 0x80000006
ENQUIRE_LINK = 0x00000015
ENQUIRE_LINK_RESP = 0x80000015

# Command status (5.1.3).
ESME_ROK = 0x00
ESME_RINVMSGLEN = 0x01
ESME_RINVCMDLEN = 0x02
ESME_RINVCMDID = 0x03
ESME_RINVBNDSTS = 0x04
ESME_RSYSERR = 0x08
ESME_RINVDSTADR = 0x0B
ESME_RBINDFAIL = 0x0D
ESME_RINVPASWD = 0x0E
ESME_RINVSYSID = 0x0F
ESME_RMSGQFUL = 0x14
ESME_RINVESMCLASS = 0x43
ESME_RTHROTTLED = 0x58

TLV_RECEIPTED_MESSAGE_ID = 0x001E
TLV_MESSAGE_STATE = 0x0427
MESSAGE_STATES = {"ENROUTE": 1, "DELIVRD": 2, "EXPIRED": 3, "DELETED": 4,
                  "UNDELIV": 5, "ACCEPTD": 6, "UNKNOWN": 7, "REJECTD": 8}

# GSM 03.38 default alphabet, septet -> character (0x1B: escape).
GSM_BASIC = (
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")
GSM_EXT = {0x0A: "\f", 0x14: "^", 0x28: "{", 0x29: "}", 0x2F: "\\",
           0x3C: "[", 0x3D: "~", 0x3E: "]", 0x40: "|", 0x65: "€"}
assert len(GSM_BASIC) == 128


def gsm_decode(octets):
    """Unpacked septets (one an octet) to text; ValueError when one is
    not a septet, or an escape names no character of the table."""
    out, esc = [], False
    for o in octets:
        if o > 0x7F:
            raise ValueError("octet 0x%02x is not a septet" % o)
        if esc:
            if o not in GSM_EXT:
                raise ValueError("escape 0x1b 0x%02x names nothing" % o)
            out.append(GSM_EXT[o])
            esc = False
        elif o == 0x1B:
            esc = True
        else:
            out.append(GSM_BASIC[o])
    if esc:
        raise ValueError("an escape at the end")
    return "".join(out)


_GSM_SEPTET = {c: bytes([i]) for i, c in enumerate(GSM_BASIC) if i != 0x1B}
_GSM_SEPTET.update({c: bytes([0x1B, i]) for i, c in GSM_EXT.items()})


def gsm_encode_char(c):
    """The unpacked septets of one character (an escape and its septet
    for one of the extension table); ValueError when GSM 03.38 has
    none."""
    try:
        return _GSM_SEPTET[c]
    except KeyError:
        raise ValueError("%r is not in the GSM 03.38 alphabet" % c)


class Violation(Exception):
    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Reader:
    """Fields of a PDU body in order (SMPP 3.4, 3.1 data types)."""

    def __init__(self, body, what):
        self.b, self.i, self.what = body, 0, what

    def u8(self, name):
        if self.i + 1 > len(self.b):
            raise Violation(ESME_RINVCMDLEN, "%s: %s cut short" %
                            (self.what, name))
        v = self.b[self.i]
        self.i += 1
        return v

    def cstr(self, name, maxlen, fixed=None):
        """A C-Octet String of at most maxlen octets, NUL included;
        fixed: the lengths (NUL included) it may have besides 1."""
        j = self.b.find(b"\0", self.i)
        if j == -1:
            raise Violation(ESME_RINVCMDLEN, "%s: %s has no NUL" %
                            (self.what, name))
        v = self.b[self.i:j]
        if len(v) + 1 > maxlen:
            raise Violation(ESME_RINVCMDLEN, "%s: %s is %d octets, at most "
                            "%d with its NUL" % (self.what, name, len(v) + 1,
                                                 maxlen))
        if fixed is not None and v and len(v) + 1 not in fixed:
            raise Violation(ESME_RSYSERR, "%s: %s %r is not a time" %
                            (self.what, name, v))
        self.i = j + 1
        try:
            return v.decode("ascii")
        except UnicodeDecodeError:
            raise Violation(ESME_RSYSERR, "%s: %s is not ASCII" %
                            (self.what, name))

    def octets(self, name, n):
        if self.i + n > len(self.b):
            raise Violation(ESME_RINVMSGLEN, "%s: %s: %d octets announced, "
                            "%d there" % (self.what, name, n,
                                          len(self.b) - self.i))
        v = self.b[self.i:self.i + n]
        self.i += n
        return v

    def tlvs(self):
        out = {}
        while self.i < len(self.b):
            if self.i + 4 > len(self.b):
                raise Violation(ESME_RINVCMDLEN, "%s: a TLV header cut "
                                "short" % self.what)
            tag, ln = struct.unpack_from(">HH", self.b, self.i)
            self.i += 4
            out[tag] = self.octets("TLV 0x%04x" % tag, ln)
        return out


def pdu(command_id, status, seq, body=b""):
    return struct.pack(">IIII", 16 + len(body), command_id, status,
                       seq) + body


def cstr(s):
    return s.encode("latin-1") + b"\0"

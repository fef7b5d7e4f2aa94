"""
A stand-in SMSC for msgspoold's smpp provider, written from the public
SMPP v3.4 protocol standard (SMPP Developers Forum, issue 1.2: 2.2
sessions, 3.2 PDU format, 4.1 bind_transceiver, 4.4 submit_sm, 4.6
deliver_sm, 4.11 enquire_link, 5.2 parameters, 5.3 TLVs, Appendix B
delivery receipts) and GSM 03.38 / 3GPP TS 23.038 (the default alphabet) and 23.040 (the concatenation
UDH).  Only the Python standard library (sockets and struct); the PDUs
are read and built by smpp_pdu.py.

Every PDU msgspoold sends is checked field by field; a PDU that breaks
the specification is listed in smsc.violations with the reason (a test
asserts that list is empty) and answered as an SMSC would
(generic_nack, or the response with an error status).

    with Smsc(system_id="acme", password="secret") as smsc:
        conf = smsc.config(window=10)       # an [sms] section
        smsc.script("4915112345678", [ESME_RTHROTTLED, "ok"])
        smsc.latency = 0.005                # before each submit_sm_resp
        smsc.receipts = "tlv"               # or "text", or None
        ...
        smsc.wait_for(lambda: len(smsc.submits) >= 3, timeout=10)

Behaviours a test controls:
  latency     seconds before each submit_sm_resp (default 0)
  script(dest, outcomes)
              per destination, the answers to its submit_sm in turn:
              "ok", "noid" (accepted with an empty message_id),
              "badid" (accepted with a message_id holding a byte that is
              not ASCII, 0xFF: SMPP 3.4 leaves its bytes to the SMSC), a
              command_status (int), or "drop" (close the session on
              receiving it, unanswered); then "ok"
  drop_after  close the session, unanswered, on receiving the Nth
              submit_sm of that session (once)
  receipts    None, "tlv" (receipted_message_id and message_state TLVs
              and the text) or "text" (the text alone), sent right after
              the submit_sm_resp; receipt_stat per destination
              (default DELIVRD)
  send_receipt(message_id, stat, form)   a receipt later, from the test
  send_enquire_link()                    the SMSC asks too
  unbind()    the SMSC ends every bound session now (4.2 unbind)
  failing(mode)
              from now on, whatever the scripts say: "refuse-bind"
              (every bind_transceiver answered ESME_RBINDFAIL), "unbind"
              (a submit_sm is answered by an unbind, not its
              submit_sm_resp: the session ends with it unanswered);
              None: as before
  send_mo(source, dest, text, coding, …) an SMS from a phone (mobile
              originated deliver_sm, esm_class 0): GSM 03.38, UCS-2 or
              Latin-1, in concatenated parts (a UDH with IEI 0x00 or
              0x08) sent in any order, some left out or sent twice;
              wait_mo(seqs) waits for msgspoold's deliver_sm_resp

What it records: binds (system_id, password, accepted), submits (each
field, the UDH, the decoded text, the message_id given, "unbound" when
an unbind answered it; attempts counts them), the most
submit_sm unanswered at once per session (max_outstanding), enquire_links
received and answered, deliver_sm_resp received, unbinds.
"""

import collections
import itertools
import socket
import struct
import threading
import time

from doubles.smpp_pdu import (BIND_TRANSCEIVER, BIND_TRANSCEIVER_RESP,
                              DELIVER_SM, DELIVER_SM_RESP, ENQUIRE_LINK,
                              ENQUIRE_LINK_RESP, ESME_RBINDFAIL,
                              ESME_RINVBNDSTS,
                              ESME_RINVCMDID, ESME_RINVCMDLEN, ESME_RINVDSTADR,
                              ESME_RINVESMCLASS, ESME_RINVMSGLEN,
                              ESME_RINVPASWD, ESME_RINVSYSID, ESME_RMSGQFUL,
                              ESME_ROK, ESME_RSYSERR, ESME_RTHROTTLED,
                              GENERIC_NACK, MESSAGE_STATES, SUBMIT_SM,
                              SUBMIT_SM_RESP, TLV_MESSAGE_STATE,
                              TLV_RECEIPTED_MESSAGE_ID, UNBIND, UNBIND_RESP,
                              Reader, Violation, cstr, gsm_decode,
                              gsm_encode_char, pdu)

__all__ = ["Smsc", "ESME_ROK", "ESME_RTHROTTLED", "ESME_RMSGQFUL",
           "ESME_RINVDSTADR", "ESME_RINVPASWD", "ESME_RBINDFAIL",
           "gsm_decode"]


class Session:
    def __init__(self, smsc, conn, n):
        self.smsc, self.conn, self.n = smsc, conn, n
        self.bound = False
        self.unbinding = False
        self.outstanding = 0
        self.submits = 0
        self.wlock = threading.Lock()
        self.closed = False
        self.seq = itertools.count(1)
        # Answers delayed by the latency, in the order they are due.
        self.later = collections.deque()
        self.later_cv = threading.Condition()
        self.answerer = None

    def send(self, data):
        with self.wlock:
            if self.closed:
                return
            try:
                self.conn.sendall(data)
            except OSError:
                self.closed = True

    def close(self):
        with self.wlock:
            self.closed = True
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def run(self):
        try:
            while not self.closed:
                head = self.read_exact(16)
                if head is None:
                    break
                length, cid, status, seq = struct.unpack(">IIII", head)
                if length < 16 or length > 64 * 1024:
                    self.smsc.violation("a PDU of length %d" % length)
                    break
                body = self.read_exact(length - 16)
                if body is None:
                    self.smsc.violation("a PDU cut short by the close")
                    break
                self.handle(cid, status, seq, body)
        except OSError:
            pass
        finally:
            with self.smsc.lock:
                self.smsc.closed_sessions += 1
            self.close()

    def handle(self, cid, status, seq, body):
        smsc = self.smsc
        if not (cid & 0x80000000) and status != 0:
            smsc.violation("command 0x%08x with command_status %d (a "
                           "request has 0)" % (cid, status))
        if not (cid & 0x80000000) and not 1 <= seq <= 0x7FFFFFFF:
            smsc.violation("sequence_number %d outside 1..0x7FFFFFFF" % seq)
        try:
            if cid == BIND_TRANSCEIVER:
                self.bind(seq, body)
            elif not self.bound and cid != GENERIC_NACK:
                raise Violation(ESME_RINVBNDSTS, "command 0x%08x before "
                                "a bind" % cid)
            elif cid == SUBMIT_SM:
                self.submit(seq, body)
            elif cid == ENQUIRE_LINK:
                if body:
                    raise Violation(ESME_RINVCMDLEN, "enquire_link with a "
                                    "body")
                with smsc.lock:
                    smsc.enquire_links += 1
                self.send(pdu(ENQUIRE_LINK_RESP, ESME_ROK, seq))
            elif cid == ENQUIRE_LINK_RESP:
                if body or status != 0:
                    smsc.violation("enquire_link_resp with a body or an "
                                   "error")
                with smsc.lock:
                    smsc.enquire_answers.append(seq)
            elif cid == DELIVER_SM_RESP:
                # 4.6.2: message_id unused, a single NUL.
                if body != b"\0":
                    smsc.violation("deliver_sm_resp body %r, not one "
                                   "NUL" % body)
                with smsc.lock:
                    smsc.deliver_resps.append((seq, status))
            elif cid == UNBIND:
                if body:
                    raise Violation(ESME_RINVCMDLEN, "unbind with a body")
                with smsc.lock:
                    smsc.unbinds.append((time.monotonic(),
                                         self.outstanding))
                self.send(pdu(UNBIND_RESP, ESME_ROK, seq))
                self.closed = True
            elif cid == UNBIND_RESP and self.unbinding:
                self.closed = True
            elif cid == GENERIC_NACK:
                smsc.violation("generic_nack 0x%08x from the ESME" % status)
            else:
                raise Violation(ESME_RINVCMDID, "command 0x%08x" % cid)
        except Violation as v:
            smsc.violation(v.reason)
            resp = cid | 0x80000000 if cid in (BIND_TRANSCEIVER,
                                               SUBMIT_SM) else GENERIC_NACK
            self.send(pdu(resp, v.status, seq))

    # 4.1.5 bind_transceiver
    def bind(self, seq, body):
        smsc = self.smsc
        r = Reader(body, "bind_transceiver")
        system_id = r.cstr("system_id", 16)
        password = r.cstr("password", 9)
        r.cstr("system_type", 13)
        version = r.u8("interface_version")
        ton = r.u8("addr_ton")
        npi = r.u8("addr_npi")
        r.cstr("address_range", 41)
        if r.i != len(body):
            raise Violation(ESME_RINVCMDLEN, "bind_transceiver: %d octets "
                            "after address_range" % (len(body) - r.i))
        if version != 0x34:
            raise Violation(ESME_RSYSERR, "interface_version 0x%02x, not "
                            "0x34" % version)
        if ton > 6 or npi not in (0, 1, 3, 4, 6, 8, 9, 10, 14, 18):
            raise Violation(ESME_RSYSERR, "addr_ton/npi %d/%d" % (ton, npi))
        if self.bound:
            raise Violation(0x05, "bind_transceiver on a bound session")
        if smsc.failure == "refuse-bind":
            status = ESME_RBINDFAIL
        elif system_id != smsc.system_id:
            status = ESME_RINVSYSID
        elif password != smsc.password:
            status = ESME_RINVPASWD
        else:
            status = ESME_ROK
        with smsc.lock:
            smsc.binds.append({"system_id": system_id, "password": password,
                               "accepted": status == ESME_ROK})
        if status == ESME_ROK:
            self.bound = True
            self.send(pdu(BIND_TRANSCEIVER_RESP, 0, seq, cstr("STANDIN")))
        else:
            # 4.1.6: the body is not returned with an error.
            self.send(pdu(BIND_TRANSCEIVER_RESP, status, seq))

    # 4.4.1 submit_sm
    def submit(self, seq, body):
        smsc = self.smsc
        r = Reader(body, "submit_sm")
        f = {}
        f["service_type"] = r.cstr("service_type", 6)
        f["source_addr_ton"] = r.u8("source_addr_ton")
        f["source_addr_npi"] = r.u8("source_addr_npi")
        f["source_addr"] = r.cstr("source_addr", 21)
        f["dest_addr_ton"] = r.u8("dest_addr_ton")
        f["dest_addr_npi"] = r.u8("dest_addr_npi")
        f["destination_addr"] = r.cstr("destination_addr", 21)
        f["esm_class"] = r.u8("esm_class")
        f["protocol_id"] = r.u8("protocol_id")
        f["priority_flag"] = r.u8("priority_flag")
        f["schedule_delivery_time"] = r.cstr("schedule_delivery_time", 17,
                                             fixed=(17,))
        f["validity_period"] = r.cstr("validity_period", 17, fixed=(17,))
        f["registered_delivery"] = r.u8("registered_delivery")
        f["replace_if_present_flag"] = r.u8("replace_if_present_flag")
        f["data_coding"] = r.u8("data_coding")
        f["sm_default_msg_id"] = r.u8("sm_default_msg_id")
        sm_length = r.u8("sm_length")
        if sm_length > 254:
            raise Violation(ESME_RINVMSGLEN, "sm_length %d" % sm_length)
        sm = r.octets("short_message", sm_length)
        f["tlvs"] = r.tlvs()
        # 5.2.5 and 5.2.6: numbers the specification knows.
        if f["source_addr_ton"] > 6 or f["dest_addr_ton"] > 6:
            raise Violation(ESME_RSYSERR, "a TON above 6")
        if f["dest_addr_ton"] != 1 or f["dest_addr_npi"] != 1:
            raise Violation(ESME_RINVDSTADR, "destination TON/NPI %d/%d, "
                            "not international/E.164 for %s" % (
                                f["dest_addr_ton"], f["dest_addr_npi"],
                                f["destination_addr"]))
        if not f["destination_addr"].isdigit() or not \
                8 <= len(f["destination_addr"]) <= 15:
            raise Violation(ESME_RINVDSTADR, "destination_addr %r is not "
                            "an international number" %
                            f["destination_addr"])
        if f["source_addr_ton"] == 5:
            if not 1 <= len(f["source_addr"]) <= 11:
                raise Violation(0x0A, "alphanumeric source_addr %r" %
                                f["source_addr"])
        elif f["source_addr"] and not f["source_addr"].isdigit():
            raise Violation(0x0A, "source_addr %r with TON %d" % (
                f["source_addr"], f["source_addr_ton"]))
        # 5.2.12: store and forward (default mode), default type, with
        # or without a UDH; nothing else.
        if f["esm_class"] not in (0x00, 0x40):
            raise Violation(ESME_RINVESMCLASS, "esm_class 0x%02x" %
                            f["esm_class"])
        if f["protocol_id"] != 0 or f["priority_flag"] > 3:
            raise Violation(ESME_RSYSERR, "protocol_id %d, priority_flag "
                            "%d" % (f["protocol_id"], f["priority_flag"]))
        # 5.2.17: an SMSC delivery receipt, on success and failure.
        if f["registered_delivery"] != 0x01:
            raise Violation(0x07, "registered_delivery 0x%02x (a receipt "
                            "is asked with 0x01)" % f["registered_delivery"])
        if f["replace_if_present_flag"] > 1 or f["sm_default_msg_id"]:
            raise Violation(ESME_RSYSERR, "replace_if_present_flag or "
                            "sm_default_msg_id set")
        if f["data_coding"] not in (0x00, 0x08):
            raise Violation(ESME_RSYSERR, "data_coding 0x%02x (not GSM "
                            "or UCS-2)" % f["data_coding"])
        if sm_length == 0 or f["tlvs"]:
            raise Violation(ESME_RINVMSGLEN, "an empty short_message, or "
                            "TLVs %s" % sorted(f["tlvs"]))
        udh = None
        payload = sm
        if f["esm_class"] & 0x40:
            # TS 23.040 9.2.3.24: UDHL, then IEI 00 (concatenation, 8-bit
            # reference), IEDL 03, reference, total, sequence.
            udhl = sm[0]
            if udhl + 1 > len(sm) or udhl != 5 or sm[1:3] != b"\x00\x03":
                raise Violation(ESME_RINVESMCLASS, "UDH %r is not the "
                                "8-bit concatenation header" % sm[:6])
            ref, total, part = sm[3], sm[4], sm[5]
            if total < 2 or not 1 <= part <= total:
                raise Violation(ESME_RINVESMCLASS, "part %d of %d" %
                                (part, total))
            udh = {"ref": ref, "total": total, "part": part}
            payload = sm[6:]
        try:
            if f["data_coding"] == 0:
                text = gsm_decode(payload)
                units = len(payload)
                limit = 153 if udh else 160
            else:
                if len(payload) % 2:
                    raise ValueError("an odd number of UCS-2 octets")
                text = payload.decode("utf-16-be")
                units = len(payload) // 2
                limit = 67 if udh else 70
        except ValueError as e:
            raise Violation(ESME_RSYSERR, "short_message: %s" % e)
        if units > limit:
            raise Violation(ESME_RINVMSGLEN, "%d units, more than %d" %
                            (units, limit))
        f.update(udh=udh, text=text, short_message=sm, session=self.n,
                 at=time.monotonic())
        if smsc.failure == "unbind":
            f["unbound"] = True
            with smsc.lock:
                smsc.submits.append(f)
            self.send_unbind()
            return
        self.submits += 1
        with smsc.lock:
            self.outstanding += 1
            smsc.max_outstanding = max(smsc.max_outstanding,
                                       self.outstanding)
            outcome = smsc.next_outcome(f["destination_addr"])
            drop = outcome == "drop" or (smsc.drop_after is not None and
                                         self.submits == smsc.drop_after)
            if drop and outcome != "drop":
                smsc.drop_after = None
            if drop:
                f["dropped"] = True
                smsc.submits.append(f)
                smsc.drops += 1
        if drop:
            self.close()
            return
        if smsc.latency:
            with self.later_cv:
                self.later.append((time.monotonic() + smsc.latency, seq, f,
                                   outcome))
                self.later_cv.notify()
            if self.answerer is None:
                self.answerer = threading.Thread(target=self.answer_later,
                                                 daemon=True)
                self.answerer.start()
        else:
            self.answer(seq, f, outcome)

    # 4.2.1 unbind, from the SMSC: the session ends at the unbind_resp.
    def send_unbind(self):
        if self.unbinding:
            return
        self.unbinding = True
        self.send(pdu(UNBIND, ESME_ROK, 0x70000000 + next(self.seq)))

    def answer_later(self):
        while True:
            with self.later_cv:
                while not self.later:
                    self.later_cv.wait(0.5)
                due, seq, f, outcome = self.later[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self.later_cv.wait(wait)
                    continue
                self.later.popleft()
            self.answer(seq, f, outcome)

    def answer(self, seq, f, outcome):
        smsc = self.smsc
        # The answer is written, or the session is gone, under the write
        # lock: a message_id given is an answer sent.
        with self.wlock:
            with smsc.lock:
                self.outstanding -= 1
                if not self.closed and outcome == "noid":
                    f["message_id"] = ""
                    outcome = "ok"
                elif not self.closed and outcome == "badid":
                    f["message_id"] = "\u00ff%08X" % next(smsc.ids)
                    outcome = "ok"
                elif not self.closed and outcome == "ok":
                    f["message_id"] = "%08X" % next(smsc.ids)
                elif not self.closed:
                    f["status"] = outcome
                else:
                    # Dropped before its answer: the ESME never heard.
                    f["unanswered"] = True
                smsc.submits.append(f)
            if self.closed:
                return
            try:
                if outcome == "ok":
                    self.conn.sendall(pdu(SUBMIT_SM_RESP, ESME_ROK, seq,
                                          cstr(f["message_id"])))
                else:
                    self.conn.sendall(pdu(SUBMIT_SM_RESP, outcome, seq))
            except OSError:
                self.closed = True
                return
        if outcome == "ok" and smsc.receipts and f["message_id"]:
            stat = smsc.receipt_stat.get(f["destination_addr"], "DELIVRD")
            self.deliver_receipt(f["message_id"], stat, smsc.receipts, f)

    # 4.6.1 deliver_sm carrying an SMSC delivery receipt (5.2.12 esm_class
    # 0x04; Appendix B for the text).
    def deliver_receipt(self, mid, stat, form, f=None):
        err = "000" if stat == "DELIVRD" else "034"
        text = ("id:%s sub:001 dlvrd:%s submit date:2611231200 done "
                "date:2611231201 stat:%s err:%s text:%s" % (
                    mid, "001" if stat == "DELIVRD" else "000", stat, err,
                    (f["text"] if f else "")[:20].encode(
                        "ascii", "replace").decode()))
        sm = text.encode("ascii")[:254]
        dest = f["destination_addr"] if f else "4915100000000"
        body = (cstr("") + bytes([1, 1]) + cstr(dest) + bytes([5, 0]) +
                cstr(self.smsc.source or "ACME") +
                bytes([0x04, 0, 0]) + cstr("") + cstr("") +
                bytes([0, 0, 0, 0, len(sm)]) + sm)
        if form == "tlv":
            rid = cstr(mid)
            body += struct.pack(">HH", TLV_RECEIPTED_MESSAGE_ID,
                                len(rid)) + rid
            body += struct.pack(">HHB", TLV_MESSAGE_STATE, 1,
                                MESSAGE_STATES[stat])
        seq = 0x40000000 + next(self.seq)
        with self.smsc.lock:
            self.smsc.receipts_sent.append((mid, stat, form, seq))
        self.send(pdu(DELIVER_SM, ESME_ROK, seq, body))

    # 4.6.1 deliver_sm of a mobile originated message: esm_class 0 (or
    # 0x40 with a UDH), default type (5.2.12).
    def deliver_mo(self, source, dest, sm, coding, esm_class, source_ton,
                   dest_ton):
        body = (cstr("") + bytes([source_ton, 1]) + cstr(source) +
                bytes([dest_ton, 1]) + cstr(dest) +
                bytes([esm_class, 0, 0]) + cstr("") + cstr("") +
                bytes([0, 0, coding, 0, len(sm)]) + sm)
        seq = 0x60000000 + next(self.seq)
        self.send(pdu(DELIVER_SM, ESME_ROK, seq, body))
        return seq


class Smsc:
    def __init__(self, system_id="acme", password="secret", source="ACME"):
        self.system_id, self.password, self.source = (system_id, password,
                                                      source)
        self.lock = threading.Lock()
        self.violations = []
        self.binds = []
        self.submits = []
        self.unbinds = []
        self.enquire_links = 0
        self.enquire_answers = []
        self.deliver_resps = []
        self.receipts_sent = []
        self.max_outstanding = 0
        self.closed_sessions = 0
        self.drops = 0
        self.latency = 0.0
        self.drop_after = None
        self.failure = None
        self.receipts = None
        self.receipt_stat = {}
        self.scripts = {}
        self.sessions = []
        self.ids = itertools.count(0x1000)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self.accept, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping = True
        try:
            self.sock.close()
        except OSError:
            pass
        for s in list(self.sessions):
            s.close()

    def accept(self):
        n = 0
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            n += 1
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s = Session(self, conn, n)
            with self.lock:
                self.sessions.append(s)
            threading.Thread(target=s.run, daemon=True).start()

    def violation(self, reason):
        with self.lock:
            self.violations.append(reason)

    def script(self, dest, outcomes):
        self.scripts[dest.lstrip("+")] = list(outcomes)

    def failing(self, mode=None):
        """From now on "refuse-bind", "unbind" or None (the module
        docstring)."""
        if mode not in (None, "refuse-bind", "unbind"):
            raise ValueError("bad failure mode %r" % (mode,))
        self.failure = mode

    def unbind(self):
        """End every bound session now, as an SMSC that unbinds."""
        for s in self.bound_sessions():
            s.send_unbind()

    @property
    def attempts(self):
        """The submit_sm it saw, whatever became of them."""
        with self.lock:
            return len(self.submits)

    def next_outcome(self, dest):
        s = self.scripts.get(dest)
        return s.pop(0) if s else "ok"

    def config(self, password=None, window=None, enquire_link=None,
               throughput=None, section="sms", extra=""):
        lines = ["[%s]" % section, "provider = smpp", "host = 127.0.0.1",
                 "port = %d" % self.port, "system-id = %s" % self.system_id,
                 "password = %s" % (password or self.password),
                 "source-addr = %s" % self.source, "timeout = 10"]
        if window is not None:
            lines.append("window = %d" % window)
        if enquire_link is not None:
            lines.append("enquire-link = %s" % enquire_link)
        if throughput is not None:
            lines.append("throughput = %d" % throughput)
        return "\n".join(lines) + "\n" + extra

    def bound_sessions(self):
        with self.lock:
            return [s for s in self.sessions if s.bound and not s.closed]

    def send_receipt(self, mid, stat="DELIVRD", form="tlv"):
        """A receipt for mid on the session that is bound now."""
        s = self.bound_sessions()
        assert s, "no bound session to send a receipt on"
        s[-1].deliver_receipt(mid, stat, form)

    # 3GPP TS 23.038 and 23.040: data_coding, and the octets of a whole
    # SMS and of a part after its UDH (6 octets, 7 with a 16-bit
    # reference).
    MO_CODINGS = {"gsm": (0x00, 160, 153), "ucs2": (0x08, 140, 134),
                  "latin1": (0x03, 140, 134)}

    @staticmethod
    def _mo_chars(text, coding):
        """The octets of each character: a GSM escape stays with its
        septet, a UTF-16 surrogate pair together."""
        if coding == "gsm":
            return [gsm_encode_char(c) for c in text]
        if coding == "ucs2":
            return [c.encode("utf-16-be") for c in text]
        return [c.encode("latin-1") for c in text]

    def send_mo(self, source, dest, text, coding="gsm", per_part=None,
                order=None, ref=None, udh16=False, source_ton=1,
                dest_ton=1):
        """An SMS from the phone source to dest as an SMSC delivers it:
        one deliver_sm when it fits, else parts of per_part octets at
        most (default: as many as a part holds) with a concatenation UDH
        (IEI 0x08 with a 16-bit reference when udh16, else 0x00),
        reference ref (random when None).  order: the indices of the
        parts to send, in that order (a part left out never comes, one
        twice comes twice).  Returns the sequence numbers sent, for
        wait_mo."""
        dc, whole, part = self.MO_CODINGS[coding]
        chars = self._mo_chars(text, coding)
        if per_part is None and sum(map(len, chars)) <= whole:
            parts = [b"".join(chars)]
        else:
            cap = per_part or part - (1 if udh16 else 0)
            parts, cur = [], b""
            for c in chars:
                if len(cur) + len(c) > cap:
                    parts.append(cur)
                    cur = b""
                cur += c
            parts.append(cur)
        if ref is None:
            ref = next(self.ids) & (0xFFFF if udh16 else 0xFF)
        s = self.bound_sessions()
        assert s, "no bound session to deliver on"
        seqs = []
        for i in (order if order is not None else range(len(parts))):
            if len(parts) == 1:
                sm, esm = parts[0], 0x00
            else:
                if udh16:
                    udh = bytes([6, 0x08, 4, ref >> 8, ref & 0xFF,
                                 len(parts), i + 1])
                else:
                    udh = bytes([5, 0x00, 3, ref, len(parts), i + 1])
                sm, esm = udh + parts[i], 0x40
            seqs.append(s[-1].deliver_mo(source.lstrip("+"),
                                         dest.lstrip("+"), sm, dc, esm,
                                         source_ton, dest_ton))
        return seqs

    def wait_mo(self, seqs, timeout=10):
        """The command_status msgspoold answered to each of seqs (their
        deliver_sm_resp), once every one has come."""
        def got():
            with self.lock:
                return {q: st for q, st in self.deliver_resps if q in seqs}
        self.wait_for(lambda: len(got()) == len(set(seqs)), timeout,
                      "deliver_sm_resp to %d deliver_sm" % len(seqs))
        answers = got()
        return [answers[q] for q in seqs]

    def send_enquire_link(self):
        s = self.bound_sessions()
        assert s, "no bound session"
        seq = 0x50000000 + next(s[-1].seq)
        s[-1].send(pdu(ENQUIRE_LINK, ESME_ROK, seq))
        return seq

    def accepted(self):
        with self.lock:
            return [f for f in self.submits if "message_id" in f]

    def wait_for(self, pred, timeout, what="condition"):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(0.02)
        raise AssertionError("smsc: waited %.1fs for %s" % (timeout, what))

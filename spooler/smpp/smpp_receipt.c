/*
 * smpp_receipt.c: the smpp provider's deliver_sm (smpp.h): a delivery
 * receipt is stored in receipts/ for msgspoold to apply as any
 * provider's (msgspool-spool(5)); an SMS from a phone is kept
 * (smpp_inbound.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/ulid.h"
#include "smpp/smpp.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"

/* The text of a receipt: the short_message, or the message_payload. */
static void
receipt_text(const deliver_sm_t *d, const char **text, size_t *len)
{
	const tlv_t	*t;

	*text = (const char *)d->short_message;
	*len = d->sm_length;
	smpp34_tlv_for_each(t, d->tlv)
		if (t->tag == TLVID_message_payload && *len == 0) {
			*text = (const char *)t->value.octet;
			*len = t->length;
		}
}

/*
 * A deliver_sm: a delivery receipt is stored in receipts/ for msgspoold
 * to apply (msgspool-spool(5)); anything else (an SMS from a phone) is
 * kept in inbox/ (smpp_inbound).  Always answered: ESME_RX_T_APPN (try
 * again) only when the receipt or the message could not be stored.
 */
void
smpp_deliver(struct smpp *st, uint32_t seq, const uint8_t *pdu, size_t len)
{
	deliver_sm_t		 d;
	deliver_sm_resp_t	 r;
	const tlv_t		*t;
	const char		*text, *status, *stat = NULL;
	char			 id[66] = "", tid[66], tstat[16], terr[16];
	char			 rid[32];
	char			 msg[128];
	json_t			*doc, *error = NULL;
	size_t			 tlen;
	uint32_t		 answer = ESME_ROK;

	memset(&d, 0, sizeof(d));
	if (smpp_unpack(DELIVER_SM, &d, &d.tlv, pdu, len) != 0) {
		log_warn("[%s] smpp: a deliver_sm libsmpp34 cannot read: %s",
		    st->section, smpp34_strerror);
		answer = ESME_RX_P_APPN;
		goto answer;
	}
	/* SMPP 3.4, 5.2.12: no message type bits, a message from a phone. */
	if ((d.esm_class & 0x3c) == 0) {
		answer = smpp_inbound(st, &d);
		goto answer;
	}
	if ((d.esm_class & 0x3c) != SMPP34_DELIVERY_RECEIPT) {
		log_info("[%s] smpp: a deliver_sm of esm_class 0x%02x (an "
		    "acknowledgement, not a receipt) from %s ignored",
		    st->section, d.esm_class, (char *)d.source_addr);
		goto answer;
	}
	smpp34_tlv_for_each(t, d.tlv) {
		if (t->tag == TLVID_receipted_message_id && t->length > 0 &&
		    t->length < sizeof(id)) {
			/* A C-Octet String: its NUL is not part of the id. */
			tlen = strnlen((const char *)t->value.octet, t->length);
			if (receipt_smpp_word((const char *)t->value.octet,
			    tlen)) {
				memcpy(id, t->value.octet, tlen);
				id[tlen] = '\0';
			}
		} else if (t->tag == TLVID_message_state)
			stat = receipt_smpp_state(t->value.val08);
	}
	/* The TLVs first; the text (SMPP 3.4, Appendix B) for the rest. */
	receipt_text(&d, &text, &tlen);
	terr[0] = '\0';
	if (receipt_smpp_text(text, tlen, tid, sizeof(tid), tstat,
	    sizeof(tstat), terr, sizeof(terr)) == 0) {
		if (id[0] == '\0')
			snprintf(id, sizeof(id), "%s", tid);
		if (stat == NULL)
			stat = tstat;
	}
	if (id[0] == '\0' || stat == NULL) {
		log_warn("[%s] smpp: a delivery receipt without an id or a "
		    "state dropped", st->section);
		goto answer;
	}
	if ((status = receipt_smpp_status(stat)) == NULL) {
		log_info("[%s] smpp: receipt %s %s (not final)", st->section,
		    id, stat);
		goto answer;
	}
	if (strcmp(status, "undelivered") == 0) {
		snprintf(msg, sizeof(msg), "SMSC receipt stat:%s%s%s", stat,
		    terr[0] ? " err:" : "", terr);
		error = json_pack("{s:s, s:s}", "code", terr[0] ? terr : stat,
		    "message", msg);
	}
	if (ulid_new(rid) == -1 || (doc = msgdoc_receipt_new(rid, "smpp",
	    NULL, id, status, stat, time(NULL), error)) == NULL) {
		answer = ESME_RX_T_APPN;
		goto answer;
	}
	if (st->spool == NULL || spool_area_store(st->spool, "receipts",
	    (const json_t **)&doc, 1) != MSG_OK) {
		log_err("[%s] smpp: cannot store the receipt for %s; the SMSC "
		    "is asked to send it again", st->section, id);
		answer = ESME_RX_T_APPN;
	}
	json_decref(doc);
answer:
	destroy_tlv(d.tlv);
	memset(&r, 0, sizeof(r));
	r.command_id = DELIVER_SM_RESP;
	r.command_status = answer;
	r.sequence_number = seq;
	smpp_send_pdu(st, DELIVER_SM_RESP, &r);
}

/*
 * smpp_submit.c: the smpp provider's messages (smpp.h): the queue of
 * what is to submit, submit_sm part by part within the window and the
 * throughput, each part's answer, a message's outcome once nothing of it
 * is outstanding, and the resume of one whose parts an earlier attempt
 * had partly sent.  Finished jobs wait in done[] for reap.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "smpp/gsm.h"
#include "smpp/smpp.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"

/* What a submit_sm's error means: only a busy SMSC is worth a retry. */
static enum msg_status
submit_outcome(uint32_t st)
{
	return st == ESME_RTHROTTLED || st == ESME_RMSGQFUL ? MSG_TEMPFAIL :
	    MSG_PERMFAIL;
}

/* ------------------------------------------------------------ jobs */

/* A job is over: handed back to the daemon by reap. */
static void
job_over(struct smpp *st, struct job *job)
{
	struct job	**v;
	size_t		  cap;

	if (st->ndone == st->donecap) {
		cap = st->donecap ? st->donecap * 2 : 32;
		if ((v = reallocarray(st->done, cap, sizeof(*v))) == NULL) {
			/* Left in cur/ under its claim: recovery sends it. */
			log_err("out of memory; %s stays in cur/", job->name);
			return;
		}
		st->done = v;
		st->donecap = cap;
	}
	if (st->ndone == 0)
		st->done_at = smpp_now_ms();
	st->done[st->ndone++] = job;
}

/*
 * Whether the finished jobs go back to the daemon now.  Answers come one
 * by one, and the daemon records each batch with its own syncs: so they
 * wait for the rest of the window's answers, SMPP_HOLD ms at most (they
 * count as in flight meanwhile).
 */
int
smpp_release_due(const struct smpp *st, long long t)
{
	return st->ndone > 0 && (st->inuse == 0 || st->ndone >= st->window ||
	    t - st->done_at >= SMPP_HOLD || st->phase != SMPP_BOUND);
}

void
smpp_msg_free(struct smpp_msg *m)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; m->ids != NULL && i < m->sms.nparts; i++)
		free(m->ids[i]);
	free(m->ids);
	gsm_free(&m->sms);
	free(m);
}

void
smpp_dequeue(struct smpp *st, struct smpp_msg *m)
{
	struct smpp_msg	**pp;

	for (pp = &st->qhead; *pp != NULL; pp = &(*pp)->qnext)
		if (*pp == m) {
			*pp = m->qnext;
			if (st->qtail == m) {
				st->qtail = NULL;
				for (m = st->qhead; m != NULL; m = m->qnext)
					st->qtail = m;
			}
			st->queued--;
			return;
		}
}

/*
 * The outcome of a message once nothing of it is outstanding: sent
 * when every part was accepted, else why not.
 */
void
smpp_msg_finish(struct smpp *st, struct smpp_msg *m, enum msg_status status,
    const char *why, long retry_after)
{
	struct job	*job = m->job;
	json_t		*ids;
	size_t		 i;

	job->status = status;
	job->retry_after = retry_after;
	if (status == MSG_OK) {
		ids = json_array();
		for (i = 0; i < m->sms.nparts; i++)
			json_array_append_new(ids, json_string(m->ids[i] ?
			    m->ids[i] : ""));
		job->reply = json_pack("{s:s, s:s?, s:I, s:o, s:i}",
		    "provider", "smpp", "messageId", m->ids[0] != NULL &&
		    m->ids[0][0] != '\0' ? m->ids[0] : NULL, "parts",
		    (json_int_t)m->sms.nparts, "partIds", ids, "dataCoding",
		    (int)m->sms.coding);
		if (job->reply == NULL) {
			job->status = MSG_TEMPFAIL;
			snprintf(job->err, sizeof(job->err), "out of memory");
		}
	} else {
		snprintf(job->err, sizeof(job->err), "%s", why);
		job->reply = json_pack("{s:s, s:I, s:I}", "provider", "smpp",
		    "parts", (json_int_t)m->sms.nparts, "commandStatus",
		    (json_int_t)m->error);
		/*
		 * The parts the SMSC accepted, kept for the next attempt
		 * (a retry, or one by hand): it sends only the others, with
		 * the same reference, so that the phone gets each part once
		 * and joins them.
		 */
		if (job->reply != NULL && m->sms.nparts > 1 && (ids = json_array()) != NULL) {
			for (i = 0; i < m->sms.nparts; i++)
				json_array_append_new(ids, m->ids[i] != NULL ?
				    json_string(m->ids[i]) : json_null());
			json_object_set_new(job->reply, "partIds", ids);
			json_object_set_new(job->reply, "ref",
			    json_integer(m->ref));
			json_object_set_new(job->reply, "dataCoding",
			    json_integer(m->sms.coding));
		}
	}
	smpp_msg_free(m);
	job_over(st, job);
}

/* After an answer: a message is over when nothing of it is left. */
void
smpp_msg_check(struct smpp *st, struct smpp_msg *m)
{
	char	why[256];

	if (m->outstanding > 0 || (!m->failed && m->next < m->sms.nparts))
		return;
	smpp_dequeue(st, m);
	if (m->error == 0 && !m->failed) {
		smpp_msg_finish(st, m, MSG_OK, NULL, 0);
		return;
	}
	if (m->error != 0) {
		snprintf(why, sizeof(why), "SMSC refused submit_sm: %s "
		    "(0x%08x)", smpp_status_name(m->error), (unsigned)m->error);
		smpp_msg_finish(st, m, submit_outcome(m->error), why, 0);
	} else
		smpp_msg_finish(st, m, MSG_TEMPFAIL, "msgspoold stopped before "
		    "every part was submitted", 1);
}

/*
 * Fail every queued message that was not begun (a connect or bind that
 * failed): a temporary failure, with the usual backoff.
 */
void
smpp_fail_queued(struct smpp *st, const char *why)
{
	struct smpp_msg	*m, *next;

	for (m = st->qhead; m != NULL; m = next) {
		next = m->qnext;
		if (m->next > 0 || m->outstanding > 0)
			continue;
		smpp_dequeue(st, m);
		smpp_msg_finish(st, m, MSG_TEMPFAIL, why, 0);
	}
}

/* ------------------------------------------------------------ submit */

/* Past the parts an earlier attempt had accepted (resume). */
static void
skip_accepted(struct smpp_msg *m)
{
	while (m->next < m->sms.nparts && m->ids[m->next] != NULL)
		m->next++;
}

/*
 * The parts of the attempt before this one that the SMSC accepted: an
 * attempt that failed for now records them (smpp_msg_finish), with the
 * reference of its UDH.  Taken when the text splits the same way again.
 * The reference, or -1 for a fresh start.
 */
int
smpp_resume_ref(const struct job *job)
{
	const json_t	*reply, *ref;

	reply = json_object_get(job->doc, "providerReply");
	ref = json_object_get(reply, "ref");
	if (!json_is_string(json_object_get(reply, "provider")) ||
	    strcmp(json_string_value(json_object_get(reply, "provider")),
	    "smpp") != 0 || !json_is_integer(ref) ||
	    json_integer_value(ref) < 0 || json_integer_value(ref) > 255 ||
	    !json_is_array(json_object_get(reply, "partIds")))
		return -1;
	return (int)json_integer_value(ref);
}

int
smpp_resume_parts(struct smpp_msg *m, const struct job *job)
{
	const json_t	*reply, *ids, *v;
	size_t		 i;

	reply = json_object_get(job->doc, "providerReply");
	ids = json_object_get(reply, "partIds");
	if (json_array_size(ids) != m->sms.nparts || m->sms.nparts < 2 ||
	    json_integer_value(json_object_get(reply, "dataCoding")) !=
	    m->sms.coding)
		return 0;
	json_array_foreach(ids, i, v)
		if (json_is_string(v) && (m->ids[i] =
		    strdup(json_string_value(v))) == NULL)
			return -1;
	skip_accepted(m);
	return 0;
}

/* Submit the next part of the message at the head of the queue. */
static void
submit_next(struct smpp *st)
{
	struct smpp_msg		*m = st->qhead;
	struct gsm_part		*p = &m->sms.parts[m->next];
	struct smpp_slot	*s = NULL;
	submit_sm_t		 sm;
	size_t			 i;

	for (i = 0; i < st->window && s == NULL; i++)
		if (st->slots[i].msg == NULL)
			s = &st->slots[i];
	memset(&sm, 0, sizeof(sm));
	sm.command_id = SUBMIT_SM;
	sm.sequence_number = smpp_next_seq(st);
	sm.source_addr_ton = st->source_ton;
	sm.source_addr_npi = st->source_npi;
	snprintf((char *)sm.source_addr, sizeof(sm.source_addr), "%s",
	    st->source_addr);
	sm.dest_addr_ton = TON_International;
	sm.dest_addr_npi = NPI_ISDN_E163_E164;
	snprintf((char *)sm.destination_addr, sizeof(sm.destination_addr),
	    "%s", m->dest);
	sm.esm_class = m->sms.udhi ? SMPP34_UDHI_IND : 0;
	sm.registered_delivery = SMPP34_DELIVERY_RECEIPT_ON;
	sm.data_coding = m->sms.coding;
	sm.sm_length = (uint8_t)p->len;
	memcpy(sm.short_message, p->octets, p->len);
	if (smpp_send_pdu(st, SUBMIT_SM, &sm) == -1) {
		/* Cannot happen with the sizes gsm.c keeps to. */
		m->error = ESME_RSYSERR;
		m->failed = 1;
		smpp_msg_check(st, m);
		return;
	}
	s->seq = sm.sequence_number;
	s->msg = m;
	s->part = m->next;
	s->deadline = smpp_now_ms() + st->timeout * 1000;
	st->inuse++;
	m->outstanding++;
	m->next++;
	skip_accepted(m);
	if (m->next == m->sms.nparts)
		smpp_dequeue(st, m);
}

/* Submit while the window and the throughput allow. */
void
smpp_submit_more(struct smpp *st)
{
	long long	t;

	while (st->phase == SMPP_BOUND && st->qhead != NULL &&
	    st->inuse < st->window) {
		t = smpp_now_us();
		/* The throughput's pace, or a pause the SMSC asked for. */
		if (t < st->next_submit_us)
			break;
		if (st->throughput > 0) {
			st->next_submit_us = (st->next_submit_us > t - 1000000 /
			    st->throughput ? st->next_submit_us : t) +
			    1000000 / st->throughput;
		}
		submit_next(st);
	}
}

/* ------------------------------------------------------------ answers */

struct smpp_slot *
smpp_slot_of(struct smpp *st, uint32_t seq)
{
	size_t	i;

	for (i = 0; i < st->window; i++)
		if (st->slots[i].msg != NULL && st->slots[i].seq == seq)
			return &st->slots[i];
	return NULL;
}

/* A submit_sm's answer: status, and the SMSC's id when accepted. */
void
smpp_submit_answered(struct smpp *st, struct smpp_slot *s, uint32_t status,
    const uint8_t *pdu, size_t len)
{
	struct smpp_msg		*m = s->msg;
	submit_sm_resp_t	 r;
	size_t			 part;

	/* The part: the one submitted with this sequence number. */
	part = s->part;
	s->msg = NULL;
	st->inuse--;
	m->outstanding--;
	if (status == ESME_ROK) {
		/*
		 * Accepted, whatever else: an SMSC that gives no id (or one
		 * libsmpp34 cannot read) still delivers the part, whose
		 * receipts then find nothing.
		 */
		memset(&r, 0, sizeof(r));
		if (smpp_unpack(SUBMIT_SM_RESP, &r, NULL, pdu, len) != 0)
			r.message_id[0] = '\0';
		if (r.message_id[0] != '\0' && !receipt_smpp_word((char *)
		    r.message_id, strlen((char *)r.message_id))) {
			log_warn("[%s] smpp: %s accepted with a message_id that "
			    "is not printable ASCII (not kept)", st->section,
			    msgdoc_id(m->job->doc));
			r.message_id[0] = '\0';
		} else if (r.message_id[0] == '\0')
			log_warn("[%s] smpp: %s accepted without a message_id",
			    st->section, msgdoc_id(m->job->doc));
		free(m->ids[part]);
		m->ids[part] = strdup((char *)r.message_id);
	}
	if (status != ESME_ROK) {
		if (m->error == 0)
			m->error = status;
		m->failed = 1;
	}
	/* Told to slow down: nothing more for a while, or all would be. */
	if (status == ESME_RTHROTTLED)
		st->next_submit_us = smpp_now_us() + SMPP_THROTTLE_PAUSE;
	smpp_msg_check(st, m);
}

/*
 * provider_smpp.c: SMS over SMPP 3.4 to an SMSC (msgspool.conf(5), "The
 * smpp provider"; msgspoold(8)).  One bind_transceiver session per
 * section, opened when msgspoold starts (with --once, with the first
 * message) and kept for the receipts, run in msgspoold's loop beside
 * the curl transfers: its socket is waited on with them (provider.h:
 * fds, run, reap).  PDUs are packed and unpacked by libsmpp34; only the
 * 16-byte header is read by the session, to frame them.
 *
 *	[sms]
 *	provider = smpp
 *	host = smsc.example.net
 *	system-id = acme
 *	password-file = /etc/msgspool/secrets/smpp
 *	source-addr = ACME
 *
 * A message's text is encoded by gsm.c (GSM 03.38 or UCS-2, parts with
 * UDH); each part is one submit_sm asking for a delivery receipt, and at
 * most "window" of them await their submit_sm_resp at once.  A message
 * is sent when every part is accepted: its providerReply holds the
 * SMSC's message_id of the first part (messageId) and of each
 * (partIds), and the part count.  ESME_RTHROTTLED and ESME_RMSGQFUL are
 * temporary failures, other errors permanent; a session lost before
 * every answer came makes the message a temporary failure, retried once
 * the session is back.  deliver_sm receipts are stored in receipts/ and
 * applied by msgspoold as any provider's (msgspool-spool(5)); an SMS
 * from a phone is kept in inbox/ for the client whose number it was
 * sent to, its parts joined first.
 *
 * Here: the provider's entry points and the section's config.  The
 * session is smpp_session.c, the messages and the window smpp_submit.c,
 * the receipts smpp_receipt.c, the PDUs smpp_pdu.c (smpp.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "providers/policy.h"
#include "providers/provider.h"
#include "smpp/gsm.h"
#include "smpp/provider_smpp.h"
#include "smpp/smpp.h"

/* ------------------------------------------------------------ config */

static void
smpp_config_free(struct smpp *st)
{
	free(st->section);
	free(st->host);
	free(st->port);
	free(st->system_id);
	free(st->password);
	free(st->system_type);
	free(st->source_addr);
	free(st->root);
}

/* An integer key from lo to hi, def when absent.  0, or -1 with err. */
static int
int_key(const struct config *cfg, const char *section, const char *key,
    long def, long lo, long hi, long *out, char *err, size_t errlen)
{
	const char	*v = config_get(cfg, section, key);
	char		*end;

	*out = def;
	if (v == NULL)
		return 0;
	errno = 0;
	*out = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || *out < lo || *out > hi) {
		snprintf(err, errlen, "[%s] %s: not a number from %ld to %ld",
		    section, key, lo, hi);
		return -1;
	}
	return 0;
}

/* A string key of at most max characters (the PDU's C-octet field). */
static int
str_key(const struct config *cfg, const char *section, const char *key,
    const char *def, size_t max, char **out, char *err, size_t errlen)
{
	const char	*v = config_get(cfg, section, key);

	if (v == NULL)
		v = def;
	if (v == NULL) {
		*out = NULL;
		return 0;
	}
	if (strlen(v) > max) {
		snprintf(err, errlen, "[%s] %s: longer than %zu characters",
		    section, key, max);
		return -1;
	}
	if ((*out = strdup(v)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static void smpp_free(void *);

static void *
smpp_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct smpp	*st;
	const char	*src;
	long		 v, ton, npi, port;
	int		 numeric;

	if ((st = calloc(1, sizeof(*st))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	st->fd = -1;
	st->cfg = cfg;
	if (config_get(cfg, section, "host") == NULL ||
	    config_get(cfg, section, "system-id") == NULL) {
		snprintf(err, errlen, "[%s] provider smpp needs host and "
		    "system-id", section);
		goto fail;
	}
	if ((st->section = strdup(section)) == NULL ||
	    (st->root = strdup(spool_root)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* The field sizes of bind_transceiver and submit_sm, less the NUL. */
	if (str_key(cfg, section, "host", NULL, 255, &st->host, err,
	    errlen) == -1 ||
	    str_key(cfg, section, "system-id", NULL, 15, &st->system_id, err,
	    errlen) == -1 ||
	    str_key(cfg, section, "system-type", "", 12, &st->system_type, err,
	    errlen) == -1 ||
	    str_key(cfg, section, "source-addr", "", 20, &st->source_addr, err,
	    errlen) == -1)
		goto fail;
	if ((st->password = config_secret(cfg, section, "password", err,
	    errlen)) == NULL)
		goto fail;
	if (strlen(st->password) > 8) {
		snprintf(err, errlen, "[%s] password: longer than 8 characters",
		    section);
		goto fail;
	}
	if (int_key(cfg, section, "port", SMPP_PORT, 1, 65535, &port, err,
	    errlen) == -1 ||
	    asprintf(&st->port, "%ld", port) == -1) {
		st->port = NULL;
		goto fail;
	}
	/* A sender of digits is a number; anything else alphanumeric. */
	src = st->source_addr;
	numeric = src[0] != '\0' && strspn(src + (src[0] == '+'),
	    "0123456789") == strlen(src + (src[0] == '+'));
	if (int_key(cfg, section, "source-ton", numeric ? TON_International :
	    src[0] ? TON_Alphanumeric : TON_Unknown, 0, 6, &ton, err,
	    errlen) == -1 ||
	    int_key(cfg, section, "source-npi", numeric ? NPI_ISDN_E163_E164 :
	    NPI_Unknown, 0, 18, &npi, err, errlen) == -1 ||
	    int_key(cfg, section, "window", 10, 1, SMPP_WINDOW_MAX, &v, err,
	    errlen) == -1)
		goto fail;
	if (src[0] == '+')
		memmove(st->source_addr, src + 1, strlen(src));
	st->source_ton = (uint8_t)ton;
	st->source_npi = (uint8_t)npi;
	st->window = (size_t)v;
	if (int_key(cfg, section, "throughput", 0, 0, 100000, &st->throughput,
	    err, errlen) == -1)
		goto fail;
	if (config_seconds(cfg, section, "enquire-link", 30, &st->enquire) ==
	    -1 || st->enquire < 1) {
		snprintf(err, errlen, "[%s] enquire-link: not a duration",
		    section);
		goto fail;
	}
	if (provider_timeout(cfg, section, &st->timeout, err, errlen) == -1)
		goto fail;
	if ((st->slots = calloc(st->window, sizeof(*st->slots))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	st->ref = (uint8_t)policy_jitter();
	smpp34_set_memory_functions(&smpp_memory);
	return st;
fail:
	smpp_free(st);
	return NULL;
}

/* ------------------------------------------------------------ provider */

static void
smpp_start(void *state, struct job *job)
{
	struct smpp	*st = state;
	struct smpp_msg	*m;
	const char	*to, *body;
	char		 err[256];
	int		 ref;

	job->status = MSG_PERMFAIL;
	to = provider_msg_str(job, "to");
	body = provider_msg_str(job, "body");
	if (to == NULL || body == NULL) {
		snprintf(job->err, sizeof(job->err), "no recipient or no text");
		return;
	}
	if (to[0] == '+')
		to++;
	if (strlen(to) >= sizeof(m->dest)) {
		snprintf(job->err, sizeof(job->err), "recipient too long for "
		    "SMPP");
		return;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "out of memory");
		return;
	}
	ref = smpp_resume_ref(job);
	m->ref = ref != -1 ? (uint8_t)ref : st->ref++;
	if (gsm_encode(body, strlen(body), m->ref, &m->sms, err,
	    sizeof(err)) == -1) {
		snprintf(job->err, sizeof(job->err), "%s", err);
		free(m);
		return;
	}
	if ((m->ids = calloc(m->sms.nparts, sizeof(*m->ids))) == NULL ||
	    (ref != -1 && smpp_resume_parts(m, job) == -1)) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "out of memory");
		smpp_msg_free(m);
		return;
	}
	snprintf(m->dest, sizeof(m->dest), "%s", to);
	m->job = job;
	job->pending = 1;
	if (st->qtail != NULL)
		st->qtail->qnext = m;
	else
		st->qhead = m;
	st->qtail = m;
	st->queued++;
	/* Every part accepted before (a crash after the answers). */
	if (m->next == m->sms.nparts)
		smpp_msg_check(st, m);
}

static size_t
smpp_fds(void *state, struct curl_waitfd *fds, size_t max, int *timeout_ms)
{
	struct smpp	*st = state;
	long long	 t = smpp_now_ms(), due = t + 1000;
	size_t		 i;

	if (st->phase == SMPP_DOWN)
		due = st->reconnect_at;
	if (st->phase == SMPP_CONNECTING || st->phase == SMPP_BINDING)
		due = st->bind_deadline < due ? st->bind_deadline : due;
	/* A lookup has no descriptor to wait on: look again soon. */
	if (st->lookup != NULL && t + SMPP_LOOKUP_POLL < due)
		due = t + SMPP_LOOKUP_POLL;
	if (st->phase == SMPP_BOUND) {
		if (st->next_enquire < due)
			due = st->next_enquire;
		if (st->enquire_deadline > 0 && st->enquire_deadline < due)
			due = st->enquire_deadline;
		for (i = 0; i < st->window; i++)
			if (st->slots[i].msg != NULL &&
			    st->slots[i].deadline < due)
				due = st->slots[i].deadline;
		if (st->qhead != NULL && st->inuse < st->window &&
		    st->next_submit_us / 1000 < due)
			due = st->next_submit_us / 1000;
	}
	if (st->ndone > 0)
		due = smpp_release_due(st, t) ? t : st->done_at + SMPP_HOLD;
	if (due - t < *timeout_ms)
		*timeout_ms = due > t ? (int)(due - t) : 0;
	if (st->fd == -1 || max == 0)
		return 0;
	fds[0].fd = st->fd;
	fds[0].events = CURL_WAIT_POLLIN;
	if (st->phase == SMPP_CONNECTING || st->outlen > st->outoff)
		fds[0].events |= CURL_WAIT_POLLOUT;
	fds[0].revents = 0;
	return 1;
}

static void
smpp_run(void *state, int stopping)
{
	struct smpp	*st = state;
	struct smpp_msg	*m, *next;
	long long	 t;
	size_t		 i;
	char		 why[128];

	if (stopping) {
		/* Nothing new goes out; what was not begun waits in new/. */
		for (m = st->qhead; m != NULL; m = next) {
			next = m->qnext;
			if (m->next == 0) {
				smpp_dequeue(st, m);
				smpp_msg_finish(st, m, MSG_TEMPFAIL,
				    "msgspoold stopped before it was "
				    "submitted", 1);
			} else if (!m->failed) {
				m->failed = 1;
				smpp_msg_check(st, m);
			}
		}
	}
	if (st->phase == SMPP_CONNECTING)
		smpp_connect_check(st);
	if (st->fd != -1 && st->phase != SMPP_CONNECTING)
		smpp_read_in(st);
	t = smpp_now_ms();
	if ((st->phase == SMPP_CONNECTING || st->phase == SMPP_BINDING) &&
	    t >= st->bind_deadline) {
		snprintf(why, sizeof(why), "no answer to the %s within %ld s",
		    st->phase == SMPP_BINDING ? "bind" : st->lookup != NULL ?
		    "lookup of the host" : "connect", st->timeout);
		smpp_session_failed(st, why);
	}
	if (st->phase == SMPP_BOUND) {
		if (st->enquire_deadline > 0 && t >= st->enquire_deadline)
			smpp_session_lost(st, "no answer to enquire_link");
		for (i = 0; i < st->window && st->phase == SMPP_BOUND; i++)
			if (st->slots[i].msg != NULL &&
			    t >= st->slots[i].deadline) {
				snprintf(why, sizeof(why), "no submit_sm_resp "
				    "within %ld s", st->timeout);
				smpp_session_lost(st, why);
			}
	}
	if (st->phase == SMPP_BOUND && t >= st->next_enquire) {
		smpp_send_header(st, ENQUIRE_LINK, ESME_ROK, smpp_next_seq(st));
		st->next_enquire = t + st->enquire * 1000;
		if (st->enquire_deadline == 0)
			st->enquire_deadline = t + st->timeout * 1000;
	}
	if (!stopping)
		smpp_submit_more(st);
	if (st->phase == SMPP_DOWN && !stopping && t >= st->reconnect_at)
		smpp_session_connect(st);
	if (st->fd != -1 && smpp_flush_out(st) == -1)
		smpp_session_lost(st, st->lasterr);
	smpp_status_write(st, 0, NULL);
}

static struct job *
smpp_reap(void *state)
{
	struct smpp	*st = state;
	struct job	*job;

	if (!smpp_release_due(st, smpp_now_ms()))
		return NULL;
	job = st->done[0];
	memmove(st->done, st->done + 1, (st->ndone - 1) * sizeof(*st->done));
	st->ndone--;
	job->pending = 0;
	return job;
}

static void
smpp_free(void *state)
{
	struct smpp	*st = state;
	struct smpp_msg	*m, *next;
	size_t		 i, j;

	if (st == NULL)
		return;
	if (st->fd != -1 && st->phase == SMPP_BOUND)
		smpp_unbind(st);
	if (st->fd != -1)
		close(st->fd);
	smpp_lookup_abandon(st);
	/* The resolver still writing into one: it is left to the exit. */
	if (st->abandoned != NULL)
		log_warn("[%s] smpp: a lookup of %s still under way at exit",
		    st->section, st->host);
	if (st->status_written)
		smpp_status_write(st, 1, "stopped");
	/* The daemon waits for its jobs first: none is left here but when
	 * it gives up on them (their claims go with the daemon). */
	for (i = 0; st->slots != NULL && i < st->window; i++) {
		if ((m = st->slots[i].msg) == NULL)
			continue;
		for (j = i; j < st->window; j++)
			if (st->slots[j].msg == m)
				st->slots[j].msg = NULL;
		if (m->next < m->sms.nparts)
			smpp_dequeue(st, m);
		smpp_msg_free(m);
	}
	for (m = st->qhead; m != NULL; m = next) {
		next = m->qnext;
		smpp_msg_free(m);
	}
	spool_free(st->spool);
	free(st->in);
	free(st->out);
	free(st->slots);
	free(st->done);
	smpp_config_free(st);
	free(st);
}

/* Bound: a message handed over now is submitted now. */
static int
smpp_ready(void *state)
{
	const struct smpp	*st = state;

	return st->phase == SMPP_BOUND;
}

const struct provider provider_smpp = {
	.name = "smpp",
	.channels = "sms",
	.init = smpp_init,
	.start = smpp_start,
	.free_state = smpp_free,
	.fds = smpp_fds,
	.run = smpp_run,
	.reap = smpp_reap,
	.ready = smpp_ready,
};

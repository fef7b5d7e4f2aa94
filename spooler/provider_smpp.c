/*
 * provider_smpp.c: SMS over SMPP 3.4 to an SMSC (msgspool.conf(5), "The
 * smpp provider"; msgspoold(8)).  One bind_transceiver session per
 * section, opened when msgspoold starts (with --once, with the first
 * message) and kept for the receipts, run in msgspoold's loop beside the curl transfers: its
 * socket is waited on with them (provider.h: fds, run, reap).  PDUs are
 * packed and unpacked by libsmpp34; only the 16-byte header is read
 * here, to frame them.
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
 * applied by msgspoold as any provider's (msgspool-spool(5)).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <smpp34.h>
#include <smpp34_heap.h>
#include <smpp34_structs.h>
#include <smpp34_params.h>

#include "gsm.h"
#include "log.h"
#include "msgdoc.h"
#include "policy.h"
#include "provider.h"
#include "receipt.h"
#include "rfc3339.h"
#include "ulid.h"

#define SMPP_PORT		2775
#define SMPP_HEADER		16
#define SMPP_PDU_MAX		(64 * 1024)	/* a longer one is garbage */
#define SMPP_WINDOW_MAX		1024
#define SMPP_RECONNECT_FIRST	1000		/* ms, doubling ... */
#define SMPP_RECONNECT_MAX	60000		/* ... to a minute */
#define SMPP_UNBIND_WAIT	2000		/* ms for unbind_resp at exit */
#define SMPP_STATUS_EVERY	200		/* ms between status writes */
#define SMPP_HOLD		10		/* ms a finished job may wait */
#define SMPP_LOOKUP_POLL	10		/* ms between looks at a lookup */
#define SMPP_THROTTLE_PAUSE	1000000		/* us without submits after
						   ESME_RTHROTTLED */

enum smpp_phase {
	SMPP_DOWN,
	SMPP_CONNECTING,
	SMPP_BINDING,
	SMPP_BOUND,
};

static const char *const phase_names[] = { "down", "connecting", "binding",
    "bound" };

/* A message on its way: its parts, submitted in order. */
struct smpp_msg {
	struct job	*job;
	struct gsm_sms	 sms;
	char		 dest[21];
	uint8_t		 ref;		/* of its parts' UDH */
	size_t		 next;		/* parts submitted or accepted before */
	size_t		 outstanding;	/* submitted, not answered */
	char		**ids;		/* the SMSC's id of each part accepted
					   ("" without one), NULL: not yet */
	uint32_t	 error;		/* the first error, 0: none */
	int		 failed;	/* submit no more parts */
	int		 lost;		/* the session went first */
	struct smpp_msg	*qnext;		/* the queue of what is to submit */
};

/*
 * A lookup of the SMSC's host name, run by glibc's resolver threads
 * (getaddrinfo_a) so that a slow DNS server never stalls the daemon's
 * loop.  One given up on (the connect timed out) cannot be freed while
 * the resolver still writes into it: it waits in a list until it ends.
 */
struct smpp_lookup {
	struct gaicb		 cb;
	struct addrinfo		 hints;
	struct smpp_lookup	*next;
};

/* A submit_sm awaiting its answer. */
struct smpp_slot {
	uint32_t	 seq;
	struct smpp_msg	*msg;
	size_t		 part;		/* of msg */
	long long	 deadline;	/* ms */
};

struct smpp {
	char		*section, *host, *port, *system_id, *password;
	char		*system_type, *source_addr, *root;
	uint8_t		 source_ton, source_npi;
	size_t		 window;
	long		 throughput;	/* submits a second, 0: no cap */
	long		 enquire;	/* seconds */
	long		 timeout;	/* seconds for any answer */

	struct spool	*spool;		/* opened on first use */
	struct smpp_lookup *lookup;	/* of host, while connecting */
	struct smpp_lookup *abandoned;	/* given up on, still running */
	int		 fd;
	enum smpp_phase	 phase;
	uint32_t	 seq;
	uint8_t		 ref;		/* of concatenated messages */
	unsigned	 failures;	/* connects or binds in a row */
	long long	 reconnect_at, bind_deadline, next_enquire;
	long long	 enquire_deadline, next_submit_us, since;

	uint8_t		*in;		/* what was read, not yet parsed */
	size_t		 inlen, incap;
	uint8_t		*out;		/* what is to write */
	size_t		 outlen, outoff, outcap;

	struct smpp_slot *slots;	/* window of them */
	size_t		 inuse;
	struct smpp_msg	*qhead, *qtail;
	size_t		 queued;

	struct job	**done;
	size_t		 ndone, donecap;
	long long	 done_at;	/* ms: when the first of them ended */

	char		 lasterr[256];
	long long	 status_at;
	size_t		 status_inuse, status_queued;
	enum smpp_phase	 status_phase;
	int		 status_written;
};

static long long
now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long
now_ms(void)
{
	return now_us() / 1000;
}

/* The name of a command_status, for logs and errors. */
static const char *
status_name(uint32_t st)
{
	static const struct {
		uint32_t	 code;
		const char	*name;
	} names[] = {
		{ ESME_RINVMSGLEN, "ESME_RINVMSGLEN" },
		{ ESME_RINVCMDLEN, "ESME_RINVCMDLEN" },
		{ ESME_RINVCMDID, "ESME_RINVCMDID" },
		{ ESME_RINVBNDSTS, "ESME_RINVBNDSTS" },
		{ ESME_RALYBND, "ESME_RALYBND" },
		{ ESME_RSYSERR, "ESME_RSYSERR" },
		{ ESME_RINVSRCADR, "ESME_RINVSRCADR" },
		{ ESME_RINVDSTADR, "ESME_RINVDSTADR" },
		{ ESME_RBINDFAIL, "ESME_RBINDFAIL" },
		{ ESME_RINVPASWD, "ESME_RINVPASWD" },
		{ ESME_RINVSYSID, "ESME_RINVSYSID" },
		{ ESME_RMSGQFUL, "ESME_RMSGQFUL" },
		{ ESME_RINVESMCLASS, "ESME_RINVESMCLASS" },
		{ ESME_RSUBMITFAIL, "ESME_RSUBMITFAIL" },
		{ ESME_RINVSRCTON, "ESME_RINVSRCTON" },
		{ ESME_RINVDSTTON, "ESME_RINVDSTTON" },
		{ ESME_RTHROTTLED, "ESME_RTHROTTLED" },
		{ ESME_RX_T_APPN, "ESME_RX_T_APPN" },
		{ ESME_RX_P_APPN, "ESME_RX_P_APPN" },
		{ ESME_RUNKNOWNERR, "ESME_RUNKNOWNERR" },
	};
	size_t	i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == st)
			return names[i].name;
	return "error";
}

/* What a submit_sm's error means: only a busy SMSC is worth a retry. */
static enum msg_status
submit_outcome(uint32_t st)
{
	return st == ESME_RTHROTTLED || st == ESME_RMSGQFUL ? MSG_TEMPFAIL :
	    MSG_PERMFAIL;
}

/* ------------------------------------------------------------ unpack */

/*
 * libsmpp34 allocates each TLV it reads (smpp34_malloc) and, when one is
 * malformed, returns without linking the node it was filling: lost, a
 * kilobyte for each bad PDU an SMSC sends.  So what it allocates during
 * an unpack is noted, and what the PDU's TLV list does not hold is
 * freed after it.  The process's only user of libsmpp34 is this file,
 * one unpack at a time: hence the file's own state.
 */
static struct {
	void	**p;
	size_t	  n, cap;
	int	  on;
} unpacked;

static void *
note_malloc(size_t size)
{
	void	*p = malloc(size), **v;

	if (p == NULL || !unpacked.on)
		return p;
	if (unpacked.n == unpacked.cap) {
		if ((v = reallocarray(unpacked.p, unpacked.cap ?
		    unpacked.cap * 2 : 16, sizeof(*v))) == NULL) {
			free(p);
			return NULL;
		}
		unpacked.p = v;
		unpacked.cap = unpacked.cap ? unpacked.cap * 2 : 16;
	}
	unpacked.p[unpacked.n++] = p;
	return p;
}

static void
note_free(void *p)
{
	size_t	i;

	for (i = 0; unpacked.on && i < unpacked.n; i++)
		if (unpacked.p[i] == p)
			unpacked.p[i] = NULL;
	free(p);
}

static const struct smpp34_memory_functions smpp_memory = {
	.malloc_fun = note_malloc,
	.realloc_fun = realloc,
	.free_fun = note_free,
};

/*
 * smpp34_unpack of a PDU of type into its struct, whose TLV list is
 * *tlvs (NULL for a type without one): 0 or -1.  Either way *tlvs holds
 * every TLV left allocated (destroy_tlv frees them).
 */
static int
unpack(uint32_t type, void *pdu, tlv_t **tlvs, const uint8_t *buf,
    size_t len)
{
	const tlv_t	*t;
	size_t		 i;
	int		 rc, held;

	unpacked.n = 0;
	unpacked.on = 1;
	rc = smpp34_unpack(type, pdu, buf, (int)len);
	unpacked.on = 0;
	for (i = 0; i < unpacked.n; i++) {
		held = 0;
		if (tlvs != NULL)
			smpp34_tlv_for_each(t, *tlvs)
				held |= (const void *)t == unpacked.p[i];
		if (!held)
			free(unpacked.p[i]);
	}
	unpacked.n = 0;
	return rc;
}

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
static void lookup_abandon(struct smpp *);

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

/* ------------------------------------------------------------ status */

/*
 * The session's state for the CLI (status/smpp-SECTION.json; msgspool(8)
 * status): written when it changes, at most every SMPP_STATUS_EVERY ms
 * for the window's use.
 */
static void
status_write(struct smpp *st, int force, const char *state)
{
	char		 name[128], since[RFC3339_LEN], now[RFC3339_LEN];
	json_t		*doc;
	long long	 t = now_ms();

	if (st->spool == NULL)
		return;
	if (!force && st->status_written && st->status_phase == st->phase &&
	    ((st->status_inuse == st->inuse &&
	    st->status_queued == st->queued) ||
	    t - st->status_at < SMPP_STATUS_EVERY))
		return;
	rfc3339_format(time(NULL) - (time_t)((t - st->since) / 1000), since,
	    sizeof(since));
	rfc3339_format(time(NULL), now, sizeof(now));
	doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, "
	    "s:s?, s:I, s:s}", "provider", "smpp", "section", st->section,
	    "host", st->host, "port", st->port, "systemId", st->system_id,
	    "state", state ? state : phase_names[st->phase], "since", since,
	    "window", (json_int_t)st->window, "inUse", (json_int_t)st->inuse,
	    "queued", (json_int_t)st->queued, "lastError",
	    st->lasterr[0] ? st->lasterr : NULL, "pid", (json_int_t)getpid(),
	    "updated", now);
	snprintf(name, sizeof(name), "smpp-%s", st->section);
	if (doc == NULL || spool_status_put(st->spool, name, doc) == -1)
		log_warn("[%s] smpp: cannot write the session's status",
		    st->section);
	json_decref(doc);
	st->status_at = t;
	st->status_inuse = st->inuse;
	st->status_queued = st->queued;
	st->status_phase = st->phase;
	st->status_written = 1;
}

static void
set_phase(struct smpp *st, enum smpp_phase p)
{
	st->phase = p;
	st->since = now_ms();
	status_write(st, 1, NULL);
}

/* ------------------------------------------------------------ output */

/* Flush what is to write, as far as the socket takes it.  0 or -1. */
static int
flush_out(struct smpp *st)
{
	ssize_t	n;

	while (st->fd != -1 && st->outoff < st->outlen) {
		n = send(st->fd, st->out + st->outoff, st->outlen - st->outoff,
		    MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			snprintf(st->lasterr, sizeof(st->lasterr), "write: %s",
			    strerror(errno));
			return -1;
		}
		st->outoff += (size_t)n;
	}
	if (st->outoff == st->outlen)
		st->outoff = st->outlen = 0;
	return 0;
}

/*
 * Pack a PDU of type (its struct, header filled but command_length)
 * with libsmpp34 and queue it.  0, or -1 (logged) when it cannot be
 * packed or there is no memory.
 */
static int
send_pdu(struct smpp *st, uint32_t type, void *pdu)
{
	uint8_t	 buf[2048], *v;
	int	 len = 0;
	size_t	 cap;

	if (smpp34_pack(type, buf, sizeof(buf), &len, pdu) != 0 || len <= 0) {
		log_err("[%s] smpp: cannot pack a PDU %08x: %s", st->section,
		    (unsigned)type, smpp34_strerror);
		return -1;
	}
	if (st->outlen + (size_t)len > st->outcap) {
		cap = st->outcap ? st->outcap : 4096;
		while (cap < st->outlen + (size_t)len)
			cap *= 2;
		if ((v = realloc(st->out, cap)) == NULL)
			return -1;
		st->out = v;
		st->outcap = cap;
	}
	memcpy(st->out + st->outlen, buf, (size_t)len);
	st->outlen += (size_t)len;
	return 0;
}

static uint32_t
next_seq(struct smpp *st)
{
	/* 0x00000001 to 0x7FFFFFFF (SMPP 3.4, 5.1.4). */
	if (st->seq == 0 || st->seq >= 0x7fffffff)
		st->seq = 0;
	return ++st->seq;
}

/* A response of header only (enquire_link_resp, unbind_resp ...). */
static void
send_header(struct smpp *st, uint32_t type, uint32_t status, uint32_t seq)
{
	generic_nack_t	h;

	memset(&h, 0, sizeof(h));
	h.command_id = type;
	h.command_status = status;
	h.sequence_number = seq;
	send_pdu(st, type, &h);
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
		st->done_at = now_ms();
	st->done[st->ndone++] = job;
}

/*
 * Whether the finished jobs go back to the daemon now.  Answers come one
 * by one, and the daemon records each batch with its own syncs: so they
 * wait for the rest of the window's answers, SMPP_HOLD ms at most (they
 * count as in flight meanwhile).
 */
static int
release_due(const struct smpp *st, long long t)
{
	return st->ndone > 0 && (st->inuse == 0 || st->ndone >= st->window ||
	    t - st->done_at >= SMPP_HOLD || st->phase != SMPP_BOUND);
}

static void
msg_free(struct smpp_msg *m)
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

static void
dequeue(struct smpp *st, struct smpp_msg *m)
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
static void
msg_finish(struct smpp *st, struct smpp_msg *m, enum msg_status status,
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
	msg_free(m);
	job_over(st, job);
}

/* After an answer: a message is over when nothing of it is left. */
static void
msg_check(struct smpp *st, struct smpp_msg *m)
{
	char	why[256];

	if (m->outstanding > 0 || (!m->failed && m->next < m->sms.nparts))
		return;
	dequeue(st, m);
	if (m->error == 0 && !m->failed) {
		msg_finish(st, m, MSG_OK, NULL, 0);
		return;
	}
	if (m->error != 0) {
		snprintf(why, sizeof(why), "SMSC refused submit_sm: %s "
		    "(0x%08x)", status_name(m->error), (unsigned)m->error);
		msg_finish(st, m, submit_outcome(m->error), why, 0);
	} else
		msg_finish(st, m, MSG_TEMPFAIL, "msgspoold stopped before "
		    "every part was submitted", 1);
}

/* ------------------------------------------------------------ session */

static long
reconnect_delay(const struct smpp *st)
{
	long		base = SMPP_RECONNECT_FIRST;
	unsigned	i, rnd = policy_jitter();

	for (i = 1; i < st->failures && base < SMPP_RECONNECT_MAX; i++)
		base *= 2;
	if (base > SMPP_RECONNECT_MAX)
		base = SMPP_RECONNECT_MAX;
	/* +-20%, so that many daemons do not knock at once. */
	return base * 8 / 10 + (long)(rnd % (unsigned)(base * 4 / 10 + 1));
}

/*
 * Fail every queued message that was not begun (a connect or bind that
 * failed): a temporary failure, with the usual backoff.
 */
static void
fail_queued(struct smpp *st, const char *why)
{
	struct smpp_msg	*m, *next;

	for (m = st->qhead; m != NULL; m = next) {
		next = m->qnext;
		if (m->next > 0 || m->outstanding > 0)
			continue;
		dequeue(st, m);
		msg_finish(st, m, MSG_TEMPFAIL, why, 0);
	}
}

/*
 * The session is gone (why): every message with parts submitted is a
 * temporary failure, retried once the session is back; those not begun
 * wait for it in the queue.  A reconnect is scheduled.
 */
static void
session_lost(struct smpp *st, const char *why)
{
	struct smpp_msg	*m, *next, *lost = NULL;
	char		 err[512];
	long		 delay;
	size_t		 i;

	if (st->fd != -1)
		close(st->fd);
	st->fd = -1;
	lookup_abandon(st);
	st->inlen = st->outlen = st->outoff = 0;
	snprintf(st->lasterr, sizeof(st->lasterr), "%s", why);
	if (st->phase == SMPP_BOUND)
		st->failures = 0;
	st->failures++;
	delay = reconnect_delay(st);
	st->reconnect_at = now_ms() + delay;
	for (i = 0; i < st->window; i++) {
		if ((m = st->slots[i].msg) == NULL)
			continue;
		st->slots[i].msg = NULL;
		m->outstanding--;
		if (!m->lost) {
			m->lost = 1;
			dequeue(st, m);
			m->qnext = lost;
			lost = m;
		}
	}
	st->inuse = 0;
	for (m = st->qhead; m != NULL; m = next) {
		next = m->qnext;
		if (m->next > 0 && !m->lost) {
			m->lost = 1;
			dequeue(st, m);
			m->qnext = lost;
			lost = m;
		}
	}
	snprintf(err, sizeof(err), "SMPP session lost before the SMSC "
	    "answered: %s", why);
	for (m = lost; m != NULL; m = next) {
		next = m->qnext;
		msg_finish(st, m, MSG_TEMPFAIL, err, delay / 1000 + 1);
	}
	log_warn("[%s] smpp: %s; reconnecting in %ld ms", st->section, why,
	    delay);
	set_phase(st, SMPP_DOWN);
}

/* A connect or bind that did not work: nothing queued waits for it. */
static void
session_failed(struct smpp *st, const char *why)
{
	char	err[512];

	snprintf(err, sizeof(err), "SMPP: %s", why);
	session_lost(st, why);
	fail_queued(st, err);
}

static void
send_bind(struct smpp *st)
{
	bind_transceiver_t	b;

	memset(&b, 0, sizeof(b));
	b.command_id = BIND_TRANSCEIVER;
	b.sequence_number = next_seq(st);
	snprintf((char *)b.system_id, sizeof(b.system_id), "%s",
	    st->system_id);
	snprintf((char *)b.password, sizeof(b.password), "%s", st->password);
	snprintf((char *)b.system_type, sizeof(b.system_type), "%s",
	    st->system_type);
	b.interface_version = SMPP_VERSION;
	b.addr_ton = TON_Unknown;
	b.addr_npi = NPI_Unknown;
	send_pdu(st, BIND_TRANSCEIVER, &b);
	st->bind_deadline = now_ms() + st->timeout * 1000;
	set_phase(st, SMPP_BINDING);
}

/* Free a lookup that is over (its result too). */
static void
lookup_free(struct smpp_lookup *l)
{
	if (l->cb.ar_result != NULL)
		freeaddrinfo(l->cb.ar_result);
	free(l);
}

/* Give the lookup under way up; free the abandoned ones that ended. */
static void
lookup_abandon(struct smpp *st)
{
	struct smpp_lookup	**pp, *l;

	if ((l = st->lookup) != NULL) {
		st->lookup = NULL;
		gai_cancel(&l->cb);
		l->next = st->abandoned;
		st->abandoned = l;
	}
	for (pp = &st->abandoned; (l = *pp) != NULL; )
		if (gai_error(&l->cb) != EAI_INPROGRESS) {
			*pp = l->next;
			lookup_free(l);
		} else
			pp = &l->next;
}

/* Look the host up (connect_check connects once it is known). */
static void
session_connect(struct smpp *st)
{
	struct gaicb	*list[1];
	char		 why[300];
	int		 rc;

	if (st->spool == NULL && (st->spool = spool_open(st->root, 0, why,
	    sizeof(why))) == NULL)
		log_warn("[%s] smpp: spool: %s", st->section, why);
	lookup_abandon(st);
	if ((st->lookup = calloc(1, sizeof(*st->lookup))) == NULL) {
		session_failed(st, "out of memory");
		return;
	}
	st->lookup->hints.ai_socktype = SOCK_STREAM;
	st->lookup->cb.ar_name = st->host;
	st->lookup->cb.ar_service = st->port;
	st->lookup->cb.ar_request = &st->lookup->hints;
	list[0] = &st->lookup->cb;
	if ((rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL)) != 0) {
		free(st->lookup);
		st->lookup = NULL;
		snprintf(why, sizeof(why), "%s: %s", st->host,
		    gai_strerror(rc));
		session_failed(st, why);
		return;
	}
	/* The timeout covers the lookup, the connect and the bind. */
	st->bind_deadline = now_ms() + st->timeout * 1000;
	set_phase(st, SMPP_CONNECTING);
}

/* The lookup is over: connect to the first address that takes it. */
static void
lookup_check(struct smpp *st)
{
	struct smpp_lookup	*l = st->lookup;
	struct addrinfo		*ai;
	char			 why[300];
	int			 fd = -1, rc;

	if ((rc = gai_error(&l->cb)) == EAI_INPROGRESS)
		return;
	st->lookup = NULL;
	if (rc != 0) {
		snprintf(why, sizeof(why), "%s: %s", st->host,
		    rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		lookup_free(l);
		session_failed(st, why);
		return;
	}
	errno = ECONNREFUSED;
	for (ai = l->cb.ar_result; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
		if (fd == -1)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
		    errno == EINPROGRESS)
			break;
		close(fd);
		fd = -1;
	}
	lookup_free(l);
	if (fd == -1) {
		snprintf(why, sizeof(why), "connect to %s:%s: %s", st->host,
		    st->port, strerror(errno));
		session_failed(st, why);
		return;
	}
	/* PDUs are small and go in batches: no waiting for more. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	st->fd = fd;
}

/* A connect in progress: bind once it is through. */
static void
connect_check(struct smpp *st)
{
	struct pollfd	pfd = { st->fd, POLLOUT, 0 };
	socklen_t	len = sizeof(int);
	char		why[300];
	int		e = 0;

	if (st->lookup != NULL) {
		lookup_check(st);
		return;
	}
	if (poll(&pfd, 1, 0) != 1)
		return;
	if (getsockopt(st->fd, SOL_SOCKET, SO_ERROR, &e, &len) == -1)
		e = errno;
	if (e != 0) {
		snprintf(why, sizeof(why), "connect to %s:%s: %s", st->host,
		    st->port, strerror(e));
		session_failed(st, why);
		return;
	}
	send_bind(st);
}

/* ------------------------------------------------------------ input */

static struct smpp_slot *
slot_of(struct smpp *st, uint32_t seq)
{
	size_t	i;

	for (i = 0; i < st->window; i++)
		if (st->slots[i].msg != NULL && st->slots[i].seq == seq)
			return &st->slots[i];
	return NULL;
}

/* A submit_sm's answer: status, and the SMSC's id when accepted. */
static void
submit_answered(struct smpp *st, struct smpp_slot *s, uint32_t status,
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
		if (unpack(SUBMIT_SM_RESP, &r, NULL, pdu, len) != 0)
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
		st->next_submit_us = now_us() + SMPP_THROTTLE_PAUSE;
	msg_check(st, m);
}

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
 * logged.  Always answered: ESME_RX_T_APPN (try again) only when the
 * receipt could not be stored.
 */
static void
deliver(struct smpp *st, uint32_t seq, const uint8_t *pdu, size_t len)
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
	if (unpack(DELIVER_SM, &d, &d.tlv, pdu, len) != 0) {
		log_warn("[%s] smpp: a deliver_sm libsmpp34 cannot read: %s",
		    st->section, smpp34_strerror);
		answer = ESME_RX_P_APPN;
		goto answer;
	}
	if ((d.esm_class & 0x3c) != SMPP34_DELIVERY_RECEIPT) {
		log_info("[%s] smpp: a message from %s ignored (inbound SMS "
		    "is not supported)", st->section, (char *)d.source_addr);
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
	send_pdu(st, DELIVER_SM_RESP, &r);
}

static void
bind_answered(struct smpp *st, uint32_t status, const uint8_t *pdu,
    size_t len)
{
	bind_transceiver_resp_t	r;
	char			why[300];

	if (status != ESME_ROK) {
		snprintf(why, sizeof(why), "the SMSC refused the bind as %s: "
		    "%s (0x%08x)", st->system_id, status_name(status),
		    (unsigned)status);
		log_err("[%s] smpp: %s", st->section, why);
		session_failed(st, why);
		return;
	}
	memset(&r, 0, sizeof(r));
	if (unpack(BIND_TRANSCEIVER_RESP, &r, &r.tlv, pdu, len) == 0)
		log_info("[%s] smpp: bound to %s:%s as %s (SMSC %s)",
		    st->section, st->host, st->port, st->system_id,
		    (char *)r.system_id);
	else
		log_info("[%s] smpp: bound to %s:%s as %s", st->section,
		    st->host, st->port, st->system_id);
	/* Read in part or whole, its TLVs are libsmpp34's allocations. */
	destroy_tlv(r.tlv);
	st->failures = 0;
	st->lasterr[0] = '\0';
	st->next_enquire = now_ms() + st->enquire * 1000;
	st->enquire_deadline = 0;
	set_phase(st, SMPP_BOUND);
}

/* One PDU of len bytes: its header read here, its body by libsmpp34. */
static void
dispatch(struct smpp *st, const uint8_t *pdu, size_t len)
{
	struct smpp_slot	*s;
	uint32_t		 id, status, seq, v;

	memcpy(&v, pdu + 4, 4);
	id = ntohl(v);
	memcpy(&v, pdu + 8, 4);
	status = ntohl(v);
	memcpy(&v, pdu + 12, 4);
	seq = ntohl(v);
	switch (id) {
	case BIND_TRANSCEIVER_RESP:
		if (st->phase == SMPP_BINDING)
			bind_answered(st, status, pdu, len);
		break;
	case SUBMIT_SM_RESP:
	case GENERIC_NACK:
		if ((s = slot_of(st, seq)) != NULL)
			submit_answered(st, s, id == GENERIC_NACK && status ==
			    ESME_ROK ? ESME_RUNKNOWNERR : status, pdu, len);
		else if (id == GENERIC_NACK && st->phase == SMPP_BINDING)
			bind_answered(st, status ? status : ESME_RUNKNOWNERR,
			    pdu, len);
		else if (id == GENERIC_NACK)
			log_warn("[%s] smpp: generic_nack %s for sequence %u",
			    st->section, status_name(status), (unsigned)seq);
		break;
	case DELIVER_SM:
		deliver(st, seq, pdu, len);
		break;
	case ENQUIRE_LINK:
		send_header(st, ENQUIRE_LINK_RESP, ESME_ROK, seq);
		break;
	case ENQUIRE_LINK_RESP:
		st->enquire_deadline = 0;
		break;
	case UNBIND:
		send_header(st, UNBIND_RESP, ESME_ROK, seq);
		flush_out(st);
		session_lost(st, "the SMSC unbound");
		break;
	case UNBIND_RESP:
		break;
	default:
		/* A request we do not serve: say so; a response: ignored. */
		if (!(id & 0x80000000))
			send_header(st, GENERIC_NACK, ESME_RINVCMDID, seq);
		break;
	}
}

/* Read what the socket has and handle each whole PDU.  0, or -1 (lost). */
static int
read_in(struct smpp *st)
{
	uint8_t		*v;
	ssize_t		 n;
	size_t		 off, len;
	uint32_t	 l;
	const char	*gone = NULL;

	while (gone == NULL) {
		if (st->incap - st->inlen < 4096) {
			if ((v = realloc(st->in, st->incap + 65536)) == NULL)
				return -1;
			st->in = v;
			st->incap += 65536;
		}
		n = recv(st->fd, st->in + st->inlen, st->incap - st->inlen, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			/* What came before the end is answers all the same. */
			gone = n == 0 ? "the SMSC closed the connection" :
			    strerror(errno);
			break;
		}
		st->inlen += (size_t)n;
	}
	for (off = 0; st->inlen - off >= SMPP_HEADER; off += len) {
		memcpy(&l, st->in + off, 4);
		len = ntohl(l);
		if (len < SMPP_HEADER || len > SMPP_PDU_MAX) {
			session_lost(st, "a PDU of a length no SMSC sends");
			return -1;
		}
		if (st->inlen - off < len)
			break;
		dispatch(st, st->in + off, len);
		/* The session may be gone, and its buffer with it. */
		if (st->fd == -1)
			return -1;
	}
	memmove(st->in, st->in + off, st->inlen - off);
	st->inlen -= off;
	if (gone != NULL) {
		session_lost(st, gone);
		return -1;
	}
	return 0;
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
 * attempt that failed for now records them (msg_finish), with the
 * reference of its UDH.  Taken when the text splits the same way again.
 * The reference, or -1 for a fresh start.
 */
static int
resume_ref(const struct job *job)
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

static int
resume_parts(struct smpp_msg *m, const struct job *job)
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
	sm.sequence_number = next_seq(st);
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
	if (send_pdu(st, SUBMIT_SM, &sm) == -1) {
		/* Cannot happen with the sizes gsm.c keeps to. */
		m->error = ESME_RSYSERR;
		m->failed = 1;
		msg_check(st, m);
		return;
	}
	s->seq = sm.sequence_number;
	s->msg = m;
	s->part = m->next;
	s->deadline = now_ms() + st->timeout * 1000;
	st->inuse++;
	m->outstanding++;
	m->next++;
	skip_accepted(m);
	if (m->next == m->sms.nparts)
		dequeue(st, m);
}

/* Submit while the window and the throughput allow. */
static void
submit_more(struct smpp *st)
{
	long long	t;

	while (st->phase == SMPP_BOUND && st->qhead != NULL &&
	    st->inuse < st->window) {
		t = now_us();
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
	ref = resume_ref(job);
	m->ref = ref != -1 ? (uint8_t)ref : st->ref++;
	if (gsm_encode(body, strlen(body), m->ref, &m->sms, err,
	    sizeof(err)) == -1) {
		snprintf(job->err, sizeof(job->err), "%s", err);
		free(m);
		return;
	}
	if ((m->ids = calloc(m->sms.nparts, sizeof(*m->ids))) == NULL ||
	    (ref != -1 && resume_parts(m, job) == -1)) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "out of memory");
		msg_free(m);
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
		msg_check(st, m);
}

static size_t
smpp_fds(void *state, struct curl_waitfd *fds, size_t max, int *timeout_ms)
{
	struct smpp	*st = state;
	long long	 t = now_ms(), due = t + 1000;
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
		due = release_due(st, t) ? t : st->done_at + SMPP_HOLD;
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
				dequeue(st, m);
				msg_finish(st, m, MSG_TEMPFAIL, "msgspoold "
				    "stopped before it was submitted", 1);
			} else if (!m->failed) {
				m->failed = 1;
				msg_check(st, m);
			}
		}
	}
	if (st->phase == SMPP_CONNECTING)
		connect_check(st);
	if (st->fd != -1 && st->phase != SMPP_CONNECTING)
		read_in(st);
	t = now_ms();
	if ((st->phase == SMPP_CONNECTING || st->phase == SMPP_BINDING) &&
	    t >= st->bind_deadline) {
		snprintf(why, sizeof(why), "no answer to the %s within %ld s",
		    st->phase == SMPP_BINDING ? "bind" : st->lookup != NULL ?
		    "lookup of the host" : "connect", st->timeout);
		session_failed(st, why);
	}
	if (st->phase == SMPP_BOUND) {
		if (st->enquire_deadline > 0 && t >= st->enquire_deadline)
			session_lost(st, "no answer to enquire_link");
		for (i = 0; i < st->window && st->phase == SMPP_BOUND; i++)
			if (st->slots[i].msg != NULL &&
			    t >= st->slots[i].deadline) {
				snprintf(why, sizeof(why), "no submit_sm_resp "
				    "within %ld s", st->timeout);
				session_lost(st, why);
			}
	}
	if (st->phase == SMPP_BOUND && t >= st->next_enquire) {
		send_header(st, ENQUIRE_LINK, ESME_ROK, next_seq(st));
		st->next_enquire = t + st->enquire * 1000;
		if (st->enquire_deadline == 0)
			st->enquire_deadline = t + st->timeout * 1000;
	}
	if (!stopping)
		submit_more(st);
	if (st->phase == SMPP_DOWN && !stopping && t >= st->reconnect_at)
		session_connect(st);
	if (st->fd != -1 && flush_out(st) == -1)
		session_lost(st, st->lasterr);
	status_write(st, 0, NULL);
}

static struct job *
smpp_reap(void *state)
{
	struct smpp	*st = state;
	struct job	*job;

	if (!release_due(st, now_ms()))
		return NULL;
	job = st->done[0];
	memmove(st->done, st->done + 1, (st->ndone - 1) * sizeof(*st->done));
	st->ndone--;
	job->pending = 0;
	return job;
}

/* Unbind at exit, waiting a little for the SMSC to answer. */
static void
unbind(struct smpp *st)
{
	struct pollfd	pfd;
	long long	end = now_ms() + SMPP_UNBIND_WAIT, t;
	uint8_t		buf[4096];
	ssize_t		n;
	uint32_t	v;
	size_t		len = 0;

	send_header(st, UNBIND, ESME_ROK, next_seq(st));
	while ((t = now_ms()) < end && st->fd != -1) {
		if (flush_out(st) == -1)
			break;
		pfd.fd = st->fd;
		pfd.events = POLLIN | (st->outlen > st->outoff ? POLLOUT : 0);
		if (poll(&pfd, 1, (int)(end - t)) <= 0)
			continue;
		if ((n = recv(st->fd, buf + len, sizeof(buf) - len, 0)) <= 0)
			break;
		len += (size_t)n;
		/* Whatever comes first, only unbind_resp ends the wait. */
		while (len >= SMPP_HEADER) {
			memcpy(&v, buf, 4);
			if (ntohl(v) < SMPP_HEADER || ntohl(v) > sizeof(buf))
				return;
			if (len < ntohl(v))
				break;
			memcpy(&v, buf + 4, 4);
			if (ntohl(v) == UNBIND_RESP) {
				log_info("[%s] smpp: unbound", st->section);
				return;
			}
			memcpy(&v, buf, 4);
			n = (ssize_t)ntohl(v);
			memmove(buf, buf + n, len - (size_t)n);
			len -= (size_t)n;
		}
		if (len == sizeof(buf))
			break;
	}
	log_warn("[%s] smpp: no unbind_resp within %d ms", st->section,
	    SMPP_UNBIND_WAIT);
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
		unbind(st);
	if (st->fd != -1)
		close(st->fd);
	lookup_abandon(st);
	/* The resolver still writing into one: it is left to the exit. */
	if (st->abandoned != NULL)
		log_warn("[%s] smpp: a lookup of %s still under way at exit",
		    st->section, st->host);
	if (st->status_written)
		status_write(st, 1, "stopped");
	/* The daemon waits for its jobs first: none is left here but when
	 * it gives up on them (their claims go with the daemon). */
	for (i = 0; st->slots != NULL && i < st->window; i++) {
		if ((m = st->slots[i].msg) == NULL)
			continue;
		for (j = i; j < st->window; j++)
			if (st->slots[j].msg == m)
				st->slots[j].msg = NULL;
		if (m->next < m->sms.nparts)
			dequeue(st, m);
		msg_free(m);
	}
	for (m = st->qhead; m != NULL; m = next) {
		next = m->qnext;
		msg_free(m);
	}
	spool_free(st->spool);
	free(st->in);
	free(st->out);
	free(st->slots);
	free(st->done);
	smpp_config_free(st);
	free(st);
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
};

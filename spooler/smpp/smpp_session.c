/*
 * smpp_session.c: the smpp provider's session with its SMSC (smpp.h):
 * the host looked up without stalling the loop, the connect, the bind,
 * each PDU read and dispatched, a session lost and the backoff before
 * the next, the unbind at exit, and the status file msgspool(8) status
 * reads.
 */
#include <arpa/inet.h>
#include <errno.h>
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

#include "base/log.h"
#include "base/rfc3339.h"
#include "providers/policy.h"
#include "smpp/smpp.h"

static const char *const phase_names[] = { "down", "connecting", "binding",
    "bound" };

/* ------------------------------------------------------------ status */

/*
 * The session's state for the CLI (status/smpp-SECTION.json; msgspool(8)
 * status): written when it changes, at most every SMPP_STATUS_EVERY ms
 * for the window's use.
 */
void
smpp_status_write(struct smpp *st, int force, const char *state)
{
	char		 name[128], since[RFC3339_LEN], now[RFC3339_LEN];
	json_t		*doc;
	long long	 t = smpp_now_ms();

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
	st->since = smpp_now_ms();
	smpp_status_write(st, 1, NULL);
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
 * The session is gone (why): every message with parts submitted is a
 * temporary failure, retried once the session is back; those not begun
 * wait for it in the queue.  A reconnect is scheduled.
 */
void
smpp_session_lost(struct smpp *st, const char *why)
{
	struct smpp_msg	*m, *next, *lost = NULL;
	char		 err[512];
	long		 delay;
	size_t		 i;

	if (st->fd != -1)
		close(st->fd);
	st->fd = -1;
	smpp_lookup_abandon(st);
	st->inlen = st->outlen = st->outoff = 0;
	snprintf(st->lasterr, sizeof(st->lasterr), "%s", why);
	if (st->phase == SMPP_BOUND)
		st->failures = 0;
	st->failures++;
	delay = reconnect_delay(st);
	st->reconnect_at = smpp_now_ms() + delay;
	for (i = 0; i < st->window; i++) {
		if ((m = st->slots[i].msg) == NULL)
			continue;
		st->slots[i].msg = NULL;
		m->outstanding--;
		if (!m->lost) {
			m->lost = 1;
			smpp_dequeue(st, m);
			m->qnext = lost;
			lost = m;
		}
	}
	st->inuse = 0;
	for (m = st->qhead; m != NULL; m = next) {
		next = m->qnext;
		if (m->next > 0 && !m->lost) {
			m->lost = 1;
			smpp_dequeue(st, m);
			m->qnext = lost;
			lost = m;
		}
	}
	snprintf(err, sizeof(err), "SMPP session lost before the SMSC "
	    "answered: %s", why);
	for (m = lost; m != NULL; m = next) {
		next = m->qnext;
		smpp_msg_finish(st, m, MSG_TEMPFAIL, err, delay / 1000 + 1);
	}
	log_warn("[%s] smpp: %s; reconnecting in %ld ms", st->section, why,
	    delay);
	set_phase(st, SMPP_DOWN);
}

/* A connect or bind that did not work: nothing queued waits for it. */
void
smpp_session_failed(struct smpp *st, const char *why)
{
	char	err[512];

	snprintf(err, sizeof(err), "SMPP: %s", why);
	smpp_session_lost(st, why);
	smpp_fail_queued(st, err);
}

static void
send_bind(struct smpp *st)
{
	bind_transceiver_t	b;

	memset(&b, 0, sizeof(b));
	b.command_id = BIND_TRANSCEIVER;
	b.sequence_number = smpp_next_seq(st);
	snprintf((char *)b.system_id, sizeof(b.system_id), "%s",
	    st->system_id);
	snprintf((char *)b.password, sizeof(b.password), "%s", st->password);
	snprintf((char *)b.system_type, sizeof(b.system_type), "%s",
	    st->system_type);
	b.interface_version = SMPP_VERSION;
	b.addr_ton = TON_Unknown;
	b.addr_npi = NPI_Unknown;
	smpp_send_pdu(st, BIND_TRANSCEIVER, &b);
	st->bind_deadline = smpp_now_ms() + st->timeout * 1000;
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
void
smpp_lookup_abandon(struct smpp *st)
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

/* Look the host up (smpp_connect_check connects once it is known). */
void
smpp_session_connect(struct smpp *st)
{
	struct gaicb	*list[1];
	char		 why[300];
	int		 rc;

	if (st->spool == NULL && (st->spool = spool_open(st->root, 0, why,
	    sizeof(why))) == NULL)
		log_warn("[%s] smpp: spool: %s", st->section, why);
	smpp_lookup_abandon(st);
	if ((st->lookup = calloc(1, sizeof(*st->lookup))) == NULL) {
		smpp_session_failed(st, "out of memory");
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
		smpp_session_failed(st, why);
		return;
	}
	/* The timeout covers the lookup, the connect and the bind. */
	st->bind_deadline = smpp_now_ms() + st->timeout * 1000;
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
		smpp_session_failed(st, why);
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
		smpp_session_failed(st, why);
		return;
	}
	/* PDUs are small and go in batches: no waiting for more. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	st->fd = fd;
}

/* A connect in progress: bind once it is through. */
void
smpp_connect_check(struct smpp *st)
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
		smpp_session_failed(st, why);
		return;
	}
	send_bind(st);
}

/* ------------------------------------------------------------ input */

static void
bind_answered(struct smpp *st, uint32_t status, const uint8_t *pdu,
    size_t len)
{
	bind_transceiver_resp_t	r;
	char			why[300];

	if (status != ESME_ROK) {
		snprintf(why, sizeof(why), "the SMSC refused the bind as %s: "
		    "%s (0x%08x)", st->system_id, smpp_status_name(status),
		    (unsigned)status);
		log_err("[%s] smpp: %s", st->section, why);
		smpp_session_failed(st, why);
		return;
	}
	memset(&r, 0, sizeof(r));
	if (smpp_unpack(BIND_TRANSCEIVER_RESP, &r, &r.tlv, pdu, len) == 0)
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
	st->next_enquire = smpp_now_ms() + st->enquire * 1000;
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
		if ((s = smpp_slot_of(st, seq)) != NULL)
			smpp_submit_answered(st, s, id == GENERIC_NACK &&
			    status == ESME_ROK ? ESME_RUNKNOWNERR : status, pdu,
			    len);
		else if (id == GENERIC_NACK && st->phase == SMPP_BINDING)
			bind_answered(st, status ? status : ESME_RUNKNOWNERR,
			    pdu, len);
		else if (id == GENERIC_NACK)
			log_warn("[%s] smpp: generic_nack %s for sequence %u",
			    st->section, smpp_status_name(status),
			    (unsigned)seq);
		break;
	case DELIVER_SM:
		smpp_deliver(st, seq, pdu, len);
		break;
	case ENQUIRE_LINK:
		smpp_send_header(st, ENQUIRE_LINK_RESP, ESME_ROK, seq);
		break;
	case ENQUIRE_LINK_RESP:
		st->enquire_deadline = 0;
		break;
	case UNBIND:
		smpp_send_header(st, UNBIND_RESP, ESME_ROK, seq);
		smpp_flush_out(st);
		smpp_session_lost(st, "the SMSC unbound");
		break;
	case UNBIND_RESP:
		break;
	default:
		/* A request we do not serve: say so; a response: ignored. */
		if (!(id & 0x80000000))
			smpp_send_header(st, GENERIC_NACK, ESME_RINVCMDID, seq);
		break;
	}
}

/* Read what the socket has and handle each whole PDU.  0, or -1 (lost). */
int
smpp_read_in(struct smpp *st)
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
			smpp_session_lost(st, "a PDU of a length no SMSC "
			    "sends");
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
		smpp_session_lost(st, gone);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ unbind */

/* Unbind at exit, waiting a little for the SMSC to answer. */
void
smpp_unbind(struct smpp *st)
{
	struct pollfd	pfd;
	long long	end = smpp_now_ms() + SMPP_UNBIND_WAIT, t;
	uint8_t		buf[4096];
	ssize_t		n;
	uint32_t	v;
	size_t		len = 0;

	smpp_send_header(st, UNBIND, ESME_ROK, smpp_next_seq(st));
	while ((t = smpp_now_ms()) < end && st->fd != -1) {
		if (smpp_flush_out(st) == -1)
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

/*
 * smpp_pdu.c: the smpp provider's PDUs (smpp.h): packed by libsmpp34
 * into the session's output buffer and written from there; unpacked
 * with what libsmpp34 allocates watched; the names of command_status;
 * and the monotonic clock the provider times everything by.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/log.h"
#include "smpp/smpp.h"

long long
smpp_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long
smpp_now_ms(void)
{
	return smpp_now_us() / 1000;
}

/* The name of a command_status, for logs and errors. */
const char *
smpp_status_name(uint32_t st)
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

/* ------------------------------------------------------------ unpack */

/*
 * libsmpp34 allocates each TLV it reads (smpp34_malloc) and, when one is
 * malformed, returns without linking the node it was filling: lost, a
 * kilobyte for each bad PDU an SMSC sends.  So what it allocates during
 * an unpack is noted, and what the PDU's TLV list does not hold is
 * freed after it.  The process's only user of libsmpp34 is the smpp
 * provider, one unpack at a time (smpp_unpack): hence this file's own
 * state.
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

const struct smpp34_memory_functions smpp_memory = {
	.malloc_fun = note_malloc,
	.realloc_fun = realloc,
	.free_fun = note_free,
};

/*
 * smpp34_unpack of a PDU of type into its struct, whose TLV list is
 * *tlvs (NULL for a type without one): 0 or -1.  Either way *tlvs holds
 * every TLV left allocated (destroy_tlv frees them).
 */
int
smpp_unpack(uint32_t type, void *pdu, tlv_t **tlvs, const uint8_t *buf,
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

/* ------------------------------------------------------------ output */

/* Flush what is to write, as far as the socket takes it.  0 or -1. */
int
smpp_flush_out(struct smpp *st)
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
int
smpp_send_pdu(struct smpp *st, uint32_t type, void *pdu)
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

uint32_t
smpp_next_seq(struct smpp *st)
{
	/* 0x00000001 to 0x7FFFFFFF (SMPP 3.4, 5.1.4). */
	if (st->seq == 0 || st->seq >= 0x7fffffff)
		st->seq = 0;
	return ++st->seq;
}

/* A response of header only (enquire_link_resp, unbind_resp ...). */
void
smpp_send_header(struct smpp *st, uint32_t type, uint32_t status, uint32_t seq)
{
	generic_nack_t	h;

	memset(&h, 0, sizeof(h));
	h.command_id = type;
	h.command_status = status;
	h.sequence_number = seq;
	smpp_send_pdu(st, type, &h);
}

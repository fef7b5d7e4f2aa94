/*
 * smpp.h: what the files of the smpp provider share, and nothing else
 * sees (provider_smpp.c has the overview): the session's structure, its
 * messages and window, and the functions that cross files.
 *
 *	provider_smpp.c	the provider's entry points (provider.h) and
 *			the section's config
 *	smpp_session.c	lookup, connect, bind, each PDU read and
 *			dispatched, a lost session and the backoff,
 *			unbind; the status file
 *	smpp_submit.c	the queue, the window, submit_sm and its
 *			answers, a message's outcome, resumes
 *	smpp_receipt.c	deliver_sm: receipts stored in receipts/
 *	smpp_inbound.c	deliver_sm: SMS from phones kept in inbox/,
 *			their parts in inbox-parts/ until they are whole
 *	smpp_pdu.c	PDUs packed, written and unpacked (libsmpp34),
 *			command_status names, the clock
 *
 * Calls run one way: provider_smpp.c -> smpp_session.c -> smpp_submit.c
 * and smpp_receipt.c -> smpp_inbound.c -> smpp_pdu.c.
 */
#ifndef SMPP_H
#define SMPP_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>

#include <smpp34.h>
#include <smpp34_heap.h>
#include <smpp34_structs.h>
#include <smpp34_params.h>

#include "providers/provider.h"
#include "smpp/gsm.h"

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
	const struct config *cfg;	/* the inbound messages' owners */
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

/* -------------------------------------------------- smpp_pdu.c */

/* The monotonic clock, in microseconds and in milliseconds. */
long long	 smpp_now_us(void);
long long	 smpp_now_ms(void);

/* The name of a command_status, for logs and errors. */
const char	*smpp_status_name(uint32_t);

/* libsmpp34's allocator, watched during smpp_unpack (smpp_init sets it). */
extern const struct smpp34_memory_functions smpp_memory;

/*
 * smpp34_unpack of a PDU of type into its struct, whose TLV list is
 * *tlvs (NULL for a type without one): 0 or -1.  Either way *tlvs holds
 * every TLV left allocated (destroy_tlv frees them).
 */
int		 smpp_unpack(uint32_t type, void *pdu, tlv_t **tlvs,
		    const uint8_t *buf, size_t len);

/* Flush what is to write, as far as the socket takes it.  0 or -1. */
int		 smpp_flush_out(struct smpp *);

/*
 * Pack a PDU of type (its struct, header filled but command_length)
 * with libsmpp34 and queue it.  0, or -1 (logged) when it cannot be
 * packed or there is no memory.
 */
int		 smpp_send_pdu(struct smpp *, uint32_t type, void *pdu);

/* The next sequence number, 0x00000001 to 0x7FFFFFFF. */
uint32_t	 smpp_next_seq(struct smpp *);

/* A response of header only (enquire_link_resp, unbind_resp ...). */
void		 smpp_send_header(struct smpp *, uint32_t type,
		    uint32_t status, uint32_t seq);

/* -------------------------------------------------- smpp_session.c */

/*
 * The session's state for the CLI (status/smpp-SECTION.json): written
 * when it changes or when force, state for the phase's name if not NULL.
 */
void		 smpp_status_write(struct smpp *, int force, const char *state);

/* Look the host up (smpp_connect_check connects once it is known). */
void		 smpp_session_connect(struct smpp *);

/* A lookup or connect in progress: connect, then bind, once through. */
void		 smpp_connect_check(struct smpp *);

/* Give the lookup under way up; free the abandoned ones that ended. */
void		 smpp_lookup_abandon(struct smpp *);

/*
 * The session is gone (why): what had parts submitted fails for now, a
 * reconnect is scheduled.  smpp_session_failed, for a connect or bind
 * that did not work, fails what is queued too.
 */
void		 smpp_session_lost(struct smpp *, const char *why);
void		 smpp_session_failed(struct smpp *, const char *why);

/* Read what the socket has and handle each whole PDU.  0, or -1 (lost). */
int		 smpp_read_in(struct smpp *);

/* Unbind at exit, waiting a little for the SMSC to answer. */
void		 smpp_unbind(struct smpp *);

/* -------------------------------------------------- smpp_submit.c */

/* Whether the finished jobs go back to the daemon now (reap). */
int		 smpp_release_due(const struct smpp *, long long t);

void		 smpp_msg_free(struct smpp_msg *);

/* Take m off the queue of what is to submit. */
void		 smpp_dequeue(struct smpp *, struct smpp_msg *m);

/*
 * A message's outcome (why for a failure), m freed and its job handed
 * to reap; smpp_msg_check finishes m once nothing of it is left.
 */
void		 smpp_msg_finish(struct smpp *, struct smpp_msg *m,
		    enum msg_status, const char *why, long retry_after);
void		 smpp_msg_check(struct smpp *, struct smpp_msg *m);

/* Fail every queued message not begun: a temporary failure, why. */
void		 smpp_fail_queued(struct smpp *, const char *why);

/*
 * A resume: the reference of the parts an earlier attempt recorded, or
 * -1; smpp_resume_parts takes their ids when the text splits the same
 * way again (0, or -1 without memory).
 */
int		 smpp_resume_ref(const struct job *);
int		 smpp_resume_parts(struct smpp_msg *m, const struct job *);

/* Submit while the window and the throughput allow. */
void		 smpp_submit_more(struct smpp *);

/* The submit_sm awaiting the answer of sequence seq, or NULL. */
struct smpp_slot *smpp_slot_of(struct smpp *, uint32_t seq);

/* A submit_sm's answer: status, and the SMSC's id when accepted. */
void		 smpp_submit_answered(struct smpp *, struct smpp_slot *s,
		    uint32_t status, const uint8_t *pdu, size_t len);

/* -------------------------------------------------- smpp_receipt.c */

/* A deliver_sm, stored when a receipt, and answered. */
void		 smpp_deliver(struct smpp *, uint32_t seq, const uint8_t *pdu,
		    size_t len);

/* -------------------------------------------------- smpp_inbound.c */

/*
 * A mobile-originated deliver_sm (an SMS from a phone, not a receipt):
 * kept in inbox/, or its part in inbox-parts/ and the message once
 * whole (msgspool-spool(5)).  The command_status to answer: ESME_ROK
 * once it is kept durably, ESME_RX_T_APPN when the spool cannot take it
 * now (the SMSC delivers it again), another error for a deliver_sm
 * that cannot be read.
 */
uint32_t	 smpp_inbound(struct smpp *, const deliver_sm_t *d);

#endif

/*
 * erase.h: an address erased from the whole spool, for msgspool erase
 * (msgspool(8), ERASE; msgspool-spool(5), Erasure).  Every file that
 * names the address goes: the messages to it in every state, the
 * inbound messages from or to it with their notes and parts, the copies
 * the file provider wrote of them, and what names an erased message
 * (receipts, webhook events, index/ entries, claims/ records,
 * idempotency/ records, attachment links, the clients' lists).  The
 * suppressions of the address stay: they exist so that it is not
 * written to again.  The caller prints what was done; nothing here does.
 */
#ifndef ERASE_H
#define ERASE_H

#include <stddef.h>
#include <jansson.h>

#include "spool/list.h"

struct config;
struct spool;

/* An address to erase, in the forms the spool's files hold it. */
struct erase_addr {
	int	 email;			/* an email address, else a number */
	char	 key[LIST_ADDRESS_MAX];	/* list_address_key's form */
	/* A number's digits without "+"; an email address as JSON writes
	 * it (a '"' or '\' escaped), lowercased to compare. */
	char	 text[2 * LIST_ADDRESS_MAX];
};

/*
 * Read addr: a phone number, "+" and 8 to 15 digits (E.164) or the
 * digits alone, as an OTT message or WhatsApp writes them; or an email
 * address.  0 with a filled, or -1 when it is neither.
 */
int		 erase_addr_parse(const char *addr, struct erase_addr *a);

/*
 * Whether the len bytes at p name the address in a form msgspool writes:
 * a number's digits with no other digit beside them (so "+49151...",
 * "49151..." and "0049151..." all do, and "149151..." does not); an
 * email address in any case, not inside a longer address.
 */
int		 erase_names(const struct erase_addr *, const char *p,
		    size_t len);

/* What one report of erase_run is about. */
enum erase_report {
	ERASE_REMOVED,	/* where: removed */
	ERASE_BUSY,	/* where: held by another now, left; why says who */
	ERASE_FAILED	/* where: could not be read or removed; why */
};

struct erase_opts {
	const char	 *client;	/* one client's files only; NULL: all */
	const struct config *cfg;	/* for the owner of an inbound part */
	/* The file providers' directories (absolute paths), NULL-ended;
	 * NULL: none. */
	const char *const *outboxes;
	/* How long a held message is looked at again before it is
	 * reported busy, in milliseconds. */
	long		  busy_ms;
	/*
	 * Each file removed, held or failed: where is its path from the
	 * spool's root ("sent/ID.json"), or an absolute one outside it;
	 * why is NULL for ERASE_REMOVED.
	 */
	void		(*report)(void *arg, enum erase_report,
			    const char *where, const char *why);
	list_progress_fn *progress;	/* how far the reading is; or NULL */
	void		 *arg;		/* for report and progress */
};

/* What erase_run did. */
struct erase_counts {
	size_t	removed;	/* files removed */
	size_t	messages;	/* of which messages (every state) */
	size_t	inbound;	/* and inbound messages */
	size_t	listed;		/* messages taken out of the lists */
	size_t	busy;		/* files left because another held them */
	size_t	failed;		/* files that could not be read or removed */
};

/*
 * Erase the address a from the spool s (msgspool-spool(5), Erasure):
 * the messages first, each under its lock (a queued or scheduled one
 * taken into cur/ as a cancel takes it, so that no daemon sends it; one
 * a daemon holds in cur/ looked at again for opts->busy_ms, then left
 * and reported busy), the inbound messages each under its note's lock,
 * then what names the address or an erased message; the whole spool is
 * read again when anything was removed, so that what a running daemon
 * wrote meanwhile from an erased message goes too.  The directories
 * changed are synced.  Fills counts; 0, or -1 with errno set when the
 * spool could not be read at all.
 */
int		 erase_run(struct spool *, const struct erase_addr *,
		    const struct erase_opts *, struct erase_counts *);

#endif

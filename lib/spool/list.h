/*
 * list.h: each client's list of its messages, the index that GET
 * /messages answers from (conf/openapi.yaml, MessageList;
 * msgspool-spool(5), Lists).
 *
 * SPOOL/lists/CLIENT/ holds the client's list in segments, files named
 * "GEN.ID": GEN the generation (msgspool reindex makes a new one), ID
 * the least message id the segment may hold.  Segments split the ids
 * between them exactly: a message is in the segment with the greatest
 * ID not above its own, so a page reads the newest segments only.  A
 * segment is a text file of lines, one for each change of a message:
 *
 *	ID TAB STATUS TAB DIRECTION TAB CHANNEL TAB CREATED TAB WRITTEN
 *	    TAB ADDRESS TAB REFERENCE TAB HASH TAB OBJECT
 *
 * (CREATED and WRITTEN in Unix seconds, ADDRESS list_address_key's form
 * of the recipient, or of the sender of an inbound message, OBJECT the
 * JSON the list shows for it, HASH its FNV-1a), or "ID TAB -" when it
 * was removed.  The last
 * line of an id is its current one.  Lines are appended under an
 * exclusive lock of SPOOL/lists/CLIENT/head, which also names the
 * generation, the newest segment and the greatest id in it.
 *
 * The list is a cache of the spool's files, never synced: what the
 * files say wins.  A message's line is written before the message is
 * renamed into its state when its status is not final (so a kill at any
 * point never leaves an accepted message unlisted), after it when it
 * is; a line whose status is not final is checked against the files
 * when it is read.
 */
#ifndef LIST_H
#define LIST_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <jansson.h>

#include "base/buf.h"
#include "spool/spool.h"

#define LIST_AREA	"lists"

/* The largest list_address_key, with its NUL. */
#define LIST_ADDRESS_MAX	256

/*
 * The form in which an address is listed and looked for: a phone number
 * as "+" and its digits (separators dropped, a leading "+" or "00" taken
 * as the international prefix), so that an SMS to +4915112345678 and an
 * OTT message to 4915112345678 are both found by either; an email
 * address with its domain lowercased.  0, or -1 when addr is neither.
 */
int		 list_address_key(const char *addr, char *out, size_t len);

/*
 * Note the message doc, which is being written into state dir, in its
 * client's list (its status object, msgdoc_status_object).  0, or -1
 * with errno set.  The spool's commit engine calls it for every message
 * it writes: a failed note of a message whose status is not final fails
 * that write (MSG_TEMPFAIL); of a final one it is logged only.
 */
int		 list_note(struct spool *, const json_t *doc,
		    enum spool_dir dir);

/*
 * Keep (on) each client's segment names between appends in this handle
 * (list_cache.c): for a process that appends to lists for long on a
 * spool of this host (msgspoold), whose lines come in no order of their
 * ids (outcomes, receipts).  Off by default.
 */
void		 list_keep(struct spool *, int on);

/*
 * list_note of each item of a commit (spool.h) whose status is MSG_OK,
 * into the state it is written into: the lines of one client appended
 * under one lock of its head, one write for the lines of a segment.  An
 * item that cannot be noted is logged and gets the status of its
 * failure (spool_errno_status), so that it is not written.
 */
void		 list_note_items(struct spool *, struct spool_item *items,
		    size_t n);

/* Note an inbound message (inbox.h) of its client; 0 when it has none. */
int		 list_note_inbound(struct spool *, const json_t *doc);

/* Note that client's message id is gone (msgspool delete).  0 or -1. */
int		 list_note_gone(struct spool *, const char *client,
		    const char *id);

/* The statuses a list can be filtered by (conf/openapi.yaml). */
enum list_status {
	LIST_SCHEDULED, LIST_QUEUED, LIST_SENDING, LIST_RETRYING, LIST_SENT,
	LIST_DELIVERED, LIST_READ, LIST_UNDELIVERED, LIST_FAILED,
	LIST_CANCELED, LIST__NSTATUS
};

/* A status's enum list_status, or -1 when it is none. */
int		 list_status_parse(const char *name, size_t len);

#define LIST_OUTBOUND	0
#define LIST_INBOUND	1

/* What GET /messages asks for; every field set is ANDed. */
struct list_filter {
	unsigned	 statuses;	/* 1 << enum list_status each; 0: any */
	int		 channel;	/* enum channel, or -1: any */
	int		 direction;	/* LIST_OUTBOUND, LIST_INBOUND, -1 */
	const char	*address;	/* list_address_key form, or NULL */
	const char	*reference;	/* exact, or NULL */
	time_t		 since;		/* createdAt >= since; -1: none */
	time_t		 until;		/* createdAt < until; -1: none */
	const char	*after;		/* a cursor: ids below it; or NULL */
	size_t		 limit;		/* 1 to 500 */
};

/*
 * One page of client's list, newest first: the objects, comma-separated
 * JSON, appended to out (without brackets); *n how many; next the
 * cursor of the following page ("" when this is the last), SPOOL_ID_LEN
 * + 1 bytes.  now and retention (seconds; 0: none) tell which sent and
 * inbound messages are pruned.  0, or -1 with errno set.
 */
int		 list_page(struct spool *, const char *client,
		    const struct list_filter *, time_t now, long retention,
		    struct buf *out, size_t *n, char *next);

/*
 * Called by the long operations with how far they are: done of total
 * units (total 0: not known yet) of what ("reading", "writing").
 */
typedef void	 list_progress_fn(void *arg, const char *what, size_t done,
		    size_t total);

/*
 * Build every client's list again from the spool's files (msgspool
 * reindex; msgspoold when lists/ has never been built): a new
 * generation of each, swapped in under its lock, with the lines
 * appended meanwhile kept after what was read.  Marks lists/ built.
 * Returns how many messages were listed, or -1 with the reason in err.
 */
ssize_t		 list_reindex(struct spool *, list_progress_fn *, void *arg,
		    char *err, size_t errlen);

/* Whether lists/ has been built (else list_page reads every file). */
int		 list_built(struct spool *);

/*
 * The clients that have a list (lists/CLIENT/), as a new array of their
 * ids in no order: an empty one before any list is made; NULL out of
 * memory.
 */
json_t		*list_clients(struct spool *);

/*
 * After an unclean stop: note again every message in new/, deferred/
 * and cur/ and every message or inbound message made since since (whose
 * lines the kernel may not have written before a power failure).
 * Returns how many were noted.
 */
size_t		 list_recover(struct spool *, time_t since);
/* How far back msgspoold's start looks: the kernel writes within 30 s. */
#define LIST_RECOVER_SPAN	600

/*
 * Compact the segments: keep each message's last line only, and drop
 * the messages that are gone (removed, or pruned after retention).
 * Returns how many messages were dropped.
 */
size_t		 list_compact(struct spool *, time_t now, long retention);

/*
 * Remove from client's list (every client's when client is NULL) every
 * message any of whose lines contains one of needles (NULL-terminated):
 * msgspool erase.  The ids removed are appended to ids (a JSON array)
 * when it is not NULL.  Returns how many messages, or -1 with errno.
 */
ssize_t		 list_erase(struct spool *, const char *client,
		    const char *const *needles, json_t *ids);

#endif

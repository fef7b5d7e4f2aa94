/*
 * cancel.h: one message of the spool looked up by its id, and its
 * cancel: DELETE /messages/{id} (conf/openapi.yaml, MessageStatus) and
 * the console's Cancel (README.md, Operator console) both call it, so a
 * cancel follows one set of rules wherever it comes from
 * (msgspool-spool(5), Claims and recovery).
 *
 * Only a scheduled, queued or retrying message (new/ or deferred/) can
 * be canceled.  The cancel takes the file the way a daemon claims it (a
 * lock, and a rename into cur/ that never replaces a claim another
 * holds), so the cancel and a daemon never both win; it records its
 * client's webhook event (events/), then writes the document marked
 * canceled into failed/, which notes its status in its client's list
 * (list.h); then it lets go of the claim, and counts the cancel for GET
 * /metrics (counts.h, COUNTS_CANCELED).
 */
#ifndef CANCEL_H
#define CANCEL_H

#include <time.h>
#include <jansson.h>

#include "base/config.h"
#include "base/msgspool.h"
#include "spool/spool.h"

/* Looks and takes when the file moves or a daemon holds it. */
#define CANCEL_TRIES	5

/*
 * The message id of client (any client's when client is NULL) in any
 * state but tmp/: its document, *dir and name (SPOOL_NAME_MAX bytes).
 * The look opens the file, so one that moves on meanwhile is still
 * read whole, from where it was found.
 * NULL with errno ENOENT when there is none (or it is another client's),
 * or another errno when it cannot be read (the reason in err).  The
 * caller frees the document.
 */
json_t		*spool_lookup(struct spool *, const char *id,
		    const char *client, enum spool_dir *dir, char *name,
		    char *err, size_t errlen);

/*
 * spool_lookup's second step, for a caller that read the file itself
 * (spool_find_read): the document of text, len bytes, the file dir/name,
 * when it is client's (any client's: NULL).  NULL with errno EINVAL and
 * the reason in err when it is no document of ours, ENOENT when it is
 * another client's.
 */
json_t		*spool_lookup_doc(struct spool *, const char *text, size_t len,
		    enum spool_dir dir, const char *name, const char *client,
		    char *err, size_t errlen);

enum cancel_result {
	CANCEL_DONE,		/* canceled now */
	CANCEL_ALREADY,		/* canceled before: the same answer again */
	CANCEL_NOT_FOUND,	/* no such message of client */
	CANCEL_TOO_LATE,	/* sending, sent or failed: not cancelable */
	CANCEL_BUSY,		/* a daemon held it at every try */
	CANCEL_ERROR		/* not now: see status and err */
};

/* What spool_cancel found and did. */
struct cancel {
	json_t		*doc;	/* its document; the caller frees it */
	enum spool_dir	 dir;	/* its state (failed/ once canceled) */
	enum msg_status	 status;	/* CANCEL_ERROR: TEMPFAIL (503) or
					 * PERMFAIL (500) */
	char		 err[256];	/* CANCEL_ERROR: why */
};

/*
 * Cancel the message id of client (any client's when client is NULL;
 * an operator's cancel) at now, as cancel.h says, trying CANCEL_TRIES
 * times (a little later each time) while a daemon holds it or it moves.
 * Fills *c: doc and dir for every result but CANCEL_NOT_FOUND and
 * CANCEL_ERROR (for CANCEL_DONE and CANCEL_ALREADY, the document in
 * failed/).  A file in new/ or deferred/ that is no spool document is
 * set aside into failed/ as a daemon would, and is CANCEL_NOT_FOUND.
 * On CANCEL_ERROR nothing changed: the file is back where it was.
 */
enum cancel_result spool_cancel(struct spool *, const struct config *,
		    const char *id, const char *client, time_t now,
		    struct cancel *c);

#endif

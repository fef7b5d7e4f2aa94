/*
 * batch.h: the one batch runner of every route that queues several
 * messages per request (OTT, SMS batch, voice campaigns, email
 * recipients): the reply entries in input order, the entries whose
 * recipient the client suppressed turned into errors, the documents of
 * the good ones committed durably together, and the entries the spool
 * did not take turned into errors.  A batch of which the spool took none
 * is a server failure for the whole request (conf/openapi.yaml, 503).
 * And the queueing of the one message of a one-message route, by the
 * same rules.  A message no route of its channel takes (msgspool.conf(5),
 * Routes) is refused the same way, before its suppressions are read.
 */
#ifndef BATCH_H
#define BATCH_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>

#include "spool/spool.h"
#include "spool/suppress.h"

struct route_table;

/* An entry that could not be queued although it was good. */
#define BATCH_TRY_AGAIN	"the spool cannot take messages now; retry this entry"

/* The per-entry error of a message no route takes: "no-route: " why. */
#define BATCH_NO_ROUTE	"no-route"

struct batch {
	struct spool		*spool;		/* where they go */
	const struct route_table *routes;	/* NULL: not checked */
	struct spool_batch	 docs;
	json_t			*replies;	/* one per entry, in order */
	ssize_t			*slots;		/* entry -> docs index or -1 */
	size_t			 n, cap;
	const char		*idkey;		/* "smsId": nulled on failure */
	size_t			 queued;	/* after batch_commit */
	size_t			 unchecked;	/* lists that could not be read */
	struct suppress_look	 look;		/* the lists, for all entries */
};

/*
 * Start a batch of about n entries for spool whose replies name their
 * message id idkey, refusing the messages no route of routes (borrowed;
 * the request's, ctx->routes) takes.  0, or -1 out of memory.
 */
int		 batch_init(struct batch *, struct spool *,
		    const struct route_table *routes, size_t n,
		    const char *idkey);

/*
 * Add the next entry: its reply (stolen) and, when it is good, its
 * document (stolen) to commit into dest; doc NULL for an entry whose
 * reply already says why it failed.  An entry no route takes fails here,
 * its document dropped: its idkey null, status "error", error
 * "no-route: " and batch_noroute's reason; so does one whose recipient
 * its client suppressed (suppress_doc), error "recipient: suppressed
 * (SOURCE)", and one whose list cannot be read (BATCH_TRY_AGAIN).  0, or
 * -1 out of memory (both freed).
 */
int		 batch_add(struct batch *, json_t *reply, json_t *doc,
		    enum spool_dir dest);

/* Whether entry i has a document to commit. */
int		 batch_has_doc(const struct batch *, size_t i);

/*
 * Commit every document durably, in one spool_commit, and settle the
 * replies: an entry whose file could not be written gets its idkey
 * null, status "error" and BATCH_TRY_AGAIN.  Returns 0, or, when the
 * spool took none of the documents it was given, 503 (it cannot take
 * them now) or 500: the status of the whole reply.
 */
int		 batch_commit(struct batch *);

struct response;

/*
 * The reply of a route whose answer is the replies alone (SMS batch,
 * OTT): commit, then 200 with the replies, or the 503/500 of a spool
 * that took none.  Frees the batch.  NULL out of memory.
 */
struct response	*batch_respond(struct batch *);

/*
 * Queue the one message of a one-message route (an SMS, a single call)
 * into dest, unless no route of routes (NULL: not checked) takes it or
 * its client suppressed its recipient.  0 when it is queued; else -1
 * with *r the response to give (NULL out of memory): 400 problem
 * no-route with errors {"recipient": [batch_noroute's reason]}, or 422
 * problem suppressed with errors {"recipient": ["suppressed (SOURCE)"]},
 * nothing queued; or the 503 or 500 of a list or spool that failed.
 * doc is borrowed.
 */
int		 batch_queue_one(struct spool *,
		    const struct route_table *routes, const json_t *doc,
		    enum spool_dir dest, struct response **r);

/*
 * Why no route of routes takes doc (msgspool.conf(5), Routes: by its
 * channel's section and recipient, as route_pick picks), into buf: "no
 * route takes this recipient (routes of sms take +49, +43)", or, for a
 * channel no section routes, "channelType 7 is not configured".  NULL
 * when a route takes it, when routes is NULL, or when doc names no
 * channel (not the client's fault: msgspoold fails it).
 */
const char	*batch_noroute(const struct route_table *routes,
		    const json_t *doc, char *buf, size_t len);

/* After the commit: whether entry i's document is queued. */
int		 batch_queued(const struct batch *, size_t i);

/* The replies (borrowed; json_incref to keep them). */
json_t		*batch_replies(const struct batch *);

void		 batch_free(struct batch *);

#endif

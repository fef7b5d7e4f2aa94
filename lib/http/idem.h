/*
 * idem.h: Idempotency-Key (conf/openapi.yaml; msgspool-spool(5),
 * Idempotency).  A key belongs to a client and lives idempotency-ttl
 * (24 h by default) in the spool's idempotency/ area:
 *
 *	HASH.lock	flock()ed by the request that runs with the key
 *	HASH.json	the record: body digest, the kept reply, the
 *			messages the request queued
 *
 * HASH names the client and the key (a SHA-256 prefix in hex).  A
 * request with a key runs under the lock (another one with the same key
 * meanwhile gets 409), and its messages are held in tmp/ (spool_hold)
 * until the record naming them and the reply is durable; only then are
 * they published.  Whatever kills the request, a retry either finds no
 * record (nothing was queued: it runs anew) or finds the record and
 * finishes publishing what it names (nothing is queued twice), then
 * replays the kept reply.
 */
#ifndef IDEM_H
#define IDEM_H

#include <stddef.h>
#include <time.h>

#include "http/http.h"

struct spool;

#define IDEM_AREA	"idempotency"
#define IDEM_KEY_MAX	255
#define IDEM_TTL	(24 * 3600)

/*
 * The key of an Idempotency-Key header value: 1 to 255 printable ASCII
 * characters, taken as they are or as a quoted Structured Fields string
 * (RFC 8941: "...", with \" and \\).  Fills key (IDEM_KEY_MAX + 1
 * bytes); 0, or -1 when it is not a valid key.
 */
int		 idem_key_parse(const char *value, char *key);

struct idem;

/*
 * Begin a request with a key: returns NULL with *out set (the caller
 * runs the handler, then idem_finish), or the response to give at once:
 * the kept reply (replay, with Idempotent-Replay: true), 409 while the
 * first request runs, 422 for another body, 503 when the spool cannot
 * keep the record.  route and body make the request's digest.
 */
struct response	*idem_begin(struct spool *, const char *client,
		    const char *key, const char *route, const void *body,
		    size_t len, long ttl, time_t now, struct idem **out);

/*
 * After the handler: a 2xx reply is recorded with the messages held
 * meanwhile, then they are published; anything else is not kept and
 * its held messages are removed.  Returns r, or a 503 in its place when
 * the record cannot be written (nothing queued then).  Ends the hold
 * and the lock: free with idem_free.
 */
struct response	*idem_finish(struct idem *, struct response *r);

void		 idem_free(struct idem *);

/*
 * Remove the records and locks of the area older than before, each
 * under its lock (one in use is left).  Returns how many records.
 */
size_t		 idem_prune(struct spool *, time_t before);

#endif

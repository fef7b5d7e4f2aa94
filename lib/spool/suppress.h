/*
 * suppress.h: each client's suppression lists (msgspool-spool(5),
 * Suppressions): the addresses a client's messages must not go to, one
 * list per client and channel.  A suppression is one JSON file,
 *
 *	suppressions/CLIENT/CHANNEL/ADDRESS.json
 *	{"version":1, "channel", "address", "source", "reason", "createdAt"}
 *
 * written durably (tmp/, fsync, rename, directory fsync), its name the
 * normalized address with unsafe bytes escaped, so that one lookup is
 * one open whatever the list's size, and grep and rm work on it too.
 * No state is kept in memory: several hosts share the lists on NFS.
 */
#ifndef SUPPRESS_H
#define SUPPRESS_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "base/channel.h"
#include "base/valid.h"

struct spool;

#define SUPPRESS_AREA		"suppressions"
/* An address, normalized, at most (an email's 254 and its NUL). */
#define SUPPRESS_ADDR_MAX	256

/*
 * The address as lists compare it (msgspool-spool(5), Suppressions):
 * E.164 "+digits" for sms and voice, digits for ott, an email address
 * with its domain lowercased; into out.  0, or -1 when addr is not
 * valid for the channel.
 */
int	 suppress_normalize(enum channel ch, const char *addr, char *out,
	    size_t outlen);

/*
 * The suppression of client's addr on channel ch (a new reference:
 * {"channel","address","source","reason","createdAt"}), or NULL when
 * there is none (errno 0) or on error (errno set).
 */
json_t	*suppress_get(struct spool *, const char *client, enum channel ch,
	    const char *addr);

/*
 * Suppress addr for client on ch, durably, with source ("manual",
 * "stop", "bounce", "unsubscribe") and reason (may be NULL): 1 added, 0
 * there already (left as it was), -1 with errno (EINVAL for an address
 * invalid for ch).  *out, when out is not NULL, gets the object (new
 * reference).
 */
int	 suppress_add(struct spool *, const char *client, enum channel ch,
	    const char *addr, const char *source, const char *reason,
	    json_t **out);

/*
 * Remove it; when only_source is not NULL only if its source is that
 * one (a START removes only a "stop"): 0 removed, 1 none (or of another
 * source), -1 with errno.
 */
int	 suppress_remove(struct spool *, const char *client, enum channel ch,
	    const char *addr, const char *only_source);

/*
 * A page of suppressions, newest first (by when they were made):
 * client's (NULL: every client's, each object then naming its "client"
 * too), on channel ch (CHANNEL__MAX: every channel), made before the one
 * the cursor after names (NULL: from the newest), at most limit of them
 * (0: all).  A new array; *next, when next is not NULL, gets the cursor
 * of the page after it (malloc'd), or NULL when this one is the last.
 * NULL with errno set on error (EINVAL: a client, channel or cursor
 * that is none).  Its cost grows with the lists it reads; a lookup's
 * (suppress_get) does not.
 */
json_t	*suppress_list(struct spool *, const char *client, enum channel ch,
	    const char *after, size_t limit, char **next);

/* Whether s is a cursor suppress_list makes (the "next" of a page). */
int	 suppress_cursor_valid(const char *s);

/*
 * Whether a message may go to its recipient (msgspool-spool(5),
 * Suppressions): the suppression of a spool document's recipient
 * ("to"), its client's on its channel, as suppress_get answers it (a
 * new reference; NULL with errno 0 when there is none, or set on
 * error).  A recipient that is no valid address of its channel is on
 * no list, and nothing stops a stop's confirmation
 * (msgdoc_is_stop_reply).  The one rule of the send programs (at
 * acceptance) and of msgspoold (before every attempt).
 */
json_t	*suppress_doc(struct spool *, const json_t *doc);

/*
 * One request's look at the lists its documents' recipients are checked
 * against (the messages of a batch: one client, mostly one channel): the
 * client's list of a channel found as suppress_get finds it, fresh, the
 * first time it is asked for, then kept open for the request's other
 * messages; a list that was not there is not looked for again in that
 * request.  So a batch of n messages costs one look-up of the list and n
 * of names, not n of each, and a batch of a client with no list costs
 * one.  Zeroed by suppress_look_init, ended by suppress_look_end.
 */
struct suppress_look {
	char	client[CLIENT_ID_MAX + 1];	/* "": nothing kept */
	int	ch;
	int	dfd;		/* the list's directory; -1: no such list */
};

void	 suppress_look_init(struct suppress_look *);
void	 suppress_look_end(struct suppress_look *);

/* suppress_doc, the list looked up through look. */
json_t	*suppress_doc_look(struct spool *, struct suppress_look *,
	    const json_t *doc);

/*
 * What a refused recipient is told, into buf: "suppressed (SOURCE)",
 * SOURCE the suppression's.  Returns buf.
 */
const char *suppress_why(const json_t *sup, char *buf, size_t len);

#endif

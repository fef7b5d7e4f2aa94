/*
 * route.h: the routes of a channel (msgspool.conf(5), Routes): which
 * config section sends a message, by the longest prefix of its
 * recipient, and which to try next when it cannot take it now.
 *
 * A channel's own section ([sms], [voice], [email], [ott.N]) is its
 * first route, named like the section; [route.NAME] sections with
 * "channel = sms|voice|email|ott.N" add others.  Every route may have:
 *
 *	prefix = +49 +43	the recipients it takes: leading digits of
 *				the number (sms, voice, ott; a "+" is
 *				optional), or "@domain" suffixes (email)
 *	fallback = NAME ...	routes of the same channel to try, in order
 *				(a route's name: "sms", or NAME of
 *				[route.NAME]),
 *				when this one cannot take the message now
 *	breaker = 5		temporary failures in a row that take it out
 *	breaker-time = 30s	for how long
 *
 * A message goes to the route with the longest matching prefix; what no
 * prefix claims goes to the first route without a prefix in the file
 * (the channel's own section when it has none); other routes without a
 * prefix serve as fallbacks only.  An sms, voice or email channel that
 * no section names has its own section as its one route (the file
 * provider's default); an ott.N needs [ott.N] or a route of it.
 *
 * The order a message tries: its route, then each route of its fallback
 * list with that route's own fallbacks after it, depth first, each route
 * once.  A circle of fallbacks is a config error.
 */
#ifndef ROUTE_H
#define ROUTE_H

#include <stddef.h>

#include "base/config.h"

#define ROUTE_PREFIX	"route."	/* [route.NAME] */
#define ROUTE_TRY_MAX	16		/* routes a message tries at most */
#define ROUTE_BREAKER_DEFAULT		5
#define ROUTE_BREAKER_TIME_DEFAULT	30

struct route_conf {
	const char	*name;		/* the route: "sms", "eu" */
	const char	*section;	/* its section: "sms", "route.eu" */
	const char	*channel;	/* "sms", "voice", "email", "ott.N" */
	char		**prefixes;	/* digits ("49"), or "@domain" lowercased */
	size_t		  nprefixes;
	char		**fallback;	/* route names, as written */
	size_t		  nfallback;
	long		  breaker;	/* failures in a row; >= 1 */
	long		  breaker_time;	/* seconds; >= 1 */
};

struct route_table;

/*
 * Read and check every route of cfg: a [route.NAME] needs a known
 * channel; a prefix must be digits (a leading "+" allowed) for sms,
 * voice and ott and "@domain" for email, and no two routes of a channel
 * may list the same one; a fallback must name a route of the same
 * channel, not itself, with no circle; breaker and breaker-time must be
 * whole numbers of at least 1 (breaker-time a duration: 30, 30s, 2min,
 * 1h).  NULL with a one-line reason in err ("[route.eu] fallback: no
 * route 'us'").  The table keeps pointers into cfg: free it first.
 */
struct route_table *route_table_new(const struct config *cfg, char *err,
		    size_t errlen);
void		 route_table_free(struct route_table *);

/*
 * The route a message to recipient on channel section chsec ("sms",
 * "ott.1") goes by first, or NULL when no route takes it (no-route).
 */
const struct route_conf *route_pick(const struct route_table *,
		    const char *chsec, const char *recipient);

/* The route of a name ("eu") or section ("route.eu"), or NULL. */
const struct route_conf *route_find(const struct route_table *,
		    const char *name);

/*
 * The routes a message tries, in order, starting with first: into out
 * (at most max); their count.
 */
size_t		 route_order(const struct route_table *,
		    const struct route_conf *first,
		    const struct route_conf **out, size_t max);

/* The routes of the table, for listing (msgspool status): the nth. */
const struct route_conf *route_at(const struct route_table *, size_t n);

#endif

/*
 * webhook_impl.h: what webhook.c and webhook_seen.c share, nothing else
 * sees: the webhooks' structure, and the names of events/ a scan knows
 * the client of (webhook.c's opening comment).
 */
#ifndef DAEMON_WEBHOOK_IMPL_H
#define DAEMON_WEBHOOK_IMPL_H

#include <stddef.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "daemon/webhook.h"
#include "providers/policy.h"
#include "spool/spool.h"

/* One event on its way. */
struct hook {
	char			 name[SPOOL_NAME_MAX];
	json_t			*ev;
	size_t			 client;	/* in webhooks' clients */
	CURL			*easy;
	struct curl_slist	*headers;
	char			*body;
	char			 curlerr[CURL_ERROR_SIZE];
};

/* An event due that a scan found, waiting for its client's turn. */
struct pending {
	char			 name[SPOOL_NAME_MAX];
	json_t			*ev;
};

/* A client with events, or with a webhook-url: never forgotten. */
struct client {
	char			*id;
	struct pending		*due;		/* cap of them, this scan */
	size_t			 ndue, next;
};

/* The client of an event in events/, by its name. */
struct seen {
	char			*name;
	size_t			 client;
	int			 moved;		/* name is the next scan's */
};

struct webhooks {
	CURLM			*multi;
	const struct config	*cfg;
	struct spool		*spool;
	size_t			 cap;
	long			 schedule[POLICY_WEBHOOK_TRIES_MAX];
	size_t			 nschedule;
	int			 once;
	int			 dirty;		/* scan at the next run */
	int			 any;		/* a client has a webhook-url */
	time_t			 next_scan;
	struct hook		**hooks;	/* in flight */
	size_t			 nhooks;
	time_t			 now;		/* of the scan under way */
	struct client		*clients;
	struct policy_webhook_client *turns;	/* each client's place */
	size_t			 nclients;
	size_t			 turn;		/* whose turn comes first */
	int			 more;		/* due events left waiting */
	struct seen		*seen, *seen_next; /* sorted by name */
	struct dmetrics		*metrics;	/* results counted */
	size_t			 nseen, nseen_next, seen_cap;
};

/* Forget the names of a scan (n of v), but those the next one took. */
void		 webhook_seen_free(struct seen *v, size_t n);

/* The client of events/name by the last scan, or NULL. */
struct seen	*webhook_seen_find(const struct webhooks *, const char *name);

/* Remember the client of events/name for the next scan. */
void		 webhook_seen_keep(struct webhooks *, const char *name,
		    size_t client);

/* The scan ended: the next knows what it saw (in name order). */
void		 webhook_seen_swap(struct webhooks *);

#endif

/*
 * daemon.h: what msgspoold's files share (msgspoold(8)): its intervals,
 * its routes (a provider instantiated for one config section) and its
 * state.  One daemon a process; nothing here is global.
 */
#ifndef DAEMON_H
#define DAEMON_H

#include <stddef.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "providers/provider.h"

struct config;
struct spool;
struct webhooks;
struct keeper;
struct job;
struct tidy;
struct route_table;
struct dmetrics;

#define RECOVER_EVERY	30	/* seconds between scans of cur/ */
#define PROMOTE_EVERY	60	/* at most this between scans of deferred/ */
#define RESCAN_EVERY	5	/* fallback scan of new/ without inotify */
#define NETFS_RESCAN_EVERY 1	/* on a network filesystem (inotify sees
				   only this host's files): within 2 s */
#define NETFS_RECOVER_EVERY 5	/* another host's dead claims come back
				   when its lease ends: look often */
#define PRUNE_EVERY	3600
#define TMP_MAX_AGE	(36 * 3600)
#define RECEIPT_KEEP	86400	/* a receipt waits this for its outcome */
#define RECEIPT_EVERY	1	/* seconds between scans of receipts/ */
#define INBOX_NOTE_KEEP	600	/* an inbound note waits this for its
				   message (inbox.h) */
#define WAIT_SESSIONS_MAX	16	/* sockets of sessions (smpp) waited on */
#define FLUSH_WAIT_MS	10	/* an outcome waits for others at most */
#define FULL_ROUTES_MAX	32	/* routes at their cap told the keeper */
/* Webhook transfers at most, beside "concurrency" messages. */
#define WEBHOOK_SHARE(conc)	((conc) / 4 > 1 ? (conc) / 4 : 1)

/*
 * A provider instantiated for one config section: a route
 * (msgspool.conf(5), Routes), with its breaker.
 */
struct route {
	char			*section;
	const char		*name;		/* "sms", NAME of [route.NAME] */
	const struct provider	*provider;
	void			*state;
	size_t			 inflight;
	/* The breaker: temporary failures in a row; out until out_until
	 * (0: in); one probe at a time once that has passed. */
	long			 breaker, breaker_time;
	long			 fails;
	time_t			 out_until;
	time_t			 since;		/* of its state */
	int			 probing;
	int			 proven;	/* answered since its last failure */
	int			 reported;	/* its status file written */
	char			 lasterr[512];
};

struct daemon {
	const char	*config_path;
	struct config	*cfg;
	struct spool	*spool;
	struct route	**routes;	/* each allocated alone: jobs point
					   at them while the array grows */
	struct route_table *rtable;	/* the config's routes (route.h) */
	size_t		 nroutes;
	long		 max_age;
	long		 retention;
	long		 idem_ttl;	/* idempotency-ttl */
	size_t		 concurrency;
	size_t		 route_cap;
	struct webhooks	*wh;		/* events to clients */

	CURLM		*multi;
	int		 ino;		/* inotify on new/ and deferred/ */
	int		 wd_new, wd_deferred;
	size_t		 inflight;
	int		 once;
	int		 netfs;		/* the spool is shared with other hosts */
	struct keeper	*keeper;	/* proves claims there (claimkeep.h) */
	struct recorder	*rec;		/* else outcomes written by it
					   (recorder.h) */
	size_t		 recording;	/* jobs either thread is recording */
	int		 spool_away;	/* its server does not answer */
	int		 new_dirty;	/* new/ may hold work */
	size_t		 skipped;	/* this scan: of saturated routes */
	time_t		 next_promote, next_recover, next_prune, next_rescan;
	time_t		 next_receipts;
	long		 parts_wait;	/* SMPP parts wait this for the rest */
	struct tidy	*tidying;	/* housekeeping the keeper runs */
	struct job	**done;		/* finished, outcome not yet recorded */
	size_t		 ndone, donecap;
	long long	 done_since;	/* when the first of them was seen
					   (monotonic ms), 0: none */
	size_t		 spool_errors;	/* claims or records the spool refused */
	time_t		 last_spool_log;
	struct dmetrics	*metrics;	/* its counts (daemon_metrics.h) */
};

/* daemon_config.c */
void		 routes_free(struct daemon *);
struct route	*route_get(struct daemon *, const char *section,
		    const char *channel, char *err, size_t errlen);
int		 load_config(struct daemon *);
/*
 * The route a message goes by: its channel's config section, or the
 * test keys' route; into buf, NULL when the message names no channel.
 */
const char	*route_section(const json_t *doc, char *buf, size_t len);
/*
 * The route a document goes by, or NULL with the reason in err and in
 * *status whether an operator can fix it (MSG_TEMPFAIL) or never
 * (MSG_PERMFAIL: the document names no channel).
 */
struct route	*route_of(struct daemon *, const json_t *doc, char *err,
		    size_t errlen, enum msg_status *status);

/*
 * daemon_routes.c: which route a job goes by, failover and the breaker
 * (msgspool.conf(5), Routes).
 *
 * job_plan: the routes job tries, in order, into job->tries; its first
 * usable one (the breaker lets it, a session is bound when more follow)
 * set as job->route.  0; or -1 with job's outcome set (a route no config
 * gives: TEMPFAIL, for an operator to mend; every route out: TEMPFAIL
 * until the first comes back in).
 */
int		 job_plan(struct daemon *, struct job *, time_t now);
/*
 * A job ended on its route: the breaker told; on a temporary failure
 * with a route left to try (and not stopping), the attempt recorded in
 * its document and the job made ready for the next route (1: start it
 * again); else 0.
 */
int		 job_failover(struct daemon *, struct job *, int stopping,
		    time_t now);
/* The status file of each route that changed (msgspool(8) status). */
void		 routes_report(struct daemon *);

/* daemon_chores.c */
void		 chores(struct daemon *, time_t now, int hold);
void		 chores_end(struct daemon *);

/*
 * daemon_receipts.c.  Receipts are applied with a spool handle and the
 * config, on the loop or on the keeper's housekeeping thread; events
 * says an event was stored for the webhooks to send, queued that a
 * message was queued (a keyword's reply) for the loop to send.
 */
struct receipts_run {
	struct spool		*spool;
	const struct config	*cfg;
	int			 events;
	int			 queued;
	struct dmetrics		*metrics;	/* counted there */
};
int		 index_provider_id(struct spool *, const json_t *doc);
int		 apply_receipt(void *run, const char *rname);

/*
 * daemon_inbox.c: spool_area_scan callback over inbox-new/ (run a
 * struct receipts_run): the inbound message of one note handed to its
 * client (msgspoold(8), Inbound messages).
 */
int		 hand_inbound(void *run, const char *name);

/*
 * daemon_bounce.c: the recipient of a message that a provider says can
 * never be reached suppressed for its client (source "bounce";
 * policy_unreachable).  bounce_outcome: from a finished attempt, before
 * its outcome is recorded (a list that cannot be written is logged).
 * bounce_receipt: from a receipt of doc, before it is applied; 0, or -1
 * when the list cannot be written now (the receipt is kept).
 */
void		 bounce_outcome(struct spool *, const struct job *);
int		 bounce_receipt(struct spool *, const json_t *doc,
		    const json_t *receipt);

/* daemon_record.c: the outcomes of jobs recorded, and jobs freed. */
void		 flush_done(struct daemon *);
/*
 * flush_done when it is due (msgspoold(8)): at once when the recorder's
 * thread records (it takes together all that wait); on the loop, once
 * half the slots' jobs have finished, or none is running, or the first
 * finished FLUSH_WAIT_MS ago, or now (the daemon stops or reloads); so
 * that the outcomes of more sends share a commit's syncs.
 */
void		 flush_due(struct daemon *, int now);
/* Milliseconds until the outcomes waiting are due, 0: now. */
int		 flush_wait_ms(struct daemon *);

/*
 * daemon_wait.c: wait for a transfer, a file in new/, a signal, the
 * next chore, or the outcomes waiting to be due; what inotify saw read.
 */
void		 wait_for_work(struct daemon *, time_t now, int reloading);
void		 collect_recorded(struct daemon *);
/*
 * daemon_batch.c: finished jobs whose outcomes are written together, on
 * a recording thread (record_async) or on the loop.
 */
struct batch {
	struct job		**jobs;
	struct spool_item	 *items;
	json_t			**evs;
	size_t			 *evitem;
	size_t			  n, nevs;
	size_t			  errors;	/* outcomes not recorded */
	int			  poke;		/* events were stored */
};

void		 batch_free(struct batch *);
/* Write b's events and outcomes with s, the log lines too. */
struct spool;
void		 record_batch(struct spool *s, void *b);
/* The recorder's work (recorder.h): batches of outcomes, as one. */
void		 record_batches(struct spool *, void **args, size_t n);
void		 job_free(struct job *);
/*
 * Whether a claimed job is not to be sent, its outcome set: its
 * recipient's suppression sup (stolen; msgspool-spool(5), Suppressions)
 * makes it failed, error code "suppressed", and a list that could not
 * be read (superr, its errno) tried again later.  0: send it.
 */
int		 job_refused(struct job *, json_t *sup, int superr);

#endif

/*
 * msgspoold: the spool daemon (msgspoold(8), msgspool-spool(5)).
 *
 *	msgspoold [-c FILE] [--once]
 *
 * It claims each file of new/ (an flock held for as long as the send
 * runs, and a rename into cur/), hands it to the provider its channel's
 * config section names, and records the outcome: sent/ with the
 * provider's reply, deferred/ with a backoff for what may succeed later,
 * failed/ with the reason for what never will.  Transfers run on one
 * curl multi handle, at most "concurrency" at once; once more than one
 * channel is in use, none may take more than three quarters of them, so
 * a slow one cannot starve the others.  inotify on new/ wakes it when a
 * message is queued; deferred files are due at their mtime.  Webhook
 * events to clients (webhook.c) go out on the same multi handle, in a
 * share of their own.  Housekeeping is daemon_chores.c's; on a spool
 * shared by several hosts, claims, records and housekeeping run in the
 * claim keeper's threads (claimkeep.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/channel.h"
#include "base/config.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/valid.h"
#include "daemon/claimkeep.h"
#include "daemon/recorder.h"
#include "daemon/webhook.h"
#include "http/rate.h"
#include "providers/policy.h"
#include "providers/provider.h"
#include "smpp/provider_smpp.h"
#include "spool/event.h"
#include "spool/list.h"
#include "spool/receipt.h"
#include "spool/spool.h"
#include "spool/suppress.h"

#include "daemon/daemon.h"
#include "daemon/daemon_metrics.h"

static void	 start_job(struct daemon *, struct job *, json_t *, int);

/* Set by signal handlers, read by the loop: the daemon's only globals. */
static volatile sig_atomic_t stopping, reloading;

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		reloading = 1;
	else
		stopping = 1;
}

static void	 launch(struct daemon *, struct job *);

/*
 * A job is over: on a temporary failure with a route left to try, on to
 * it at once (job_failover); else its slot released and its outcome
 * recorded in a batch.
 */
static void
job_done(struct daemon *d, struct job *job)
{
	struct job	**v;

	if (job_failover(d, job, stopping, time(NULL))) {
		launch(d, job);
		return;
	}
	if (job->route != NULL)
		job->route->inflight--;
	d->inflight--;
	d->new_dirty = 1;
	if (job->easy != NULL) {
		curl_easy_cleanup(job->easy);
		job->easy = NULL;
	}
	if (d->ndone == d->donecap) {
		v = reallocarray(d->done, d->donecap ? d->donecap * 2 : 64,
		    sizeof(*v));
		if (v == NULL) {
			/* Record it alone rather than lose track of it. */
			flush_done(d);
			if (d->ndone == d->donecap) {
				log_err("out of memory; %s stays in cur/",
				    job->name);
				job_free(job);
				return;
			}
		} else {
			d->done = v;
			d->donecap = d->donecap ? d->donecap * 2 : 64;
		}
	}
	d->done[d->ndone++] = job;
}

/*
 * The spool refused a claim or a record (read-only, full, permissions):
 * logged once a minute, counted for the exit status of --once.
 */
static void
spool_failure(struct daemon *d, const char *name, int e)
{
	time_t	now = time(NULL);

	d->spool_errors++;
	if (now - d->last_spool_log >= 60 || d->once) {
		log_err("spool: cannot claim %s: %s", name, strerror(e));
		d->last_spool_log = now;
	}
}

/* spool_scan callback: claim and start new/name.  1 stops the scan. */
static int
admit(void *arg, const char *name)
{
	struct daemon	*d = arg;
	struct job	*job;
	struct route	*r = NULL;
	json_t		*peek;
	enum msg_status	 st;
	char		 err[512];
	size_t		 i, cap;
	int		 fd, saturated = 0;

	/*
	 * A finished job whose outcome is not yet recorded is still in
	 * flight for a crash: a kill would send it again.  So it keeps its
	 * slot until it is recorded (flush_due), and a kill at any moment
	 * re-sends at most "concurrency" messages, even with a provider
	 * that finishes inside start().
	 */
	if (stopping || reloading || d->inflight + d->ndone + d->recording >=
	    d->concurrency) {
		d->new_dirty = 1;
		return 1;
	}
	/*
	 * The cap keeps one channel from starving the others; with only one
	 * channel in use it would only waste slots.  Only when a route is
	 * full is a file read before it is claimed.
	 */
	cap = d->nroutes > 1 ? d->route_cap : d->concurrency;
	for (i = 0; i < d->nroutes; i++)
		saturated |= d->routes[i]->inflight >= cap;
	if (saturated) {
		peek = spool_load(d->spool, SPOOL_NEW, name, err, sizeof(err));
		r = peek ? route_of(d, peek, err, sizeof(err), &st) : NULL;
		json_decref(peek);
		if (r != NULL && r->inflight >= (d->nroutes > 1 ?
		    d->route_cap : d->concurrency)) {
			/* Bounded: a long queue of one channel is not read
			 * through on every scan. */
			return ++d->skipped > 4 * d->concurrency;
		}
	}
	if ((job = calloc(1, sizeof(*job))) == NULL)
		return 1;
	job->lockfd = -1;
	snprintf(job->name, sizeof(job->name), "%s", name);
	err[0] = '\0';
	if ((fd = spool_claim(d->spool, name, &job->doc, err,
	    sizeof(err))) == -1) {
		/* Gone, or another daemon's: not an error.  Set aside: logged. */
		if (errno != ENOENT && errno != EBUSY && errno != EAGAIN &&
		    errno != EINVAL)
			spool_failure(d, name, errno);
		free(job);
		return 0;
	}
	job->lockfd = fd;
	if (job->doc == NULL) {
		log_err("%s; moved to failed/", err);
		spool_move(d->spool, SPOOL_CUR, SPOOL_FAILED, name);
		job_free(job);
		return 0;
	}
	peek = suppress_doc(d->spool, job->doc);
	start_job(d, job, peek, peek == NULL ? errno : 0);
	return 0;
}

/*
 * Start a claimed job: its route, its provider, its transfer; not when
 * its recipient's suppression sup (stolen), looked up when it was
 * claimed, or a list that could not be read (superr) stops it
 * (job_refused).  It counts as in flight from here until job_done.
 */
static void
start_job(struct daemon *d, struct job *job, json_t *sup, int superr)
{
	d->inflight++;
	if (job_refused(job, sup, superr)) {
		job_done(d, job);
		return;
	}
	/* Its route (msgspool.conf(5), Routes); none: the outcome says
	 * why (a config error an operator mends, every route out). */
	if (job_plan(d, job, time(NULL)) == -1) {
		job_done(d, job);
		return;
	}
	job->route->inflight++;
	launch(d, job);
}

/* Hand a job to its route's provider. */
static void
launch(struct daemon *d, struct job *job)
{
	struct route	*r = job->route;

	r->provider->start(r->state, job);
	if (job->pending)
		return;		/* a session has it (provider.h) */
	if (job->easy == NULL) {
		job_done(d, job);
		return;
	}
	if (curl_multi_add_handle(d->multi, job->easy) != CURLM_OK) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "cannot start transfer");
		job_done(d, job);
	}
}

/*
 * On a shared spool the keeper's thread claims (claimkeep.h): start what
 * it claimed while there is room, then ask for as much as is left.
 */
static void
feed_claims(struct daemon *d)
{
	struct claimed	*c;
	struct job	*job;
	json_t		*peek;
	const char	*full[FULL_ROUTES_MAX];
	size_t		 room, cap, i, nfull = 0;
	int		 superr;

	collect_recorded(d);
	for (;;) {
		/*
		 * As admit: finished jobs are recorded before slots are
		 * reused, so those being recorded still hold theirs.
		 */
		if (d->inflight + d->ndone + d->recording >= d->concurrency)
			flush_done(d);
		if (stopping || reloading || d->inflight + d->ndone +
		    d->recording >= d->concurrency)
			break;
		if ((c = keeper_take(d->keeper)) == NULL)
			break;
		if ((job = calloc(1, sizeof(*job))) == NULL) {
			keeper_release(c->kept);
			json_decref(c->doc);
			json_decref(c->sup);
			free(c);
			break;
		}
		job->lockfd = -1;
		snprintf(job->name, sizeof(job->name), "%s", c->name);
		job->doc = c->doc;
		job->kept = c->kept;
		peek = c->sup;
		superr = c->superr;
		free(c);
		start_job(d, job, peek, superr);
	}
	room = stopping || reloading || d->inflight + d->ndone +
	    d->recording >= d->concurrency ? 0 : d->concurrency -
	    d->inflight - d->ndone - d->recording;
	/* As admit: with more than one route in use, none over its cap. */
	cap = d->nroutes > 1 ? d->route_cap : d->concurrency;
	for (i = 0; i < d->nroutes && nfull < FULL_ROUTES_MAX; i++)
		if (d->routes[i]->inflight >= cap)
			full[nfull++] = d->routes[i]->section;
	keeper_want(d->keeper, room, d->new_dirty, full, nfull);
	d->new_dirty = 0;
}

/* Collect the transfers that ended. */
static void
reap(struct daemon *d)
{
	struct job	*job;
	struct route	*r;
	CURLMsg		*m;
	curl_off_t	 ra = 0, total;
	long		 code = 0;
	size_t		 i;
	int		 left;

	while ((m = curl_multi_info_read(d->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		code = 0;
		ra = 0;
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE,
		    &code);
		if (curl_easy_getinfo(m->easy_handle, CURLINFO_RETRY_AFTER,
		    &ra) != CURLE_OK)
			ra = 0;
		if (webhooks_reap(d->wh, m->easy_handle, m->data.result, code,
		    policy_retry_after((long long)ra)))
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
		    (char **)&job);
		job->retry_after = policy_retry_after((long long)ra);
		if (curl_easy_getinfo(m->easy_handle, CURLINFO_TOTAL_TIME_T,
		    &total) == CURLE_OK)
			dmetrics_duration(d->metrics, job->route->provider->name,
			    (double)total / 1e6);
		curl_multi_remove_handle(d->multi, m->easy_handle);
		job->route->provider->finish(job->route->state, job,
		    m->data.result, code);
		job_done(d, job);
	}
	/* And the providers with a session of their own (smpp). */
	for (i = 0; i < d->nroutes; i++) {
		r = d->routes[i];
		if (r->provider->run == NULL)
			continue;
		r->provider->run(r->state, stopping);
		while ((job = r->provider->reap(r->state)) != NULL)
			job_done(d, job);
	}
}

static void
usage(void)
{
	fprintf(stderr, "usage: msgspoold [-c FILE] [--once]\n");
}

int
main(int argc, char *argv[], char *envp[])
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, 'o' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct daemon		 d;
	struct netfs_mount	 mnt;
	struct sigaction	 sa;
	char			 path[4096], *end;
	const char		*wait;
	time_t			 now;
	int			 ch, running, last_pass = 0;

	memset(&d, 0, sizeof(d));
	d.ino = -1;
	d.config_path = config_default_path(envp);
	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'o':
			d.once = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 1;
		}
	}
	if (optind != argc) {
		usage();
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (d.multi = curl_multi_init()) == NULL) {
		log_err("libcurl cannot start");
		return 1;
	}
	/* For tests only (msgspoold(8), ENVIRONMENT): a shorter schedule. */
	if ((d.wh = webhooks_new(d.multi, getenv("MSGSPOOL_WEBHOOK_SCHEDULE"),
	    d.once)) == NULL) {
		log_err("MSGSPOOL_WEBHOOK_SCHEDULE: not seconds separated by "
		    "commas");
		curl_multi_cleanup(d.multi);
		return 1;
	}
	/* For tests only (msgspoold(8), ENVIRONMENT): parts wait less. */
	d.parts_wait = SMPP_PARTS_WAIT;
	if ((wait = getenv("MSGSPOOL_SMPP_PARTS_WAIT")) != NULL &&
	    ((d.parts_wait = strtol(wait, &end, 10)) < 1 || *end != '\0' ||
	    end == wait)) {
		log_err("MSGSPOOL_SMPP_PARTS_WAIT: not a number of seconds");
		webhooks_free(d.wh);
		curl_multi_cleanup(d.multi);
		return 1;
	}
	if (load_config(&d) == -1) {
		webhooks_free(d.wh);
		curl_multi_cleanup(d.multi);
		return 1;
	}
	/*
	 * Several hosts, one spool: only on a mount that keeps it safe
	 * (msgspool-spool(5)).  A table that cannot be read is no refusal.
	 */
	if ((ch = netfs_check(spool_root(d.spool), &mnt, path,
	    sizeof(path))) == -1 && !mnt.nfs)
		log_warn("spool: its filesystem is unknown: %s", path);
	else if (mnt.network)
		log_info("spool: on %s %s at %s, shared with other hosts: "
		    "new/ rescanned every %d s", mnt.fstype, mnt.source,
		    mnt.point, NETFS_RESCAN_EVERY);
	d.netfs = mnt.network;
	/* --once claims in its loop: it ends when one pass finds nothing. */
	if (d.netfs && !d.once && (d.keeper = keeper_new(spool_root(d.spool),
	    route_section, path, sizeof(path))) == NULL)
		ch = -1;
	/*
	 * The recorder's thread writes the outcomes while the loop goes on;
	 * without it (on this host's spool) the loop writes them.  A
	 * shared spool's server away is not waited for on the loop.
	 */
	list_keep(d.spool, !d.netfs);
	if (!(ch == -1 && (mnt.nfs || d.netfs)) && (d.rec = recorder_new(
	    spool_root(d.spool), record_batches, !d.netfs, path,
	    sizeof(path))) == NULL) {
		if (d.keeper != NULL)
			ch = -1;
		else
			log_warn("spool: %s; outcomes recorded by the loop",
			    path);
	}
	if ((ch == -1 && (mnt.nfs || d.netfs)) ||
	    spool_writable(d.spool, path, sizeof(path)) == -1) {
		log_err("spool: %s; not starting", path);
		recorder_free(d.rec);
		keeper_free(d.keeper);
		webhooks_free(d.wh);
		routes_free(&d);
		spool_free(d.spool);
		config_free(d.cfg);
		curl_multi_cleanup(d.multi);
		return 1;
	}
	if (!d.once && (d.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) != -1 &&
	    (spool_path(d.spool, SPOOL_NEW, "", path, sizeof(path)) == -1 ||
	    (d.wd_new = inotify_add_watch(d.ino, path, IN_MOVED_TO |
	    IN_CREATE | IN_CLOSE_WRITE)) == -1 ||
	    spool_path(d.spool, SPOOL_DEFERRED, "", path, sizeof(path)) == -1 ||
	    (d.wd_deferred = inotify_add_watch(d.ino, path, IN_MOVED_TO |
	    IN_CREATE | IN_CLOSE_WRITE | IN_ATTRIB)) == -1)) {
		log_warn("inotify on new/: %s; scanning every %d s",
		    strerror(errno), RESCAN_EVERY);
		close(d.ino);
		d.ino = -1;
	}
	/*
	 * The clients' lists (msgspool-spool(5), Lists): built from the
	 * files when they never were; else the lines a power failure may
	 * have lost written again.
	 */
	if (!list_built(d.spool)) {
		struct timespec	t0, t1;
		ssize_t		n;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		if ((n = list_reindex(d.spool, NULL, NULL, path,
		    sizeof(path))) == -1)
			log_err("lists: not built: %s; GET /messages reads "
			    "every file until msgspool reindex builds them",
			    path);
		else {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			log_info("lists: built, %zd messages listed in %.1f s",
			    n, (double)(t1.tv_sec - t0.tv_sec) +
			    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		}
	} else
		list_recover(d.spool, time(NULL) - LIST_RECOVER_SPAN);
	log_info("started: config %s, spool %s, concurrency %zu%s",
	    d.config_path, spool_root(d.spool), d.concurrency,
	    d.once ? ", once" : "");
	d.metrics = dmetrics_new(d.spool, time(NULL));
	webhooks_metrics(d.wh, d.metrics);
	d.new_dirty = 1;
	for (;;) {
		if (reloading && d.inflight == 0 && d.recording == 0 &&
		    d.tidying == NULL) {
			reloading = 0;
			if (load_config(&d) == 0)
				log_info("reloaded %s", d.config_path);
			d.new_dirty = 1;
		}
		now = time(NULL);
		collect_recorded(&d);
		if (!stopping) {
			chores(&d, now, reloading);
			if (d.keeper != NULL) {
				/* A send starts with reads of the spool
				 * (attachments): none while it is away. */
				if (!d.spool_away)
					feed_claims(&d);
				flush_done(&d);
			} else if (d.new_dirty && d.inflight + d.ndone +
			    d.recording < d.concurrency &&
			    !reloading) {
				d.new_dirty = 0;
				d.skipped = 0;
				spool_scan_on(d.spool, SPOOL_NEW, admit, &d);
				flush_due(&d, stopping || reloading);
			}
		}
		if (d.inflight == 0 && d.recording == 0 && (stopping ||
		    (d.once && !d.new_dirty && !webhooks_busy(d.wh)))) {
			/* --once: the receipts this run made (test keys) too. */
			if (d.once && !stopping && !last_pass) {
				last_pass = 1;
				d.next_receipts = 0;
				continue;
			}
			break;
		}
		curl_multi_perform(d.multi, &running);
		reap(&d);
		flush_due(&d, stopping || reloading);
		if (d.inflight == 0 && d.once && !d.new_dirty &&
		    !webhooks_busy(d.wh) && last_pass)
			break;
		wait_for_work(&d, time(NULL), reloading);
		curl_multi_perform(d.multi, &running);
		reap(&d);
		flush_due(&d, stopping || reloading);
	}
	flush_done(&d);		/* none left: nothing runs any more */
	recorder_finish(d.rec);
	collect_recorded(&d);
	recorder_free(d.rec);
	free(d.done);
	keeper_free(d.keeper);
	/* Its counts as it stops (msgspoold(8), Metrics). */
	dmetrics_write(&d, time(NULL));
	webhooks_metrics(d.wh, NULL);
	dmetrics_free(d.metrics);
	chores_end(&d);
	log_info("stopped");
	if (d.ino != -1)
		close(d.ino);
	webhooks_free(d.wh);
	routes_free(&d);
	curl_multi_cleanup(d.multi);
	curl_global_cleanup();
	spool_claim_linked(d.spool, 0);
	spool_free(d.spool);
	config_free(d.cfg);
	if (d.once && d.spool_errors > 0) {
		log_err("%zu messages could not be claimed or recorded",
		    d.spool_errors);
		return 1;
	}
	return 0;
}

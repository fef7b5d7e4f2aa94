/*
 * msgspoold: the spool daemon.  It moves due files from deferred/ to
 * new/, claims each file of new/ by renaming it into cur/, hands it to
 * the provider its channel's config section names, and records the
 * outcome: sent/, deferred/ (to retry) or failed/ (CONTRACT section 8).
 *
 *	msgspoold [-c FILE] [--once]
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "provider.h"
#include "spool.h"
#include "valid.h"

/* Backoff: 1 minute doubling to an hour, +-20% jitter. */
#define BACKOFF_FIRST	60
#define BACKOFF_MAX	3600
#define SCAN_INTERVAL	1	/* seconds between scans when idle */
#define ONCE_PASSES	100	/* bound on --once passes */

/* A provider instantiated for one config section. */
struct route {
	char			*section;
	const struct provider	*provider;
	void			*state;
};

struct daemon {
	const char	*config_path;
	struct config	*cfg;
	struct spool	*spool;
	struct route	*routes;
	size_t		 nroutes;
	long		 max_age;
};

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

static void
routes_free(struct daemon *d)
{
	size_t	i;

	for (i = 0; i < d->nroutes; i++) {
		if (d->routes[i].provider != NULL)
			d->routes[i].provider->free_state(d->routes[i].state);
		free(d->routes[i].section);
	}
	free(d->routes);
	d->routes = NULL;
	d->nroutes = 0;
}

/*
 * The route of a config section, made on first use.  NULL with a reason
 * in err when the section names an unknown provider or its keys are bad.
 */
static struct route *
route_get(struct daemon *d, const char *section, char *err, size_t errlen)
{
	struct route	*r;
	const char	*name;
	size_t		 i;

	for (i = 0; i < d->nroutes; i++)
		if (strcmp(d->routes[i].section, section) == 0)
			return &d->routes[i];
	if ((name = config_get(d->cfg, section, "provider")) == NULL)
		name = "file";
	r = reallocarray(d->routes, d->nroutes + 1, sizeof(*r));
	if (r == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->routes = r;
	r = &d->routes[d->nroutes];
	memset(r, 0, sizeof(*r));
	if ((r->provider = provider_find(name)) == NULL) {
		snprintf(err, errlen, "[%s]: unknown provider '%s'", section,
		    name);
		return NULL;
	}
	if ((r->state = r->provider->init(d->cfg, section,
	    spool_root(d->spool), err, errlen)) == NULL)
		return NULL;
	if ((r->section = strdup(section)) == NULL) {
		r->provider->free_state(r->state);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->nroutes++;
	return r;
}

static int
load_config(struct daemon *d)
{
	struct config	*cfg;
	struct spool	*spool;
	struct limits	 lim;
	char		 err[512], *root;
	long		 max_age;

	if ((cfg = config_load(d->config_path, err, sizeof(err))) == NULL ||
	    config_limits(cfg, &lim, err, sizeof(err)) == -1) {
		log_err("config: %s", err);
		config_free(cfg);
		return -1;
	}
	if (config_seconds(cfg, NULL, "max-age", 86400, &max_age) == -1) {
		log_err("config: max-age: not a duration");
		config_free(cfg);
		return -1;
	}
	if ((root = config_path(cfg, NULL, "spool", "spool")) == NULL ||
	    (spool = spool_open(root, 1, err, sizeof(err))) == NULL) {
		log_err("spool: %s", root ? err : "out of memory");
		free(root);
		config_free(cfg);
		return -1;
	}
	free(root);
	routes_free(d);
	spool_free(d->spool);
	config_free(d->cfg);
	d->cfg = cfg;
	d->spool = spool;
	d->max_age = max_age;
	return 0;
}

/* Seconds to wait before attempt number attempts + 1. */
static long
backoff(long attempts)
{
	unsigned short	r = 0;
	long		delay = BACKOFF_FIRST;

	while (--attempts > 0 && delay < BACKOFF_MAX)
		delay *= 2;
	if (delay > BACKOFF_MAX)
		delay = BACKOFF_MAX;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned short)getpid();
	/* Jitter keeps a burst of failures from retrying in lockstep. */
	return delay * 8 / 10 + (long)(r % (unsigned)(delay * 4 / 10 + 1));
}

/* The recipient of a message, for logs. */
static const char *
recipient(const json_t *doc)
{
	const char	*to;

	to = json_string_value(json_object_get(json_object_get(doc,
	    "message"), "to"));
	return to ? to : "?";
}

/*
 * Record the outcome of an attempt on cur/name and move it on.
 */
static void
record(struct daemon *d, const char *name, json_t *doc, enum msg_status st,
    json_t *reply, const char *why)
{
	enum spool_dir	 dest;
	const char	*id, *created;
	char		 stamp[32];
	time_t		 now = time(NULL), born;
	long		 attempts;

	id = json_string_value(json_object_get(doc, "id"));
	attempts = (long)json_integer_value(json_object_get(doc,
	    "attempts")) + 1;
	json_object_set_new(doc, "attempts", json_integer(attempts));
	spool_time_format(now, stamp, sizeof(stamp));
	json_object_set_new(doc, "lastAttempt", json_string(stamp));
	switch (st) {
	case MSG_OK:
		dest = SPOOL_SENT;
		json_object_set_new(doc, "lastError", json_null());
		json_object_set(doc, "providerReply", reply ? reply :
		    json_null());
		json_object_set_new(doc, "nextAttempt", json_null());
		break;
	case MSG_TEMPFAIL:
		dest = SPOOL_DEFERRED;
		created = json_string_value(json_object_get(doc, "created"));
		if (created != NULL && valid_time_parse(created, &born) == 0 &&
		    now - born >= d->max_age) {
			dest = SPOOL_FAILED;
			json_object_set_new(doc, "lastError", json_pack(
			    "s++", why, " (gave up: older than max-age)", ""));
			json_object_set_new(doc, "nextAttempt", json_null());
			break;
		}
		json_object_set_new(doc, "lastError", json_string(why));
		spool_time_format(now + backoff(attempts), stamp,
		    sizeof(stamp));
		json_object_set_new(doc, "nextAttempt", json_string(stamp));
		break;
	default:
		dest = SPOOL_FAILED;
		json_object_set_new(doc, "lastError", json_string(why));
		json_object_set_new(doc, "nextAttempt", json_null());
		break;
	}
	if (spool_store(d->spool, dest, name, doc, SPOOL_CUR) != MSG_OK) {
		/* Left in cur/: it goes back to new/ at the next start. */
		log_err("%s: cannot record outcome in %s/", id,
		    spool_dirname(dest));
		return;
	}
	if (dest == SPOOL_SENT)
		log_info("sent %s channel=%s to=%s", id,
		    json_string_value(json_object_get(doc, "channel")),
		    recipient(doc));
	else
		log_warn("%s %s to=%s attempts=%ld: %s",
		    dest == SPOOL_DEFERRED ? "deferred" : "failed", id,
		    recipient(doc), attempts, why);
}

/* Claim and send new/name.  Returns 1 when it was ours to send. */
static int
deliver(struct daemon *d, const char *name)
{
	struct route	*r;
	json_t		*doc, *reply = NULL;
	char		 err[512] = "", section[64];
	enum msg_status	 st;

	/* The rename is the claim: only one daemon's can succeed. */
	if (spool_move(d->spool, SPOOL_NEW, SPOOL_CUR, name) == -1) {
		if (errno != ENOENT)
			log_err("claim %s: %s", name, strerror(errno));
		return 0;
	}
	if ((doc = spool_load(d->spool, SPOOL_CUR, name, err,
	    sizeof(err))) == NULL) {
		log_err("%s; moved to failed/", err);
		spool_move(d->spool, SPOOL_CUR, SPOOL_FAILED, name);
		return 1;
	}
	if (provider_section(doc, section, sizeof(section)) == NULL) {
		st = MSG_PERMFAIL;
		snprintf(err, sizeof(err), "no channel to route by");
	} else if ((r = route_get(d, section, err, sizeof(err))) == NULL) {
		/* A config error: keep the message until it is fixed. */
		st = MSG_TEMPFAIL;
	} else
		st = r->provider->send(r->state, doc, &reply, err,
		    sizeof(err));
	record(d, name, doc, st, reply, err);
	json_decref(reply);
	json_decref(doc);
	return 1;
}

/* Move the due files of deferred/ to new/.  Returns how many. */
static size_t
promote(struct daemon *d)
{
	char		**names, err[512];
	const char	*next;
	json_t		*doc;
	time_t		 now = time(NULL), when;
	ssize_t		 n, i;
	size_t		 moved = 0;

	if ((n = spool_list(d->spool, SPOOL_DEFERRED, &names)) == -1) {
		log_err("deferred/: %s", strerror(errno));
		return 0;
	}
	for (i = 0; i < n && !stopping; i++) {
		if ((doc = spool_load(d->spool, SPOOL_DEFERRED, names[i], err,
		    sizeof(err))) == NULL) {
			if (errno != ENOENT)
				log_err("%s", err);
			continue;
		}
		next = json_string_value(json_object_get(doc, "nextAttempt"));
		if (next == NULL || valid_time_parse(next, &when) == -1 ||
		    when <= now) {
			if (spool_move(d->spool, SPOOL_DEFERRED, SPOOL_NEW,
			    names[i]) == 0)
				moved++;
		}
		json_decref(doc);
	}
	spool_names_free(names, (size_t)n);
	return moved;
}

/* One pass over new/.  Returns how many messages were attempted. */
static size_t
drain(struct daemon *d)
{
	char	**names;
	ssize_t	  n, i;
	size_t	  sent = 0;

	if ((n = spool_list(d->spool, SPOOL_NEW, &names)) == -1) {
		log_err("new/: %s", strerror(errno));
		return 0;
	}
	for (i = 0; i < n && !stopping; i++)
		sent += (size_t)deliver(d, names[i]);
	spool_names_free(names, (size_t)n);
	return sent;
}

/*
 * Claims in cur/ at start belong to a daemon that died mid-send (only
 * one daemon runs per spool in this version): put them back.
 */
static void
recover(struct daemon *d)
{
	char	**names;
	ssize_t	  n, i;

	if ((n = spool_list(d->spool, SPOOL_CUR, &names)) == -1)
		return;
	for (i = 0; i < n; i++)
		if (spool_move(d->spool, SPOOL_CUR, SPOOL_NEW, names[i]) == 0)
			log_warn("recovered %s from cur/", names[i]);
	spool_names_free(names, (size_t)n);
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
	struct sigaction	 sa;
	int			 ch, once = 0, passes;

	memset(&d, 0, sizeof(d));
	d.config_path = config_default_path(envp);
	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'o':
			once = 1;
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
	/* No SA_RESTART: a signal cuts the idle sleep short. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (load_config(&d) == -1)
		return 1;
	log_info("started: config %s, spool %s%s", d.config_path,
	    spool_root(d.spool), once ? ", once" : "");
	recover(&d);
	for (passes = 0; !stopping; passes++) {
		if (reloading) {
			reloading = 0;
			if (load_config(&d) == 0)
				log_info("reloaded %s", d.config_path);
		}
		promote(&d);
		if (drain(&d) > 0) {
			/* More may have come; --once stays bounded. */
			if (once && passes >= ONCE_PASSES)
				break;
			continue;
		}
		if (once)
			break;
		sleep(SCAN_INTERVAL);
	}
	log_info("stopped");
	routes_free(&d);
	spool_free(d.spool);
	config_free(d.cfg);
	return 0;
}

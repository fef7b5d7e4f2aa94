/*
 * daemon_config.c: msgspoold's config (msgspool.conf(5)): its keys, its
 * provider sections checked and instantiated as routes, and a reload.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/channel.h"
#include "base/config.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/valid.h"
#include "content/keyword.h"
#include "content/unsub.h"
#include "daemon/claimkeep.h"
#include "content/route.h"
#include "daemon/daemon.h"
#include "daemon/webhook.h"
#include "http/idem.h"
#include "http/rate.h"
#include "providers/policy.h"
#include "providers/provider.h"
#include "smpp/provider_smpp.h"
#include "spool/blob.h"
#include "spool/dsync.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/msgdoc.h"
#include "spool/receipt.h"
#include "spool/spool.h"

void
routes_free(struct daemon *d)
{
	size_t	i;

	for (i = 0; i < d->nroutes; i++) {
		d->routes[i]->provider->free_state(d->routes[i]->state);
		free(d->routes[i]->section);
		free(d->routes[i]);
	}
	free(d->routes);
	d->routes = NULL;
	d->nroutes = 0;
	route_table_free(d->rtable);
	d->rtable = NULL;
}

const char *
route_section(const json_t *doc, char *buf, size_t len)
{
	if (msgdoc_is_test(doc) && msgdoc_channel(doc) != NULL) {
		snprintf(buf, len, "%s", PROVIDER_TEST_SECTION);
		return buf;
	}
	return channel_section(doc, buf, len);
}

/*
 * The providers a section may name (msgspool.conf(5)): the daemon holds
 * the table, so that the providers, smpp among them, never call up.
 */
static const struct provider *const providers[] = {
	&provider_file,
	&provider_http,
	&provider_smpp,
	&provider_smtp,
	&provider_twilio,
	&provider_whatsapp,
};

static const struct provider *
provider_find(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}

/*
 * The route a document goes by, or NULL with the reason in err and in
 * *status whether an operator can fix it (MSG_TEMPFAIL: a section's
 * provider or keys are wrong) or never (MSG_PERMFAIL: the document
 * names no channel).
 */
struct route *
route_of(struct daemon *d, const json_t *doc, char *err, size_t errlen,
    enum msg_status *status)
{
	const struct route_conf	*c;
	char			 section[64];
	struct route		*r;

	*status = MSG_PERMFAIL;
	if (route_section(doc, section, sizeof(section)) == NULL) {
		snprintf(err, errlen, "no channel to route by");
		return NULL;
	}
	if (strcmp(section, PROVIDER_TEST_SECTION) == 0)
		return route_get(d, section, msgdoc_channel(doc), err, errlen);
	/* Its first route (msgspool.conf(5), Routes). */
	*status = MSG_TEMPFAIL;
	if ((c = route_pick(d->rtable, section, msgdoc_recipient(doc))) ==
	    NULL) {
		snprintf(err, errlen, "no route takes %s (%s)",
		    msgdoc_recipient(doc), section);
		return NULL;
	}
	r = route_get(d, c->section, json_string_value(json_object_get(doc,
	    "channel")), err, errlen);
	return r;
}

/*
 * The route of a config section, made on first use.  NULL with a reason
 * in err when the section names an unknown provider or its keys are bad.
 */
struct route *
route_get(struct daemon *d, const char *section, const char *channel,
    char *err, size_t errlen)
{
	const struct provider	*p;
	struct route		*r, **v;
	const char		*name;
	void			*state;
	size_t			 i;

	for (i = 0; i < d->nroutes; i++)
		if (strcmp(d->routes[i]->section, section) == 0)
			return d->routes[i];
	if ((name = config_get(d->cfg, section, "provider")) == NULL)
		name = "file";
	/* A test key's messages go nowhere a config could name. */
	if (strcmp(section, PROVIDER_TEST_SECTION) == 0) {
		p = &provider_test;
		name = p->name;
	} else if ((p = provider_find(name)) == NULL) {
		snprintf(err, errlen, "[%s]: unknown provider '%s'", section,
		    name);
		return NULL;
	}
	if (!provider_serves(p, channel)) {
		snprintf(err, errlen, "[%s]: provider '%s' does not send %s",
		    section, name, channel);
		return NULL;
	}
	if ((state = p->init(d->cfg, section, spool_root(d->spool), err,
	    errlen)) == NULL)
		return NULL;
	if ((v = reallocarray(d->routes, d->nroutes + 1, sizeof(*v))) != NULL)
		d->routes = v;
	if (v == NULL || (r = calloc(1, sizeof(*r))) == NULL ||
	    (r->section = strdup(section)) == NULL) {
		if (v != NULL && r != NULL)
			free(r);
		p->free_state(state);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->routes[d->nroutes++] = r;
	r->provider = p;
	r->state = state;
	r->inflight = 0;
	/* Its breaker's defaults until its route is planned (route.h). */
	r->breaker = ROUTE_BREAKER_DEFAULT;
	r->breaker_time = ROUTE_BREAKER_TIME_DEFAULT;
	log_info("[%s]: provider %s", section, name);
	return r;
}

/*
 * Check every section of a config before it is used: its secrets, a
 * known channel, a provider that serves it, and keys its provider
 * accepts (a client's webhook, rate and list-unsubscribe for a client
 * section), and the top-level secrets.  So
 * a typo stops the daemon at start (or keeps the old config on SIGHUP)
 * instead of deferring every message until max-age.  0, or -1 (logged).
 */
static int
check_sections(const struct config *cfg, const char *root)
{
	struct rate		 rt;
	const struct provider	*p;
	struct unsub		*links = NULL;
	const char		*sec, *name, *ch;
	char			 err[512];
	void			*state;
	size_t			 i;
	int			 c, rc = 0;

	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++) {
		/*
		 * Every secret the section gives, used here or only by the
		 * receipts program: an empty or weak one would let anyone
		 * sign (msgspool.conf(5), Values).
		 */
		if (config_secrets_check(cfg, sec, err, sizeof(err)) == -1) {
			log_err("config: %s", err);
			rc = -1;
			continue;
		}
		if (strncmp(sec, "client.", 7) == 0) {
			/* A client's webhook (msgspool.conf(5)). */
			if (event_check_section(cfg, sec, err, sizeof(err)) ==
			    -1) {
				log_err("config: %s", err);
				rc = -1;
			}
			/* The numbers of its inbound messages. */
			if (inbox_check_section(cfg, sec, err, sizeof(err)) ==
			    -1) {
				log_err("config: %s", err);
				rc = -1;
			}
			/* Its keywords, their replies, its stop-channels. */
			if (keyword_check_section(cfg, sec, err, sizeof(err)) ==
			    -1) {
				log_err("config: %s", err);
				rc = -1;
			}
			/* Its rate, which the CGI programs count by. */
			if (config_get(cfg, sec, "rate") != NULL &&
			    rate_parse(config_get(cfg, sec, "rate"), &rt) ==
			    -1) {
				log_err("config: [%s] rate: not N/s, N/min or "
				    "N/h", sec);
				rc = -1;
			}
			continue;
		}
		if ((c = channel_of_section(sec)) != -1)
			ch = channel_info((enum channel)c)->name;
		else if (strncmp(sec, ROUTE_PREFIX, strlen(ROUTE_PREFIX)) ==
		    0 && (c = channel_of_section(config_get(cfg, sec,
		    "channel") ? config_get(cfg, sec, "channel") : "")) != -1)
			/* A route of a channel (route.h checks the rest). */
			ch = channel_info((enum channel)c)->name;
		else if (strncmp(sec, ROUTE_PREFIX, strlen(ROUTE_PREFIX)) ==
		    0)
			continue;	/* route_table_new says what is wrong */
		else {
			log_err("config: [%s]: not a channel (sms, voice, "
			    "email, ott.N), a route (route.NAME) nor a client "
			    "(client.ID)", sec);
			rc = -1;
			continue;
		}
		if ((name = config_get(cfg, sec, "provider")) == NULL)
			name = "file";
		if ((p = provider_find(name)) == NULL ||
		    !provider_serves(p, ch)) {
			log_err("config: [%s]: provider '%s' %s", sec, name,
			    p ? "does not send this channel" : "is unknown");
			rc = -1;
			continue;
		}
		if ((state = p->init(cfg, sec, root, err, sizeof(err))) ==
		    NULL) {
			log_err("config: %s", err);
			rc = -1;
			continue;
		}
		p->free_state(state);
	}
	/*
	 * The top-level secrets, and what a client's list-unsubscribe = yes
	 * needs (public-url, unsubscribe-secret), whatever its email's
	 * provider: its links are in every email it sends.
	 */
	if (config_secrets_check(cfg, NULL, err, sizeof(err)) == -1 ||
	    (links = unsub_new(cfg, err, sizeof(err))) == NULL) {
		log_err("config: %s", err);
		rc = -1;
	}
	unsub_free(links);
	return rc;
}

/*
 * The routes of providers with a session of their own (smpp), made at
 * start and on reload rather than with a first message: delivery
 * receipts come in on the session whether or not there is anything to
 * send.  Not with --once, which binds only to send.
 */
static void
open_sessions(struct daemon *d)
{
	const struct provider	*p;
	const char		*sec, *name;
	char			 err[512];
	size_t			 i;
	int			 c;

	const struct route_conf	*rc;

	/* Every route's, its channel's own section's or [route.NAME]'s. */
	for (i = 0; !d->once && (rc = route_at(d->rtable, i)) != NULL; i++) {
		sec = rc->section;
		if ((name = config_get(d->cfg, sec, "provider")) != NULL &&
		    (p = provider_find(name)) != NULL && p->run != NULL &&
		    (c = channel_of_section(rc->channel)) != -1 &&
		    route_get(d, sec, channel_info((enum channel)c)->name, err,
		    sizeof(err)) == NULL)
			log_err("config: %s", err);
	}
}

/*
 * A reload keeps the spool (msgspoold(8), SIGHUP): the watches, the
 * mount checks and, on a shared spool, the keeper's claims are of the
 * directory the daemon started with.  Whether root is still it.
 */
static int
same_spool(const struct spool *sp, const char *root)
{
	struct stat	a, b;

	if (stat(spool_root(sp), &a) == 0 && stat(root, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 1;
	log_err("config: spool is %s, was %s: a reload keeps the spool; "
	    "restart msgspoold to move it", root, spool_root(sp));
	return 0;
}

int
load_config(struct daemon *d)
{
	struct config	*cfg;
	struct spool	*spool;
	struct limits	 lim;
	struct route_table *rt;
	char		 err[512], *root;
	long		 max_age, retention, idem_ttl;
	size_t		 conc;
	enum spool_sync	 how;

	if ((cfg = config_load(d->config_path, err, sizeof(err))) == NULL ||
	    config_limits(cfg, &lim, err, sizeof(err)) == -1) {
		log_err("config: %s", err);
		config_free(cfg);
		return -1;
	}
	if (config_seconds(cfg, NULL, "max-age", 86400, &max_age) == -1 ||
	    config_seconds(cfg, NULL, "retention", 7 * 86400, &retention) ==
	    -1 || config_size(cfg, NULL, "concurrency", 16, &conc) == -1 ||
	    conc < 1 || conc > 1024 || config_seconds(cfg, NULL,
	    "idempotency-ttl", IDEM_TTL, &idem_ttl) == -1 || idem_ttl <= 0) {
		log_err("config: max-age, retention, idempotency-ttl or "
		    "concurrency (1 to 1024) is not valid");
		config_free(cfg);
		return -1;
	}
	/* Read by the web server's programs: a typo stops us too. */
	if (spool_sync_parse(config_get(cfg, NULL, "sync"), &how) == -1) {
		log_err("config: sync = %s: neither file nor filesystem",
		    config_get(cfg, NULL, "sync"));
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
	/* Its routes: a bad one stops the daemon at start. */
	if ((rt = route_table_new(cfg, err, sizeof(err))) == NULL)
		log_err("config: %s", err);
	if (rt == NULL || check_sections(cfg, root) == -1 ||
	    (d->spool != NULL && !same_spool(d->spool, root))) {
		route_table_free(rt);
		free(root);
		spool_free(spool);
		config_free(cfg);
		return -1;
	}
	free(root);
	routes_free(d);
	d->rtable = rt;
	spool_free(d->spool);
	config_free(d->cfg);
	d->cfg = cfg;
	d->spool = spool;
	/* Its claims' owner records: links, no file made a claim. */
	spool_claim_linked(spool, 1);
	d->max_age = max_age;
	d->retention = retention;
	d->idem_ttl = idem_ttl;
	d->concurrency = conc;
	d->route_cap = conc > 1 ? conc * 3 / 4 : 1;
	/* Webhooks: a quarter more, never taken from messages. */
	webhooks_configure(d->wh, cfg, spool, WEBHOOK_SHARE(conc));
	curl_multi_setopt(d->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
	    (long)(conc + WEBHOOK_SHARE(conc)));
	curl_multi_setopt(d->multi, CURLMOPT_MAXCONNECTS,
	    (long)(conc + WEBHOOK_SHARE(conc)));
	open_sessions(d);
	return 0;
}

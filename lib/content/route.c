/*
 * route.c: the routes of each channel (route.h; msgspool.conf(5),
 * Routes): read and checked from the config, a message's first route by
 * the longest prefix of its recipient, and the order its fallbacks are
 * tried in.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/channel.h"
#include "base/util.h"
#include "content/route.h"

struct route_table {
	struct route_conf	*v;
	size_t			 n;
};

static void
conf_free(struct route_conf *r)
{
	size_t	i;

	for (i = 0; i < r->nprefixes; i++)
		free(r->prefixes[i]);
	free(r->prefixes);
	for (i = 0; i < r->nfallback; i++)
		free(r->fallback[i]);
	free(r->fallback);
}

void
route_table_free(struct route_table *t)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++)
		conf_free(&t->v[i]);
	free(t->v);
	free(t);
}

/* Split a value into words (blanks or commas); a malloc'd array. */
static char **
words(const char *v, size_t *n)
{
	char		**w = NULL, **nw;
	const char	 *p = v, *e;
	size_t		  cap = 0;

	*n = 0;
	while (p != NULL && *p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		for (e = p; *e != '\0' && *e != ' ' && *e != '\t' &&
		    *e != ','; e++)
			;
		if (*n == cap) {
			cap = cap ? cap * 2 : 4;
			if ((nw = reallocarray(w, cap, sizeof(*w))) == NULL)
				goto fail;
			w = nw;
		}
		if ((w[*n] = strndup(p, (size_t)(e - p))) == NULL)
			goto fail;
		(*n)++;
		p = e;
	}
	return w;
fail:
	while (*n > 0)
		free(w[--(*n)]);
	free(w);
	*n = (size_t)-1;
	return NULL;
}

/*
 * A prefix as compared: digits (a leading "+" dropped) for a number,
 * "@domain" lowercased for email.  0, or -1 when it is neither.
 */
static int
prefix_norm(char *p, int email)
{
	char	*s;

	if (email) {
		if (p[0] != '@' || p[1] == '\0')
			return -1;
		for (s = p + 1; *s != '\0'; s++) {
			if (!isalnum((unsigned char)*s) && *s != '.' &&
			    *s != '-')
				return -1;
			*s = (char)tolower((unsigned char)*s);
		}
		return 0;
	}
	if (*p == '+')
		memmove(p, p + 1, strlen(p));
	if (*p == '\0' || strlen(p) > 15)
		return -1;
	for (s = p; *s != '\0'; s++)
		if (!isdigit((unsigned char)*s))
			return -1;
	return 0;
}

static int
is_email(const char *channel)
{
	return strcmp(channel, "email") == 0;
}

/* Add the route of section sec for channel ch; 0, or -1 with err. */
static int
add(struct route_table *t, const struct config *cfg, const char *sec,
    const char *ch, char *err, size_t errlen)
{
	struct route_conf	*r, *nv;
	const char		*v;
	size_t			 i;

	if ((nv = reallocarray(t->v, t->n + 1, sizeof(*nv))) == NULL) {
		util_seterr(err, errlen, "out of memory");
		return -1;
	}
	t->v = nv;
	r = &t->v[t->n++];
	memset(r, 0, sizeof(*r));
	r->section = sec;
	r->name = strncmp(sec, ROUTE_PREFIX, strlen(ROUTE_PREFIX)) == 0 ?
	    sec + strlen(ROUTE_PREFIX) : sec;
	r->channel = ch;
	r->prefixes = words(config_get(cfg, sec, "prefix"), &r->nprefixes);
	r->fallback = words(config_get(cfg, sec, "fallback"), &r->nfallback);
	if (r->nprefixes == (size_t)-1 || r->nfallback == (size_t)-1) {
		r->nprefixes = r->nprefixes == (size_t)-1 ? 0 : r->nprefixes;
		r->nfallback = r->nfallback == (size_t)-1 ? 0 : r->nfallback;
		util_seterr(err, errlen, "out of memory");
		return -1;
	}
	if ((v = config_get(cfg, sec, "prefix")) != NULL && r->nprefixes == 0) {
		util_seterr(err, errlen, "[%s] prefix: empty", sec);
		return -1;
	}
	for (i = 0; i < r->nprefixes; i++) {
		char	as[64];

		snprintf(as, sizeof(as), "%s", r->prefixes[i]);
		if (prefix_norm(r->prefixes[i], is_email(ch)) == -1) {
			util_seterr(err, errlen, "[%s] prefix: '%s' is not %s",
			    sec, as, is_email(ch) ? "@ and a domain" :
			    "leading digits of a number (+49)");
			return -1;
		}
	}
	if ((v = config_get(cfg, sec, "breaker")) == NULL)
		r->breaker = ROUTE_BREAKER_DEFAULT;
	else {
		char	*end;

		errno = 0;
		r->breaker = strtol(v, &end, 10);
		if (!isdigit((unsigned char)*v) || *end != '\0' ||
		    errno != 0 || r->breaker < 1) {
			util_seterr(err, errlen, "[%s] breaker: '%s' is not a "
			    "whole number of at least 1", sec, v);
			return -1;
		}
	}
	if (config_seconds(cfg, sec, "breaker-time",
	    ROUTE_BREAKER_TIME_DEFAULT, &r->breaker_time) == -1 ||
	    r->breaker_time < 1) {
		util_seterr(err, errlen, "[%s] breaker-time: '%s' is not a "
		    "duration (30, 30s, 2min, 1h)", sec,
		    config_get(cfg, sec, "breaker-time"));
		return -1;
	}
	return 0;
}

/* Whether following r's fallbacks comes back to start (a circle). */
static int
circles(const struct route_table *t, const struct route_conf *start,
    const struct route_conf *r, size_t depth)
{
	const struct route_conf	*f;
	size_t			 i;

	/* A circle that start only leads into: found from its own routes. */
	if (depth > t->n)
		return 0;
	for (i = 0; i < r->nfallback; i++) {
		if ((f = route_find(t, r->fallback[i])) == NULL)
			continue;
		if (f == start || circles(t, start, f, depth + 1))
			return 1;
	}
	return 0;
}

/* The checks across routes: fallbacks, circles, shared prefixes. */
static int
check(const struct route_table *t, char *err, size_t errlen)
{
	const struct route_conf	*r, *o, *f;
	size_t			 i, j, k, m;

	for (i = 0; i < t->n; i++) {
		r = &t->v[i];
		for (k = 0; k < r->nfallback; k++) {
			if ((f = route_find(t, r->fallback[k])) == NULL) {
				util_seterr(err, errlen, "[%s] fallback: no "
				    "route '%s'", r->section, r->fallback[k]);
				return -1;
			}
			if (f == r) {
				util_seterr(err, errlen, "[%s] fallback: a "
				    "route is not its own fallback", r->section);
				return -1;
			}
			if (strcmp(f->channel, r->channel) != 0) {
				util_seterr(err, errlen, "[%s] fallback: '%s' "
				    "is a route of %s, not %s", r->section,
				    f->name, f->channel, r->channel);
				return -1;
			}
		}
		if (circles(t, r, r, 0)) {
			util_seterr(err, errlen, "[%s] fallback: a circle "
			    "(its fallbacks lead back to it)", r->section);
			return -1;
		}
		for (j = i + 1; j < t->n; j++) {
			o = &t->v[j];
			if (strcmp(o->channel, r->channel) != 0)
				continue;
			for (k = 0; k < r->nprefixes; k++)
				for (m = 0; m < o->nprefixes; m++)
					if (strcmp(r->prefixes[k],
					    o->prefixes[m]) == 0) {
						util_seterr(err, errlen,
						    "[%s] prefix: '%s' is [%s]'s "
						    "too", o->section,
						    o->prefixes[m], r->section);
						return -1;
					}
		}
	}
	return 0;
}

struct route_table *
route_table_new(const struct config *cfg, char *err, size_t errlen)
{
	static const char *const implicit[] = { "sms", "voice", "email" };
	struct route_table	*t;
	const char		*sec, *ch;
	size_t			 i, k;

	if ((t = calloc(1, sizeof(*t))) == NULL) {
		util_seterr(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++) {
		if (channel_of_section(sec) != -1)
			ch = sec;
		else if (strncmp(sec, ROUTE_PREFIX, strlen(ROUTE_PREFIX)) == 0) {
			if (sec[strlen(ROUTE_PREFIX)] == '\0') {
				util_seterr(err, errlen, "[%s]: a route needs "
				    "a name ([route.NAME])", sec);
				goto fail;
			}
			if ((ch = config_get(cfg, sec, "channel")) == NULL ||
			    channel_of_section(ch) == -1) {
				util_seterr(err, errlen, "[%s] channel: %s", sec,
				    ch == NULL ? "missing (sms, voice, email "
				    "or ott.N)" : "not sms, voice, email or "
				    "ott.N");
				goto fail;
			}
		} else
			continue;
		if (route_find(t, sec) != NULL)
			continue;	/* a section given twice: one route */
		/* [route.sms] would be named like [sms]. */
		if (ch != sec && route_find(t, sec + strlen(ROUTE_PREFIX)) !=
		    NULL) {
			util_seterr(err, errlen, "[%s]: a route named like "
			    "another", sec);
			goto fail;
		}
		if (add(t, cfg, sec, ch, err, errlen) == -1)
			goto fail;
	}
	/* sms, voice and email nothing configures: their own section's
	 * route, the default provider's. */
	for (i = 0; i < sizeof(implicit) / sizeof(implicit[0]); i++) {
		for (k = 0; k < t->n; k++)
			if (strcmp(t->v[k].channel, implicit[i]) == 0)
				break;
		if (k == t->n && add(t, cfg, implicit[i], implicit[i], err,
		    errlen) == -1)
			goto fail;
	}
	if (check(t, err, errlen) == -1)
		goto fail;
	return t;
fail:
	route_table_free(t);
	return NULL;
}

const struct route_conf *
route_find(const struct route_table *t, const char *name)
{
	size_t	i;

	for (i = 0; i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0 ||
		    strcmp(t->v[i].section, name) == 0)
			return &t->v[i];
	return NULL;
}

const struct route_conf *
route_at(const struct route_table *t, size_t n)
{
	return n < t->n ? &t->v[n] : NULL;
}

/* How long a prefix of r takes recipient (its key); 0: none. */
static size_t
matches(const struct route_conf *r, const char *key)
{
	size_t	i, best = 0, l, kl = strlen(key);

	for (i = 0; i < r->nprefixes; i++) {
		l = strlen(r->prefixes[i]);
		if (r->prefixes[i][0] == '@') {
			/* "@example.com": the domain, or a subdomain of it
			 * ("@mail.example.com" is not "@ample.com"'s). */
			if (kl >= l && strcmp(key + kl - l, r->prefixes[i]) ==
			    0 && l > best)
				best = l;
			else if (kl > l && strcmp(key + kl - l + 1,
			    r->prefixes[i] + 1) == 0 && key[kl - l] == '.' &&
			    l > best)
				best = l;
		} else if (strncmp(key, r->prefixes[i], l) == 0 && l > best)
			best = l;
	}
	return best;
}

const struct route_conf *
route_pick(const struct route_table *t, const char *chsec,
    const char *recipient)
{
	const struct route_conf	*best = NULL, *plain = NULL;
	char			 key[256];
	const char		*p, *at;
	size_t			 i, l, bestlen = 0, n = 0;
	int			 email = strcmp(chsec, "email") == 0, any = 0;

	/* The recipient as prefixes compare: digits, or "@domain". */
	if (recipient == NULL)
		recipient = "";
	if (email) {
		if ((at = strrchr(recipient, '@')) == NULL)
			at = "@";
		for (i = 0; at[i] != '\0' && i < sizeof(key) - 1; i++)
			key[i] = (char)tolower((unsigned char)at[i]);
		key[i] = '\0';
	} else {
		for (p = recipient; *p != '\0' && n < sizeof(key) - 1; p++)
			if (isdigit((unsigned char)*p))
				key[n++] = *p;
		key[n] = '\0';
	}
	for (i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].channel, chsec) != 0)
			continue;
		any = 1;
		if (t->v[i].nprefixes == 0) {
			if (plain == NULL)
				plain = &t->v[i];
			continue;
		}
		if ((l = matches(&t->v[i], key)) > bestlen) {
			best = &t->v[i];
			bestlen = l;
		}
	}
	if (best != NULL)
		return best;
	if (plain != NULL || any)
		return plain;
	return NULL;
}

size_t
route_order(const struct route_table *t, const struct route_conf *first,
    const struct route_conf **out, size_t max)
{
	const struct route_conf	*stack[ROUTE_TRY_MAX * 4], *r, *f;
	size_t			 n = 0, sp = 0, i, k;

	if (first == NULL || max == 0)
		return 0;
	stack[sp++] = first;
	while (sp > 0 && n < max) {
		r = stack[--sp];
		for (k = 0; k < n; k++)
			if (out[k] == r)
				break;
		if (k < n)
			continue;
		out[n++] = r;
		/* Its fallbacks next, the first of them first. */
		for (i = r->nfallback; i-- > 0;)
			if ((f = route_find(t, r->fallback[i])) != NULL &&
			    sp < sizeof(stack) / sizeof(stack[0]))
				stack[sp++] = f;
	}
	return n;
}

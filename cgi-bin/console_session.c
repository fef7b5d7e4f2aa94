/*
 * console_session.c: the console's session and its forms' tokens
 * (console.h; README.md, Operator console).
 *
 * An operator signs in with a key of the admin scope (msgspool.conf(5),
 * KEYS FILE), posted by the sign-in form; the answer is a session
 * cookie, msgspool_console=CLIENT.EXPIRY.HMAC, the hex HMAC-SHA256 of
 * "msgspool-console:CLIENT.EXPIRY" keyed by the secret, good for 12
 * hours.  No state is kept: a cookie that does not verify, has
 * expired, or names a client with no enabled key of the admin scope
 * any more, gets the sign-in form.  Every POST but the sign-in carries
 * the field csrf, the hex HMAC-SHA256 of "msgspool-console-csrf:",
 * the action's name, ":" and the cookie's value; one without it, or
 * with another, is refused (403) and changes nothing.
 *
 * The sign-in form has no session yet to tie its token to: the page
 * that shows it sets a pre-session cookie,
 * msgspool_console_pre=NONCE.EXPIRY.HMAC (the HMAC of
 * "msgspool-console-pre:NONCE.EXPIRY", good for an hour, HttpOnly,
 * SameSite=Strict, Path=/console), and the form carries the HMAC of
 * "msgspool-console-sign-in:NONCE.EXPIRY" as csrf: a signed double
 * submit.  A sign-in without both, or whose two do not match, is
 * refused (403, the form again) before its key is looked at.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "console.h"
#include "base/config.h"

static int	client_is_admin(const struct console *, const char *);

static int
https(const struct console *c)
{
	const char	*h = cgi_env(c->ctx->req->envp, "HTTPS");

	return h != NULL && strcasecmp(h, "on") == 0;
}

/* The hex HMAC-SHA256 of the concatenation of a, b and c under key. */
static void
mac_hex(const struct console *c, const char *a, const char *b,
    const char *cc, char out[MAC_HEX + 1])
{
	struct hmac_sha256_ctx	 h;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	size_t			 i;

	hmac_sha256_set_key(&h, c->keylen, c->key);
	hmac_sha256_update(&h, strlen(a), (const uint8_t *)a);
	hmac_sha256_update(&h, strlen(b), (const uint8_t *)b);
	hmac_sha256_update(&h, strlen(cc), (const uint8_t *)cc);
	hmac_sha256_digest(&h, sizeof(d), d);
	for (i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	explicit_bzero(&h, sizeof(h));
}

static int
hex_equal(const char *a, const char *b)
{
	return strlen(a) == MAC_HEX && strlen(b) == MAC_HEX &&
	    memeql_sec(a, b, MAC_HEX);
}

void
console_csrf_token(const struct console *c, const char *action,
    char out[MAC_HEX + 1])
{
	char	purpose[320];

	snprintf(purpose, sizeof(purpose), "msgspool-console-csrf:%s:",
	    action);
	mac_hex(c, purpose, c->cookie, "", out);
}

/*
 * The value of the request's cookie name into v (len bytes): 0, or -1
 * when there is none or it is longer.
 */
static int
cookie_get(const struct console *c, const char *name, char *v, size_t len)
{
	const char	*h, *p, *end;
	size_t		 n, nlen = strlen(name);

	if ((h = cgi_env(c->ctx->req->envp, "HTTP_COOKIE")) == NULL)
		return -1;
	for (p = h; *p != '\0'; p = *end ? end + 1 : end) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, ";");
		if ((size_t)(end - p) <= nlen || strncmp(p, name, nlen) != 0 ||
		    p[nlen] != '=')
			continue;
		p += nlen + 1;
		if ((n = (size_t)(end - p)) >= len)
			return -1;
		memcpy(v, p, n);
		v[n] = '\0';
		return 0;
	}
	return -1;
}

/*
 * Split a signed value "A.EXPIRY.MAC" in place: *a the A, its expiry
 * checked against now and ttl, its MAC over purpose and "A.EXPIRY".
 * 0 when it verifies, v left whole; else -1.
 */
static int
signed_check(const struct console *c, char *v, const char *purpose,
    long long ttl, long long *expiry)
{
	char		*d1, *d2, *ep, mac[MAC_HEX + 1];
	long long	 exp, now = (long long)time(NULL);
	int		 ok;

	if ((d2 = strrchr(v, '.')) == NULL)
		return -1;
	*d2 = '\0';
	if ((d1 = strrchr(v, '.')) == NULL || d1 == v) {
		*d2 = '.';
		return -1;
	}
	errno = 0;
	exp = strtoll(d1 + 1, &ep, 10);
	ok = errno == 0 && *ep == '\0' && ep != d1 + 1 && exp >= now &&
	    exp <= now + ttl;
	if (ok) {
		mac_hex(c, purpose, v, "", mac);
		ok = hex_equal(mac, d2 + 1);
	}
	*d2 = '.';
	if (ok && expiry != NULL)
		*expiry = exp;
	return ok ? 0 : -1;
}

void
console_session(struct console *c)
{
	char	 v[COOKIE_MAX + 1], *d1, *d2;
	size_t	 n;

	if (cookie_get(c, COOKIE_NAME, v, sizeof(v)) == -1 ||
	    signed_check(c, v, "msgspool-console:", SESSION_TTL, NULL) == -1)
		return;
	/* CLIENT.EXPIRY.MAC: the client is up to the first dot of two. */
	d2 = strrchr(v, '.');
	*d2 = '\0';
	d1 = strrchr(v, '.');
	if ((n = (size_t)(d1 - v)) > CLIENT_ID_MAX)
		return;
	*d1 = '\0';
	if (!client_is_admin(c, v))
		return;
	/* At most CLIENT_ID_MAX, checked above. */
	memcpy(c->client, v, n + 1);
	*d1 = '.';
	*d2 = '.';
	/* The whole value: the forms' tokens are of it. */
	snprintf(c->cookie, sizeof(c->cookie), "%s", v);
	c->signed_in = 1;
}

/*
 * The sign-in form's token of the request's pre-session cookie, when it
 * carries one that verifies with more than PRE_RENEW seconds left: 0,
 * else -1.
 */
static int
pre_token(const struct console *c, char tok[MAC_HEX + 1], long long left)
{
	char		 v[PRE_MAX + 1];
	long long	 exp;

	if (cookie_get(c, PRE_NAME, v, sizeof(v)) == -1 ||
	    signed_check(c, v, "msgspool-console-pre:", PRE_TTL, &exp) == -1 ||
	    exp - (long long)time(NULL) < left)
		return -1;
	*strrchr(v, '.') = '\0';
	mac_hex(c, "msgspool-console-sign-in:", v, "", tok);
	return 0;
}

char *
console_pre_cookie(const struct console *c, char tok[MAC_HEX + 1])
{
	unsigned char	 nonce[16];
	char		 v[PRE_MAX + 1], mac[MAC_HEX + 1], *hdr;
	size_t		 i, n;

	if (pre_token(c, tok, PRE_RENEW) == 0)
		return strdup("");
	if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
		return NULL;
	for (i = 0, n = 0; i < sizeof(nonce); i++)
		n += (size_t)snprintf(v + n, sizeof(v) - n, "%02x", nonce[i]);
	snprintf(v + n, sizeof(v) - n, ".%lld", (long long)time(NULL) +
	    PRE_TTL);
	mac_hex(c, "msgspool-console-pre:", v, "", mac);
	mac_hex(c, "msgspool-console-sign-in:", v, "", tok);
	if (asprintf(&hdr, PRE_NAME "=%s.%s; Max-Age=%d; Path=%s; "
	    "HttpOnly; SameSite=Strict%s", v, mac, PRE_TTL, c->base,
	    https(c) ? "; Secure" : "") == -1)
		return NULL;
	return hdr;
}

int
console_sign_in_ok(const struct console *c, const json_t *f)
{
	const char	*t = json_string_value(json_object_get(f, "csrf"));
	char		 want[MAC_HEX + 1];

	return t != NULL && pre_token(c, want, 0) == 0 && hex_equal(want, t);
}

/*
 * Whether client still has an enabled key of the admin scope in the keys
 * file: a session ends when its client's key is disabled or loses admin
 * (msgspool key disable), not only when it expires.
 */
static int
client_is_admin(const struct console *c, const char *client)
{
	char		*keys, *line = NULL, *f[4], *p;
	size_t		 cap = 0, n;
	unsigned	 scopes;
	FILE		*fp;
	int		 ok = 0;

	if ((keys = config_path(c->ctx->cfg, NULL, "keys", "keys")) == NULL)
		return 0;
	fp = fopen(keys, "re");
	free(keys);
	if (fp == NULL)
		return 0;
	while (!ok && getline(&line, &cap, fp) != -1) {
		line[strcspn(line, "\r\n")] = '\0';
		if (*line == '#' || *line == '\0')
			continue;
		for (n = 0, p = line; n < 4 && p != NULL; n++) {
			f[n] = p;
			if ((p = strchr(p, ':')) != NULL)
				*p++ = '\0';
		}
		if (n < 3 || strcmp(f[0], client) != 0 ||
		    keys_scopes_parse(f[2], &scopes) == -1 ||
		    (scopes & SCOPE_ADMIN) == 0 ||
		    (n == 4 && strstr(f[3], "disabled") != NULL))
			continue;
		ok = 1;
	}
	free(line);
	fclose(fp);
	return ok;
}


char *
console_session_cookie(struct console *c, const char *client)
{
	char	 mac[MAC_HEX + 1], *val;

	snprintf(c->cookie, sizeof(c->cookie), "%s.%lld", client,
	    (long long)time(NULL) + SESSION_TTL);
	mac_hex(c, "msgspool-console:", c->cookie, "", mac);
	if (asprintf(&val, COOKIE_NAME "=%s.%s; Max-Age=%d; Path=%s; "
	    "HttpOnly; SameSite=Strict%s", c->cookie, mac, SESSION_TTL,
	    c->base, https(c) ? "; Secure" : "") == -1)
		return NULL;
	return val;
}

int
console_csrf_ok(const struct console *c, const json_t *f,
    const char *action)
{
	const char	*t = json_string_value(json_object_get(f, "csrf"));
	char		 want[MAC_HEX + 1];

	if (!c->signed_in || t == NULL)
		return 0;
	console_csrf_token(c, action, want);
	return hex_equal(want, t);
}


/*
 * unsub.c: one-click unsubscribe tokens and links (unsub.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "base/mime.h"
#include "base/util.h"
#include "content/unsub.h"

/* What the signature covers before the token's text. */
#define UNSUB_CONTEXT	"msgspool-unsubscribe:"
/* CLIENT ":" ADDRESS, at most. */
#define UNSUB_TEXT_MAX	(CLIENT_ID_MAX + 1 + UNSUB_ADDR_MAX)

struct unsub {
	char		*base;		/* public-url without its last '/' */
	unsigned char	*key;
	size_t		 keylen;
	char		**clients;	/* with list-unsubscribe = yes */
	size_t		 nclients;
};

/* len bytes of p as base64url without padding, into out (NUL-ended). */
static void
b64url(const unsigned char *p, size_t len, char *out)
{
	struct base64_encode_ctx	 ctx;
	size_t				 n;

	base64url_encode_init(&ctx);
	n = base64_encode_update(&ctx, out, len, p);
	n += base64_encode_final(&ctx, out + n);
	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = '\0';
}

/*
 * The token of text (CLIENT ":" ADDRESS, len bytes) into out, which
 * holds UNSUB_TOKEN_MAX + 1 bytes.
 */
static void
token_of(const unsigned char *key, size_t keylen, const char *text,
    size_t len, char *out)
{
	struct hmac_sha256_ctx	 ctx;
	uint8_t			 mac[SHA256_DIGEST_SIZE];
	size_t			 n;

	hmac_sha256_set_key(&ctx, keylen, key);
	hmac_sha256_update(&ctx, strlen(UNSUB_CONTEXT),
	    (const uint8_t *)UNSUB_CONTEXT);
	hmac_sha256_update(&ctx, len, (const uint8_t *)text);
	hmac_sha256_digest(&ctx, sizeof(mac), mac);
	b64url((const unsigned char *)text, len, out);
	n = strlen(out);
	out[n++] = '.';
	b64url(mac, sizeof(mac), out + n);
}

/* Whether client and addr are what a token may name. */
static int
nameable(const char *client, const char *addr)
{
	return valid_client_id(client) && addr != NULL &&
	    strlen(addr) <= UNSUB_ADDR_MAX &&
	    mime_addr_spec_check(addr, strlen(addr)) == NULL;
}

char *
unsub_token(const unsigned char *key, size_t len, const char *client,
    const char *addr)
{
	char	text[UNSUB_TEXT_MAX + 1], out[UNSUB_TOKEN_MAX + 1];
	int	n;

	if (!nameable(client, addr)) {
		errno = EINVAL;
		return NULL;
	}
	n = snprintf(text, sizeof(text), "%s:%s", client, addr);
	token_of(key, len, text, (size_t)n, out);
	return strdup(out);
}

int
unsub_verify(const unsigned char *key, size_t len, const char *token,
    char *client, char *addr)
{
	struct base64_decode_ctx	 ctx;
	char				 b64[UNSUB_TOKEN_MAX + 4];
	char				 text[UNSUB_TOKEN_MAX + 1];
	char				 want[UNSUB_TOKEN_MAX + 1];
	const char			*dot, *colon;
	size_t				 n, tlen;

	if (token == NULL || strlen(token) > UNSUB_TOKEN_MAX ||
	    (dot = strchr(token, '.')) == NULL)
		return 0;
	/* The text, padded as nettle's decoder wants it. */
	n = (size_t)(dot - token);
	memcpy(b64, token, n);
	while (n % 4 != 0)
		b64[n++] = '=';
	base64url_decode_init(&ctx);
	tlen = sizeof(text) - 1;
	if (!base64_decode_update(&ctx, &tlen, (uint8_t *)text, n, b64) ||
	    !base64_decode_final(&ctx) || tlen > UNSUB_TEXT_MAX ||
	    memchr(text, '\0', tlen) != NULL)
		return 0;
	text[tlen] = '\0';
	if ((colon = strchr(text, ':')) == NULL ||
	    (size_t)(colon - text) > CLIENT_ID_MAX)
		return 0;
	memcpy(client, text, (size_t)(colon - text));
	client[colon - text] = '\0';
	if (!nameable(client, colon + 1))
		return 0;
	/*
	 * The token this text has, compared whole: another spelling of the
	 * same bytes (the spare bits of base64's last character) is not it.
	 */
	token_of(key, len, text, tlen, want);
	if (strlen(want) != strlen(token) ||
	    !memeql_sec(want, token, strlen(want)))
		return 0;
	memcpy(addr, colon + 1, strlen(colon + 1) + 1);
	return 1;
}

int
unsub_wanted(const struct config *cfg, const char *section)
{
	const char	*v = config_get(cfg, section, "list-unsubscribe");

	if (v == NULL || strcmp(v, "no") == 0)
		return 0;
	return strcmp(v, "yes") == 0 ? 1 : -1;
}

void
unsub_free(struct unsub *u)
{
	size_t	i;

	if (u == NULL)
		return;
	for (i = 0; i < u->nclients; i++)
		free(u->clients[i]);
	free(u->clients);
	free(u->base);
	if (u->key != NULL)
		explicit_bzero(u->key, u->keylen);
	free(u->key);
	free(u);
}

/* Whether url is an http or https URL to a host, nothing after a path. */
static int
public_url_ok(const char *url)
{
	const char	*host;
	size_t		 i;

	if (strncasecmp(url, "https://", 8) == 0)
		host = url + 8;
	else if (strncasecmp(url, "http://", 7) == 0)
		host = url + 7;
	else
		return 0;
	if (*host == '\0' || *host == '/')
		return 0;
	for (i = 0; url[i] != '\0'; i++)
		if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f ||
		    url[i] == '?' || url[i] == '#' || url[i] == '<' ||
		    url[i] == '>' || url[i] == '"' ||
		    (unsigned char)url[i] >= 0x80)
			return 0;
	return 1;
}

/* Whether client has list-unsubscribe = yes in u. */
static int
unsub_listed(const struct unsub *u, const char *client)
{
	size_t	i;

	for (i = 0; i < u->nclients; i++)
		if (strcmp(u->clients[i], client) == 0)
			return 1;
	return 0;
}

/* Add the client of [client.ID] section to u.  0, or -1 (ENOMEM). */
static int
add_client(struct unsub *u, const char *section)
{
	char	**v;

	if ((v = reallocarray(u->clients, u->nclients + 1, sizeof(*v))) ==
	    NULL)
		return -1;
	u->clients = v;
	if ((u->clients[u->nclients] = strdup(section + 7)) == NULL)
		return -1;
	u->nclients++;
	return 0;
}

struct unsub *
unsub_new(const struct config *cfg, char *err, size_t errlen)
{
	struct unsub	*u;
	const char	*sec, *url, *first = NULL;
	char		*secret, why[512];
	size_t		 i, n;
	int		 w;

	if ((u = calloc(1, sizeof(*u))) == NULL)
		goto nomem;
	for (i = 0; (sec = config_section(cfg, i)) != NULL; i++) {
		if (strncmp(sec, "client.", 7) != 0)
			continue;
		if ((w = unsub_wanted(cfg, sec)) == -1) {
			util_seterr(err, errlen, "[%s] list-unsubscribe: "
			    "neither yes nor no", sec);
			goto fail;
		}
		/* A section given twice is one client. */
		if (w == 1 && !unsub_listed(u, sec + 7)) {
			if (add_client(u, sec) == -1)
				goto nomem;
			if (first == NULL)
				first = sec;
		}
	}
	if (first == NULL)
		return u;
	if ((url = config_get(cfg, NULL, "public-url")) == NULL ||
	    !public_url_ok(url)) {
		util_seterr(err, errlen, "[%s] list-unsubscribe = yes: %s",
		    first, url ? "public-url: not an http or https URL" :
		    "no public-url");
		goto fail;
	}
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if ((u->base = strndup(url, n)) == NULL)
		goto nomem;
	if ((secret = config_secret(cfg, NULL, "unsubscribe-secret", why,
	    sizeof(why))) == NULL) {
		util_seterr(err, errlen, "[%s] list-unsubscribe = yes: %s",
		    first, why);
		goto fail;
	}
	u->key = config_secret_key(secret, &u->keylen);
	explicit_bzero(secret, strlen(secret));
	free(secret);
	if (u->key == NULL)
		goto nomem;
	return u;
nomem:
	util_seterr(err, errlen, "out of memory");
fail:
	unsub_free(u);
	return NULL;
}

int
unsub_url(const struct unsub *u, const char *client, const char *addr,
    char **url)
{
	char	*token;
	int	 n;

	*url = NULL;
	if (u == NULL || client == NULL || !unsub_listed(u, client))
		return 0;
	if ((token = unsub_token(u->key, u->keylen, client, addr)) == NULL)
		return -1;
	n = asprintf(url, "%s/unsubscribe/%s", u->base, token);
	free(token);
	if (n == -1) {
		*url = NULL;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/*
 * receipt.c: receipts' signatures, bodies and statuses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "base/config.h"
#include "base/util.h"
#include "spool/receipt.h"

/* Percent-decode s[0..len) ('+' a space) into a new string, or NULL. */
static char *
unescape(const char *s, size_t len)
{
	char	*out, *o;
	size_t	 i;
	int	 hi, lo;

	if ((out = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0, o = out; i < len; i++) {
		if (s[i] == '+')
			*o++ = ' ';
		else if (s[i] == '%') {
			if (i + 2 >= len) {
				free(out);
				return NULL;
			}
			if ((hi = util_hexval(s[i + 1])) == -1 ||
			    (lo = util_hexval(s[i + 2])) == -1 ||
			    (hi == 0 && lo == 0)) {
				free(out);
				return NULL;
			}
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else
			*o++ = s[i];
	}
	*o = '\0';
	return out;
}

json_t *
receipt_form_parse(const char *body, size_t len)
{
	const char	*p = body, *end = body + len, *amp, *eq;
	char		*k, *v;
	json_t		*form, *val;

	if ((form = json_object()) == NULL)
		return NULL;
	while (p < end) {
		if ((amp = memchr(p, '&', (size_t)(end - p))) == NULL)
			amp = end;
		if (amp > p) {
			eq = memchr(p, '=', (size_t)(amp - p));
			k = unescape(p, (size_t)((eq ? eq : amp) - p));
			v = eq ? unescape(eq + 1, (size_t)(amp - eq - 1)) :
			    strdup("");
			/* json_string refuses invalid UTF-8: so do we. */
			val = v ? json_string(v) : NULL;
			if (k == NULL || val == NULL) {
				free(k);
				free(v);
				json_decref(val);
				json_decref(form);
				return NULL;
			}
			/* A repeated name keeps its first value. */
			if (json_object_get(form, k) != NULL)
				json_decref(val);
			else if (json_object_set_new(form, k, val) == -1) {
				free(k);
				free(v);
				json_decref(form);
				return NULL;
			}
			free(k);
			free(v);
		}
		p = amp + 1;
	}
	return form;
}

static int
keycmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int
receipt_twilio_verify(const char *token, const char *url,
    const json_t *params, const char *sig)
{
	struct hmac_sha1_ctx	 ctx;
	uint8_t			 d[SHA1_DIGEST_SIZE];
	char			 b64[BASE64_ENCODE_RAW_LENGTH(SHA1_DIGEST_SIZE) + 1];
	const char		**keys, *k;
	const char		*v;
	json_t			*val;
	size_t			 n = 0, i;

	if (token == NULL || *token == '\0' || url == NULL || sig == NULL)
		return 0;
	if ((keys = calloc(json_object_size(params) + 1,
	    sizeof(*keys))) == NULL)
		return 0;
	json_object_foreach((json_t *)params, k, val)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), keycmp);
	hmac_sha1_set_key(&ctx, strlen(token), (const uint8_t *)token);
	hmac_sha1_update(&ctx, strlen(url), (const uint8_t *)url);
	for (i = 0; i < n; i++) {
		v = json_string_value(json_object_get(params, keys[i]));
		hmac_sha1_update(&ctx, strlen(keys[i]),
		    (const uint8_t *)keys[i]);
		if (v != NULL)
			hmac_sha1_update(&ctx, strlen(v), (const uint8_t *)v);
	}
	free(keys);
	hmac_sha1_digest(&ctx, sizeof(d), d);
	base64_encode_raw(b64, sizeof(d), d);
	b64[sizeof(b64) - 1] = '\0';
	return strlen(sig) == strlen(b64) &&
	    memeql_sec(sig, b64, strlen(b64));
}

int
receipt_meta_verify(const char *secret, const char *body, size_t len,
    const char *header)
{
	static const char	 hex[] = "0123456789abcdef";
	struct hmac_sha256_ctx	 ctx;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	char			 want[2 * SHA256_DIGEST_SIZE + 1], got[sizeof(want)];
	size_t			 i;

	if (secret == NULL || *secret == '\0' || header == NULL ||
	    strncmp(header, "sha256=", 7) != 0 ||
	    strlen(header + 7) != 2 * SHA256_DIGEST_SIZE)
		return 0;
	hmac_sha256_set_key(&ctx, strlen(secret), (const uint8_t *)secret);
	hmac_sha256_update(&ctx, len, (const uint8_t *)body);
	hmac_sha256_digest(&ctx, sizeof(d), d);
	for (i = 0; i < sizeof(d); i++) {
		want[2 * i] = hex[d[i] >> 4];
		want[2 * i + 1] = hex[d[i] & 15];
	}
	want[sizeof(want) - 1] = '\0';
	/* Hex digits either case: compare lower case. */
	for (i = 0; i < sizeof(got) - 1; i++)
		got[i] = (char)(header[7 + i] >= 'A' && header[7 + i] <= 'F' ?
		    header[7 + i] - 'A' + 'a' : header[7 + i]);
	got[sizeof(got) - 1] = '\0';
	return memeql_sec(want, got, sizeof(want) - 1);
}

/* The base64 Standard Webhooks signature into out (45 bytes). */
static void
stdwh_mac(const unsigned char *key, size_t klen, const char *id,
    const char *ts, const char *body, size_t len, char *out)
{
	struct hmac_sha256_ctx	ctx;
	uint8_t			d[SHA256_DIGEST_SIZE];

	hmac_sha256_set_key(&ctx, klen, key);
	hmac_sha256_update(&ctx, strlen(id), (const uint8_t *)id);
	hmac_sha256_update(&ctx, 1, (const uint8_t *)".");
	hmac_sha256_update(&ctx, strlen(ts), (const uint8_t *)ts);
	hmac_sha256_update(&ctx, 1, (const uint8_t *)".");
	hmac_sha256_update(&ctx, len, (const uint8_t *)body);
	hmac_sha256_digest(&ctx, sizeof(d), d);
	base64_encode_raw(out, sizeof(d), d);
	out[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE)] = '\0';
}

char *
receipt_stdwh_sign(const char *secret, const char *id, const char *timestamp,
    const char *body, size_t len)
{
	unsigned char	*key;
	char		 mac[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	char		*out;
	size_t		 klen;

	if ((key = config_whsec_key(secret, &klen)) == NULL)
		return NULL;
	stdwh_mac(key, klen, id, timestamp, body, len, mac);
	free(key);
	if ((out = malloc(strlen(mac) + 4)) == NULL)
		return NULL;
	memcpy(out, "v1,", 3);
	memcpy(out + 3, mac, strlen(mac) + 1);
	return out;
}

int
receipt_stdwh_verify(const char *secret, const char *id, const char *timestamp,
    const char *body, size_t len, const char *signatures, time_t now)
{
	unsigned char	*key;
	char		 mac[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	const char	*p, *end;
	char		*tail;
	long long	 ts;
	size_t		 klen, n, mlen;
	int		 ok = 0;

	if (id == NULL || timestamp == NULL || signatures == NULL ||
	    *id == '\0')
		return 0;
	ts = strtoll(timestamp, &tail, 10);
	if (*timestamp == '\0' || *tail != '\0' || ts < now -
	    RECEIPT_TOLERANCE || ts > now + RECEIPT_TOLERANCE)
		return 0;
	if ((key = config_whsec_key(secret, &klen)) == NULL)
		return 0;
	stdwh_mac(key, klen, id, timestamp, body, len, mac);
	free(key);
	mlen = strlen(mac);
	/* Every candidate is compared: the time says nothing of which. */
	for (p = signatures; *p != '\0'; p = end) {
		p += strspn(p, " ");
		end = p + strcspn(p, " ");
		n = (size_t)(end - p);
		if (n == mlen + 3 && strncmp(p, "v1,", 3) == 0)
			ok |= memeql_sec(p + 3, mac, mlen);
	}
	return ok;
}

void
receipt_index_key(const char *provider, const char *pmid, char *out)
{
	static const char	 hex[] = "0123456789abcdef";
	struct sha256_ctx	 ctx;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	size_t			 i;

	sha256_init(&ctx);
	sha256_update(&ctx, strlen(provider), (const uint8_t *)provider);
	sha256_update(&ctx, 1, (const uint8_t *)":");
	sha256_update(&ctx, strlen(pmid), (const uint8_t *)pmid);
	sha256_digest(&ctx, sizeof(d), d);
	for (i = 0; i < 20; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[40] = '\0';
}

int
receipt_equal(const void *a, const void *b, size_t n)
{
	return memeql_sec(a, b, n);
}

const char *
receipt_twilio_status(const char *status, int call)
{
	static const struct {
		const char	*theirs, *ours;
		int		 call;
	} map[] = {
		{ "sent", "sent", 0 }, { "delivered", "delivered", 0 },
		{ "undelivered", "undelivered", 0 },
		{ "failed", "undelivered", 0 }, { "read", "read", 0 },
		/* Events only: kept in the message's events, moving nothing. */
		{ "queued", "queued", 0 }, { "accepted", "accepted", 0 },
		{ "sending", "sending", 0 },
		{ "completed", "delivered", 1 }, { "busy", "undelivered", 1 },
		{ "no-answer", "undelivered", 1 },
		{ "failed", "undelivered", 1 }, { "canceled", "undelivered", 1 },
	};
	size_t	i;

	for (i = 0; status != NULL && i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].call == call && strcmp(map[i].theirs, status) == 0)
			return map[i].ours;
	return NULL;
}

const char *
receipt_meta_status(const char *status)
{
	if (status == NULL)
		return NULL;
	if (strcmp(status, "sent") == 0 || strcmp(status, "delivered") == 0 ||
	    strcmp(status, "read") == 0)
		return status;
	if (strcmp(status, "failed") == 0)
		return "undelivered";
	return NULL;
}

time_t
receipt_meta_time(const char *timestamp, time_t now)
{
	/* 9999-12-31T23:59:59Z: the last time RFC 3339 can write. */
	const long long	 last = 253402300799LL;
	long long	 t = 0;
	const char	*p;

	if (timestamp == NULL || *timestamp == '\0')
		return now;
	for (p = timestamp; *p >= '0' && *p <= '9'; p++) {
		t = t * 10 + (*p - '0');
		if (t > last)
			return now;
	}
	if (*p != '\0' || t == 0 || (time_t)t != t)
		return now;
	return (time_t)t;
}

const char *
receipt_smpp_status(const char *stat)
{
	static const char *const failed[] = { "UNDELIV", "EXPIRED",
	    "DELETED", "REJECTD", "UNKNOWN" };
	size_t	i;

	if (stat == NULL)
		return NULL;
	if (strcmp(stat, "DELIVRD") == 0)
		return "delivered";
	for (i = 0; i < sizeof(failed) / sizeof(failed[0]); i++)
		if (strcmp(stat, failed[i]) == 0)
			return "undelivered";
	return NULL;
}

const char *
receipt_smpp_state(unsigned state)
{
	/* SMPP 3.4, 5.2.28 message_state. */
	static const char *const names[] = { NULL, "ENROUTE", "DELIVRD",
	    "EXPIRED", "DELETED", "UNDELIV", "ACCEPTD", "UNKNOWN", "REJECTD" };

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : NULL;
}

int
receipt_smpp_word(const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return len > 0;
}

/*
 * The value of key (with its colon) in the text of a receipt, at the
 * start or after a space: copied into out up to the next space.  0, -1
 * when absent, too long, or not printable ASCII.
 */
static int
smpp_field(const char *text, size_t len, const char *key, char *out,
    size_t outlen)
{
	size_t	klen = strlen(key), i, n;

	for (i = 0; i + klen <= len; i++) {
		if ((i > 0 && text[i - 1] != ' ') ||
		    strncasecmp(text + i, key, klen) != 0)
			continue;
		i += klen;
		for (n = 0; i + n < len && text[i + n] != ' ' &&
		    text[i + n] != '\0'; n++)
			;
		if (n >= outlen || !receipt_smpp_word(text + i, n))
			return -1;
		memcpy(out, text + i, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

int
receipt_smpp_text(const char *text, size_t len, char *id, size_t idlen,
    char *stat, size_t statlen, char *err, size_t errlen)
{
	if (smpp_field(text, len, "id:", id, idlen) == -1 ||
	    smpp_field(text, len, "stat:", stat, statlen) == -1)
		return -1;
	if (smpp_field(text, len, "err:", err, errlen) == -1 && errlen > 0)
		err[0] = '\0';
	return 0;
}

/* The rank of a status along sent -> delivered -> read; -1: none. */
static int
rank(const char *s)
{
	if (strcmp(s, "sent") == 0)
		return 0;
	if (strcmp(s, "delivered") == 0 || strcmp(s, "undelivered") == 0)
		return 1;
	if (strcmp(s, "read") == 0)
		return 2;
	return -1;
}

int
receipt_moves(const char *current, const char *status)
{
	int	c = rank(current), s = rank(status);

	if (c == -1 || s == -1 || s <= c)
		return 0;
	/* An undelivered message is never read; read was delivered. */
	if (strcmp(current, "undelivered") == 0)
		return 0;
	if (strcmp(status, "undelivered") == 0)
		return strcmp(current, "sent") == 0;
	return 1;
}

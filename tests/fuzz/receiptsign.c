/*
 * receiptsign.c: a receipt's body signed as its provider signs it
 * (receiptsign.h), so that the receipts target gets past the signature.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nettle/hmac.h>
#include <nettle/sha2.h>

#include "base/mime.h"
#include "receiptsign.h"
#include "spool/receipt.h"

static int
keycmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *
fuzz_twilio_signature(const char *token, const char *url,
    const uint8_t *body, size_t len)
{
	struct hmac_sha1_ctx	 ctx;
	uint8_t			 d[SHA1_DIGEST_SIZE];
	const char		**keys;
	const char		*k, *v;
	json_t			*form, *val;
	char			*b64;
	size_t			 n = 0, i;

	if ((form = receipt_form_parse((const char *)body, len)) == NULL)
		return NULL;
	if ((keys = calloc(json_object_size(form) + 1, sizeof(*keys))) ==
	    NULL) {
		json_decref(form);
		return NULL;
	}
	json_object_foreach(form, k, val)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), keycmp);
	hmac_sha1_set_key(&ctx, strlen(token), (const uint8_t *)token);
	hmac_sha1_update(&ctx, strlen(url), (const uint8_t *)url);
	for (i = 0; i < n; i++) {
		v = json_string_value(json_object_get(form, keys[i]));
		hmac_sha1_update(&ctx, strlen(keys[i]),
		    (const uint8_t *)keys[i]);
		if (v != NULL)
			hmac_sha1_update(&ctx, strlen(v), (const uint8_t *)v);
	}
	hmac_sha1_digest(&ctx, sizeof(d), d);
	b64 = mime_base64_encode(d, sizeof(d));
	free(keys);
	json_decref(form);
	return b64;
}

void
fuzz_meta_signature(const char *secret, const uint8_t *body, size_t len,
    char *out, size_t outlen)
{
	struct hmac_sha256_ctx	 ctx;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	int			 n;
	size_t			 i;

	hmac_sha256_set_key(&ctx, strlen(secret), (const uint8_t *)secret);
	hmac_sha256_update(&ctx, len, body);
	hmac_sha256_digest(&ctx, sizeof(d), d);
	n = snprintf(out, outlen, "sha256=");
	for (i = 0; i < sizeof(d); i++)
		n += snprintf(out + n, outlen - (size_t)n, "%02x", d[i]);
}

char *
fuzz_stdwh_signature(const char *secret, const char *id, const char *ts,
    const uint8_t *body, size_t len)
{
	struct hmac_sha256_ctx	 ctx;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	unsigned char		*key = NULL;
	char			*b64, *out;
	size_t			 klen = 0;

	if (strncmp(secret, "whsec_", 6) != 0 || mime_base64_decode(secret +
	    6, strlen(secret + 6), 4096, &key, &klen) != 0)
		return NULL;
	hmac_sha256_set_key(&ctx, klen, key);
	hmac_sha256_update(&ctx, strlen(id), (const uint8_t *)id);
	hmac_sha256_update(&ctx, 1, (const uint8_t *)".");
	hmac_sha256_update(&ctx, strlen(ts), (const uint8_t *)ts);
	hmac_sha256_update(&ctx, 1, (const uint8_t *)".");
	hmac_sha256_update(&ctx, len, body);
	hmac_sha256_digest(&ctx, sizeof(d), d);
	free(key);
	if ((b64 = mime_base64_encode(d, sizeof(d))) == NULL)
		return NULL;
	if (asprintf(&out, "v1,%s", b64) == -1)
		out = NULL;
	free(b64);
	return out;
}

void
fuzz_receipt_signature(const char *provider, const char *key,
    const char *url, const char *id, const char *ts, const uint8_t *body,
    size_t len, char *out, size_t outlen)
{
	char	*sig, hub[80];

	sig = NULL;
	if (strcmp(provider, "twilio") == 0 && (sig =
	    fuzz_twilio_signature(key, url, body, len)) != NULL)
		snprintf(out, outlen, "HTTP_X_TWILIO_SIGNATURE=%s", sig);
	else if (strcmp(provider, "whatsapp") == 0) {
		fuzz_meta_signature(key, body, len, hub, sizeof(hub));
		snprintf(out, outlen, "HTTP_X_HUB_SIGNATURE_256=%s", hub);
	} else if (strcmp(provider, "http") == 0 && (sig =
	    fuzz_stdwh_signature(key, id, ts, body, len)) != NULL)
		snprintf(out, outlen, "HTTP_WEBHOOK_SIGNATURE=%s", sig);
	else
		snprintf(out, outlen, "X_UNSIGNED=1");
	free(sig);
}

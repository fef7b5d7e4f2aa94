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

#include "mime.h"
#include "receipt.h"
#include "receiptsign.h"

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

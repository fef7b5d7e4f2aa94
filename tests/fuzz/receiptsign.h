/*
 * receiptsign.h: a receipt's body signed as its provider signs it
 * (receiptsign.c), for the receipts target (fuzz_request.c).
 */
#ifndef MSGSPOOL_RECEIPTSIGN_H
#define MSGSPOOL_RECEIPTSIGN_H

#include <stddef.h>
#include <stdint.h>

/*
 * X-Twilio-Signature of a form body (len bytes) posted to url:
 * base64(HMAC-SHA1(token, url, sorted params)).  malloc'd; NULL when the
 * body is no form, or out of memory.
 */
char	*fuzz_twilio_signature(const char *token, const char *url,
	    const uint8_t *body, size_t len);

/*
 * X-Hub-Signature-256 of body (len bytes): "sha256=" hex(HMAC-SHA256(
 * secret, body)), into out (outlen bytes, 72 or more for all of it).
 */
void	 fuzz_meta_signature(const char *secret, const uint8_t *body,
	    size_t len, char *out, size_t outlen);

#endif

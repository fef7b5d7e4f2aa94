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

/*
 * webhook-signature of body (len bytes) as Standard Webhooks signs it:
 * "v1," base64(HMAC-SHA256(the bytes of the base64 after "whsec_" in
 * secret, id "." ts "." body)), whatever their number, even none (as a
 * forger would sign with a short secret).  malloc'd; NULL when secret
 * is not "whsec_" and base64.
 */
char	*fuzz_stdwh_signature(const char *secret, const char *id,
	    const char *ts, const uint8_t *body, size_t len);

/*
 * The signature a provider puts on a receipt, as the CGI variable that
 * carries it ("HTTP_X_TWILIO_SIGNATURE=...", "HTTP_X_HUB_SIGNATURE_256=
 * ...", "HTTP_WEBHOOK_SIGNATURE=..."), into out: body signed with key
 * (twilio: the auth token, for url; whatsapp: the app secret; http: the
 * receipt-secret, for id and ts).  "X_UNSIGNED=1" when it cannot be
 * signed (a Twilio body that is no form).
 */
void	 fuzz_receipt_signature(const char *provider, const char *key,
	    const char *url, const char *id, const char *ts,
	    const uint8_t *body, size_t len, char *out, size_t outlen);

#endif

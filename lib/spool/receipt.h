/*
 * receipt.h: delivery receipts from providers (conf/openapi.yaml,
 * /receipts/{provider}; msgspool-spool(5), receipts/): checking their
 * signatures, reading their bodies, and what their statuses mean.
 * Pure functions over bytes; the receipts program and msgspoold use
 * them.
 */
#ifndef RECEIPT_H
#define RECEIPT_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

/* Seconds a Standard Webhooks timestamp may be off (5 minutes). */
#define RECEIPT_TOLERANCE	300

/*
 * Parse an application/x-www-form-urlencoded body into an object of
 * name -> value (both percent-decoded, '+' a space; a repeated name
 * keeps its first value).  NULL when it is not valid (bad escapes,
 * invalid UTF-8) or out of memory.
 */
json_t		*receipt_form_parse(const char *body, size_t len);

/*
 * Twilio's X-Twilio-Signature of a request: base64(HMAC-SHA1(token,
 * url followed by each parameter's name and value, sorted by name)).
 * Returns 1 when sig is it (compared in constant time), 0 otherwise,
 * and always 0 for an empty token (which anyone could sign with).
 */
int		 receipt_twilio_verify(const char *token, const char *url,
		    const json_t *params, const char *sig);

/*
 * Meta's X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of the
 * raw body with the app secret.  1 when it matches, else 0 (always for
 * an empty secret).
 */
int		 receipt_meta_verify(const char *secret, const char *body,
		    size_t len, const char *header);

/*
 * Standard Webhooks 1.0: webhook-signature holds one or more
 * space-separated "v1,BASE64" of HMAC-SHA256(key, id "." timestamp "."
 * body), the key being the base64 after "whsec_" in secret (of
 * CONFIG_WHSEC_MIN bytes or more, config_whsec_key).  1 when one
 * matches and the timestamp is within RECEIPT_TOLERANCE of now.
 */
int		 receipt_stdwh_verify(const char *secret, const char *id,
		    const char *timestamp, const char *body, size_t len,
		    const char *signatures, time_t now);

/*
 * Sign as Standard Webhooks does: "v1," and the base64 signature, into
 * a malloc'd string.  NULL when the secret is not "whsec_" and base64
 * of CONFIG_WHSEC_MIN bytes or more.
 */
char		*receipt_stdwh_sign(const char *secret, const char *id,
		    const char *timestamp, const char *body, size_t len);

/*
 * The index key (spool_index_put) of a provider's id for a message:
 * 40 hex digits of SHA-256 of "provider:pmid", into out[41].
 */
void		 receipt_index_key(const char *provider, const char *pmid,
		    char *out);

/* Compare n bytes in time independent of their contents. */
int		 receipt_equal(const void *a, const void *b, size_t n);

/*
 * Our status for a provider's: "delivered", "read", "undelivered",
 * "sent"; for a Twilio message's queued, accepted and sending, that
 * word, an event only (it moves nothing); NULL for one that tells
 * nothing (a call's ringing ...) or unknown.  call: a Twilio call's
 * status (CallStatus).
 */
const char	*receipt_twilio_status(const char *status, int call);
const char	*receipt_meta_status(const char *status);

/*
 * The time of a WhatsApp status: its "timestamp", Unix seconds as a
 * string of digits, from 1 to the end of year 9999; now when it is
 * missing (NULL) or anything else, such as a word or 0 (conf/openapi.yaml,
 * WhatsAppStatusWebhook).
 */
time_t		 receipt_meta_time(const char *timestamp, time_t now);

/*
 * An SMPP delivery receipt's final state (the "stat:" of its text, or
 * the message_state TLV's name): DELIVRD -> "delivered"; UNDELIV,
 * EXPIRED, DELETED, REJECTD, UNKNOWN -> "undelivered"; ENROUTE, ACCEPTD
 * and anything else NULL (an event only, or not a state).
 */
const char	*receipt_smpp_status(const char *stat);

/*
 * Whether the len bytes at s are one word of printable ASCII (0x21 to
 * 0x7e), as the message ids and fields msgspool keeps from an SMSC must
 * be: anything else cannot be matched or stored as JSON text.
 */
int		 receipt_smpp_word(const char *s, size_t len);

/* The name of an SMPP message_state value (2 DELIVRD ...), or NULL. */
const char	*receipt_smpp_state(unsigned state);

/*
 * The fields of the text of an SMPP delivery receipt ("id:ID sub:001
 * dlvrd:001 submit date:YYMMDDhhmm done date:YYMMDDhhmm stat:DELIVRD
 * err:000 text:..."; keys in any case, in any order): id, stat and
 * err (the last optional, "" when absent) copied NUL-terminated into
 * the buffers given.  0, or -1 when there is no id or no stat, or one
 * does not fit or is not printable ASCII (receipt_smpp_word).
 */
int		 receipt_smpp_text(const char *text, size_t len, char *id,
		    size_t idlen, char *stat, size_t statlen, char *err,
		    size_t errlen);

/*
 * Whether a receipt saying status may move a message that is now
 * current: only forward (sent -> delivered -> read; sent ->
 * undelivered), never back.
 */
int		 receipt_moves(const char *current, const char *status);

#endif

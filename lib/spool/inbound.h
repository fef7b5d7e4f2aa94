/*
 * inbound.h: the inbound messages in providers' bodies (conf/openapi.yaml,
 * /receipts/{provider}): Twilio's incoming-message webhook, a WhatsApp
 * Cloud API message, the http provider's {"type":"inbound"}.  Each is
 * read into an inbound document (inbox.h), or refused with the member
 * at fault and why.  Pure functions over parsed bodies; the receipts
 * program calls them after it has checked the provider's signature.
 */
#ifndef INBOUND_H
#define INBOUND_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

/* Why a body holds no inbound message we can keep. */
struct inbound_err {
	char	path[160];	/* the member at fault ("MediaUrl1") */
	char	why[160];	/* what is wrong with it */
};

/* Media a Twilio message may carry, at most (its NumMedia). */
#define INBOUND_MEDIA_MAX	10
/* An address (from, to) and a provider's id, at most, in bytes. */
#define INBOUND_ADDR_MAX	64
#define INBOUND_ID_MAX		256

/*
 * Whether a Twilio form (receipt_form_parse) is an incoming message
 * rather than a status callback: it has neither MessageStatus nor
 * CallStatus.
 */
int		 inbound_twilio_is(const json_t *form);

/*
 * Twilio's incoming message: MessageSid, From, To, Body, NumMedia,
 * MediaUrl0 … (channel "ott" when From is "whatsapp:…", whose prefix
 * goes).  A new inbound document received at now, or NULL with e set.
 */
json_t		*inbound_twilio(const json_t *form, time_t now,
		    struct inbound_err *e);

/*
 * One of the messages[] of a WhatsApp webhook's value (its metadata
 * names the business number, "to"): its text from text.body, button.text
 * or an interactive reply's title, else null with its type and media
 * id.  path names the message in the body for e.  A new inbound
 * document, or NULL with e set.
 */
json_t		*inbound_whatsapp(const json_t *value, const json_t *msg,
		    const char *path, time_t now, struct inbound_err *e);

/*
 * Whether an http provider's signed body is an inbound message
 * ("type":"inbound") rather than a receipt.
 */
int		 inbound_http_is(const json_t *body);

/*
 * The http provider's {"type":"inbound", "from", "to", "text", "id"?,
 * "at"?} for channel ("sms" or "ott": its section's).  A new inbound
 * document, or NULL with e set.
 */
json_t		*inbound_http(const json_t *body, const char *channel,
		    time_t now, struct inbound_err *e);

#endif

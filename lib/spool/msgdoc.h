/*
 * msgdoc.h: the spool document, the one file of the tree that knows its
 * fields (msgspool-spool(5) describes them).  A message document:
 *
 *	{"version":1, "id", "channel", "client", "created", "sendAt"?,
 *	 "attempts", "nextAttempt", "lastAttempt"?, "lastError",
 *	 "providerReply", "sentAt"?, "gaveUp"?, "retriedAt"?, "canceled"?,
 *	 "inReplyTo"?, "reference"?, "route"?,
 *	 "events": [{"status", "at", "source"?}…], "message"}
 *
 * and an upload document of the deprecated attachments route:
 *
 *	{"version":1, "attachmentId", "client", "attachmentName",
 *	 "contentType", "size", "created", "content"}
 */
#ifndef MSGDOC_H
#define MSGDOC_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "base/msgspool.h"

#define MSGDOC_VERSION	1

/*
 * A new message document: version, id, channel, client, created (now),
 * attempts 0, nextAttempt (notbefore, or now), lastError and
 * providerReply null, sendAt when notbefore is in the future, and
 * message (stolen, even on failure).  NULL out of memory.
 */
json_t		*msgdoc_new(const char *id, const char *channel,
		    const char *client, time_t notbefore, json_t *message);

/* Larger is not a document of ours (an email's is at most its body). */
#define MSGDOC_READ_MAX	((size_t)256 * 1024 * 1024)

/*
 * Parse the JSON file open on fd, from its offset to its end, with
 * jansson's flags: the whole file in one buffer (json_loadfd reads a
 * byte a call).  NULL with je filled (when given) on any error.
 */
json_t		*msgdoc_loadfd(int fd, size_t flags, json_error_t *je);

/*
 * Whether doc may be the spool file name: an object of our version
 * whose id is valid and is the id its file name begins with.  where
 * names the directory for the reason.  0, or -1 with the reason in err.
 */
int		 msgdoc_check(const json_t *doc, const char *where,
		    const char *name, char *err, size_t errlen);

/* Borrowed fields; NULL when absent. */
const char	*msgdoc_id(const json_t *doc);
const char	*msgdoc_channel(const json_t *doc);
const char	*msgdoc_client(const json_t *doc);
/* The recipient ("to" of the message), "?" when absent. */
const char	*msgdoc_recipient(const json_t *doc);
/* The message, what its provider gets (borrowed). */
json_t		*msgdoc_message(const json_t *doc);
long long	 msgdoc_attempts(const json_t *doc);

/* When the document is due: its nextAttempt, else now. */
time_t		 msgdoc_due(const json_t *doc);

/*
 * When max-age starts counting: the latest of when it was queued,
 * scheduled for (sendAt) and retried by hand (retriedAt).
 */
time_t		 msgdoc_age_from(const json_t *doc);

/*
 * Record one attempt made at now: attempts + 1, lastAttempt, the
 * provider's reply (borrowed; NULL for none) and by status: MSG_OK sets
 * sentAt and clears lastError and nextAttempt; MSG_TEMPFAIL sets
 * lastError why and nextAttempt next; MSG_PERMFAIL sets lastError why,
 * clears nextAttempt and, when gave_up is given, says why it gave up.
 */
void		 msgdoc_attempt(json_t *doc, enum msg_status status,
		    const char *why, const json_t *reply, time_t now,
		    time_t next, const char *gave_up);

/*
 * Mark a message as a test key's (msgspool.conf(5), KEYS FILE): it is
 * spooled and reported like any other, but never handed to a provider.
 */
void		 msgdoc_set_test(json_t *doc);
int		 msgdoc_is_test(const json_t *doc);

/*
 * Mark a message as msgspoold's reply to inbound message inbound_id, a
 * keyword of kind keyword ("stop", "start", "help"; msgspool-spool(5),
 * Keywords): "inReplyTo": {"id", "keyword"}.  Only msgspoold writes it,
 * never a client's request.
 */
void		 msgdoc_set_reply(json_t *doc, const char *inbound_id,
		    const char *keyword);
/*
 * Whether doc is the confirmation of a stop (a reply marked so), the
 * one message that goes to a recipient its client suppressed.
 */
int		 msgdoc_is_stop_reply(const json_t *doc);

/* A retry by hand at now: due now, with a whole max-age again. */
void		 msgdoc_retry(json_t *doc, time_t now);

/* Cancel at now (a client's DELETE): an event, and marked canceled. */
void		 msgdoc_cancel(json_t *doc, time_t now);

/*
 * Append an event: status at a time, with its source ("receipt", ...)
 * when not NULL.  Receipts and cancels add theirs through this.
 */
void		 msgdoc_event(json_t *doc, const char *status, time_t at,
		    const char *source);

/*
 * The client's own reference of the message, given with it (a value
 * valid_reference passed), or NULL when it gave none.  Set once, when
 * the message is built; NULL sets nothing.
 */
void		 msgdoc_set_reference(json_t *doc, const char *reference);
const char	*msgdoc_reference(const json_t *doc);

/*
 * The route whose provider made the last attempt: the config section
 * ("sms", "voice", "email", "ott.3"), recorded by msgspoold with each
 * attempt it hands to a provider; NULL before any.
 */
void		 msgdoc_set_route(json_t *doc, const char *route);

/*
 * Name on the last event the route of the attempt it records and, when
 * not NULL, why that attempt failed (msgspool.conf(5), Routes: each
 * attempt is an event).
 */
void		 msgdoc_event_note(json_t *doc, const char *route,
		    const char *error);
const char	*msgdoc_route(const json_t *doc);

/* The provider that took the message and its id there, or NULL. */
const char	*msgdoc_provider(const json_t *doc);
const char	*msgdoc_provider_id(const json_t *doc);

/*
 * Apply a provider's receipt saying status (delivered, read,
 * undelivered, sent) at a time, with its error (borrowed, or NULL) to a
 * message in state: an event from the receipt, and the status moved
 * when it moves forward only (receipt_moves).  A receipt seen before
 * (same status) changes nothing.  1 when doc changed, else 0.
 */
int		 msgdoc_receipt(json_t *doc, const char *state,
		    const char *status, time_t at, const json_t *error);

/*
 * The provider's id of part i of a message sent in several (the smpp
 * provider's "partIds"; part 0 is its providerMessageId), or NULL past
 * the last.  A message in one part has its provider id as part 0.
 */
const char	*msgdoc_provider_part(const json_t *doc, size_t i);

/*
 * A receipt for the part of a message that the provider calls pmid:
 * the part's status recorded ("partStatus"), and the status the message
 * takes from it: undelivered as soon as one part is, delivered once
 * every part is, else NULL (only the part moved; *changed says whether
 * the document did).  For a message in one part, or a pmid that names
 * none of its parts, status itself.
 */
const char	*msgdoc_part_receipt(json_t *doc, const char *pmid,
		    const char *status, int *changed);

/*
 * Whether a receipt from source (its "provider": twilio, whatsapp,
 * http, smpp, test, or email for msgspool-bounce(8)) saying status may
 * change doc, a message in state (msgspool-spool(5), Receipts): only
 * the provider that sent it, by the attempt that sent it, speaks of
 * it, and only on the channels its receipts are for (a bounce: email);
 * read only of an ott message.  Until it is sent (state not "sent")
 * only the channel is known, and checked.  1 when it may, else 0 with
 * the reason in why.
 */
int		 msgdoc_receipt_applies(const json_t *doc, const char *state,
		    const char *source, const char *status, char *why,
		    size_t whylen);

/*
 * A receipt document of receipts/ (msgspool-spool(5)) with id rid: for
 * message msgid (or NULL) or the provider's id pmid (or NULL), our
 * status and the provider's own (theirs), when it happened, and the
 * error (stolen, may be NULL).  NULL out of memory.
 */
json_t		*msgdoc_receipt_new(const char *rid, const char *provider,
		    const char *msgid, const char *pmid, const char *status,
		    const char *theirs, time_t at, json_t *error);

/*
 * The status of a message (conf/openapi.yaml, MessageStatus) from the
 * state directory its file is in ("new", "deferred", "cur", "sent",
 * "failed") and what it records: scheduled, queued, sending, retrying,
 * sent, delivered, read, undelivered, failed or canceled.
 */
const char	*msgdoc_status(const json_t *doc, const char *state);

/*
 * The status object of a message as GET /messages/{id} returns it
 * (conf/openapi.yaml, MessageStatus: "direction" "outbound", its
 * "reference" and "route" or null), with its events when events is set
 * (webhooks leave them out).  A new reference, or NULL out of memory.
 * Its values may be doc's own (its id, its events array): shared, not
 * copied, so that neither is to be changed while both live.
 */
json_t		*msgdoc_status_object(const json_t *doc, const char *state,
		    int events);

/*
 * A new upload document (content the base64 of the bytes, borrowed).
 * NULL out of memory.
 */
json_t		*msgdoc_upload_new(const char *id, const char *client,
		    const char *name, const char *type, size_t size,
		    time_t created, const char *content);

/*
 * Whether doc is the upload id, of our version, made after notbefore.
 * 0 or -1.
 */
int		 msgdoc_upload_check(const json_t *doc, const char *id,
		    time_t notbefore);

#endif

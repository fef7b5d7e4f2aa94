/*
 * inbox.h: inbound messages, the replies and other texts people send to
 * a client's numbers (msgspool-spool(5), inbox/; conf/openapi.yaml,
 * InboundMessage).  The one file that knows an inbound document's
 * fields:
 *
 *	{"version":1, "id", "direction":"inbound", "client": ID or null,
 *	 "channel":"sms"|"ott", "from", "to", "text", "type", "receivedAt",
 *	 "provider", "providerMessageId", "media":[…], "parts"?}
 *
 * Each is kept in inbox/ID.json, written durably before its provider
 * hears that it was taken, and noted in inbox-new/ID.json until
 * msgspoold has handed it to its client (msgspoold(8), Inbound
 * messages).  Its client is decided where it is kept, by the
 * [client.ID] inbound key of the config of that moment (msgspool.conf(5)).
 */
#ifndef INBOX_H
#define INBOX_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "base/config.h"
#include "base/msgspool.h"

struct spool;

#define INBOX_AREA	"inbox"		/* every inbound message kept */
#define INBOX_NEW_AREA	"inbox-new"	/* not handed to its client yet */
/* A number of the inbound key: "+" and 8 to 15 digits, or a short code. */
#define INBOX_NUMBER_MAX	16

/*
 * A new inbound document with a fresh id, received at, owned by no
 * client yet: channel "sms" or "ott", the provider's name and id
 * (pmid, or NULL), from, to, text (NULL: none), type ("text",
 * "button", "image" …) and media (stolen, NULL for none: an array of
 * the provider's URLs or ids).  NULL out of memory.
 */
json_t		*inbox_new(const char *channel, const char *provider,
		    const char *pmid, const char *from, const char *to,
		    const char *text, const char *type, json_t *media,
		    time_t at);

/* Borrowed fields; NULL when absent (or null). */
const char	*inbox_client(const json_t *doc);
const char	*inbox_from(const json_t *doc);
const char	*inbox_to(const json_t *doc);
const char	*inbox_text(const json_t *doc);

/*
 * The client whose [client.ID] inbound key lists the number to (its
 * id, borrowed from the config), or NULL when none does.
 */
const char	*inbox_owner(const struct config *, const char *to);

/*
 * Give doc the client that owns its "to" now (inbox_owner), or none.
 * 1 when a client owns it, else 0.
 */
int		 inbox_set_owner(json_t *doc, const struct config *);

/*
 * Check the inbound key of a [client.ID] section: numbers separated by
 * blanks or commas, each "+" and 8 to 15 digits (E.164) or a short code
 * of 3 to 8 digits, none listed by another client.  0, or -1 with the
 * reason in err.
 */
int		 inbox_check_section(const struct config *,
		    const char *section, char *err, size_t errlen);

/*
 * Keep an inbound message: durably in inbox/ and noted in inbox-new/
 * (the note first: a message is never kept without being handed),
 * once.  key names the message for the provider's deliveries of it
 * (NULL: its provider and providerMessageId; none: every delivery is a
 * message of its own): the first delivery takes the index entry
 * (spool_index_add), a later one finds it and keeps nothing, *dup set,
 * unless the first never got its message written.  doc's id becomes the
 * kept message's.  MSG_OK, or the status of a write that failed
 * (MSG_TEMPFAIL: the spool cannot take it now).
 */
enum msg_status	 inbox_keep(struct spool *, json_t *doc, const char *key,
		    int *dup);

/*
 * Load inbox/ID.json: a new reference, or NULL with the reason in err
 * and errno ENOENT when there is no such inbound message.
 */
json_t		*inbox_load(struct spool *, const char *id, char *err,
		    size_t errlen);

/*
 * The inbound object a client gets (GET /messages/{id}, the data of a
 * message.received event): every field but the spool's own.  A new
 * reference, or NULL out of memory.
 */
json_t		*inbox_object(const json_t *doc);

#endif

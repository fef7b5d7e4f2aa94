/*
 * event.h: webhook events to clients (msgspool.conf(5), [client.ID];
 * msgspoold(8), Webhooks; msgspool-spool(5), events/).  The one file
 * that knows an event document's fields:
 *
 *	{"version":1, "id", "client", "type":"message.STATUS",
 *	 "timestamp", "data": the message's status object without events
 *	 (of message.received: the inbound message's object),
 *	 "attempts", "nextAttempt", "lastError"}
 *
 * An event is stored in events/ before it is due; msgspoold sends it
 * and removes it on a 2xx, or moves it to events-failed/ when it has
 * exhausted its tries (or got a 410).
 */
#ifndef EVENT_H
#define EVENT_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "base/config.h"
#include "base/msgspool.h"
#include "spool/spool.h"

#define EVENT_AREA		"events"
#define EVENT_FAILED_AREA	"events-failed"
/*
 * The statuses a client is told of unless webhook-events says less, and
 * "received": an inbound message (inbox.h).
 */
#define EVENT_TYPES_DEFAULT	"sent,delivered,read,undelivered,failed," \
				"canceled,received"
/* Random bytes in a webhook secret, at least. */
#define EVENT_SECRET_MIN	CONFIG_WHSEC_MIN
/* ... and in one msgspool makes. */
#define EVENT_SECRET_BYTES	32

/*
 * The client of a config section "client.ID" (borrowed from section),
 * or NULL when it is not one (or ID is not a valid client id).
 */
const char	*event_section_client(const char *section);

/*
 * Check a [client.ID] section: a valid ID, webhook-url http(s) without
 * blanks, a valid secret (webhook-secret or webhook-secret-file) when
 * there is a URL, webhook-events a list of known statuses.  0, or -1
 * with the reason in err.
 */
int		 event_check_section(const struct config *,
		    const char *section, char *err, size_t errlen);

/* Whether secret is "whsec_" and base64 of EVENT_SECRET_MIN bytes. */
int		 event_secret_valid(const char *secret);

/*
 * A new secret: "whsec_" and base64 of EVENT_SECRET_BYTES bytes from
 * getrandom.  malloc'd; NULL without entropy or memory.
 */
char		*event_secret_new(void);

/* Whether webhook-events (a list, NULL: the default) names status. */
int		 event_filter_has(const char *filter, const char *status);

/*
 * The event a message's document (in state, "sent", "failed" ...) makes
 * at now, when its client has a webhook-url and wants its status: a new
 * reference, due now.  NULL when it is not wanted (or out of memory).
 */
json_t		*event_of(const struct config *, const json_t *doc,
		    const char *state, time_t now);

/*
 * event_of, stored durably in events/ (msgspool-spool(5)).  MSG_OK
 * (also when no event is wanted), or the status of the store.  When
 * made is not NULL, the event's name is copied there (SPOOL_NAME_MAX)
 * so that a caller whose own write then fails can remove it; "" when
 * there is none.
 */
enum msg_status	 event_record(struct spool *, const struct config *,
		    const json_t *doc, const char *state, time_t now,
		    char *made);

/*
 * The message.received event of an inbound message of client, its
 * object data (borrowed: inbox_object), stored durably in events/ when
 * the client has a webhook-url and wants "received".  MSG_OK (also when
 * none is wanted), or the status of the store.
 */
enum msg_status	 event_record_received(struct spool *,
		    const struct config *, const char *client,
		    const json_t *data, time_t now);

/* Fields of an event (borrowed); NULL when absent. */
const char	*event_id(const json_t *ev);
const char	*event_client(const json_t *ev);
const char	*event_type(const json_t *ev);
const char	*event_last_error(const json_t *ev);
long long	 event_attempts(const json_t *ev);
/* When it is due: its nextAttempt, else now. */
time_t		 event_due(const json_t *ev);

/*
 * The body a client gets: {"type","timestamp","data"}, compact.
 * malloc'd (caller frees), NULL out of memory.
 */
char		*event_body(const json_t *ev);

/*
 * Record a failed try: attempts + 1, lastError why, and nextAttempt
 * next (0: no more tries, null).
 */
void		 event_failed(json_t *ev, const char *why, time_t next);

/* A resend by hand: due now, with its tries counted afresh. */
void		 event_resend(json_t *ev, time_t now);

#endif

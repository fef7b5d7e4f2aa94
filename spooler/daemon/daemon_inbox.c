/*
 * daemon_inbox.c: inbound messages handed to their clients by msgspoold
 * (msgspoold(8), Inbound messages; msgspool-spool(5), inbox/): each one
 * noted in inbox-new/ gets what it does (inbound_act), its client's
 * message.received event, a log line, and its note removed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/spool.h"

/*
 * What an inbound message does besides reaching its client, once, when
 * msgspoold hands it over: the place of the keywords (a STOP, START or
 * HELP acting on its client's suppressions and replying), which come
 * with a later change.  0 when done; 1 to be called again at the next
 * scan (its note kept), for a spool that cannot take a change now.
 */
static int
inbound_act(struct receipts_run *d, const json_t *doc)
{
	(void)d;
	(void)doc;
	return 0;
}

int
hand_inbound(void *arg, const char *name)
{
	struct receipts_run	*d = arg;
	const char		*client;
	char			 id[SPOOL_ID_LEN + 1], err[512];
	json_t			*doc, *obj;
	enum msg_status		 st;
	time_t			 now = time(NULL);

	snprintf(id, sizeof(id), "%s", name);
	if ((doc = inbox_load(d->spool, id, err, sizeof(err))) == NULL) {
		/* Its writer may still be writing it, or died: it comes
		 * again from its provider, under this id. */
		if (errno == ENOENT && now - ulid_time(id) / 1000 <
		    INBOX_NOTE_KEEP)
			return 0;
		log_warn("inbound %s: %s; its note dropped", id, errno ==
		    ENOENT ? "no such inbound message was kept" : err);
		spool_area_remove(d->spool, INBOX_NEW_AREA, name);
		return 0;
	}
	if (inbound_act(d, doc) != 0) {
		json_decref(doc);
		return 0;
	}
	if ((client = inbox_client(doc)) == NULL)
		log_warn("inbound %s: %s message from %s to %s: no client's "
		    "inbound key lists %s; kept (msgspool list --inbound)", id,
		    json_string_value(json_object_get(doc, "channel")),
		    inbox_from(doc), inbox_to(doc), inbox_to(doc));
	else {
		/* The event first: a crash before the note goes sends it
		 * twice, never not at all. */
		obj = inbox_object(doc);
		st = obj != NULL ? event_record_received(d->spool, d->cfg,
		    client, obj, now) : MSG_TEMPFAIL;
		json_decref(obj);
		if (st != MSG_OK) {
			log_warn("inbound %s: its event cannot be stored now; "
			    "tried again", id);
			json_decref(doc);
			return 0;
		}
		d->events = 1;
		log_info("inbound %s: %s message from %s to %s, for %s", id,
		    json_string_value(json_object_get(doc, "channel")),
		    inbox_from(doc), inbox_to(doc), client);
	}
	spool_area_remove(d->spool, INBOX_NEW_AREA, name);
	json_decref(doc);
	return 0;
}

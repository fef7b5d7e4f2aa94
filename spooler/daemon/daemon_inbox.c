/*
 * daemon_inbox.c: inbound messages handed to their clients by msgspoold
 * (msgspoold(8), Inbound messages; msgspool-spool(5), inbox/): each one
 * noted in inbox-new/ gets what it does (inbound_act: its keywords,
 * msgspool-spool(5), Keywords), its client's message.received event, a
 * log line, and its note removed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/log.h"
#include "content/keyword.h"
#include "daemon/daemon.h"
#include "daemon/daemon_metrics.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/spool.h"
#include "spool/suppress.h"

/*
 * Queue the reply of keyword k to doc, text, to its sender to (as the
 * sms list writes it), once: its id is derived from the inbound
 * message's (keyword_reply_id), and one found in any state was queued
 * by an earlier try (msgspool-spool(5), Keywords).  A stop's
 * confirmation goes although the sender is suppressed; another reply
 * to a sender suppressed otherwise is not queued, as a client's message
 * to it would be refused.  0 when done (queued, queued before, or not
 * to be sent: logged), its id in rid (or ""); -1 when the spool cannot
 * take it now.
 */
static int
queue_reply(struct receipts_run *d, const json_t *doc, const char *to,
    enum keyword k, const char *text, char *rid)
{
	enum spool_dir	 dir;
	enum msg_status	 st;
	json_t		*reply, *sup;
	char		 name[SPOOL_NAME_MAX], why[64];

	rid[0] = '\0';
	if (keyword_reply_id(msgdoc_id(doc), rid) == -1)
		return 0;
	if (spool_find(d->spool, rid, &dir, name) == 0)
		return 0;
	if ((reply = keyword_reply(doc, to, k, text, time(NULL))) == NULL) {
		rid[0] = '\0';
		return -1;
	}
	if ((sup = suppress_doc(d->spool, reply)) != NULL ||
	    (sup == NULL && errno != 0)) {
		if (sup != NULL)
			log_info("inbound %s: no %s reply: %s is %s",
			    msgdoc_id(doc), keyword_name(k), to,
			    suppress_why(sup, why, sizeof(why)));
		json_decref(sup);
		json_decref(reply);
		rid[0] = '\0';
		return sup != NULL ? 0 : -1;
	}
	st = spool_enqueue(d->spool, reply, SPOOL_NEW);
	json_decref(reply);
	if (st != MSG_OK) {
		log_err("inbound %s: its %s reply %s cannot be queued now; "
		    "tried again", msgdoc_id(doc), keyword_name(k), rid);
		rid[0] = '\0';
		return -1;
	}
	d->queued = 1;
	return 0;
}

/*
 * What an inbound message does besides reaching its client, when
 * msgspoold hands it over (msgspool-spool(5), Keywords): a text of an
 * SMS or WhatsApp that is one of its client's keywords (keyword_match)
 * acts on the suppressions of its sender, a stop adding one (source
 * "stop") on the channel it came by, and voice too for an SMS when
 * stop-channels lists it, a start removing those of a stop alone, a
 * help nothing; then the client's reply to that keyword, if it has
 * one, is queued (SMS only).  Each step may be done again: a crash
 * before the note goes acts again, and finds the suppression there and
 * the reply queued.  0 when done; 1 to be called again at the next
 * scan (its note kept), for a spool that cannot take a change now.
 */
static int
inbound_act(struct receipts_run *d, const json_t *doc)
{
	struct keywords	 kw;
	const char	*client, *chan, *type, *id = msgdoc_id(doc);
	const char	*text = inbox_text(doc);
	char		 from[SUPPRESS_ADDR_MAX], err[512];
	char		 word[KEYWORD_MAX + 1], reason[KEYWORD_MAX + 64];
	char		 rid[SPOOL_ID_LEN + 1] = "", done[128] = "";
	enum channel	 chs[2];
	size_t		 nch = 0, i;
	int		 k, ch, r;

	/* A message no client owns acts on nothing. */
	if ((client = inbox_client(doc)) == NULL || text == NULL ||
	    (type = json_string_value(json_object_get(doc, "type"))) == NULL ||
	    strcmp(type, "text") != 0)
		return 0;
	chan = json_string_value(json_object_get(doc, "channel"));
	if ((ch = channel_parse(chan ? chan : "")) != CHANNEL_SMS &&
	    ch != CHANNEL_OTT)
		return 0;
	/* Checked at start and on SIGHUP: not here but for a bug. */
	if (keyword_config(d->cfg, client, &kw, err, sizeof(err)) == -1) {
		log_err("inbound %s: config: %s; its keywords not acted on",
		    id, err);
		return 0;
	}
	if ((k = keyword_match(&kw, text)) == -1)
		return 0;
	keyword_fold(text, strlen(text), word, sizeof(word));
	if (suppress_normalize((enum channel)ch, inbox_from(doc), from,
	    sizeof(from)) == -1) {
		log_warn("inbound %s: %s from %s for %s: not an %s address to "
		    "act on; nothing done", id, keyword_name(k),
		    inbox_from(doc), client, chan);
		return 0;
	}
	chs[nch++] = (enum channel)ch;
	if (ch == CHANNEL_SMS && kw.stop_voice)
		chs[nch++] = CHANNEL_VOICE;
	snprintf(reason, sizeof(reason), "\"%s\" (inbound message %s)", word,
	    id);
	for (i = 0; i < nch && k != KEYWORD_HELP; i++) {
		if (k == KEYWORD_STOP)
			r = suppress_add(d->spool, client, chs[i], from, "stop",
			    reason, NULL);
		else
			r = suppress_remove(d->spool, client, chs[i], from,
			    "stop");
		if (r == -1) {
			log_err("inbound %s: %s from %s for %s: the %s list "
			    "cannot be written now (%s); tried again", id,
			    keyword_name(k), from, client,
			    channel_info(chs[i])->name, strerror(errno));
			return 1;
		}
		/* Logged: what changed (a list that had it, or had none). */
		if ((k == KEYWORD_STOP) == (r == 1))
			snprintf(done + strlen(done), sizeof(done) -
			    strlen(done), "%s%s", done[0] != '\0' ? ", " :
			    k == KEYWORD_STOP ? "suppressed on " :
			    "stop lifted on ", channel_info(chs[i])->name);
	}
	if (kw.reply[k] != NULL && ch == CHANNEL_SMS &&
	    queue_reply(d, doc, from, (enum keyword)k, kw.reply[k], rid) == -1)
		return 1;
	log_info("inbound %s: %s from %s for %s: %s%s%s%s", id,
	    keyword_name(k), from, client, done[0] ? done : k == KEYWORD_STOP ?
	    "suppressed already" : k == KEYWORD_START ? "no stop to lift" :
	    "nothing changed",
	    rid[0] ? "; reply " : "", rid, kw.reply[k] != NULL &&
	    ch != CHANNEL_SMS ? "; no reply (replies go by SMS only)" : "");
	return 0;
}

/*
 * One note: its message acted on, handed to its client, the note
 * removed, all while the note is locked, so that the daemons of a
 * shared spool never handle one message at once.  A note that another
 * daemon holds, or whose message could not be acted on or handed over
 * now, ends the scan (1): the notes after it wait, so that the
 * keywords of one sender act in the order they came (a STOP, then a
 * START, never the other way round).
 */
int
hand_inbound(void *arg, const char *name)
{
	struct receipts_run	*d = arg;
	const char		*client;
	char			 id[SPOOL_ID_LEN + 1], err[512];
	json_t			*doc, *obj;
	enum msg_status		 st;
	time_t			 now = time(NULL);
	int			 lock, rc = 0;

	snprintf(id, sizeof(id), "%s", name);
	/* Any other error (a lock NFS refuses): on without it. */
	if ((lock = spool_area_lock(d->spool, INBOX_NEW_AREA, name)) == -1 &&
	    (errno == EBUSY || errno == ENOENT))
		return errno == EBUSY;
	if ((doc = inbox_load(d->spool, id, err, sizeof(err))) == NULL) {
		/* Its writer may still be writing it, or died: it comes
		 * again from its provider, under this id. */
		if (errno == ENOENT && now - ulid_time(id) / 1000 <
		    INBOX_NOTE_KEEP)
			goto out;
		log_warn("inbound %s: %s; its note dropped", id, errno ==
		    ENOENT ? "no such inbound message was kept" : err);
		spool_area_remove(d->spool, INBOX_NEW_AREA, name);
		goto out;
	}
	if (inbound_act(d, doc) != 0) {
		rc = 1;
		goto out;
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
			rc = 1;
			goto out;
		}
		d->events = 1;
		log_info("inbound %s: %s message from %s to %s, for %s", id,
		    json_string_value(json_object_get(doc, "channel")),
		    inbox_from(doc), inbox_to(doc), client);
	}
	{
		const char *v[3] = { json_string_value(json_object_get(doc,
		    "channel")), json_string_value(json_object_get(doc,
		    "provider")), NULL };

		dmetrics_count(d->metrics, "inbound", v);
	}
	/* Removed while still held: whoever locks it next finds it gone. */
	spool_area_remove(d->spool, INBOX_NEW_AREA, name);
out:
	json_decref(doc);
	if (lock != -1)
		close(lock);
	return rc;
}

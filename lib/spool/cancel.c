/*
 * cancel.c: a message looked up by its id, and its cancel (cancel.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "spool/cancel.h"
#include "spool/counts.h"
#include "spool/event.h"
#include "spool/msgdoc.h"
#include "spool/spool_impl.h"

json_t *
spool_lookup_doc(struct spool *s, const char *text, size_t len,
    enum spool_dir dir, const char *name, const char *client, char *err,
    size_t errlen)
{
	json_t		*doc;
	const char	*owner;

	if ((doc = spool_doc_parse(s, text, len, dir, name, err, errlen)) ==
	    NULL)
		return NULL;
	owner = msgdoc_client(doc);
	/* Another client's message does not exist for this one. */
	if (client != NULL && strcmp(owner != NULL ? owner : "",
	    client) != 0) {
		json_decref(doc);
		util_seterr(err, errlen, "%.*s: no such message", SPOOL_ID_LEN,
		    name);
		errno = ENOENT;
		return NULL;
	}
	return doc;
}

json_t *
spool_lookup(struct spool *s, const char *id, const char *client,
    enum spool_dir *dir, char *name, char *err, size_t errlen)
{
	json_t	*doc;
	char	*text;
	size_t	 len;

	/*
	 * The open is the look: the file read is the one found, wherever it
	 * moves meanwhile (spool_find_read).
	 */
	if (spool_find_read(s, id, dir, name, &text, &len, err, errlen) == -1)
		return NULL;
	doc = spool_lookup_doc(s, text, len, *dir, name, client, err, errlen);
	free(text);
	return doc;
}

/* Whether doc in dir was canceled: its status says so. */
static int
canceled(const json_t *doc, enum spool_dir dir)
{
	return dir == SPOOL_FAILED && strcmp(msgdoc_status(doc,
	    spool_dirname(dir)), "canceled") == 0;
}

/* What a look finds: c->doc and c->dir set, unless not found. */
static enum cancel_result
judge(struct spool *s, const char *id, const char *client,
    struct cancel *c, char *name)
{
	if ((c->doc = spool_lookup(s, id, client, &c->dir, name, c->err,
	    sizeof(c->err))) == NULL) {
		if (errno == ENOENT)
			return CANCEL_NOT_FOUND;
		c->status = spool_errno_status(errno);
		return CANCEL_ERROR;
	}
	if (canceled(c->doc, c->dir))
		return CANCEL_ALREADY;
	if (c->dir != SPOOL_NEW && c->dir != SPOOL_DEFERRED)
		return CANCEL_TOO_LATE;
	return CANCEL_DONE;	/* cancelable */
}

/*
 * Take new/ or deferred/ name (held by fd, document taken), record it
 * canceled, let go.  CANCEL_DONE with c->doc, or CANCEL_ERROR with the
 * file back in from/.
 */
static enum cancel_result
record(struct spool *s, const struct config *cfg, enum spool_dir from,
    const char *name, int fd, json_t *taken, time_t now, struct cancel *c)
{
	enum msg_status	 st;
	char		 evname[SPOOL_NAME_MAX];
	int		 e, ch;

	msgdoc_cancel(taken, now);
	/*
	 * Its client's webhook event first (msgspool-spool(5), events/),
	 * so that a cancel is never missed: an event without its cancel
	 * is taken back.
	 */
	st = event_record(s, cfg, taken, "failed", now, evname);
	if (st == MSG_OK && (st = spool_store(s, SPOOL_FAILED, name, taken,
	    SPOOL_CUR)) != MSG_OK && evname[0] != '\0')
		spool_area_remove(s, EVENT_AREA, evname);
	if (st != MSG_OK) {
		e = errno;
		/* Back where it was: the cancel did not happen. */
		spool_move(s, SPOOL_CUR, from, name);
		spool_release(s, name, fd);
		json_decref(taken);
		c->status = st;
		util_seterr(c->err, sizeof(c->err), "%s: the cancel cannot be "
		    "recorded: %s", name, strerror(e));
		return CANCEL_ERROR;
	}
	spool_release(s, name, fd);
	/* Counted once it is true; a count lost is logged, the cancel
	 * stands. */
	if ((ch = channel_parse(msgdoc_channel(taken))) != -1 &&
	    counts_add(s, COUNTS_CANCELED, (enum channel)ch) == -1)
		log_warn("spool: %s: the count of canceled messages: %s",
		    name, strerror(errno));
	c->doc = taken;
	c->dir = SPOOL_FAILED;
	return CANCEL_DONE;
}

enum cancel_result
spool_cancel(struct spool *s, const struct config *cfg, const char *id,
    const char *client, time_t now, struct cancel *c)
{
	enum cancel_result	 r;
	enum spool_dir		 from;
	json_t			*taken;
	char			 name[SPOOL_NAME_MAX];
	int			 tries, fd, busy = 0;

	memset(c, 0, sizeof(*c));
	for (tries = 0; tries < CANCEL_TRIES; tries++) {
		if ((r = judge(s, id, client, c, name)) != CANCEL_DONE)
			return r;
		from = c->dir;
		json_decref(c->doc);
		c->doc = NULL;
		if ((fd = spool_take(s, from, name, &taken, c->err,
		    sizeof(c->err))) == -1) {
			/*
			 * A daemon holds it now (its claim, or the claim in
			 * cur/ whose outcome it is recording), or it moved:
			 * look again, a little later each time.
			 */
			busy = errno == EBUSY;
			if (errno == ENOENT || errno == EBUSY ||
			    errno == EAGAIN) {
				if (busy)
					usleep(10000 << tries);
				continue;
			}
			c->status = spool_errno_status(errno);
			util_seterr(c->err, sizeof(c->err), "%s: %s", name,
			    strerror(errno));
			return CANCEL_ERROR;
		}
		if (taken == NULL) {
			/* Not a spool file after all: set aside, as a daemon
			 * would. */
			log_err("spool: cancel: %s", c->err);
			spool_move(s, SPOOL_CUR, SPOOL_FAILED, name);
			spool_release(s, name, fd);
			return CANCEL_NOT_FOUND;
		}
		return record(s, cfg, from, name, fd, taken, now, c);
	}
	/* Still moving after every try: a daemon is on it. */
	if ((r = judge(s, id, client, c, name)) == CANCEL_DONE)
		r = busy ? CANCEL_BUSY : CANCEL_TOO_LATE;
	return r;
}

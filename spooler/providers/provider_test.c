/*
 * provider_test.c: the messages of a test key (msgspool.conf(5), KEYS
 * FILE).  They are never handed to a provider: msgspoold completes them
 * itself by their recipient, and they are reported like any other.
 *
 *	recipient number ending in 0001, email local part "fail": failed
 *	ending in 0002, local part "bounce": sent, then undelivered
 *	anything else: sent, then delivered
 *
 * The second step is a receipt in receipts/, applied the way a
 * provider's is (msgspool-spool(5)).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "providers/provider.h"
#include "spool/spool.h"

enum magic {
	MAGIC_DELIVER,
	MAGIC_FAIL,
	MAGIC_BOUNCE
};

/* What a test message's recipient asks for. */
static enum magic
magic_of(const char *channel, const char *to)
{
	const char	*at;
	size_t		 len;

	if (channel != NULL && strcmp(channel, "email") == 0) {
		if ((at = strchr(to, '@')) == NULL)
			return MAGIC_DELIVER;
		len = (size_t)(at - to);
		if (len == 4 && strncmp(to, "fail", 4) == 0)
			return MAGIC_FAIL;
		if (len == 6 && strncmp(to, "bounce", 6) == 0)
			return MAGIC_BOUNCE;
		return MAGIC_DELIVER;
	}
	len = strlen(to);
	if (len >= 4 && strcmp(to + len - 4, "0001") == 0)
		return MAGIC_FAIL;
	if (len >= 4 && strcmp(to + len - 4, "0002") == 0)
		return MAGIC_BOUNCE;
	return MAGIC_DELIVER;
}

static void *
test_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	(void)cfg;
	(void)section;
	return spool_open(spool_root, 0, err, errlen);
}

static void
test_free(void *state)
{
	spool_free(state);
}

static void
test_start(void *state, struct job *job)
{
	struct spool	*spool = state;
	const char	*id = msgdoc_id(job->doc), *to;
	enum magic	 m;
	char		 rid[SPOOL_ID_LEN + 1], now[RFC3339_LEN];
	char		 pid[SPOOL_ID_LEN + 8];
	json_t		*r;
	enum msg_status	 st;

	to = msgdoc_recipient(job->doc);
	m = magic_of(msgdoc_channel(job->doc), to);
	if (m == MAGIC_FAIL) {
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "test key: %s always "
		    "fails", to);
		return;
	}
	/* Its receipt first, waiting for the outcome to be recorded. */
	rfc3339_format(time(NULL), now, sizeof(now));
	snprintf(pid, sizeof(pid), "test-%s", id);
	r = ulid_new(rid) == -1 ? NULL : json_pack("{s:i, s:s, s:s, s:s, "
	    "s:s, s:s, s:s, s:s, s:s, s:o}", "version", MSGDOC_VERSION, "id",
	    rid, "provider", "test", "message", id, "providerMessageId", pid,
	    "status", m == MAGIC_BOUNCE ? "undelivered" : "delivered",
	    "providerStatus", m == MAGIC_BOUNCE ? "undelivered" : "delivered",
	    "at", now, "received", now, "error", m == MAGIC_BOUNCE ?
	    json_pack("{s:s, s:s}", "code", "test", "message", "test key: "
	    "this recipient never gets it") : json_null());
	if (r == NULL || (st = spool_area_store(spool, "receipts",
	    (const json_t **)&r, 1)) != MSG_OK) {
		json_decref(r);
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "test key: the receipt "
		    "cannot be stored now");
		return;
	}
	json_decref(r);
	job->status = MSG_OK;
	job->reply = json_pack("{s:s, s:s}", "provider", "test", "id", pid);
}

const struct provider provider_test = {
	.name = "test",
	.channels = "sms,voice,email,ott",
	.init = test_init,
	.start = test_start,
	.free_state = test_free,
};

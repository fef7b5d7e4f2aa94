/*
 * provider_file.c: the default provider.  It writes exactly what would be
 * sent into a directory (SPOOL/outbox by default), so a fresh install
 * works end to end with no account anywhere: an email as ID.eml, the
 * bytes the smtp provider sends (message.h builds both); any other
 * message as the JSON body the http provider would POST, ID.json.
 * Each is written to a temporary name, synced and renamed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "providers/message.h"
#include "providers/provider.h"

struct file_state {
	char		*dir;
	struct spool	*spool;		/* for the attachments stored once */
	struct unsub	*unsub;		/* the clients' List-Unsubscribe */
};

static void *
file_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct file_state	*st;
	char			*def = NULL;

	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    asprintf(&def, "%s/outbox", spool_root) == -1) {
		free(st);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* def is resolved already: only a configured dir is resolved here. */
	if ((st->dir = config_path(cfg, section, "dir", NULL)) == NULL)
		st->dir = def;
	else
		free(def);
	if (st->dir == NULL) {
		free(st);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (mkdir(st->dir, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", st->dir, strerror(errno));
		free(st->dir);
		free(st);
		return NULL;
	}
	if ((st->spool = spool_open(spool_root, 0, err, errlen)) == NULL ||
	    (st->unsub = unsub_new(cfg, err, errlen)) == NULL) {
		spool_free(st->spool);
		free(st->dir);
		free(st);
		return NULL;
	}
	message_init();
	return st;
}

static void
file_free(void *state)
{
	struct file_state	*st = state;

	if (st == NULL)
		return;
	free(st->dir);
	spool_free(st->spool);
	unsub_free(st->unsub);
	free(st);
}

static void
file_start(void *state, struct job *job)
{
	struct file_state	*st = state;
	const char		*id, *channel;
	char			*out = NULL, *path = NULL, *tmp = NULL;
	struct message		*m;
	json_t			*what;
	size_t			 len;
	int			 fd, eml;

	job->status = MSG_TEMPFAIL;
	id = json_string_value(json_object_get(job->doc, "id"));
	channel = json_string_value(json_object_get(job->doc, "channel"));
	/* The output's name comes from the id: never a path of its own. */
	if (id == NULL || !ulid_valid(id) || channel == NULL) {
		snprintf(job->err, sizeof(job->err), "not a spool document");
		job->status = MSG_PERMFAIL;
		return;
	}
	/*
	 * What would be sent: an email as its MIME message (ID.eml), any
	 * other message as the body the http provider would POST (ID.json).
	 */
	eml = strcmp(channel, "email") == 0;
	if (eml) {
		/* The name, not the document, says where its blobs are. */
		if ((m = message_build(st->spool, job->name, id,
		    provider_message(job), st->unsub, msgdoc_client(job->doc),
		    &job->status, job->err, sizeof(job->err))) == NULL)
			return;
		job->status = MSG_TEMPFAIL;
		out = m->data;
		len = m->len;
		m->data = NULL;
		message_free(m);
	} else {
		what = json_pack("{s:O, s:O, s:O, s:O}", "id",
		    json_object_get(job->doc, "id"), "channel",
		    json_object_get(job->doc, "channel"), "client",
		    json_object_get(job->doc, "client"), "message",
		    json_object_get(job->doc, "message"));
		out = what ? json_dumps(what, JSON_INDENT(2) | JSON_SORT_KEYS) :
		    NULL;
		json_decref(what);
		len = out ? strlen(out) : 0;
	}
	if (out == NULL) {
		snprintf(job->err, sizeof(job->err), "cannot render %s", id);
		job->status = MSG_PERMFAIL;
		return;
	}
	if (asprintf(&path, "%s/%s.%s", st->dir, id, eml ? "eml" : "json") ==
	    -1 || asprintf(&tmp, "%s/.%s.tmp", st->dir, id) == -1) {
		snprintf(job->err, sizeof(job->err), "out of memory");
		goto done;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1 || util_write_all(fd, out, len) == -1 ||
	    (!eml && util_write_all(fd, "\n", 1) == -1) || fsync(fd) == -1) {
		snprintf(job->err, sizeof(job->err), "%s: %s", tmp,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		unlink(tmp);
		goto done;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		snprintf(job->err, sizeof(job->err), "%s: %s", path,
		    strerror(errno));
		unlink(tmp);
		goto done;
	}
	job->reply = json_pack("{s:s, s:s}", "provider", "file", "path", path);
	job->status = MSG_OK;
done:
	free(out);
	free(path);
	free(tmp);
}

const struct provider provider_file = {
	.name = "file",
	.channels = "sms,voice,email,ott",
	.init = file_init,
	.start = file_start,
	.free_state = file_free,
};

/*
 * provider_file.c: the default provider.  It writes exactly what would
 * be sent into a directory (SPOOL/outbox by default), so a fresh install
 * works end to end with no account anywhere.  Each message becomes
 * ID.json there, written to a temporary name, synced and renamed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"

struct file_state {
	char	*dir;
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
	return st;
}

static void
file_free(void *state)
{
	struct file_state	*st = state;

	if (st == NULL)
		return;
	free(st->dir);
	free(st);
}

static void
file_start(void *state, struct job *job)
{
	struct file_state	*st = state;
	const char		*id;
	char			*out = NULL, *path = NULL, *tmp = NULL;
	json_t			*what;
	size_t			 len;
	int			 fd;

	job->status = MSG_TEMPFAIL;
	id = json_string_value(json_object_get(job->doc, "id"));
	what = json_pack("{s:O, s:O, s:O, s:O}", "id", json_object_get(job->doc,
	    "id"), "channel", json_object_get(job->doc, "channel"), "client",
	    json_object_get(job->doc, "client"), "message",
	    json_object_get(job->doc, "message"));
	if (id == NULL || what == NULL) {
		snprintf(job->err, sizeof(job->err), "not a spool document");
		json_decref(what);
		job->status = MSG_PERMFAIL;
		return;
	}
	out = json_dumps(what, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(what);
	if (out == NULL || asprintf(&path, "%s/%s.json", st->dir, id) == -1 ||
	    asprintf(&tmp, "%s/.%s.json.tmp", st->dir, id) == -1) {
		snprintf(job->err, sizeof(job->err), "out of memory");
		goto done;
	}
	len = strlen(out);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1 || write(fd, out, len) != (ssize_t)len ||
	    write(fd, "\n", 1) != 1 || fsync(fd) == -1) {
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

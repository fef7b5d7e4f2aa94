/*
 * idem.c: Idempotency-Key records in the spool (idem.h; msgspool-spool(5),
 * Idempotency).  One of the spool's own modules: it writes its records
 * with the spool's durable commit (spool_impl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "base/log.h"
#include "base/util.h"
#include "http/idem.h"
#include "http/problem.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

#define IDEM_VERSION	1
#define IDEM_HASH_LEN	40		/* hex digits of the record's name */

struct idem {
	struct spool		*spool;
	struct spool_hold	 hold;
	char			 client[128];
	char			 key[IDEM_KEY_MAX + 1];
	char			 route[256];
	char			 hash[IDEM_HASH_LEN + 1];
	char			 digest[2 * SHA256_DIGEST_SIZE + 1];
	int			 afd;	/* the area */
	int			 lockfd;
	time_t			 now;
};

int
idem_key_parse(const char *v, char *key)
{
	size_t	n = 0;

	if (v == NULL)
		return -1;
	if (*v == '"') {
		/* A Structured Fields string: printable ASCII, \" and \\. */
		for (v++; *v != '"'; v++) {
			if (*v == '\\') {
				v++;
				if (*v != '"' && *v != '\\')
					return -1;
			} else if (*v < 0x20 || *v > 0x7e)
				return -1;
			if (n == IDEM_KEY_MAX)
				return -1;
			key[n++] = *v;
		}
		if (v[1] != '\0')
			return -1;
	} else
		for (; *v != '\0'; v++) {
			if (*v < 0x20 || *v > 0x7e || n == IDEM_KEY_MAX)
				return -1;
			key[n++] = *v;
		}
	key[n] = '\0';
	return n == 0 ? -1 : 0;
}

static void
hex(const uint8_t *d, size_t n, char *out)
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

/* SHA-256 of a and b (a NUL between), in hex, cut to len digits. */
static void
digest2(const char *a, const void *b, size_t blen, char *out, size_t len)
{
	struct sha256_ctx	ctx;
	uint8_t			d[SHA256_DIGEST_SIZE];
	char			h[2 * SHA256_DIGEST_SIZE + 1];

	sha256_init(&ctx);
	sha256_update(&ctx, strlen(a) + 1, (const uint8_t *)a);
	sha256_update(&ctx, blen, b);
	sha256_digest(&ctx, sizeof(d), d);
	hex(d, sizeof(d), h);
	memcpy(out, h, len);
	out[len] = '\0';
}

/*
 * Take the key's lock without waiting.  1 taken, 0 held by another
 * request, -1 error.  The lock file may be pruned between our open and
 * our lock: then the lock is on a file no one else opens, and we open
 * again.
 */
static int
lock(struct idem *id)
{
	struct stat	a, b;
	char		name[IDEM_HASH_LEN + 8];
	int		tries;

	snprintf(name, sizeof(name), "%s.lock", id->hash);
	for (tries = 0; tries < 5; tries++) {
		id->lockfd = openat(id->afd, name, O_RDWR | O_CREAT |
		    O_NOFOLLOW | O_CLOEXEC, 0660);
		if (id->lockfd == -1)
			return -1;
		if (flock(id->lockfd, LOCK_EX | LOCK_NB) == -1) {
			if (errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		if (fstat(id->lockfd, &a) == 0 &&
		    fstatat(id->afd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			/* In use: not for idem_prune. */
			futimens(id->lockfd, NULL);
			return 1;
		}
		close(id->lockfd);
		id->lockfd = -1;
	}
	errno = EAGAIN;
	return -1;
}

/* The record, NULL with errno ENOENT when there is none. */
static json_t *
load(struct idem *id)
{
	json_t		*doc;
	json_error_t	 je;
	char		 name[IDEM_HASH_LEN + 8];
	int		 fd;

	snprintf(name, sizeof(name), "%s.json", id->hash);
	if ((fd = util_open_regular(id->afd, name, 1)) == -1)
		return NULL;
	doc = msgdoc_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (doc == NULL || json_integer_value(json_object_get(doc,
	    "version")) != IDEM_VERSION) {
		log_err("spool: %s/%s/%s: not a version %d record: %s",
		    spool_root(id->spool), IDEM_AREA, name, IDEM_VERSION,
		    doc ? "version" : je.text);
		json_decref(doc);
		errno = EINVAL;
		return NULL;
	}
	return doc;
}

/* The kept reply of a record, marked as a replay. */
static struct response *
replay(const json_t *rec)
{
	struct response	*r;
	const json_t	*reply, *h;
	const char	*body, *ct;
	size_t		 i;

	reply = json_object_get(rec, "reply");
	body = json_string_value(json_object_get(reply, "body"));
	ct = json_string_value(json_object_get(reply, "contentType"));
	if (body == NULL || ct == NULL)
		return response_error(500, "an idempotency record is damaged");
	r = response_new((int)json_integer_value(json_object_get(reply,
	    "status")), ct, body, json_string_length(json_object_get(reply,
	    "body")));
	if (r == NULL)
		return NULL;
	json_array_foreach(json_object_get(reply, "headers"), i, h)
		response_header(r, json_string_value(json_array_get(h, 0)),
		    json_string_value(json_array_get(h, 1)));
	response_header(r, "Idempotent-Replay", "true");
	return r;
}

/* Finish publishing what a record holds (a retry after a crash). */
static int
complete(struct idem *id, const json_t *rec)
{
	struct spool_hold	 h = { NULL, 0, 0 };
	const json_t		*m;
	int			 d, rc;
	size_t			 i;

	json_array_foreach(json_object_get(rec, "messages"), i, m) {
		d = spool_dir_parse(json_string_value(json_object_get(m,
		    "state")) ? json_string_value(json_object_get(m,
		    "state")) : "");
		if (spool_hold_add(&h, (enum spool_dir)d,
		    json_string_value(json_object_get(m, "name")) ?
		    json_string_value(json_object_get(m, "name")) : "") ==
		    -1) {
			spool_hold_free(&h);
			errno = EINVAL;
			return -1;
		}
	}
	rc = spool_hold_publish(id->spool, &h);
	spool_hold_free(&h);
	return rc;
}

struct response *
idem_begin(struct spool *s, const char *client, const char *key,
    const char *route, const void *body, size_t len, long ttl, time_t now,
    struct idem **out)
{
	struct idem	*id;
	struct response	*r = NULL;
	json_t		*rec = NULL;
	time_t		 created;
	char		 name[IDEM_HASH_LEN + 8];
	int		 rc;

	*out = NULL;
	if ((id = calloc(1, sizeof(*id))) == NULL)
		return NULL;
	id->spool = s;
	id->afd = id->lockfd = -1;
	id->now = now;
	snprintf(id->client, sizeof(id->client), "%s", client);
	snprintf(id->key, sizeof(id->key), "%s", key);
	snprintf(id->route, sizeof(id->route), "%s", route);
	digest2(client, key, strlen(key), id->hash, IDEM_HASH_LEN);
	digest2(route, body, len, id->digest, sizeof(id->digest) - 1);
	if ((id->afd = spool_area(s, IDEM_AREA, 1)) == -1 ||
	    (rc = lock(id)) == -1) {
		log_err("spool: %s/%s: %s", spool_root(s), IDEM_AREA,
		    strerror(errno));
		r = response_error(503, "the spool cannot keep the "
		    "idempotency key now");
		goto fail;
	}
	if (rc == 0) {
		r = problem_response(problem_new(409, "idempotency-key-in-use",
		    "a request with this Idempotency-Key is still running; "
		    "retry it when it has ended"));
		if (r != NULL)
			response_header(r, "Retry-After", "1");
		goto fail;
	}
	FAULT("idem: locked");
	if ((rec = load(id)) == NULL && errno != ENOENT) {
		r = response_error(500, "an idempotency record is damaged");
		goto fail;
	}
	snprintf(name, sizeof(name), "%s.json", id->hash);
	if (rec != NULL && (rfc3339_parse(json_string_value(
	    json_object_get(rec, "created")), &created) == -1 ||
	    created + ttl <= now)) {
		/* Expired: the key is free again. */
		unlinkat(id->afd, name, 0);
		json_decref(rec);
		rec = NULL;
	}
	if (rec == NULL) {
		spool_hold(s, &id->hold);
		*out = id;
		return NULL;
	}
	if (strcmp(json_string_value(json_object_get(rec, "client")) ?
	    json_string_value(json_object_get(rec, "client")) : "",
	    client) != 0 || strcmp(json_string_value(json_object_get(rec,
	    "key")) ? json_string_value(json_object_get(rec, "key")) : "",
	    key) != 0) {
		log_err("spool: %s/%s/%s: the record of another key",
		    spool_root(s), IDEM_AREA, name);
		r = response_error(500, "an idempotency record is damaged");
	} else if (strcmp(json_string_value(json_object_get(rec,
	    "digest")) ? json_string_value(json_object_get(rec, "digest")) :
	    "", id->digest) != 0)
		r = problem_response(problem_new(422,
		    "idempotency-key-reused", "this Idempotency-Key was used "
		    "for a request with another body or route; use a new key "
		    "for a new request"));
	else if (complete(id, rec) == -1) {
		log_err("spool: %s/%s/%s: its messages cannot be published: "
		    "%s", spool_root(s), IDEM_AREA, name, strerror(errno));
		r = response_error(503, "the spool cannot take messages now");
	} else
		r = replay(rec);
fail:
	json_decref(rec);
	idem_free(id);
	return r;
}

/* The record of a 2xx reply and of the messages held. */
static json_t *
record(const struct idem *id, const struct response *r)
{
	json_t	*rec, *msgs, *hdrs, *reply;
	char	 created[RFC3339_LEN];
	size_t	 i;

	rfc3339_format(id->now, created, sizeof(created));
	msgs = json_array();
	hdrs = json_array();
	for (i = 0; msgs != NULL && i < id->hold.n; i++)
		json_array_append_new(msgs, json_pack("{s:s, s:s}", "state",
		    spool_dirname(id->hold.v[i].dir), "name",
		    id->hold.v[i].name));
	/* Not the RateLimit headers: a replay tells the rate of its time. */
	for (i = 0; hdrs != NULL && i < r->nheaders; i++)
		if (strncasecmp(r->headers[i].name, "RateLimit", 9) != 0)
				json_array_append_new(hdrs, json_pack("[s, s]",
			    r->headers[i].name, r->headers[i].value));
	reply = json_pack("{s:i, s:s, s:o, s:s%}", "status", r->status,
	    "contentType", r->content_type ? r->content_type :
	    "application/json", "headers", hdrs, "body",
	    r->body ? r->body : "", r->body ? r->body_len : 0);
	rec = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:o, s:o}",
	    "version", IDEM_VERSION, "client", id->client, "key", id->key,
	    "route", id->route, "digest", id->digest, "created", created,
	    "reply", reply, "messages", msgs);
	if (rec != NULL && json_array_size(msgs) != id->hold.n) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}

struct response *
idem_finish(struct idem *id, struct response *r)
{
	const json_t	*docs[1];
	const char	*names[1];
	json_t		*rec;
	enum msg_status	 st;
	time_t		 mtime = 0;
	char		 name[IDEM_HASH_LEN + 8];
	int		 dirfds[1];

	spool_hold(id->spool, NULL);
	if (r == NULL || r->status < 200 || r->status > 299) {
		/* Not kept: the request queued nothing. */
		spool_hold_discard(id->spool, &id->hold);
		return r;
	}
	if ((rec = record(id, r)) == NULL) {
		spool_hold_discard(id->spool, &id->hold);
		response_free(r);
		return response_error(500, "out of memory");
	}
	FAULT("idem: before the record");
	snprintf(name, sizeof(name), "%s.json", id->hash);
	docs[0] = rec;
	names[0] = name;
	dirfds[0] = id->afd;
	spool_commit_files(id->spool, docs, dirfds, names, &mtime, &st, 1);
	json_decref(rec);
	if (st != MSG_OK) {
		spool_hold_discard(id->spool, &id->hold);
		response_free(r);
		return response_error(st == MSG_TEMPFAIL ? 503 : 500,
		    "the spool cannot keep the idempotency key now");
	}
	FAULT("idem: recorded");
	if (spool_hold_publish(id->spool, &id->hold) == -1) {
		/* Recorded: a retry with the key publishes the rest. */
		response_free(r);
		return response_error(503, "the spool cannot take messages "
		    "now; retry with the same Idempotency-Key");
	}
	FAULT("idem: published");
	return r;
}

void
idem_free(struct idem *id)
{
	if (id == NULL)
		return;
	if (id->spool != NULL)
		spool_hold(id->spool, NULL);
	if (id->lockfd != -1)
		close(id->lockfd);
	if (id->afd != -1)
		close(id->afd);
	spool_hold_free(&id->hold);
	free(id);
}

size_t
idem_prune(struct spool *s, time_t before)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	char		 name[IDEM_HASH_LEN + 8];
	size_t		 n = 0, len;
	int		 afd, fd;

	if ((afd = spool_area(s, IDEM_AREA, 0)) == -1)
		return 0;
	if ((dir = fdopendir(dup(afd))) == NULL) {
		close(afd);
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		len = strlen(de->d_name);
		if (len != IDEM_HASH_LEN + 5 ||
		    strcmp(de->d_name + IDEM_HASH_LEN, ".lock") != 0)
			continue;
		if (fstatat(afd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode) || st.st_mtime >= before)
			continue;
		/* Under its lock: a request running with the key keeps it. */
		/* Read only will do where we may not write (another user's). */
		if ((fd = openat(afd, de->d_name, O_RDWR | O_NOFOLLOW |
		    O_CLOEXEC)) == -1 && (errno != EACCES || (fd = openat(afd,
		    de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1))
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 &&
		    st.st_mtime < before) {
			snprintf(name, sizeof(name), "%.*s.json",
			    IDEM_HASH_LEN, de->d_name);
			if (fstatat(afd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
			    st.st_mtime < before) {
				if (unlinkat(afd, name, 0) == 0)
					n++;
				unlinkat(afd, de->d_name, 0);
			}
		}
		close(fd);
	}
	closedir(dir);
	close(afd);
	return n;
}

/*
 * blob.c: attachments stored once for many messages, in SPOOL/blobs/
 * (blob.h; the layout is in msgspool-spool(5)).  Only this file knows
 * the path of blobs/; the spool's states are reached through spool.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/mime.h"
#include "base/netfs.h"
#include "base/util.h"
#include "spool/blob.h"

#define BLOB_NAME_MAX	(SPOOL_ID_LEN + 8)	/* "ID.N" */

/*
 * As the spool's own writes, and besides: a directory made meanwhile
 * (ENOENT) or too many links to one file (EMLINK) may work later.
 */
static enum msg_status
errno_status(int e)
{
	return e == ENOENT || e == EMLINK ? MSG_TEMPFAIL :
	    spool_errno_status(e);
}

/* The id that name (an id, or "ID.json") begins with, into id.  0 or -1. */
static int
id_of(const char *name, char *id)
{
	if (name == NULL || strnlen(name, SPOOL_ID_LEN) < SPOOL_ID_LEN ||
	    (name[SPOOL_ID_LEN] != '\0' && name[SPOOL_ID_LEN] != '.'))
		return -1;
	memcpy(id, name, SPOOL_ID_LEN);
	id[SPOOL_ID_LEN] = '\0';
	return ulid_valid(id) ? 0 : -1;
}

/* Parse a blob's file name "ID.N" into id and *index.  0 or -1. */
static int
name_parse(const char *name, char *id, size_t *index)
{
	const char	*p;
	size_t		 n = 0;

	if (id_of(name, id) == -1 || name[SPOOL_ID_LEN] != '.')
		return -1;
	p = name + SPOOL_ID_LEN + 1;
	if (*p == '\0' || (*p == '0' && p[1] != '\0'))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((n = n * 10 + (size_t)(*p - '0')) >= BLOB_MAX)
			return -1;
	if (*p != '\0')
		return -1;
	*index = n;
	return 0;
}

/* Open blobs/, made when create is set (spool_area). */
static int
blobs_dir(struct spool *s, int create)
{
	return spool_area(s, "blobs", create);
}

/* Unlink blobs/ID.i of every id for each i < upto. */
static void
undo(int dfd, const char *const *ids, size_t nids, size_t upto)
{
	char	name[BLOB_NAME_MAX];
	size_t	i, k;

	for (i = 0; i < upto; i++)
		for (k = 0; k < nids; k++) {
			snprintf(name, sizeof(name), "%s.%zu", ids[k], i);
			unlinkat(dfd, name, 0);
		}
}

enum msg_status
blob_store(struct spool *s, const struct blob_data *v, size_t n,
    const char *const *ids, size_t nids)
{
	char	 tmp[SPOOL_NAME_MAX + NETFS_HOST_MAX + 32], name[BLOB_NAME_MAX];
	char	 rnd[SPOOL_ID_LEN + 1], host[NETFS_HOST_MAX + 1];
	size_t	 i, k;
	int	 dfd, tfd, fd = -1, e;

	if (n == 0 || nids == 0)
		return MSG_OK;
	if (n > BLOB_MAX)
		return MSG_PERMFAIL;
	for (k = 0; k < nids; k++)
		if (!ulid_valid(ids[k]))
			return MSG_PERMFAIL;
	if ((tfd = spool_dirfd(s, SPOOL_TMP)) == -1 ||
	    (dfd = blobs_dir(s, 1)) == -1)
		return errno_status(errno);
	for (i = 0; i < n; i++) {
		if (ulid_new(rnd) == -1) {
			e = EAGAIN;
			goto fail;
		}
		/* In tmp/ like every spool write: stale ones are pruned.
		 * Host and pid: unique across the hosts of one spool. */
		snprintf(tmp, sizeof(tmp), "%s.blob.%s.%ld", rnd,
		    netfs_hostname(host, sizeof(host)), (long)getpid());
		if ((fd = openat(tfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, SPOOL_FILE_MODE)) == -1) {
			e = errno;
			goto fail;
		}
		if (util_write_all(fd, v[i].p, v[i].len) == -1 ||
		    fsync(fd) == -1) {
			e = errno;
			close(fd);
			goto fail_tmp;
		}
		if (close(fd) == -1) {
			e = errno;
			goto fail_tmp;
		}
		/* One inode, a name for each message that sends it. */
		for (k = 0; k < nids; k++) {
			snprintf(name, sizeof(name), "%s.%zu", ids[k], i);
			if (linkat(tfd, tmp, dfd, name, 0) == -1) {
				e = errno;
				undo(dfd, ids, nids, i + 1);
				goto fail_tmp;
			}
		}
		unlinkat(tfd, tmp, 0);
	}
	/* The links are durable before any message naming them is. */
	if (fsync(dfd) == -1) {
		e = errno;
		undo(dfd, ids, nids, n);
		goto fail;
	}
	close(dfd);
	return MSG_OK;
fail_tmp:
	unlinkat(tfd, tmp, 0);
fail:
	undo(dfd, ids, nids, i);
	close(dfd);
	log_err("spool: %s/blobs: %s", spool_root(s), strerror(e));
	return errno_status(e);
}

int
blob_open(struct spool *s, const char *name, size_t index, size_t *size)
{
	struct stat	 st, at;
	char		 id[SPOOL_ID_LEN + 1], bn[BLOB_NAME_MAX];
	int		 dfd, fd, e;

	if (id_of(name, id) == -1 || index >= BLOB_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((dfd = blobs_dir(s, 0)) == -1)
		return -1;
	snprintf(bn, sizeof(bn), "%s.%zu", id, index);
	/* Never through a link, never blocking on a FIFO or device. */
	if (fstatat(dfd, bn, &at, AT_SYMLINK_NOFOLLOW) == -1) {
		e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(at.st_mode)) {
		close(dfd);
		errno = EINVAL;
		return -1;
	}
	fd = openat(dfd, bn, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	e = errno;
	close(dfd);
	if (fd == -1) {
		errno = e == ELOOP ? EINVAL : e;
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_ino != at.st_ino || st.st_dev != at.st_dev ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == -1) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	*size = (size_t)st.st_size;
	return fd;
}

int
blob_index(const json_t *a, size_t *index)
{
	const json_t	*v;

	if ((v = json_object_get(a, "blob")) == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) >= BLOB_MAX)
		return -1;
	*index = (size_t)json_integer_value(v);
	return 1;
}

/*
 * Read blob index of name whole, checked against the size the message
 * gives (want, -1: none).  malloc'd (*len), or NULL with *st and err.
 */
static unsigned char *
blob_read(struct spool *s, const char *name, size_t index, json_int_t want,
    size_t *len, enum msg_status *st, char *err, size_t errlen)
{
	unsigned char	*data;
	size_t		 size, got = 0;
	ssize_t		 r;
	int		 fd, e;

	if ((fd = blob_open(s, name, index, &size)) == -1) {
		e = errno;
		*st = e == ENOENT || e == EINVAL || e == ENOTDIR ?
		    MSG_PERMFAIL : MSG_TEMPFAIL;
		util_seterr(err, errlen, "blobs/%.*s.%zu: %s", SPOOL_ID_LEN,
		    name, index, e == EINVAL ? "not a regular file" :
		    strerror(e));
		return NULL;
	}
	if (want >= 0 && (json_int_t)size != want) {
		close(fd);
		*st = MSG_PERMFAIL;
		util_seterr(err, errlen, "blobs/%.*s.%zu: %zu bytes, not the "
		    "%lld of the message", SPOOL_ID_LEN, name, index, size,
		    (long long)want);
		return NULL;
	}
	if ((data = malloc(size ? size : 1)) == NULL) {
		close(fd);
		*st = MSG_TEMPFAIL;
		util_seterr(err, errlen, "out of memory");
		return NULL;
	}
	while (got < size) {
		if ((r = read(fd, data + got, size - got)) == -1 &&
		    errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got != size) {
		free(data);
		*st = MSG_TEMPFAIL;
		util_seterr(err, errlen, "blobs/%.*s.%zu: short read",
		    SPOOL_ID_LEN, name, index);
		return NULL;
	}
	*len = size;
	return data;
}

json_t *
blob_message(struct spool *s, const char *name, const json_t *msg,
    enum msg_status *st, char *err, size_t errlen)
{
	const json_t	*atts, *a, *sz;
	json_t		*out, *list, *c;
	unsigned char	*data;
	char		*b64;
	size_t		 i, index, len;
	int		 stored = 0, rc;

	*st = MSG_OK;
	atts = json_object_get(msg, "attachments");
	json_array_foreach(atts, i, a)
		if (blob_index(a, &index) != 0)
			stored = 1;
	if (!stored)
		return json_incref((json_t *)msg);
	if ((out = json_copy((json_t *)msg)) == NULL ||
	    (list = json_array()) == NULL) {
		json_decref(out);
		*st = MSG_TEMPFAIL;
		util_seterr(err, errlen, "out of memory");
		return NULL;
	}
	json_object_set_new(out, "attachments", list);
	json_array_foreach(atts, i, a) {
		if ((rc = blob_index(a, &index)) == 0) {
			json_array_append(list, (json_t *)a);
			continue;
		}
		if (rc == -1) {
			*st = MSG_PERMFAIL;
			util_seterr(err, errlen, "attachment %zu: \"blob\" is "
			    "not an index", i);
			goto fail;
		}
		sz = json_object_get(a, "size");
		if ((data = blob_read(s, name, index, json_is_integer(sz) ?
		    json_integer_value(sz) : -1, &len, st, err, errlen)) ==
		    NULL)
			goto fail;
		b64 = mime_base64_encode(data, len);
		free(data);
		if (b64 == NULL || (c = json_copy((json_t *)a)) == NULL ||
		    json_object_set_new(c, "content",
		    json_string_nocheck(b64)) == -1 ||
		    json_array_append_new(list, c) == -1) {
			free(b64);
			*st = MSG_TEMPFAIL;
			util_seterr(err, errlen, "out of memory");
			goto fail;
		}
		free(b64);
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

size_t
blob_remove(struct spool *s, const char *name)
{
	char	id[SPOOL_ID_LEN + 1], bn[BLOB_NAME_MAX];
	size_t	i, n = 0;
	int	dfd;

	if (id_of(name, id) == -1 || (dfd = blobs_dir(s, 0)) == -1)
		return 0;
	for (i = 0; i < BLOB_MAX; i++) {
		snprintf(bn, sizeof(bn), "%s.%zu", id, i);
		if (unlinkat(dfd, bn, 0) == 0)
			n++;
	}
	close(dfd);
	return n;
}

/*
 * Whether a message with this id is in a state directory.  Asked twice:
 * a message moving between two states (a claim, a retry) may be missed
 * by one look, not by two in a row.
 */
static int
has_message(struct spool *s, const char *id)
{
	enum spool_dir	d;
	char		name[SPOOL_NAME_MAX];

	return spool_find(s, id, &d, name) == 0 ||
	    spool_find(s, id, &d, name) == 0;
}

size_t
blob_prune(struct spool *s, time_t before)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	char		 id[SPOOL_ID_LEN + 1];
	size_t		 index, n = 0;
	int		 dfd, fd;

	if ((dfd = blobs_dir(s, 1)) == -1) {
		log_warn("spool: %s/blobs: %s", spool_root(s),
		    strerror(errno));
		return 0;
	}
	if ((fd = dup(dfd)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		close(dfd);
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		if (name_parse(de->d_name, id, &index) == -1 ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    st.st_mtime >= before || has_message(s, id))
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			n++;
	}
	closedir(dir);
	close(dfd);
	return n;
}

/*
 * area.c: the spool's areas beside its states (msgspool-spool(5)):
 * made on demand with new/'s mode; documents stored durably in them
 * (receipts/, events), a small index (index/), and the uploads of the
 * deprecated attachments route (uploads/CLIENT/).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/netfs.h"
#include "base/util.h"
#include "base/valid.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"

int
spool_area(struct spool *s, const char *area, int create)
{
	struct stat	 model, st;
	char		 path[4096];
	int		 fd, e;

	if (strchr(area, '/') != NULL || area[0] == '.' ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", s->root, area) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd != -1 || errno != ENOENT || !create)
		return fd;
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		e = errno;
		log_err("spool: %s: %s", path, strerror(e));
		errno = e;
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	/* Whatever the umask; a group we are not in is logged, not fatal. */
	if (fstat(spool_statefd(s, SPOOL_NEW), &model) == 0 &&
	    fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
	    ((st.st_gid != model.st_gid &&
	    fchown(fd, (uid_t)-1, model.st_gid) == -1) ||
	    ((st.st_mode & 07777) != (model.st_mode & 07777) &&
	    fchmod(fd, model.st_mode & 07777) == -1)))
		log_warn("spool: %s: cannot give it the group and mode of "
		    "new/: %s", path, strerror(errno));
	return fd;
}

enum msg_status
spool_area_store(struct spool *s, const char *area, const json_t **docs,
    size_t n)
{
	const char	**names;
	char		(*idnames)[SPOOL_NAME_MAX];
	enum msg_status	 *st, rc = MSG_OK;
	time_t		 *mtimes;
	int		 *dirfds, fd;
	const char	 *id;
	size_t		  i;

	if (n == 0)
		return MSG_OK;
	if ((fd = spool_area(s, area, 1)) == -1)
		return spool_errno_status(errno);
	names = calloc(n, sizeof(*names));
	idnames = calloc(n, sizeof(*idnames));
	st = calloc(n, sizeof(*st));
	mtimes = calloc(n, sizeof(*mtimes));
	dirfds = calloc(n, sizeof(*dirfds));
	if (names == NULL || idnames == NULL || st == NULL || mtimes == NULL ||
	    dirfds == NULL) {
		rc = MSG_TEMPFAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if ((id = msgdoc_id(docs[i])) == NULL || !ulid_valid(id)) {
			rc = MSG_PERMFAIL;
			goto out;
		}
		snprintf(idnames[i], sizeof(idnames[i]), "%s.json", id);
		names[i] = idnames[i];
		dirfds[i] = fd;
	}
	spool_commit_files(s, docs, dirfds, names, mtimes, st, n);
	/* All or nothing: what was written of a failed set goes again. */
	for (i = 0; i < n; i++)
		if (st[i] != MSG_OK && (rc == MSG_OK || st[i] == MSG_TEMPFAIL))
			rc = st[i];
	if (rc != MSG_OK)
		for (i = 0; i < n; i++)
			if (st[i] == MSG_OK)
				unlinkat(fd, names[i], 0);
out:
	close(fd);
	free(names);
	free(idnames);
	free(st);
	free(mtimes);
	free(dirfds);
	return rc;
}

json_t *
spool_area_load(struct spool *s, const char *area, const char *name,
    char *err, size_t errlen)
{
	json_t	*doc;
	int	 afd, fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return NULL;
	}
	if ((afd = spool_area(s, area, 0)) == -1)
		return NULL;
	fd = util_open_regular(afd, name, 1);
	e = errno;
	close(afd);
	if (fd == -1) {
		util_seterr(err, errlen, "%s/%s/%s: %s", s->root, area, name,
		    strerror(e));
		errno = e;
		return NULL;
	}
	doc = msgdoc_loadfd(fd, JSON_REJECT_DUPLICATES, NULL);
	close(fd);
	if (msgdoc_check(doc, area, name, err, errlen) == -1) {
		json_decref(doc);
		errno = EINVAL;
		return NULL;
	}
	return doc;
}

int
spool_area_remove(struct spool *s, const char *area, const char *name)
{
	int	afd, rc;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if ((afd = spool_area(s, area, 0)) == -1)
		return -1;
	rc = unlinkat(afd, name, 0);
	close(afd);
	return rc;
}

int
spool_area_lock(struct spool *s, const char *area, const char *name)
{
	struct stat	 a, b;
	int		 afd, fd, e;

	if (strchr(name, '/') != NULL || name[0] == '.') {
		errno = EINVAL;
		return -1;
	}
	if ((afd = spool_area(s, area, 0)) == -1)
		return -1;
	/* On NFS an exclusive lock needs the file open for writing; here,
	 * another user's file read-only is enough. */
	if ((fd = openat(afd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1 && errno == EACCES)
		fd = openat(afd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	if (fd == -1) {
		e = errno == ELOOP ? EINVAL : errno;
		goto fail;
	}
	if (fstat(fd, &a) == -1 || !S_ISREG(a.st_mode)) {
		e = EINVAL;
		goto fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		e = errno == EWOULDBLOCK ? EBUSY : errno;
		goto fail;
	}
	/* Removed by the holder before us, who is done with it. */
	if (fstatat(afd, name, &b, AT_SYMLINK_NOFOLLOW) == -1 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		e = ENOENT;
		goto fail;
	}
	close(afd);
	return fd;
fail:
	if (fd != -1)
		close(fd);
	close(afd);
	errno = e;
	return -1;
}

size_t
spool_area_prune(struct spool *s, const char *area, time_t before)
{
	DIR		*dir;
	struct dirent	*de;
	struct stat	 st;
	size_t		 n = 0;
	int		 afd;

	if ((afd = spool_area(s, area, 0)) == -1)
		return 0;
	if ((dir = fdopendir(afd)) == NULL) {
		close(afd);
		return 0;
	}
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		if (fstatat(afd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_mtime < before &&
		    unlinkat(afd, de->d_name, 0) == 0)
			n++;
	}
	closedir(dir);
	return n;
}

int
spool_area_scan(struct spool *s, const char *area,
    int (*fn)(void *, const char *), void *arg)
{
	char	**v;
	ssize_t	  n, i;
	int	  rc = 0;

	if ((n = spool_area_names(s, area, &v)) == -1)
		return errno == ENOENT ? 0 : -1;
	/* In the order they came: ids sort by time. */
	for (i = 0; i < n && rc == 0; i++)
		rc = fn(arg, v[i]);
	spool_names_free(v, (size_t)n);
	return rc;
}

int
spool_index_put(struct spool *s, const char *key, const char *id)
{
	char	tmp[160 + NETFS_HOST_MAX], host[NETFS_HOST_MAX + 1];
	int	afd, fd, rc = -1;

	if (strchr(key, '/') != NULL || key[0] == '.' || strlen(key) > 128)
		return -1;
	if ((afd = spool_area(s, "index", 1)) == -1)
		return -1;
	/* Unique across the hosts sharing a spool; not a dot file, which
	 * pruning leaves alone (NFS's own .nfsXXXX). */
	snprintf(tmp, sizeof(tmp), "%s.%s.%ld.tmp", key,
	    netfs_hostname(host, sizeof(host)), (long)getpid());
	if ((fd = openat(afd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) != -1) {
		if (util_write_all(fd, id, strlen(id)) == 0 && close(fd) == 0 &&
		    renameat(afd, tmp, afd, key) == 0)
			rc = 0;
		else
			unlinkat(afd, tmp, 0);
	}
	close(afd);
	return rc;
}

int
spool_index_get(struct spool *s, const char *key, char *id)
{
	ssize_t	n;
	int	afd, fd;

	if (strchr(key, '/') != NULL || key[0] == '.')
		return -1;
	if ((afd = spool_area(s, "index", 0)) == -1)
		return -1;
	fd = util_open_regular(afd, key, 1);
	close(afd);
	if (fd == -1)
		return -1;
	n = read(fd, id, SPOOL_ID_LEN);
	close(fd);
	if (n != SPOOL_ID_LEN)
		return -1;
	id[SPOOL_ID_LEN] = '\0';
	return ulid_valid(id) ? 0 : -1;
}

int
spool_index_add(struct spool *s, const char *key, const char *id,
    char *had)
{
	char	tmp[160 + NETFS_HOST_MAX], host[NETFS_HOST_MAX + 1];
	int	afd, fd, rc = -1, e = 0;

	if (strchr(key, '/') != NULL || key[0] == '.' || strlen(key) > 128) {
		errno = EINVAL;
		return -1;
	}
	if ((afd = spool_area(s, "index", 1)) == -1)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.%s.%ld.add", key,
	    netfs_hostname(host, sizeof(host)), (long)getpid());
	/* Whole and synced before its name exists: a link is atomic. */
	if ((fd = openat(afd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) == -1) {
		e = errno;
		close(afd);
		errno = e;
		return -1;
	}
	if (util_write_all(fd, id, strlen(id)) == -1 || fsync(fd) == -1)
		e = errno;
	if (close(fd) == -1 && e == 0)
		e = errno;
	if (e == 0 && linkat(afd, tmp, afd, key, 0) == 0)
		rc = fsync(afd) == 0 ? 0 : -1;
	else if (e == 0 && errno == EEXIST)
		rc = spool_index_get(s, key, had) == 0 ? 1 : -1;
	if (rc == -1 && e == 0)
		e = errno != 0 ? errno : EIO;
	unlinkat(afd, tmp, 0);
	close(afd);
	errno = e;
	return rc;
}

/* A status file's name: NAME.json, NAME plain. */
static int
status_name(const char *name, char *out, size_t len)
{
	if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL ||
	    (size_t)snprintf(out, len, "%s.json", name) >= len)
		return -1;
	return 0;
}

int
spool_status_put(struct spool *s, const char *name, const json_t *doc)
{
	char	 file[160], tmp[200], *text;
	int	 afd, fd, rc = -1;

	if (status_name(name, file, sizeof(file)) == -1 ||
	    (text = buf_json_text(doc, JSON_COMPACT, NULL)) == NULL)
		return -1;
	if ((afd = spool_area(s, "status", 1)) == -1) {
		free(text);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), ".%s.%ld", file, (long)getpid());
	if ((fd = openat(afd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, SPOOL_FILE_MODE)) != -1) {
		if (util_write_all(fd, text, strlen(text)) == 0 &&
		    util_write_all(fd, "\n", 1) == 0 && close(fd) == 0 &&
		    renameat(afd, tmp, afd, file) == 0)
			rc = 0;
		else
			unlinkat(afd, tmp, 0);
	}
	close(afd);
	free(text);
	return rc;
}

json_t *
spool_status_get(struct spool *s, const char *name)
{
	char	 file[160], buf[8192];
	ssize_t	 n;
	int	 afd, fd;

	if (status_name(name, file, sizeof(file)) == -1 ||
	    (afd = spool_area(s, "status", 0)) == -1)
		return NULL;
	fd = util_open_regular(afd, file, 1);
	close(afd);
	if (fd == -1)
		return NULL;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return NULL;
	return json_loadb(buf, (size_t)n, 0, NULL);
}

/* The directory fd of a client's uploads, made when create is set. */
static int
upload_dir(struct spool *s, const char *client, int create)
{
	char		path[16 + CLIENT_ID_MAX];
	struct stat	st, up;
	int		rootfd, fd;

	if (!valid_client_id(client))
		return -1;
	if ((rootfd = dup(s->rootfd)) == -1)
		return -1;
	snprintf(path, sizeof(path), "uploads/%s", client);
	if (create) {
		if (mkdirat(rootfd, "uploads", 0700) == -1 && errno != EEXIST)
			goto fail;
		if (mkdirat(rootfd, path, 0700) == -1 && errno != EEXIST)
			goto fail;
	}
	fd = openat(rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/*
	 * Like uploads/ itself (install makes it 2770): the daemon, in the
	 * web server's group, removes expired uploads.  Whatever the umask.
	 */
	if (create && fd != -1 && fstat(fd, &st) == 0 &&
	    (st.st_mode & 07777) == 0700) {
		if (fstatat(rootfd, "uploads", &up, 0) == 0 &&
		    (up.st_mode & 02070) == 02070)
			fchmod(fd, 02770);
	}
	close(rootfd);
	return fd;
fail:
	close(rootfd);
	return -1;
}

enum msg_status
spool_upload_store(struct spool *s, const char *client, const json_t *doc)
{
	const char	*id;
	char		 name[SPOOL_NAME_MAX];
	int		 fd;
	enum msg_status	 rc;

	id = json_string_value(json_object_get(doc, "attachmentId"));
	if (id == NULL || !ulid_valid(id))
		return MSG_PERMFAIL;
	if ((fd = upload_dir(s, client, 1)) == -1)
		return spool_errno_status(errno);
	snprintf(name, sizeof(name), "%s.json", id);
	/* Written through tmp/ like every message, then renamed across. */
	{
		const char	*names[1] = { name };
		time_t		 mt[1] = { 0 };

		spool_commit_files(s, &doc, &fd, names, mt, &rc, 1);
	}
	close(fd);
	return rc;
}

json_t *
spool_upload_load(struct spool *s, const char *client, const char *id)
{
	json_error_t	 je;
	json_t		*doc;
	char		 name[SPOOL_NAME_MAX];
	int		 udir, fd;

	if (!ulid_valid(id))
		return NULL;
	if ((udir = upload_dir(s, client, 0)) == -1)
		return NULL;
	snprintf(name, sizeof(name), "%s.json", id);
	fd = util_open_regular(udir, name, 1);
	close(udir);
	if (fd == -1)
		return NULL;
	doc = msgdoc_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
	close(fd);
	if (msgdoc_upload_check(doc, id, time(NULL) - SPOOL_UPLOAD_TTL) ==
	    -1) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

size_t
spool_upload_prune(struct spool *s, time_t before)
{
	DIR		*top, *dir;
	struct dirent	*de, *fe;
	struct stat	 st;
	size_t		 n = 0;
	int		 tfd, cfd;
	char		 path[4096];

	snprintf(path, sizeof(path), "%s/uploads", s->root);
	if ((tfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	if ((top = fdopendir(tfd)) == NULL) {
		close(tfd);
		return 0;
	}
	while ((de = readdir(top)) != NULL) {
		if (!valid_client_id(de->d_name) || (cfd = openat(tfd,
		    de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
			continue;
		if ((dir = fdopendir(cfd)) == NULL) {
			close(cfd);
			continue;
		}
		while ((fe = readdir(dir)) != NULL)
			if (ulid_prefix(fe->d_name) && fstatat(cfd, fe->d_name,
			    &st, 0) == 0 && st.st_mtime < before &&
			    unlinkat(cfd, fe->d_name, 0) == 0)
				n++;
		closedir(dir);
	}
	closedir(top);
	return n;
}

int
spool_subdir(int dfd, const char *name, int create)
{
	struct stat	model, st;
	int		fd;

	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd != -1 || errno != ENOENT || !create)
		return fd;
	if (mkdirat(dfd, name, 0700) == -1 && errno != EEXIST)
		return -1;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return -1;
	if (fstat(dfd, &model) == 0 && fstat(fd, &st) == 0 &&
	    st.st_uid == geteuid() &&
	    ((st.st_gid != model.st_gid &&
	    fchown(fd, (uid_t)-1, model.st_gid) == -1) ||
	    ((st.st_mode & 07777) != (model.st_mode & 07777) &&
	    fchmod(fd, model.st_mode & 07777) == -1)))
		log_warn("spool: %s: cannot give it the group and mode of "
		    "its parent: %s", name, strerror(errno));
	return fd;
}

ssize_t
spool_area_names(struct spool *s, const char *area, char ***names)
{
	DIR	*dir;
	int	 afd;

	*names = NULL;
	if ((afd = spool_area(s, area, 0)) == -1)
		return -1;
	if ((dir = fdopendir(afd)) == NULL) {
		close(afd);
		return -1;
	}
	return spool_dir_names(dir, spool_want_id, NULL, names);
}

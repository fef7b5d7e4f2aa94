/*
 * suppress_list.c: each client's suppression lists, listed a page at a
 * time, newest first (suppress.h; msgspool-spool(5), Suppressions).  A
 * list is read whole, but only its page is kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "base/valid.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/suppress.h"
#include "spool/suppress_impl.h"
/*
 * A page being gathered: the newest entries older than after, kept in
 * order (newest first), at most keep of them (0: all).
 */
struct entry {
	char	 id[SUPPRESS_KEY_LEN + 1];
	json_t	*obj;
};

struct page {
	struct entry	*v;
	size_t		 n;
	size_t		 cap;
	size_t		 keep;
	const char	*after;
};

/* Take obj (stolen) into the page when it belongs there.  0, or -1. */
static int
page_add(struct page *p, const char *id, json_t *obj)
{
	struct entry	*nv;
	size_t		 lo = 0, hi = p->n, mid, cap;

	if ((p->after != NULL && strcmp(id, p->after) >= 0) ||
	    (p->keep > 0 && p->n == p->keep &&
	    strcmp(id, p->v[p->n - 1].id) <= 0)) {
		json_decref(obj);
		return 0;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(p->v[mid].id, id) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (p->keep > 0 && p->n == p->keep)
		json_decref(p->v[--p->n].obj);
	if (p->n == p->cap) {
		cap = p->cap ? p->cap * 2 : 64;
		if ((nv = reallocarray(p->v, cap, sizeof(*nv))) == NULL) {
			json_decref(obj);
			return -1;
		}
		p->v = nv;
		p->cap = cap;
	}
	memmove(&p->v[lo + 1], &p->v[lo], (p->n - lo) * sizeof(*p->v));
	memcpy(p->v[lo].id, id, sizeof(p->v[lo].id));
	p->v[lo].obj = obj;
	p->n++;
	return 0;
}

/*
 * Gather the list of a channel, in the client's directory cfd, into p;
 * client, when not NULL, is named in each object.  0, or -1 with errno.
 */
static int
scan_channel(int cfd, const char *client, enum channel ch, struct page *p)
{
	DIR		*dir;
	struct dirent	*de;
	json_t		*obj;
	char		 id[SUPPRESS_KEY_LEN + 1];
	size_t		 len;
	int		 fd, f, rc = 0;

	if ((fd = spool_subdir(cfd, channel_info(ch)->name, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 ||
		    strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		/* Removed meanwhile, or not a file: not in the list. */
		if ((f = util_open_regular(fd, de->d_name, 1)) == -1)
			continue;
		if ((obj = suppress_read(f, ch, NULL, de->d_name, id)) ==
		    NULL)
			continue;
		if (client != NULL && json_object_set_new(obj, "client",
		    json_string(client)) == -1) {
			json_decref(obj);
			rc = -1;
			errno = ENOMEM;
			break;
		}
		if (page_add(p, id, obj) == -1) {
			rc = -1;
			errno = ENOMEM;
		}
	}
	closedir(dir);
	return rc;
}

/* Gather a client's lists (of ch, or of every channel) into p. */
static int
scan_client(int afd, const char *client, int named, enum channel ch,
    struct page *p)
{
	int	cfd, c, rc = 0;

	if ((cfd = spool_subdir(afd, client, 0)) == -1)
		return errno == ENOENT ? 0 : -1;
	for (c = 0; c < CHANNEL__MAX && rc == 0; c++)
		if (ch == CHANNEL__MAX || (enum channel)c == ch)
			rc = scan_channel(cfd, named ? client : NULL,
			    (enum channel)c, p);
	close(cfd);
	return rc;
}

int
suppress_cursor_valid(const char *s)
{
	return suppress_key_valid(s);
}

json_t *
suppress_list(struct spool *s, const char *client, enum channel ch,
    const char *after, size_t limit, char **next)
{
	struct page	 p;
	DIR		*dir;
	struct dirent	*de;
	json_t		*list = NULL;
	size_t		 i;
	int		 afd, dfd, rc = 0, e;

	if (next != NULL)
		*next = NULL;
	if ((client != NULL && !valid_client_id(client)) ||
	    (ch != CHANNEL__MAX && channel_info(ch) == NULL) ||
	    (after != NULL && !suppress_cursor_valid(after))) {
		errno = EINVAL;
		return NULL;
	}
	memset(&p, 0, sizeof(p));
	p.keep = limit > 0 ? limit + 1 : 0;
	p.after = after;
	if ((afd = spool_area(s, SUPPRESS_AREA, 0)) == -1) {
		if (errno != ENOENT)
			return NULL;
		/* Nothing suppressed yet. */
	} else if (client != NULL) {
		rc = scan_client(afd, client, 0, ch, &p);
		close(afd);
	} else if ((dfd = dup(afd)) == -1 ||
	    (dir = fdopendir(dfd)) == NULL) {
		rc = -1;
		if (dfd != -1)
			close(dfd);
		close(afd);
	} else {
		while (rc == 0 && (de = readdir(dir)) != NULL)
			if (valid_client_id(de->d_name))
				rc = scan_client(afd, de->d_name, 1, ch, &p);
		closedir(dir);
		close(afd);
	}
	e = rc == -1 ? errno : ENOMEM;
	if (rc == 0 && (list = json_array()) != NULL) {
		/* One more than the page: there is a next one. */
		if (limit > 0 && p.n > limit) {
			if (next != NULL && (*next = strdup(p.v[limit -
			    1].id)) == NULL) {
				json_decref(list);
				list = NULL;
			}
			json_decref(p.v[--p.n].obj);
		}
		for (i = 0; list != NULL && i < p.n; i++)
			if (json_array_append_new(list, p.v[i].obj) == -1) {
				json_decref(list);
				list = NULL;
			} else
				p.v[i].obj = NULL;
	}
	for (i = 0; i < p.n; i++)
		json_decref(p.v[i].obj);
	free(p.v);
	if (list == NULL) {
		if (next != NULL) {
			free(*next);
			*next = NULL;
		}
		errno = e;
	}
	return list;
}

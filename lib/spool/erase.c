/*
 * erase.c: an address erased from the whole spool (msgspool-spool(5),
 * Erasure; msgspool(8), erase): the address in the forms the spool's
 * files hold it, the ids of the messages erased, each file read whole
 * and its bytes searched, whatever its format (JSON documents, list
 * lines, the .eml files of the file provider), and the run: the
 * messages first, then what names them or the address
 * (erase_files.c), then the clients' lists.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/channel.h"
#include "base/util.h"
#include "spool/erase.h"
#include "spool/erase_impl.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/suppress.h"

/* A file read whole to be searched, at most (an .eml with attachments). */
#define ERASE_READ_MAX	(256 * 1024 * 1024)

int
erase_addr_parse(const char *addr, struct erase_addr *a)
{
	char	 norm[SUPPRESS_ADDR_MAX];
	size_t	 i, j;

	memset(a, 0, sizeof(*a));
	if (addr == NULL)
		return -1;
	if (strchr(addr, '@') != NULL) {
		if (suppress_normalize(CHANNEL_EMAIL, addr, norm,
		    sizeof(norm)) == -1 || list_address_key(norm, a->key,
		    sizeof(a->key)) == -1)
			return -1;
		a->email = 1;
		for (i = j = 0; norm[i] != '\0'; i++) {
			if (norm[i] == '"' || norm[i] == '\\')
				a->text[j++] = '\\';
			a->text[j++] = (char)tolower((unsigned char)norm[i]);
		}
		a->text[j] = '\0';
		return 0;
	}
	/* "+" and digits, or the digits: the ott channel's rule. */
	if (suppress_normalize(CHANNEL_OTT, addr, norm, sizeof(norm)) == -1 ||
	    norm[0] == '0' || list_address_key(norm, a->key,
	    sizeof(a->key)) == -1)
		return -1;
	snprintf(a->text, sizeof(a->text), "%s", norm);
	return 0;
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* A byte an email address may hold beside the part compared. */
static int
in_address(int c)
{
	return isalnum(c) || (c != 0 && strchr("!#$%&'*+/=?^_`{|}~.-", c) !=
	    NULL);
}

/* Whether the n bytes at p are t (lower case), in any case. */
static int
same_ci(const char *p, const char *t, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (tolower((unsigned char)p[i]) != (unsigned char)t[i])
			return 0;
	return 1;
}

int
erase_names(const struct erase_addr *a, const char *p, size_t len)
{
	size_t	n = strlen(a->text), i;
	int	before, after;

	if (n == 0 || len < n)
		return 0;
	for (i = 0; i + n <= len; i++) {
		if (tolower((unsigned char)p[i]) != (unsigned char)a->text[0] ||
		    !same_ci(p + i, a->text, n))
			continue;
		before = i > 0 ? (unsigned char)p[i - 1] : 0;
		after = i + n < len ? (unsigned char)p[i + n] : 0;
		if (!a->email) {
			if (is_digit(after))
				continue;
			/* "00" is the international prefix, any other
			 * digit makes another number. */
			if (is_digit(before) && (i < 2 || p[i - 1] != '0' ||
			    p[i - 2] != '0' || (i > 2 &&
			    is_digit((unsigned char)p[i - 3]))))
				continue;
			return 1;
		}
		/* Not the tail of a longer local part, nor a domain's
		 * head ("a.example.com.au"). */
		if (in_address(before) || isalnum(after) || after == '-' ||
		    after == '_' || (after == '.' && i + n + 1 < len &&
		    isalnum((unsigned char)p[i + n + 1])))
			continue;
		return 1;
	}
	return 0;
}

/* ---- the ids erased ---- */

static int
idcmp(const void *x, const void *y)
{
	return memcmp(x, y, SPOOL_ID_LEN);
}

void
erase_add_id(struct run *r, const char *name)
{
	void	*nv;
	size_t	 lo = 0, hi = r->nids, mid;
	int	 c;

	if (!ulid_prefix(name))
		return;
	/* Kept sorted as they come, once each: looked up for every file. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = idcmp(name, r->ids[mid])) == 0)
			return;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (r->nids == r->capids) {
		if ((nv = reallocarray(r->ids, r->capids ? r->capids * 2 : 64,
		    sizeof(*r->ids))) == NULL)
			return;	/* its dependents are found by the address */
		r->ids = nv;
		r->capids = r->capids ? r->capids * 2 : 64;
	}
	memmove(r->ids[lo + 1], r->ids[lo], (r->nids - lo) *
	    sizeof(*r->ids));
	memcpy(r->ids[lo], name, SPOOL_ID_LEN);
	r->ids[lo][SPOOL_ID_LEN] = '\0';
	r->nids++;
}

/* Whether the SPOOL_ID_LEN bytes at p are an id erased. */
int
erase_is_erased(struct run *r, const char *p)
{
	return r->nids > 0 && bsearch(p, r->ids, r->nids, sizeof(*r->ids),
	    idcmp) != NULL;
}

/* A byte of Crockford's base32 as ids are written (upper case). */
static int
in_id(int c)
{
	return is_digit(c) || (c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' &&
	    c != 'O' && c != 'U');
}

/* Whether the text names an erased id: a word of 26 such bytes. */
int
erase_names_id(struct run *r, const char *p, size_t len)
{
	size_t	i, j;

	for (i = 0; r->nids > 0 && i + SPOOL_ID_LEN <= len; i++) {
		if (!in_id((unsigned char)p[i]) || (i > 0 &&
		    isalnum((unsigned char)p[i - 1])))
			continue;
		for (j = 1; j < SPOOL_ID_LEN && in_id((unsigned char)p[i + j]);
		    j++)
			;
		if (j == SPOOL_ID_LEN && (i + j == len ||
		    !isalnum((unsigned char)p[i + j])) &&
		    erase_is_erased(r, p + i))
			return 1;
		i += j - 1;
	}
	return 0;
}

/* ---- reading and reporting ---- */

/* For spool_dir_names: any name but a dot one. */
static int
want_undotted(const char *name, void *arg)
{
	(void)arg;
	return name[0] != '.';
}

/* The names in a directory, sorted; dot names left out.  -1 on error. */
ssize_t
erase_names_of(int dfd, char ***out)
{
	DIR	*dir;
	int	 fd;

	*out = NULL;
	if ((fd = dup(dfd)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	rewinddir(dir);
	return spool_dir_names(dir, want_undotted, NULL, out);
}

void
erase_tell(struct run *r, enum erase_report what, const char *dir,
    const char *name, const char *why)
{
	char	where[4096];

	snprintf(where, sizeof(where), "%s/%s", dir, name);
	if (what == ERASE_REMOVED)
		r->c->removed++;
	else if (what == ERASE_BUSY)
		r->c->busy++;
	else
		r->c->failed++;
	if (r->o->report != NULL)
		r->o->report(r->o->arg, what, where, why);
}

void
erase_progress(struct run *r, const char *what, size_t done, size_t total)
{
	if (r->o->progress != NULL)
		r->o->progress(r->o->arg, what, done, total);
}

/*
 * dfd/name read whole into *text: 1; 0 when it is gone or no regular
 * file (not ours to read); -1 reported as failed.
 */
int
erase_slurp(struct run *r, int dfd, const char *label, const char *name,
    char **text, size_t *len)
{
	int	fd, e;

	*text = NULL;
	if ((fd = util_open_regular(dfd, name, 1)) == -1) {
		if (errno == ENOENT || errno == EINVAL || errno == ELOOP)
			return 0;
		erase_tell(r, ERASE_FAILED, label, name, strerror(errno));
		return -1;
	}
	if (util_read_all(fd, ERASE_READ_MAX, text, len) == -1) {
		e = errno;
		close(fd);
		erase_tell(r, ERASE_FAILED, label, name, e == EFBIG ?
		    "too large to read" : strerror(e));
		return -1;
	}
	close(fd);
	return 1;
}

/*
 * Whether a file naming the address is of the client erased for: any
 * is when no client was given.  Its "client" member, or its "to"
 * number's owner; a file that says nothing of its client is no one's.
 */
int
erase_of_client(struct run *r, enum owner how, const char *text, size_t len)
{
	json_t		*doc;
	const char	*c = NULL;
	int		 yes;

	if (r->o->client == NULL)
		return 1;
	if (how == OWNER_NONE ||
	    (doc = json_loadb(text, len, 0, NULL)) == NULL)
		return 0;
	if (how == OWNER_MEMBER)
		c = json_string_value(json_object_get(doc, "client"));
	else
		c = inbox_owner(r->o->cfg, json_string_value(
		    json_object_get(doc, "to")));
	yes = c != NULL && strcmp(c, r->o->client) == 0;
	json_decref(doc);
	return yes;
}

/* The clients' lists: the lines of the address and of erased ids. */
static void
erase_lists(struct run *r)
{
	const char	**needles;
	ssize_t		  n;
	size_t		  i;

	if ((needles = calloc(r->nids + 2, sizeof(*needles))) == NULL) {
		erase_tell(r, ERASE_FAILED, LIST_AREA, "", strerror(ENOMEM));
		return;
	}
	needles[0] = r->a->key;
	for (i = 0; i < r->nids; i++)
		needles[i + 1] = r->ids[i];
	erase_progress(r, "rewriting lists/", 0, 0);
	if ((n = list_erase(r->s, r->o->client, needles, NULL)) == -1) {
		if (errno != ENOENT)
			erase_tell(r, ERASE_FAILED, LIST_AREA, "",
			    strerror(errno));
	} else
		r->c->listed += (size_t)n;
	free(needles);
}

/* One reading of the whole spool.  How many files it removed. */
static size_t
sweep(struct run *r, int first)
{
	size_t	before = r->c->removed;

	/* The second time, what is held is reported at once. */
	erase_messages(r, first ? r->o->busy_ms : 0);
	erase_dependents(r);
	erase_lists(r);
	return r->c->removed - before;
}

int
erase_run(struct spool *s, const struct erase_addr *a,
    const struct erase_opts *o, struct erase_counts *c)
{
	struct run	r;

	memset(c, 0, sizeof(*c));
	memset(&r, 0, sizeof(r));
	r.s = s;
	r.a = a;
	r.o = o;
	r.c = c;
	if (spool_dirfd(s, SPOOL_NEW) == -1)
		return -1;
	/* Again when it found something: what a daemon wrote meanwhile. */
	if (sweep(&r, 1) > 0)
		sweep(&r, 0);
	free(r.ids);
	free(r.held);
	return 0;
}

/*
 * erase.c: an address erased from the whole spool (msgspool-spool(5),
 * Erasure; msgspool(8), erase).  The messages and inbound messages that
 * name it go first, each under the lock its daemon would take; then
 * every file that names the address or one of the messages erased, area
 * by area, by the table below.  Each file is read whole and its bytes
 * searched, whatever its format: JSON documents, list lines, the .eml
 * files the file provider writes.
 */
#include <ctype.h>
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

#include "base/channel.h"
#include "base/util.h"
#include "spool/erase.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/list.h"
#include "spool/spool.h"
#include "spool/spool_impl.h"
#include "spool/suppress.h"

/* A file read whole to be searched, at most (an .eml with attachments). */
#define ERASE_READ_MAX	(256 * 1024 * 1024)
/* tmp/ files younger than this are a write under way, left. */
#define ERASE_TMP_AGE	60
/* How often a held message is looked at again, in milliseconds. */
#define ERASE_POLL_MS	100

/* Who a file of an area belongs to, for --client. */
enum owner {
	OWNER_NONE,	/* no one says: with a client, only an erased id */
	OWNER_MEMBER,	/* its "client" member */
	OWNER_NUMBER	/* the client whose inbound key lists its "to" */
};

/* How a file of an area is found to name what is erased. */
enum match {
	MATCH_TEXT,	/* its bytes name the address or an erased id */
	MATCH_ID_TEXT,	/* its bytes name an erased id */
	MATCH_ID_NAME	/* its name begins with an erased id */
};

/* The areas beside the states, in msgspool-spool(5)'s words. */
static const struct area_rule {
	const char	*area;
	enum match	 match;
	enum owner	 owner;
	const char	*lock;	/* NAME.json goes under STEM + lock's lock */
} areas[] = {
	{ .area = "inbox-parts", .match = MATCH_TEXT, .owner = OWNER_NUMBER },
	{ .area = INBOX_NEW_AREA, .match = MATCH_ID_NAME },
	{ .area = "receipts", .match = MATCH_TEXT, .owner = OWNER_NONE },
	{ .area = EVENT_AREA, .match = MATCH_TEXT, .owner = OWNER_MEMBER },
	{ .area = EVENT_FAILED_AREA, .match = MATCH_TEXT,
	    .owner = OWNER_MEMBER },
	{ .area = "index", .match = MATCH_ID_TEXT },
	{ .area = "claims", .match = MATCH_ID_NAME },
	{ .area = "idempotency", .match = MATCH_TEXT, .owner = OWNER_MEMBER,
	    .lock = ".lock" },
	{ .area = "blobs", .match = MATCH_ID_NAME },
};

/* The states whose messages are erased, in the order they are read. */
static const enum spool_dir states[] = { SPOOL_NEW, SPOOL_DEFERRED,
    SPOOL_CUR, SPOOL_SENT, SPOOL_FAILED };

/* A file another held when it was to be erased. */
struct held {
	char	 name[SPOOL_NAME_MAX];
	int	 inbox;		/* in inbox/, else in a state */
	char	 area[32];	/* or in that area, reported busy once */
	enum { HELD, GONE, BUSY } state;  /* BUSY: reported, left alone */
};

struct run {
	struct spool		*s;
	const struct erase_addr	*a;
	const struct erase_opts	*o;
	struct erase_counts	*c;
	char			(*ids)[SPOOL_ID_LEN + 1]; /* erased, sorted */
	size_t			 nids, capids, sorted;
	struct held		*held;
	size_t			 nheld, capheld;
};

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

static void
add_id(struct run *r, const char *name)
{
	void	*nv;

	if (!ulid_prefix(name))
		return;
	if (r->nids == r->capids) {
		r->capids = r->capids ? r->capids * 2 : 64;
		if ((nv = reallocarray(r->ids, r->capids,
		    sizeof(*r->ids))) == NULL)
			return;	/* its dependents are found by the address */
		r->ids = nv;
	}
	memcpy(r->ids[r->nids], name, SPOOL_ID_LEN);
	r->ids[r->nids++][SPOOL_ID_LEN] = '\0';
}

/* Whether the SPOOL_ID_LEN bytes at p are an id erased. */
static int
erased(struct run *r, const char *p)
{
	if (r->sorted != r->nids) {
		qsort(r->ids, r->nids, sizeof(*r->ids), idcmp);
		r->sorted = r->nids;
	}
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
static int
names_id(struct run *r, const char *p, size_t len)
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
		    !isalnum((unsigned char)p[i + j])) && erased(r, p + i))
			return 1;
		i += j - 1;
	}
	return 0;
}

/* ---- reading and reporting ---- */

/* The names in a directory, sorted; dot names left out.  -1 on error. */
static ssize_t
names_of(int dfd, char ***out)
{
	DIR		*dir;
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;
	int		 fd;

	*out = NULL;
	if ((fd = dup(dfd)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	rewinddir(dir);
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((nv = reallocarray(v, cap, sizeof(*v))) == NULL)
				break;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)) == NULL)
			break;
		n++;
	}
	closedir(dir);
	if (n > 1)
		qsort(v, n, sizeof(*v), spool_namecmp);
	*out = v;
	return (ssize_t)n;
}

static void
report(struct run *r, enum erase_report what, const char *dir,
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

static void
progress(struct run *r, const char *what, size_t done, size_t total)
{
	if (r->o->progress != NULL)
		r->o->progress(r->o->arg, what, done, total);
}

/*
 * dfd/name read whole into *text: 1; 0 when it is gone or no regular
 * file (not ours to read); -1 reported as failed.
 */
static int
slurp(struct run *r, int dfd, const char *label, const char *name,
    char **text, size_t *len)
{
	int	fd, e;

	*text = NULL;
	if ((fd = util_open_regular(dfd, name, 1)) == -1)
		return errno == ENOENT || errno == EINVAL || errno == ELOOP ?
		    0 : (report(r, ERASE_FAILED, label, name, strerror(errno)),
		    -1);
	if (util_read_all(fd, ERASE_READ_MAX, text, len) == -1) {
		e = errno;
		close(fd);
		report(r, ERASE_FAILED, label, name, e == EFBIG ?
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
static int
of_client(struct run *r, enum owner how, const char *text, size_t len)
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

/* ---- messages and inbound messages ---- */

/*
 * Look at name again later (erase_held), once for each name; or, with
 * an area, the entry of a file of it reported busy.  The entry, or NULL
 * out of memory.
 */
static struct held *
held_entry(struct run *r, const char *name, int inbox, const char *area)
{
	struct held	*nv;
	size_t		 i;

	for (i = 0; i < r->nheld; i++)
		if (strcmp(r->held[i].name, name) == 0 &&
		    r->held[i].inbox == inbox &&
		    strcmp(r->held[i].area, area) == 0)
			return &r->held[i];
	if (r->nheld == r->capheld) {
		if ((nv = reallocarray(r->held, r->capheld ? r->capheld * 2 :
		    16, sizeof(*nv))) == NULL) {
			report(r, ERASE_FAILED, inbox ? INBOX_AREA : area[0] ?
			    area : "cur", name, strerror(ENOMEM));
			return NULL;
		}
		r->held = nv;
		r->capheld = r->capheld ? r->capheld * 2 : 16;
	}
	memset(&r->held[r->nheld], 0, sizeof(r->held[0]));
	snprintf(r->held[r->nheld].name, sizeof(r->held[0].name), "%s", name);
	snprintf(r->held[r->nheld].area, sizeof(r->held[0].area), "%s", area);
	r->held[r->nheld].inbox = inbox;
	return &r->held[r->nheld++];
}

static void
hold(struct run *r, const char *name, int inbox)
{
	struct held	*h;

	if ((h = held_entry(r, name, inbox, "")) != NULL && h->state == GONE)
		h->state = HELD;
}

/* Report area/name busy, once however many sweeps find it so. */
static void
busy_once(struct run *r, const char *area, const char *name,
    const char *why)
{
	struct held	*h;

	if ((h = held_entry(r, name, 0, area)) == NULL || h->state == BUSY)
		return;
	h->state = BUSY;
	report(r, ERASE_BUSY, area, name, why);
}

/* Erase the message dir/name: 0 removed, 1 held (look again), -1. */
static int
erase_message(struct run *r, enum spool_dir d, const char *name)
{
	if (spool_erase(r->s, d, name) == 0) {
		report(r, ERASE_REMOVED, spool_dirname(d), name, NULL);
		r->c->messages++;
		add_id(r, name);
		return 0;
	}
	if (errno == EBUSY || errno == ENOENT || errno == EAGAIN)
		return 1;
	report(r, ERASE_FAILED, spool_dirname(d), name, strerror(errno));
	return -1;
}

/*
 * Erase inbox/name, under its note's lock when it has one (msgspoold
 * holds it while it hands the message to its client): 0, 1 held, -1.
 */
static int
erase_inbound(struct run *r, int afd, const char *name)
{
	int	note, nfd;

	if ((note = spool_area_lock(r->s, INBOX_NEW_AREA, name)) == -1 &&
	    errno != ENOENT)
		return errno == EBUSY ? 1 : (report(r, ERASE_FAILED,
		    INBOX_NEW_AREA, name, strerror(errno)), -1);
	if (unlinkat(afd, name, 0) == -1) {
		if (note != -1)
			close(note);
		return errno == ENOENT ? 0 : (report(r, ERASE_FAILED,
		    INBOX_AREA, name, strerror(errno)), -1);
	}
	report(r, ERASE_REMOVED, INBOX_AREA, name, NULL);
	r->c->inbound++;
	add_id(r, name);
	if (note != -1) {
		if ((nfd = spool_area(r->s, INBOX_NEW_AREA, 0)) != -1) {
			if (unlinkat(nfd, name, 0) == 0) {
				report(r, ERASE_REMOVED, INBOX_NEW_AREA, name,
				    NULL);
				fsync(nfd);
			}
			close(nfd);
		}
		close(note);
	}
	return 0;
}

/* Whether a message's or inbound message's file is one to erase. */
static int
to_erase(struct run *r, int dfd, const char *label, const char *name)
{
	char	*text;
	size_t	 len;
	int	 yes;

	if (ulid_prefix(name) && erased(r, name))
		return 1;	/* back: written again meanwhile */
	if (slurp(r, dfd, label, name, &text, &len) != 1)
		return 0;
	yes = erase_names(r->a, text, len) && of_client(r, OWNER_MEMBER,
	    text, len);
	free(text);
	return yes;
}

static void
erase_states(struct run *r)
{
	char		**names, what[64];
	ssize_t		 n, i;
	size_t		 k;
	int		 dfd;

	for (k = 0; k < sizeof(states) / sizeof(states[0]); k++) {
		dfd = spool_dirfd(r->s, states[k]);
		if ((n = spool_list(r->s, states[k], &names)) == -1) {
			report(r, ERASE_FAILED, spool_dirname(states[k]), "",
			    strerror(errno));
			continue;
		}
		snprintf(what, sizeof(what), "reading %s/",
		    spool_dirname(states[k]));
		for (i = 0; i < n; i++) {
			progress(r, what, (size_t)i, (size_t)n);
			if (to_erase(r, dfd, spool_dirname(states[k]),
			    names[i]) && erase_message(r, states[k],
			    names[i]) == 1)
				hold(r, names[i], 0);
		}
		progress(r, what, (size_t)n, (size_t)n);
		spool_names_free(names, (size_t)n);
	}
}

static void
erase_inbox(struct run *r)
{
	char		**names;
	ssize_t		 n, i;
	int		 afd;

	if ((afd = spool_area(r->s, INBOX_AREA, 0)) == -1)
		return;
	if ((n = names_of(afd, &names)) == -1)
		report(r, ERASE_FAILED, INBOX_AREA, "", strerror(errno));
	for (i = 0; i < n; i++) {
		progress(r, "reading inbox/", (size_t)i, (size_t)n);
		if (to_erase(r, afd, INBOX_AREA, names[i]) &&
		    erase_inbound(r, afd, names[i]) == 1)
			hold(r, names[i], 1);
	}
	if (n > 0) {
		progress(r, "reading inbox/", (size_t)n, (size_t)n);
		spool_names_free(names, (size_t)n);
	}
	fsync(afd);
	close(afd);
}

/* Where a message's file is now, by its name; -1 when in no state. */
static int
where_now(struct run *r, const char *name)
{
	struct stat	st;
	size_t		k;

	for (k = 0; k < sizeof(states) / sizeof(states[0]); k++)
		if (fstatat(spool_dirfd(r->s, states[k]), name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0)
			return (int)states[k];
	return -1;
}

/*
 * Look at the held files again until they can be erased or wait_ms has
 * passed; then report those still held as busy, untouched.
 */
static void
erase_held(struct run *r, long wait_ms)
{
	struct timespec	 t = { 0, ERASE_POLL_MS * 1000000L };
	struct held	*h;
	long		 waited = 0;
	size_t		 i, left;
	int		 d, afd, rc;

	do {
		for (i = left = 0; i < r->nheld; i++) {
			h = &r->held[i];
			if (h->state != HELD || h->area[0] != '\0')
				continue;
			if (h->inbox) {
				if ((afd = spool_area(r->s, INBOX_AREA, 0)) ==
				    -1)
					rc = 0;
				else {
					rc = erase_inbound(r, afd, h->name);
					close(afd);
				}
			} else
				rc = (d = where_now(r, h->name)) == -1 ? 0 :
				    erase_message(r, (enum spool_dir)d,
				    h->name);
			if (rc != 1) {
				h->state = GONE;
				continue;
			}
			if (waited < wait_ms) {
				left++;
				continue;
			}
			h->state = BUSY;
			d = h->inbox ? -1 : where_now(r, h->name);
			report(r, ERASE_BUSY, h->inbox ? INBOX_AREA : d == -1 ?
			    "cur" : spool_dirname((enum spool_dir)d), h->name,
			    h->inbox ? "msgspoold is handing it to its client" :
			    d == SPOOL_CUR ? "msgspoold is sending it" :
			    "held by a cancel or a retry");
		}
		if (left > 0) {
			nanosleep(&t, NULL);
			waited += ERASE_POLL_MS;
		}
	} while (left > 0);
}

/* ---- what names the address or an erased message ---- */

/* The held ones of a request's idempotency key: its lock (EBUSY). */
static int
lock_companion(int afd, const char *name, const char *ext, char *lock,
    size_t len)
{
	const char	*dot = strrchr(name, '.');
	int		 fd;

	snprintf(lock, len, "%.*s%s", dot ? (int)(dot - name) :
	    (int)strlen(name), name, ext);
	if ((fd = openat(afd, lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) == -1 &&
	    errno == EACCES)
		fd = openat(afd, lock, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? -2 : -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	return fd;
}

/* Whether dfd/name is one to remove by rule: 1, 0, -1 (reported). */
static int
matches(struct run *r, const struct area_rule *rule, int dfd,
    const char *label, const char *name)
{
	char	*text;
	size_t	 len;
	int	 yes;

	if (rule->match == MATCH_ID_NAME)
		return ulid_prefix(name) && erased(r, name);
	if (slurp(r, dfd, label, name, &text, &len) != 1)
		return 0;
	yes = names_id(r, text, len) || (rule->match == MATCH_TEXT &&
	    erase_names(r->a, text, len) && of_client(r, rule->owner, text,
	    len));
	free(text);
	return yes;
}

static void
erase_area(struct run *r, const struct area_rule *rule)
{
	char		**names, what[64], lock[SPOOL_NAME_MAX + 16];
	ssize_t		 n, i;
	int		 afd, lfd, removed = 0;

	if ((afd = spool_area(r->s, rule->area, 0)) == -1)
		return;
	if ((n = names_of(afd, &names)) == -1) {
		report(r, ERASE_FAILED, rule->area, "", strerror(errno));
		close(afd);
		return;
	}
	snprintf(what, sizeof(what), "reading %s/", rule->area);
	for (i = 0; i < n; i++) {
		progress(r, what, (size_t)i, (size_t)n);
		/* A lock goes with its record, never alone. */
		if (rule->lock != NULL && strstr(names[i], rule->lock) != NULL)
			continue;
		if (matches(r, rule, afd, rule->area, names[i]) != 1)
			continue;
		lfd = -2;
		if (rule->lock != NULL && (lfd = lock_companion(afd, names[i],
		    rule->lock, lock, sizeof(lock))) == -1) {
			if (errno == EBUSY)
				busy_once(r, rule->area, names[i], "a request "
				    "with its key is running");
			else
				report(r, ERASE_FAILED, rule->area, names[i],
				    strerror(errno));
			continue;
		}
		if (unlinkat(afd, names[i], 0) == 0) {
			report(r, ERASE_REMOVED, rule->area, names[i], NULL);
			removed = 1;
		} else if (errno != ENOENT)
			report(r, ERASE_FAILED, rule->area, names[i],
			    strerror(errno));
		if (lfd >= 0) {
			if (unlinkat(afd, lock, 0) == 0)
				report(r, ERASE_REMOVED, rule->area, lock,
				    NULL);
			close(lfd);
		}
	}
	if (n > 0)
		progress(r, what, (size_t)n, (size_t)n);
	spool_names_free(names, (size_t)n);
	if (removed)
		fsync(afd);
	close(afd);
}

/*
 * tmp/: what a writer that died left, and held messages never published
 * (msgspool-spool(5), Idempotency).  A file younger than ERASE_TMP_AGE
 * is a write under way: it is left, and reported busy when it names
 * the address.
 */
static void
erase_tmp(struct run *r)
{
	struct stat	 st;
	char		**names, *text;
	ssize_t		 n, i;
	size_t		 len;
	time_t		 young = time(NULL) - ERASE_TMP_AGE;
	int		 dfd = spool_dirfd(r->s, SPOOL_TMP), yes, removed = 0;

	if (dfd == -1 || (n = names_of(dfd, &names)) == -1)
		return;
	for (i = 0; i < n; i++) {
		progress(r, "reading tmp/", (size_t)i, (size_t)n);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode) ||
		    slurp(r, dfd, "tmp", names[i], &text, &len) != 1)
			continue;
		yes = names_id(r, text, len) || (erase_names(r->a, text,
		    len) && (of_client(r, OWNER_MEMBER, text, len) ||
		    of_client(r, OWNER_NUMBER, text, len)));
		free(text);
		if (!yes)
			continue;
		if (st.st_mtime > young)
			busy_once(r, "tmp", names[i], "being written now");
		else if (unlinkat(dfd, names[i], 0) == 0) {
			report(r, ERASE_REMOVED, "tmp", names[i], NULL);
			add_id(r, names[i]);	/* a held message */
			removed = 1;
		}
	}
	if (n > 0)
		progress(r, "reading tmp/", (size_t)n, (size_t)n);
	spool_names_free(names, (size_t)n);
	if (removed)
		fsync(dfd);
}

/*
 * A file provider's directory: the copies of the erased messages (their
 * names begin with the id) and any other file naming the address (a
 * message pruned since, an email whose copy outlived it).
 */
static void
erase_outbox(struct run *r, const char *path)
{
	const char	*root = spool_root(r->s), *label = path;
	char		**names, *text;
	ssize_t		 n, i;
	size_t		 len, rl = strlen(root);
	int		 dfd, yes, removed = 0;

	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;	/* never used yet */
	if (strncmp(path, root, rl) == 0 && path[rl] == '/')
		label = path + rl + 1;
	if ((n = names_of(dfd, &names)) == -1) {
		report(r, ERASE_FAILED, label, "", strerror(errno));
		close(dfd);
		return;
	}
	for (i = 0; i < n; i++) {
		progress(r, "reading the outbox", (size_t)i, (size_t)n);
		if (ulid_prefix(names[i]) && erased(r, names[i]))
			yes = 1;
		else if (slurp(r, dfd, label, names[i], &text, &len) != 1)
			continue;
		else {
			/* An .eml says nothing of its client. */
			yes = names_id(r, text, len) || (erase_names(r->a,
			    text, len) && of_client(r, OWNER_MEMBER, text,
			    len));
			free(text);
		}
		if (!yes)
			continue;
		if (unlinkat(dfd, names[i], 0) == 0) {
			report(r, ERASE_REMOVED, label, names[i], NULL);
			removed = 1;
		} else if (errno != ENOENT)
			report(r, ERASE_FAILED, label, names[i],
			    strerror(errno));
	}
	if (n > 0)
		progress(r, "reading the outbox", (size_t)n, (size_t)n);
	spool_names_free(names, (size_t)n);
	if (removed)
		fsync(dfd);
	close(dfd);
}

/* The clients' lists: the lines of the address and of erased ids. */
static void
erase_lists(struct run *r)
{
	const char	**needles;
	ssize_t		  n;
	size_t		  i;

	if ((needles = calloc(r->nids + 2, sizeof(*needles))) == NULL) {
		report(r, ERASE_FAILED, LIST_AREA, "", strerror(ENOMEM));
		return;
	}
	needles[0] = r->a->key;
	for (i = 0; i < r->nids; i++)
		needles[i + 1] = r->ids[i];
	progress(r, "rewriting lists/", 0, 0);
	if ((n = list_erase(r->s, r->o->client, needles, NULL)) == -1) {
		if (errno != ENOENT)
			report(r, ERASE_FAILED, LIST_AREA, "",
			    strerror(errno));
	} else
		r->c->listed += (size_t)n;
	free(needles);
}

/* One reading of the whole spool.  How many files it removed. */
static size_t
sweep(struct run *r, int first)
{
	size_t	before = r->c->removed, k;

	erase_states(r);
	erase_inbox(r);
	/* The second time, what is held is reported at once. */
	erase_held(r, first ? r->o->busy_ms : 0);
	erase_tmp(r);
	for (k = 0; k < sizeof(states) / sizeof(states[0]); k++)
		fsync(spool_dirfd(r->s, states[k]));
	for (k = 0; k < sizeof(areas) / sizeof(areas[0]); k++)
		erase_area(r, &areas[k]);
	for (k = 0; r->o->outboxes != NULL && r->o->outboxes[k] != NULL; k++)
		erase_outbox(r, r->o->outboxes[k]);
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

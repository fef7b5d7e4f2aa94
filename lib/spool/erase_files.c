/*
 * erase_files.c: the files msgspool erase removes (msgspool-spool(5),
 * Erasure): the messages of every state, each under the lock a daemon
 * would take (spool_erase), and the inbound messages under their
 * note's; those held looked at again, then reported busy; tmp/'s
 * leftovers; then, area by area by the table below, and in the file
 * providers' directories, what names the address or an erased message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "spool/erase.h"
#include "spool/erase_impl.h"
#include "spool/event.h"
#include "spool/inbox.h"
#include "spool/spool.h"

/* tmp/ files younger than this are a write under way, left. */
#define ERASE_TMP_AGE	60
/* How often a held message is looked at again, in milliseconds. */
#define ERASE_POLL_MS	100

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
			erase_tell(r, ERASE_FAILED, inbox ? INBOX_AREA :
			    area[0] ? area : "cur", name, strerror(ENOMEM));
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
	erase_tell(r, ERASE_BUSY, area, name, why);
}

/* Erase the message dir/name: 0 removed, 1 held (look again), -1. */
static int
erase_message(struct run *r, enum spool_dir d, const char *name)
{
	if (spool_erase(r->s, d, name) == 0) {
		erase_tell(r, ERASE_REMOVED, spool_dirname(d), name, NULL);
		r->c->messages++;
		erase_add_id(r, name);
		return 0;
	}
	if (errno == EBUSY || errno == ENOENT || errno == EAGAIN)
		return 1;
	erase_tell(r, ERASE_FAILED, spool_dirname(d), name, strerror(errno));
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
		return errno == EBUSY ? 1 : (erase_tell(r, ERASE_FAILED,
		    INBOX_NEW_AREA, name, strerror(errno)), -1);
	if (unlinkat(afd, name, 0) == -1) {
		if (note != -1)
			close(note);
		return errno == ENOENT ? 0 : (erase_tell(r, ERASE_FAILED,
		    INBOX_AREA, name, strerror(errno)), -1);
	}
	erase_tell(r, ERASE_REMOVED, INBOX_AREA, name, NULL);
	r->c->inbound++;
	erase_add_id(r, name);
	if (note != -1) {
		if ((nfd = spool_area(r->s, INBOX_NEW_AREA, 0)) != -1) {
			if (unlinkat(nfd, name, 0) == 0) {
				erase_tell(r, ERASE_REMOVED, INBOX_NEW_AREA,
				    name, NULL);
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

	if (ulid_prefix(name) && erase_is_erased(r, name))
		return 1;	/* back: written again meanwhile */
	if (erase_slurp(r, dfd, label, name, &text, &len) != 1)
		return 0;
	yes = erase_names(r->a, text, len) && erase_of_client(r, OWNER_MEMBER,
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
			erase_tell(r, ERASE_FAILED, spool_dirname(states[k]),
			    "", strerror(errno));
			continue;
		}
		snprintf(what, sizeof(what), "reading %s/",
		    spool_dirname(states[k]));
		for (i = 0; i < n; i++) {
			erase_progress(r, what, (size_t)i, (size_t)n);
			if (to_erase(r, dfd, spool_dirname(states[k]),
			    names[i]) && erase_message(r, states[k],
			    names[i]) == 1)
				hold(r, names[i], 0);
		}
		if (n > 0)
			erase_progress(r, what, (size_t)n, (size_t)n);
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
	if ((n = erase_names_of(afd, &names)) == -1)
		erase_tell(r, ERASE_FAILED, INBOX_AREA, "", strerror(errno));
	for (i = 0; i < n; i++) {
		erase_progress(r, "reading inbox/", (size_t)i, (size_t)n);
		if (to_erase(r, afd, INBOX_AREA, names[i]) &&
		    erase_inbound(r, afd, names[i]) == 1)
			hold(r, names[i], 1);
	}
	if (n > 0) {
		erase_progress(r, "reading inbox/", (size_t)n, (size_t)n);
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
			erase_tell(r, ERASE_BUSY, h->inbox ? INBOX_AREA :
			    d == -1 ? "cur" : spool_dirname((enum spool_dir)d),
			    h->name, h->inbox ? "msgspoold is handing it to "
			    "its client" : d == SPOOL_CUR ? "msgspoold is "
			    "sending it" : "held by a cancel or a retry");
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
		return ulid_prefix(name) && erase_is_erased(r, name);
	if (erase_slurp(r, dfd, label, name, &text, &len) != 1)
		return 0;
	yes = erase_names_id(r, text, len) || (rule->match == MATCH_TEXT &&
	    erase_names(r->a, text, len) && erase_of_client(r, rule->owner,
	    text, len));
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
	if ((n = erase_names_of(afd, &names)) == -1) {
		erase_tell(r, ERASE_FAILED, rule->area, "", strerror(errno));
		close(afd);
		return;
	}
	snprintf(what, sizeof(what), "reading %s/", rule->area);
	for (i = 0; i < n; i++) {
		erase_progress(r, what, (size_t)i, (size_t)n);
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
				erase_tell(r, ERASE_FAILED, rule->area,
				    names[i], strerror(errno));
			continue;
		}
		if (unlinkat(afd, names[i], 0) == 0) {
			erase_tell(r, ERASE_REMOVED, rule->area, names[i],
			    NULL);
			removed = 1;
		} else if (errno != ENOENT)
			erase_tell(r, ERASE_FAILED, rule->area, names[i],
			    strerror(errno));
		if (lfd >= 0) {
			if (unlinkat(afd, lock, 0) == 0)
				erase_tell(r, ERASE_REMOVED, rule->area, lock,
				    NULL);
			close(lfd);
		}
	}
	if (n > 0)
		erase_progress(r, what, (size_t)n, (size_t)n);
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

	if (dfd == -1 || (n = erase_names_of(dfd, &names)) == -1)
		return;
	for (i = 0; i < n; i++) {
		erase_progress(r, "reading tmp/", (size_t)i, (size_t)n);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode) ||
		    erase_slurp(r, dfd, "tmp", names[i], &text, &len) != 1)
			continue;
		yes = erase_names_id(r, text, len) || (erase_names(r->a, text,
		    len) && (erase_of_client(r, OWNER_MEMBER, text, len) ||
		    erase_of_client(r, OWNER_NUMBER, text, len)));
		free(text);
		if (!yes)
			continue;
		if (st.st_mtime > young)
			busy_once(r, "tmp", names[i], "being written now");
		else if (unlinkat(dfd, names[i], 0) == 0) {
			erase_tell(r, ERASE_REMOVED, "tmp", names[i], NULL);
			erase_add_id(r, names[i]);	/* a held message */
			removed = 1;
		}
	}
	if (n > 0)
		erase_progress(r, "reading tmp/", (size_t)n, (size_t)n);
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
	if ((n = erase_names_of(dfd, &names)) == -1) {
		erase_tell(r, ERASE_FAILED, label, "", strerror(errno));
		close(dfd);
		return;
	}
	for (i = 0; i < n; i++) {
		erase_progress(r, "reading the outbox", (size_t)i, (size_t)n);
		if (ulid_prefix(names[i]) && erase_is_erased(r, names[i]))
			yes = 1;
		else if (erase_slurp(r, dfd, label, names[i], &text, &len) != 1)
			continue;
		else {
			/* An .eml says nothing of its client. */
			yes = erase_names_id(r, text, len) || (erase_names(r->a,
			    text, len) && erase_of_client(r, OWNER_MEMBER, text,
			    len));
			free(text);
		}
		if (!yes)
			continue;
		if (unlinkat(dfd, names[i], 0) == 0) {
			erase_tell(r, ERASE_REMOVED, label, names[i], NULL);
			removed = 1;
		} else if (errno != ENOENT)
			erase_tell(r, ERASE_FAILED, label, names[i],
			    strerror(errno));
	}
	if (n > 0)
		erase_progress(r, "reading the outbox", (size_t)n, (size_t)n);
	spool_names_free(names, (size_t)n);
	if (removed)
		fsync(dfd);
	close(dfd);
}

void
erase_messages(struct run *r, long wait_ms)
{
	size_t	k;

	erase_states(r);
	erase_inbox(r);
	erase_held(r, wait_ms);
	erase_tmp(r);
	for (k = 0; k < sizeof(states) / sizeof(states[0]); k++)
		fsync(spool_dirfd(r->s, states[k]));
}

void
erase_dependents(struct run *r)
{
	size_t	k;

	for (k = 0; k < sizeof(areas) / sizeof(areas[0]); k++)
		erase_area(r, &areas[k]);
	for (k = 0; r->o->outboxes != NULL && r->o->outboxes[k] != NULL; k++)
		erase_outbox(r, r->o->outboxes[k]);
}

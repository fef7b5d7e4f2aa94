/*
 * spool.h: the maildir-style spool (msgspool-spool(5)).  Only its
 * modules (spool.c, claim.c, commit.c, area.c: spool_impl.h) know its
 * paths; the CGI programs, the daemon and the CLI go through these
 * functions.
 *
 * One message is one file, "ID.json", where ID is a ULID: 26 characters
 * of Crockford base32, the first 10 the creation time in milliseconds,
 * the rest random, so ids are unique, URL-safe and sort by time.
 */
#ifndef SPOOL_H
#define SPOOL_H

#include <stddef.h>
#include <time.h>
#include <sys/types.h>
#include <jansson.h>

#include "base/msgspool.h"
#include "base/rfc3339.h"
#include "base/ulid.h"
#include "spool/msgdoc.h"

enum spool_dir {
	SPOOL_TMP,
	SPOOL_NEW,
	SPOOL_DEFERRED,
	SPOOL_CUR,
	SPOOL_SENT,
	SPOOL_FAILED,
	SPOOL__MAX
};

#define SPOOL_ID_LEN	ULID_LEN
/*
 * Spool files: the writer's, readable by its group (the web server's),
 * so that the CGI programs can tell a client what became of a message
 * the daemon wrote (msgspool-spool(5), Permissions).
 */
#define SPOOL_FILE_MODE	0640
#define SPOOL_NAME_MAX	64

struct spool;

/*
 * Open a spool rooted at root.  With create, missing subdirectories are
 * made (mode 0700 for the root's children unless they exist); without,
 * a missing one is an error.  Returns NULL with a reason in err.
 */
struct spool	*spool_open(const char *root, int create, char *err,
		    size_t errlen);

/*
 * What spool_open_seen saw of a spool's root when every state was
 * there, a real directory: its identity and times.  Zeroes: nothing.
 */
struct spool_seen {
	dev_t		 dev;
	ino_t		 ino;
	struct timespec	 mtim;
	struct timespec	 ctim;
	int		 valid;
	int		 local;	/* the root's file system is this host's */
	/*
	 * On a local file system, while valid: the root and the states the
	 * requests opened, held for the next request (held 1; each fd -1
	 * until opened) until spool_seen_release.
	 */
	int		 held;
	int		 rootfd;
	int		 fds[SPOOL__MAX];
	struct timespec	 opened;	/* when rootfd was, by its path */
};

/*
 * spool_open(root, 0) for a process that opens the same spool request
 * after request (msgspool-fcgi's workers; seen is theirs, kept between
 * requests): while a stat finds the root as seen when every state was
 * there, the states are not looked at again (spool_seen.c says why that
 * holds), else they are, as spool_open looks, and seen is updated.  On
 * a local file system the spool borrows the root and states seen holds
 * (spool_free leaves them open), and what it opens is held there too.
 */
struct spool	*spool_open_seen(const char *root, struct spool_seen *seen,
		    char *err, size_t errlen);

/*
 * Close what seen holds (its root and states), as a worker with no
 * request waiting does; what it saw stays known.
 */
void		 spool_seen_release(struct spool_seen *seen);

void		 spool_free(struct spool *);

/*
 * What a persistent process keeps of its spool between requests
 * (msgspool-fcgi's workers): the group commit's record (dsync.h) mapped
 * while the spool's root holds that same file, found by one stat of it
 * in place of an open, a map and an unmap each request.  Zero it to
 * begin; spool_keep_free releases it.
 */
struct spool_keep {
	struct dsync	*dsync;
	int		 flink;	/* unnamed files linked by descriptor: 1, -1 */
};

/* Let s take from keep, and keep there what s opens (both borrowed). */
void		 spool_lend(struct spool *, struct spool_keep *keep);
void		 spool_keep_free(struct spool_keep *);

const char	*spool_root(const struct spool *);

/* "tmp", "new", ... */
const char	*spool_dirname(enum spool_dir);

/* Parse a state name back; -1 when unknown. */
int		 spool_dir_parse(const char *name);

/*
 * Durably enqueue a document into dest (SPOOL_NEW or SPOOL_DEFERRED):
 * write tmp/ID.json (O_EXCL, 0600), fsync, close, rename into dest,
 * fsync dest.  On any failure the temporary file is removed.  Returns
 * MSG_OK, MSG_TEMPFAIL (no space, read-only, quota, I/O: answer 503) or
 * MSG_PERMFAIL (anything else: answer 500).
 */
enum msg_status	 spool_enqueue(struct spool *, const json_t *doc,
		    enum spool_dir dest);

/*
 * Replace or create dir/name with new contents the same durable way,
 * then, when from is not SPOOL__MAX, unlink from/name: how the daemon
 * records an outcome (cur/ -> sent/ with the reply inside).
 */
enum msg_status	 spool_store(struct spool *, enum spool_dir dir,
		    const char *name, const json_t *doc, enum spool_dir from);

/*
 * One file of spool_commit: doc into dir under name ("ID.json" when name
 * is NULL), then from/name removed unless from is SPOOL__MAX.
 */
struct spool_item {
	const json_t	*doc;
	enum spool_dir	 dir;
	const char	*name;
	enum spool_dir	 from;
	enum msg_status	 status;	/* out */
};

/*
 * What an errno of a spool write means: MSG_TEMPFAIL (no space, a
 * read-only mount, I/O, no descriptor or memory: 503) or MSG_PERMFAIL.
 */
enum msg_status	 spool_errno_status(int e);

/*
 * Durably write many files at once, as spool_enqueue and spool_store do
 * one: each is written in tmp/ and its data synced before it is renamed
 * into place, but each directory is synced once for all of them, so a
 * batch of a thousand costs little more than one.  Sets each item's
 * status; returns how many succeeded.  Sources (from) are removed last
 * and not synced: spool_recover drops a claim left beside its outcome.
 */
size_t		 spool_commit(struct spool *, struct spool_item *, size_t n);

/*
 * Documents gathered by a batch request and enqueued together with one
 * spool_commit: add them (the batch takes the reference), commit, then
 * read each one's status.
 */
struct spool_batch {
	struct spool_item	*items;
	size_t			 n;
	size_t			 cap;
};

/* Add doc (stolen) for dest; its index, or -1 out of memory. */
ssize_t		 spool_batch_add(struct spool_batch *, json_t *doc,
		    enum spool_dir dest);

/* Enqueue everything added; returns how many succeeded. */
size_t		 spool_batch_commit(struct spool *, struct spool_batch *);

/* The status of item i after the commit. */
enum msg_status	 spool_batch_status(const struct spool_batch *, size_t i);

void		 spool_batch_free(struct spool_batch *);

/*
 * Holding a request's messages (msgspool-spool(5), Idempotency): while a
 * hold is set, spool_commit and spool_enqueue write each new message
 * durably into tmp/ as NAME.held (data and tmp/ synced) and report it
 * queued, but do not publish it: spool_hold_publish renames every held
 * file into its state and syncs those directories, after the caller has
 * durably recorded what it holds.  A held file never published is
 * removed with tmp/'s other leftovers.
 */
struct spool_held {
	enum spool_dir	 dir;			/* SPOOL_NEW or SPOOL_DEFERRED */
	char		 name[SPOOL_NAME_MAX];	/* "ID.json" */
};

struct spool_hold {
	struct spool_held	*v;
	size_t			 n;
	size_t			 cap;
};

/* Start (hold non-NULL) or stop (NULL) holding the enqueues of s. */
void		 spool_hold(struct spool *, struct spool_hold *hold);

/* Add an entry (when rebuilding a hold from a record).  0, or -1. */
int		 spool_hold_add(struct spool_hold *, enum spool_dir dir,
		    const char *name);

/*
 * Publish: rename each held file into its state (one already renamed,
 * so gone from tmp/, is skipped) and sync each state once.  Idempotent.
 * 0, or -1 with errno set (the files not yet renamed stay held).
 */
int		 spool_hold_publish(struct spool *, const struct spool_hold *);

/* Remove the held files that were not published. */
void		 spool_hold_discard(struct spool *, const struct spool_hold *);

void		 spool_hold_free(struct spool_hold *);

/* rename from/name to to/name.  0, or -1 with errno set. */
int		 spool_move(struct spool *, enum spool_dir from,
		    enum spool_dir to, const char *name);

/* Remove dir/name.  0, or -1 with errno set. */
int		 spool_remove(struct spool *, enum spool_dir dir,
		    const char *name);

/*
 * Read and parse dir/name, checking "version".  Returns a new reference
 * or NULL with a reason in err (errno ENOENT when the file is gone).
 */
json_t		*spool_load(struct spool *, enum spool_dir dir,
		    const char *name, char *err, size_t errlen);

/*
 * The file names (not paths) of dir, sorted (so by creation time);
 * only names that start with an id.  *names is a malloc'd array of
 * malloc'd strings; free with spool_names_free.  Returns the count, or
 * -1 with errno set.
 */
ssize_t		 spool_list(struct spool *, enum spool_dir dir,
		    char ***names);
void		 spool_names_free(char **names, size_t n);

/*
 * Find the message with an id in any state but tmp/.  Returns 0 and
 * sets *dir and name (SPOOL_NAME_MAX bytes), or -1 when not found.
 */
int		 spool_find(struct spool *, const char *id,
		    enum spool_dir *dir, char *name);

/*
 * Read the file of the message id, found in spool_find's order by its
 * open (a link, FIFO or directory of its name passed over as spool_find
 * passes it): its text into *text (NUL-terminated, the caller's to
 * free) and *len, *dir and name set.  0; or -1 with errno ENOENT when
 * it is in no state, or the error that stopped the look or the read
 * (the reason in err).
 */
int		 spool_find_read(struct spool *, const char *id,
		    enum spool_dir *dir, char *name, char **text, size_t *len,
		    char *err, size_t errlen);

/* The full path of dir/name into buf; -1 when it does not fit. */
int		 spool_path(const struct spool *, enum spool_dir dir,
		    const char *name, char *buf, size_t len);

/*
 * Uploads of the deprecated attachments route live in
 * SPOOL/uploads/CLIENT/ID.json, made on first use, readable only
 * through the client that made them.
 */
#define SPOOL_UPLOAD_TTL	(7 * 24 * 3600)

/* Store an upload document (it has "attachmentId") durably. */
enum msg_status	 spool_upload_store(struct spool *, const char *client,
		    const json_t *doc);

/*
 * Load an upload of client; NULL when there is none, it is another
 * client's, or it is older than SPOOL_UPLOAD_TTL ("created" inside).
 */
json_t		*spool_upload_load(struct spool *, const char *client,
		    const char *id);

/*
 * Claim new/name for sending: open it, take an exclusive flock (kept as
 * long as the returned fd is open: the claim is alive while its holder
 * is), rename it into cur/ and parse it.  The rename never replaces a
 * cur/name another holds (a daemon recording that message's outcome
 * still holds its claim there): that is EBUSY, as is new/name locked.
 * Returns the fd (close it after the outcome is recorded), or -1 when
 * the file is gone (ENOENT, EAGAIN) or claimed by another (EBUSY).
 * *doc is NULL when the file is not a valid spool file (the reason in
 * err): the caller moves it to failed/.
 */
int		 spool_claim(struct spool *, const char *name, json_t **doc,
		    char *err, size_t errlen);

/*
 * spool_claim from another state: new/ or deferred/ (how a client's
 * cancel takes a message away from the daemons: whoever holds the lock
 * and renamed it into cur/ has it).
 */
int		 spool_take(struct spool *, enum spool_dir from,
		    const char *name, json_t **doc, char *err, size_t errlen);

/*
 * Retry from/name by hand (msgspool(8), retry; from is deferred/ or
 * failed/): read it under its lock, take it into cur/ as spool_take
 * does, write it into new/ due at now (msgdoc_retry), remove it from
 * cur/ and let go.  So it is in one state throughout: a cancel or a
 * claim meanwhile finds it taken, or held in cur/ (EBUSY), and never
 * both queues and cancels it.  With SPOOL_RETRY_NOT_CANCELED a message
 * its client canceled is left where it is.  0 when retried; 1 when
 * left; -1 with errno: EBUSY (held by another: a cancel, a claim, a
 * daemon recording its outcome), ENOENT or EAGAIN (it moved), EINVAL
 * or ELOOP (not a spool file, left where it is; the reason in err), or
 * the write's error (the file back in from/, the reason in err).
 */
#define SPOOL_RETRY_NOT_CANCELED	0x1
int		 spool_retry(struct spool *, enum spool_dir from,
		    const char *name, int flags, time_t now, char *err,
		    size_t errlen);

/*
 * Remove the message dir/name for good (msgspool(8), erase) under its
 * lock, taken without waiting: one of new/ or deferred/ taken into cur/
 * first as spool_take takes it, so that no daemon claims it meanwhile,
 * then removed from there; one of cur/ only when its claim is dead (its
 * lock free); one of sent/ or failed/ while no retry holds it.  Its
 * record in claims/ goes with it.  dir is not synced: the caller syncs
 * it (spool_dirfd) once for all it removed.  0; -1 with errno EBUSY
 * (held: a daemon sending it or recording its outcome, a cancel, a
 * retry), ENOENT or EAGAIN (it moved: look it up again), EINVAL (not a
 * spool file; left where it is, or set aside into failed/ from new/ or
 * deferred/ as a claim does), or another.
 */
int		 spool_erase(struct spool *, enum spool_dir dir,
		    const char *name);

/*
 * A claim names its owner in SPOOL/claims/NAME ({"host", "pid",
 * "since"}): the host (netfs_hostname) and pid that hold it.  0 with
 * them filled, or -1 when none is recorded.
 */
int		 spool_claim_owner(struct spool *, const char *name,
		    char *host, size_t hostlen, long *pid);

/*
 * Prove a claim is still held (msgspool-spool(5), Several hosts, one
 * spool): write the locked file's first byte back in place and fsync.
 * -1 with errno set (EIO on NFS once the server gave the lock away):
 * the claim is lost.  May block as long as the filesystem does.
 */
int		 spool_claim_renew(int fd);

/* End a claim: its owner record removed (when ours), fd closed. */
void		 spool_release(struct spool *, const char *name, int fd);

/*
 * With on set, the owner records of this process's claims are links to
 * one file of its own, claims/.owner.HOST.PID, made once: a process
 * that claims many messages (msgspoold) makes no file a claim.  With on
 * clear, once its claims have ended, that file is removed.
 */
void		 spool_claim_linked(struct spool *, int on);

/*
 * Return to new/ every claim in cur/ whose lock is free: its daemon
 * died.  Returns how many.
 */
size_t		 spool_recover(struct spool *);

/*
 * Move the files of deferred/ that are due (mtime <= now) to new/.  Sets
 * *next to the earliest mtime still in the future (0: none).  Streams
 * the directory: memory does not grow with its size.  Returns how many
 * were moved.
 */
size_t		 spool_promote(struct spool *, time_t now, time_t *next);

/* Remove uploads (SPOOL/uploads/CLIENT/) made before a time. */
size_t		 spool_upload_prune(struct spool *, time_t before);

/* Remove the regular files of a state modified before a time. */
size_t		 spool_prune(struct spool *, enum spool_dir, time_t before);

/*
 * Remove the files of tmp/ this host's writers left when they died: a
 * temporary name ends in .HOST.PID (netfs_hostname, the writer's pid),
 * and that pid runs no more.  Other hosts' are left to spool_prune.
 * Returns how many.
 */
size_t		 spool_tmp_sweep(struct spool *);

/*
 * Call fn(arg, name) for each message file of a state, in directory
 * order, until it returns non-zero (which is returned).  -1 on error.
 */
int		 spool_scan(struct spool *, enum spool_dir,
		    int (*fn)(void *, const char *), void *arg);

/*
 * spool_scan from where the last call stopped, and on from the top once
 * the end is reached, so that a call sees every name that is there
 * throughout it (some twice) unless fn stops it.  A daemon that takes a
 * few files each time it looks reads a long queue's directory once,
 * not once a look.
 */
int		 spool_scan_on(struct spool *, enum spool_dir,
		    int (*fn)(void *, const char *), void *arg);

/*
 * An area of the spool beside its states (blobs/, receipts/, index/):
 * its directory fd (the caller closes it), made when create is set and
 * it is missing, with the mode and group of new/.  -1 with errno set.
 */
int		 spool_area(struct spool *, const char *area, int create);

/*
 * Durably store documents (each with an "id") as area/ID.json: written
 * in tmp/, synced, renamed, the area synced once.  All or nothing.
 */
enum msg_status	 spool_area_store(struct spool *, const char *area,
		    const json_t **docs, size_t n);

/* Load area/name (a document of ours, its id its name), or NULL. */
json_t		*spool_area_load(struct spool *, const char *area,
		    const char *name, char *err, size_t errlen);

int		 spool_area_remove(struct spool *, const char *area,
		    const char *name);

/*
 * Hold area/name for a while against every other process, of this host
 * or (on NFS, where the lock is the server's) of another: an exclusive
 * flock without waiting, on the file open for writing where it may be.
 * The fd (close it to let go), or -1 with errno: EBUSY when another
 * holds it, ENOENT when it is gone (also when it was removed while we
 * locked it), or another error.
 */
int		 spool_area_lock(struct spool *, const char *area,
		    const char *name);

/* Remove the regular files of an area modified before a time. */
size_t		 spool_area_prune(struct spool *, const char *area,
		    time_t before);

/*
 * Call fn for each file of an area in the order of their names (ids:
 * the order they came in); none there yet: nothing to call.
 */
int		 spool_area_scan(struct spool *, const char *area,
		    int (*fn)(void *, const char *), void *arg);

/*
 * A small index of the spool (index/KEY -> a message id), for what
 * providers call a message (their own id).  KEY is a plain name.  Put
 * is not synced: a lost entry costs a receipt, never a message.  0 or
 * -1; get fills id (SPOOL_ID_LEN + 1 bytes).
 */
int		 spool_index_put(struct spool *, const char *key,
		    const char *id);
int		 spool_index_get(struct spool *, const char *key, char *id);

/*
 * Add key -> id to the index only when key is not there yet, durably
 * (the entry and index/ synced): how the first of a provider's
 * repeated deliveries of one inbound message takes its name (inbox.h).
 * 0 added; 1 when key was there, its id copied into had (SPOOL_ID_LEN
 * + 1 bytes); -1 with errno set.
 */
int		 spool_index_add(struct spool *, const char *key,
		    const char *id, char *had);

/*
 * The state a daemon shows of something it runs (status/NAME.json: an
 * SMPP session), for the CLI to print.  Replaced whole (tmp file and
 * rename), not synced: it is news, not a record.  NAME is a plain name.
 * put: 0 or -1.  get: a new reference, or NULL (none, unreadable).
 */
int		 spool_status_put(struct spool *, const char *name,
		    const json_t *doc);
json_t		*spool_status_get(struct spool *, const char *name);

/*
 * Whether the daemon can work in the spool: every state directory
 * writable.  0, or -1 with the reason in err.
 */
int		 spool_writable(struct spool *, char *err, size_t errlen);

/* The directory fd of a state, for inotify and the like (borrowed). */
int		 spool_dirfd(struct spool *, enum spool_dir);

#endif

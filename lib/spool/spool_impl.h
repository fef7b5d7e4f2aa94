/*
 * spool_impl.h: what spool.c, commit.c, area.c and claim.c share, and
 * the modules that keep files of their own in the spool (suppress.c,
 * idem.c) use; nothing else sees it: the spool's structure and its
 * internal helpers.
 */
#ifndef SPOOL_IMPL_H
#define SPOOL_IMPL_H

#include <dirent.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>
#include <jansson.h>

#include "base/msgspool.h"
#include "spool/dsync.h"
#include "spool/spool.h"

struct spool {
	char	*root;
	int	 rootfd;
	int	 fds[SPOOL__MAX];	/* opened on first use: spool_statefd */
	struct spool_hold *hold;	/* spool_hold: enqueues held in tmp/ */
	int	 owner_linked;	/* claims/ records linked: spool_claim_linked */
	ino_t	 owner_ino;	/* the file they link to, 0: none made */
	DIR	*scan;		/* spool_scan_on's place in scan_dir */
	int	 scan_dir;
	struct dsync	*dsync;		/* the host's record (dsync.h) */
	enum spool_sync	 sync;		/* spool_sync_set: file by default */
	int		 dsync_tried;	/* opened, or tried to: once */
	struct spool_keep *keep;	/* spool_lend: kept between requests */
	int		 unnamed;	/* O_TMPFILE: 1 yes, -1 no, 0 unknown */
	int		 lkeep;		/* list_keep: lists' names kept */
	struct list_cache *lcache;	/* those names (list_cache.c) */
	int		 flink;		/* linkat AT_EMPTY_PATH: 1, -1, 0 */
	struct timespec	 opened;	/* when rootfd was (CLOCK_MONOTONIC) */
	struct spool_seen *seen;	/* rootfd and fds its (spool_open_seen) */
};

/* A held message's name in tmp/ (hold.c): its name and this. */
#define SPOOL_HELD_SUFFIX	".held"

/* Free the lists' names a handle kept (list_keep; list_cache.c). */
struct list_cache;
void		 list_cache_free(struct list_cache *);

/*
 * A spool of root, nothing opened yet (its fds -1): spool_open's start.
 * NULL out of memory (said in err).
 */
struct spool	*spool_alloc(const char *root, char *err, size_t errlen);

/* "tmp", "new", ...: the states' directory names. */
extern const char *const spool_dirnames[SPOOL__MAX];

/*
 * The fd of a state's directory, opened on first use: a CGI program
 * touches two or three of them, and each open is a cost per request.
 * -1 when it cannot be opened.
 */
int		 spool_statefd(struct spool *, int d);

/*
 * Whether the spool's root was opened by its path within the last
 * second (a request's spool, not a daemon's): a look-up from rootfd is
 * then as fresh as one from the root opened again, on NFS too (the
 * open asked the server for the root's attributes: close-to-open).
 */
int		 spool_root_fresh(const struct spool *);

/*
 * Whether files can be made unnamed in tmp/ and linked into place
 * (msgspool-spool(5), Queueing): O_TMPFILE where the file system has it
 * (s->unnamed says -1 once it has not), and a way to link one: by its
 * descriptor (known to work, from this spool or its keep), or /proc.
 * Asked once per spool (tmpfile.c).
 */
int		 spool_unnamed_ok(struct spool *);

/*
 * Link the unnamed file open on fd into dfd as name: by its descriptor
 * where the kernel allows it, else by its /proc/self/fd name.  0, or
 * -1 with errno (EEXIST: the name is taken).
 */
int		 spool_link_unnamed(struct spool *, int fd, int dfd,
		    const char *name);

/* The area of claims' owner records (claim_owner.c). */
#define SPOOL_CLAIMS_AREA	"claims"

/*
 * Name the owner of a claim of name, this process, in claims/NAME:
 * informs, never synced (msgspool-spool(5), claims/).
 */
void		 spool_owner_put(struct spool *, const char *name);

/* Drop the owner records and files of claims and daemons gone. */
void		 spool_owners_prune(struct spool *);

/* strcmp over an array of strings, for qsort. */
int		 spool_namecmp(const void *a, const void *b);

/*
 * Open dir/name, a spool file: never through a symbolic link, never
 * blocking on a FIFO or device, only a regular file (errno EINVAL or
 * ELOOP otherwise, the reason in err).
 */
int		 spool_doc_open(struct spool *, enum spool_dir d,
		    const char *name, char *err, size_t errlen);

/*
 * Parse the document open on fd (closed here) that is dir/name.  A new
 * reference, or NULL with the reason in err and errno EINVAL.
 */
json_t		*spool_doc_read(struct spool *, int fd, enum spool_dir d,
		    const char *name, char *err, size_t errlen);

/*
 * Parse text, len bytes, the file dir/name: its document, checked
 * (msgdoc_check).  A new reference, or NULL with the reason in err and
 * errno EINVAL.
 */
json_t		*spool_doc_parse(struct spool *, const char *text, size_t len,
		    enum spool_dir d, const char *name, char *err,
		    size_t errlen);

/*
 * spool_find and spool_doc_open at once, the open being the look: the
 * file of id open in the first state, in spool_find's order, where it
 * is a regular file, with *dir, name and *st set.  -1 with errno ENOENT
 * when it is in none, or with the error that stopped the look (the
 * reason in err).
 */
int		 spool_find_open(struct spool *, const char *id,
		    enum spool_dir *dir, char *name, struct stat *st,
		    char *err, size_t errlen);

/*
 * Move dir/name, which is not a spool file, aside into failed/ without
 * reading it (why is logged); left where it is when failed/ has that
 * name already.
 */
void		 spool_set_aside(struct spool *, enum spool_dir d,
		    const char *name, const char *why);

/*
 * A stream over a state's directory, from its start; NULL with errno
 * set.  Close with closedir (the spool's fd stays open).
 */
DIR		*spool_open_state(struct spool *, int d);

/*
 * The directory fd of dfd/name, made when create is set and it is
 * missing, with dfd's mode and group (as spool_area gives an area
 * new/'s: the web server's programs and the daemon both write there).
 * -1 with errno set.
 */
int		 spool_subdir(int dfd, const char *name, int create);

/*
 * The names of the directory stream dir (closed here) that want takes
 * (given arg), sorted: *names a malloc'd array of malloc'd strings
 * (spool_names_free).  The count, or -1 with errno.
 */
ssize_t		 spool_dir_names(DIR *dir, int (*want)(const char *, void *),
		    void *arg, char ***names);

/* For spool_dir_names: a name that starts with an id. */
int		 spool_want_id(const char *name, void *arg);

/*
 * The file names of an area that start with an id, sorted (so by
 * time), as spool_list gives a state's.  The count, or -1 with errno
 * (ENOENT: no such area).
 */
ssize_t		 spool_area_names(struct spool *, const char *area,
		    char ***names);

/*
 * Write docs durably: dirfds[i] is where item i goes, names[i] its name
 * (a file name, up to NAME_MAX bytes), mtimes[i] its modification time
 * (0: now).  Directories are synced
 * once each, after every rename; an item whose directory cannot be
 * synced is removed again and fails.  Sets st[i].
 */
void		 spool_commit_files(struct spool *, const json_t **docs,
		    int *dirfds, const char **names, time_t *mtimes,
		    enum msg_status *st, size_t n);

#endif

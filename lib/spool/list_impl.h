/*
 * list_impl.h: what the modules of the clients' lists share (list.c,
 * list_seg.c, list_page.c, list_rewrite.c, list_build.c; list.h;
 * msgspool-spool(5), Lists), and nothing else sees.
 */
#ifndef LIST_IMPL_H
#define LIST_IMPL_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <jansson.h>

#include "base/buf.h"
#include "spool/list.h"
#include "spool/spool.h"

/* A segment takes no new message once it is this big. */
#define SEG_BYTES	16384
/* The most a segment is read into memory at once. */
#define SEG_MAX		(256 * 1024 * 1024)
/* The head: "GEN SEG MAX\n", each id 26 characters. */
#define HEAD_LEN	(20 + 1 + SPOOL_ID_LEN + 1 + SPOOL_ID_LEN + 1)
#define HEAD_NAME	"head"
/* Marks lists/ built: every message of the spool is in it. */
#define BUILT_NAME	".built"
/* Taken by the rewriters: reindex, compact, erase. */
#define REWRITE_LOCK	".rewrite"
/* The first line of a segment names the one before it. */
#define PREV_TAG	"#prev "
/* How often a page starts again when a segment went under it. */
#define PAGE_TRIES	5
/* A sent or inbound message is looked for once this near its pruning. */
#define PRUNE_SLACK	120
/* A line of a message never accepted is dropped after this (tmp/'s). */
#define STALE_AGE	(36 * 3600)
/* Creation times and ids may differ by this much (seconds). */
#define CREATED_SLACK	60

struct head {
	long long	gen;
	char		seg[SPOOL_ID_LEN + 1];	/* "" when none */
	char		max[SPOOL_ID_LEN + 1];
	size_t		len;	/* its file's length as read; 0: unknown */
};

/* One line of a segment, split. */
struct line {
	const char	*id;		/* SPOOL_ID_LEN bytes */
	const char	*start;		/* the whole line */
	size_t		 len;		/* without its newline */
	size_t		 seq;		/* its place in the file */
	int		 gone;
	const char	*status, *dir, *channel, *addr, *ref, *hash, *json;
	size_t		 status_len, dir_len, channel_len, addr_len, ref_len,
			 json_len;
	long long	 created, at;
};

/* A line's hash: 16 hexadecimal digits (list_obj_hash). */
#define HASH_LEN	16

/*
 * The hash of a line's object (msgspool-spool(5), Lists) into out
 * (HASH_LEN + 1 bytes).
 */
void	 list_obj_hash(const char *p, size_t len, char *out);

/* The spool's files as lines: reindex, recover, lists never built. */
/* ---- the spool's files as lines: reindex, recover, unbuilt lists ---- */

struct scan {
	struct spool	*s;
	const char	*client;	/* only its; NULL: every client's */
	long long	 since_ms;	/* sent/, failed/, inbox/: ids since */
	int		 only_queue;	/* recover: new/, deferred/, cur/ */
	int		 (*fn)(struct scan *, const char *client,
			    const char *id, const char *line, size_t len);
	void		*arg;
	list_progress_fn *progress;
	void		*parg;
	size_t		 done, total;
	int		 inboxfd;	/* inbox/, -1 when there is none */
};

/* The fd of lists/CLIENT, made when create is set; -1 with errno. */
int	 list_client_dir(struct spool *s, const char *client, int create);

/* Read the head open on fd; 0, or -1 (errno EINVAL when garbled). */
int	 list_head_read(int fd, struct head *h);

/* Write h into the head open on fd; 0, or -1. */
int	 list_head_write(int fd, const struct head *h);

/* Open and lock (exclusive, waiting) the head of the client whose
 * directory is cfd.  The fd; closing it lets go.  -1 with errno. */
int	 list_head_lock(int cfd, int create);

/* Lock fd's whole file (exclusive, waiting): 0, or -1 with errno. */
int	 list_lock_fd(int fd);

/* "GEN.SEG" into buf. */
void	 list_seg_name(char *buf, size_t len, long long gen, const char *seg);

/* Whether name is a segment of gen; its id then at *seg. */
int	 list_seg_of(const char *name, long long gen, const char **seg);

/* The segments of gen in cfd, newest first: their ids (malloc'd
 * strings).  The count, or -1 with errno. */
ssize_t	 list_seg_list(int cfd, long long gen, char ***out);

/* The segment of gen in cfd that holds id (the least holds every id
 * below it too), into seg; 0, or -1 (errno ENOENT: none). */
int	 list_seg_find(int cfd, long long gen, const char *id, char *seg);

/*
 * The segments one append followed back from its head's newest by their
 * #prev lines: seg[0] the newest, each next the one before the last.  A
 * batch whose ids arrived late (other processes appended meanwhile) finds
 * all of their segments in one walk, not in one walk for each id.
 */
#define SEG_WALK_MAX	33	/* the newest and 32 before it */

struct seg_walk {
	char	seg[SEG_WALK_MAX][SPOOL_ID_LEN + 1];
	size_t	n;
};

/*
 * list_seg_find for an id older than segment from's first (one that
 * arrived a little late, behind a newer id that began a segment): the
 * #prev lines followed back from from (those walk holds already read
 * again from it), SEG_WALK_MAX segments at most, before the whole
 * directory is listed.  The segment after seg into next when known (the
 * ids from seg's up to next's are all seg's), else "".  walk: NULL, or
 * kept by the caller from one call to the next.
 */
int	 list_seg_find_back(int cfd, long long gen, const char *from,
	    const char *id, char *seg, char *next, struct seg_walk *walk);

/*
 * Open for appending the segment of gen h->gen that holds id, an id
 * older than h->seg's first, its name into seg and the segment after it
 * into next (or "" when not known): from the names kept between appends
 * when client's are (list_keep; list_cache.c), else by
 * list_seg_find_back with walk.  The fd, or -1 with errno.
 */
int	 list_seg_open_old(struct spool *s, const char *client, int cfd,
	    const struct head *h, const char *id, char *seg, char *next,
	    struct seg_walk *walk);

/* Open a segment for appending (made with its #prev line when new). */
int	 list_seg_open_append(int cfd, long long gen, const char *seg, const char *prev);

/* Whether a line's object is as it was written (its hash). */
int	 list_line_intact(const struct line *l);

/* Split the line at p (len bytes, no newline) into l; 0, or -1 when
 * it is not one of ours. */
int	 list_line_parse(const char *p, size_t len, struct line *l);

/* The lines of text, each message's last only, newest first, into
 * *out (malloc'd); the count, or -1 out of memory. */
ssize_t	 list_fold(const char *text, size_t len, struct line **out);

/* Read a segment's text: *text (malloc'd).  0, or -1 with errno
 * (ENOENT: it went, a rewriter's doing). */
int	 list_seg_read(int cfd, long long gen, const char *seg, char **text, size_t *len);

/* The segment before this one, from its #prev line; "" when none. */
void	 list_seg_prev(const char *text, size_t len, long long gen, char *prev);

/* Write text as segment gen.seg of cfd, replacing it (a temporary
 * file renamed over it).  0, or -1 with errno. */
int	 list_seg_replace(int cfd, long long gen, const char *seg, const char *text,
		       size_t len);

/* The #prev line of a segment of gen into b (nothing when prev is ""). */
void	 list_put_prev(struct buf *b, long long gen, const char *prev);

/* Whether the field at p (len bytes) is s. */
int	 list_field_is(const char *p, size_t len, const char *s);

/* Whether a status (enum list_status) is final. */
int	 list_status_final(int st);

/* Whether dfd holds the regular file ID.json of id. */
int	 list_exists(struct spool *s, int dfd, const char *id);

/* Every message of the spool's files (or those sc asks for) as
 * lines, to sc->fn.  0, or -1. */
int	 list_scan_spool(struct scan *sc);

/* Every message of client in the spool's files, as lines, into b. */
int	 list_scan_client(struct spool *s, const char *client, struct buf *b);

/* Take the rewriters' lock of lists/ (afd): one at a time.  The fd. */
int	 list_rewrite_lock(int afd);

/* Append text (whole lines) about message id to client's list, under
 * the head's lock, into the segment that holds id.  0, or -1. */
int	 list_append(struct spool *s, const char *client, const char *id,
		       const char *text, size_t len);

/* A line for list_append_lines: its message's id and text (whole
 * lines), and on return 0 when it is written, else why not (errno). */
struct list_add {
	const char	*id;
	const char	*text;
	size_t		 len;
	int		 err;
};

/*
 * list_append of several lines of client's list under one lock of its
 * head, in the order of their ids, the lines of one segment in one
 * write (list_append.c).  0, or -1 with errno when any failed (each
 * one's err says).
 */
int	 list_append_lines(struct spool *s, const char *client,
	    struct list_add *v, size_t n);

#endif

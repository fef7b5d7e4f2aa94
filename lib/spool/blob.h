/*
 * blob.h: attachments stored once for many messages (msgspool.conf(5) limits;
 * the layout is in msgspool-spool(5)).
 *
 * SPOOL/blobs/ID.N holds the decoded bytes of attachment N of message
 * ID, whose document says {"name","contentType","size","blob":N} instead
 * of carrying the content.  An attachment given once for every recipient
 * of a request is written once and hard-linked under each recipient's
 * message id: one inode, one copy on disk, however many messages.  A
 * blob's name is built only from a valid id (the one a spool file's name
 * begins with) and an index, never from what a document says.
 *
 * The links of a message go with it: msgspool delete removes them, and
 * the daemon's prune removes links whose message is in no state any more
 * (sent and pruned, deleted, or never committed by a CGI that died).
 */
#ifndef BLOB_H
#define BLOB_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "base/msgspool.h"
#include "spool/spool.h"

/* Indexes run from 0 to BLOB_MAX - 1 (a message has at most 100). */
#define BLOB_MAX	100

/* One attachment's bytes, to store. */
struct blob_data {
	const unsigned char	*p;
	size_t			 len;
};

/*
 * Store attachment i of v (n of them) as blobs/ID.i for each of the nids
 * message ids: each written once in tmp/ (0600), synced, hard-linked
 * under every id, then blobs/ synced: durable before the messages are
 * committed.  blobs/ is made when missing, like new/.  On failure
 * nothing is left behind.  MSG_OK, MSG_TEMPFAIL (no space, read-only,
 * I/O: answer 503) or MSG_PERMFAIL (anything else: answer 500).
 */
enum msg_status	 blob_store(struct spool *, const struct blob_data *v,
		    size_t n, const char *const *ids, size_t nids);

/*
 * Open blob index of the message whose id name begins with (an id, or a
 * spool file name "ID.json"): only a regular file, never through a
 * symbolic link, never blocking.  The fd (caller closes) with its size
 * in *size, or -1 with errno set (ENOENT: no such blob; EINVAL: a bad
 * name or index, or not a regular file).
 */
int		 blob_open(struct spool *, const char *name, size_t index,
		    size_t *size);

/*
 * Whether an attachment object of a message names a blob: its index
 * into *index (1), or 0.  -1 when "blob" is there but not an index.
 */
int		 blob_index(const json_t *attachment, size_t *index);

/*
 * The message msg of the spool file name (an id or "ID.json") with each
 * stored attachment's content read back (base64, as an inline one), for
 * whatever needs the message whole (the file provider, msgspool show).
 * A new reference (msg itself when nothing is stored apart), or NULL
 * with *st (MSG_PERMFAIL: a blob missing, damaged or not a regular file;
 * MSG_TEMPFAIL: it cannot be read now) and the reason in err.
 */
json_t		*blob_message(struct spool *, const char *name,
		    const json_t *msg, enum msg_status *st, char *err,
		    size_t errlen);

/*
 * Remove every blob of the message whose id name begins with: when its
 * file is deleted.  Returns how many were removed.
 */
size_t		 blob_remove(struct spool *, const char *name);

/*
 * Make blobs/ when it is missing (the mode and group of new/), then
 * remove the blobs modified before a time whose message is in no state
 * directory.  Returns how many were removed.
 */
size_t		 blob_prune(struct spool *, time_t before);

#endif

/*
 * memo.h: what a persistent process remembers of replies that are a pure
 * function of a file's bytes and of where the file is: the status of a
 * message (GET /messages/{id}) is its spool document's and its state's,
 * and nothing else's (msgspool-fcgi(8), Per request).
 *
 * An entry is found by the file's name and used only when the state and
 * the SHA-256 of the file's bytes are the very ones it was made from,
 * so it is never stale, whatever moved or changed: the file is still
 * opened and read for each request, only its parse and the reply's
 * writing are saved.  The memo is the caller's (msgspool-fcgi keeps one
 * a worker); nothing here is global.  It is bounded: MEMO_SLOTS
 * entries, one a slot (a new one takes its slot's place), MEMO_BYTES
 * of them in all, none of more than MEMO_ENTRY_MAX.
 */
#ifndef MEMO_H
#define MEMO_H

#include <stddef.h>

#define MEMO_SLOTS	4096
#define MEMO_BYTES	((size_t)1024 * 1024)
#define MEMO_ENTRY_MAX	((size_t)8192)	/* name, owner and reply */
#define MEMO_DIGEST	32		/* SHA-256 */

struct memo_entry {
	int		 tag;		/* where the file was (a spool state) */
	unsigned char	 digest[MEMO_DIGEST];	/* of the file's bytes */
	size_t		 replylen;
	size_t		 size;		/* what it counts against MEMO_BYTES */
	const char	*owner;		/* its client */
	const char	*reply;		/* the reply's body */
	char		 name[];	/* then owner and reply, one block */
};

struct memo {
	struct memo_entry **slots;	/* MEMO_SLOTS, made on first use */
	size_t		 bytes;
	unsigned long	 hits, misses;
};

/* The digest of input, len bytes, that memo_get and memo_put take. */
void		 memo_digest(const char *input, size_t len,
		    unsigned char digest[MEMO_DIGEST]);

/*
 * The entry made from name's bytes of digest where tag says, or NULL:
 * none, or one made from other bytes or elsewhere.
 */
const struct memo_entry *memo_get(struct memo *, const char *name, int tag,
		    const unsigned char digest[MEMO_DIGEST]);

/*
 * Remember the reply made from name's bytes of digest where tag says,
 * and their owner (all copied), in name's slot.  Nothing is kept (and
 * the slot left as it was) when the entry would be larger than
 * MEMO_ENTRY_MAX, the memo than MEMO_BYTES, or memory runs out: a memo
 * only ever saves work.
 */
void		 memo_put(struct memo *, const char *name, int tag,
		    const unsigned char digest[MEMO_DIGEST], const char *owner,
		    const char *reply, size_t replylen);

/* Forget everything (the memo stays usable). */
void		 memo_free(struct memo *);

#endif

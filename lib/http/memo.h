/*
 * memo.h: what a persistent process remembers of replies that are a pure
 * function of a file's bytes and of where the file is: the status of a
 * message (GET /messages/{id}) is its spool document's and its state's,
 * and nothing else's (msgspool-fcgi(8), Per request).
 *
 * An entry is found by the file's name and used only when the state and
 * every byte of the file are the very ones it was made from, so it is
 * never stale, whatever moved or changed: a file is still opened and
 * read for each request, only its parse and the reply's writing are
 * saved.  The memo is the caller's (msgspool-fcgi keeps one a worker);
 * nothing here is global.  It is bounded: MEMO_SLOTS entries, one a
 * slot (a new one takes its slot's place), MEMO_BYTES of them in all,
 * none of more than MEMO_ENTRY_MAX.
 */
#ifndef MEMO_H
#define MEMO_H

#include <stddef.h>

#define MEMO_SLOTS	1024
#define MEMO_BYTES	((size_t)1024 * 1024)
#define MEMO_ENTRY_MAX	((size_t)8192)	/* name, file, owner and reply */

struct memo_entry {
	char	*name;		/* NULL: an empty slot */
	int	 tag;		/* where the file was (a spool state) */
	char	*input;		/* the file's bytes */
	size_t	 inlen;
	char	*owner;		/* its client */
	char	*reply;		/* the reply's body */
	size_t	 replylen;
	size_t	 size;		/* what it counts against MEMO_BYTES */
};

struct memo {
	struct memo_entry *slots;	/* MEMO_SLOTS, made on first use */
	size_t		 bytes;
	unsigned long	 hits, misses;
};

/*
 * The entry made from name's input of len bytes where tag says, or
 * NULL: none, or one made from other bytes or elsewhere.
 */
const struct memo_entry *memo_get(struct memo *, const char *name, int tag,
		    const char *input, size_t len);

/*
 * Remember the reply made from name's input where tag says, and the
 * input's owner (all copied), in name's slot.  Nothing is kept (and the
 * slot left as it was) when the entry would be larger than
 * MEMO_ENTRY_MAX, the memo than MEMO_BYTES, or memory runs out: a memo
 * only ever saves work.
 */
void		 memo_put(struct memo *, const char *name, int tag,
		    const char *input, size_t len, const char *owner,
		    const char *reply, size_t replylen);

/* Forget everything (the memo stays usable). */
void		 memo_free(struct memo *);

#endif

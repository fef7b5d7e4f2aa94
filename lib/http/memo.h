/*
 * memo.h: what the workers of a persistent process remember together of
 * replies that are a pure function of a file's bytes and of where the
 * file is: the status of a message (GET /messages/{id}) is its spool
 * document's and its state's, and nothing else's (msgspool-fcgi(8),
 * Per request).
 *
 * An entry is found by the file's name and used only when the state and
 * the SHA-256 of the file's bytes are the very ones it was made from,
 * so it is never stale, whatever moved or changed: the file is still
 * opened and read for each request, only its parse and the reply's
 * writing are saved.
 *
 * The memo is MEMO_SLOTS slots of MEMO_SLOT_SIZE bytes in one mapping
 * shared by the processes forked after memo_open (msgspool-fcgi's
 * supervisor makes it, its workers use it); nothing here is global.  A
 * name has one slot, a new entry takes its place; an entry that does not
 * fit a slot is not kept.  Each slot is a sequence lock: a writer makes
 * its count odd, writes, makes it even again, and only when no other
 * writer holds it (else it keeps nothing); a reader copies the slot out
 * and uses the copy only when the count was even and the same before and
 * after.  A writer killed in the middle leaves its slot odd: unused from
 * then on, never read.
 */
#ifndef MEMO_H
#define MEMO_H

#include <stddef.h>

#define MEMO_SLOTS	4096
#define MEMO_SLOT_SIZE	2048		/* 8 MiB in all */
#define MEMO_DIGEST	32		/* SHA-256 */

struct memo_slot;

struct memo {
	struct memo_slot *slots;	/* MEMO_SLOTS, shared; NULL: none */
	unsigned long	 hits, misses;	/* this process's */
};

/*
 * Map a memo shared with the processes forked from here on.  0, or -1
 * with errno set (and m->slots NULL: a memo that keeps nothing).
 */
int		 memo_open(struct memo *m);

/* Unmap it (in the process that has no more use for it). */
void		 memo_close(struct memo *m);

/* The digest of input, len bytes, that memo_get and memo_put take. */
void		 memo_digest(const char *input, size_t len,
		    unsigned char digest[MEMO_DIGEST]);

/*
 * The reply made from name's bytes of digest where tag says: 1 with it
 * copied into reply (room for MEMO_SLOT_SIZE bytes) and *len, when it
 * was made for owner; 2 when it was made for another owner; 0 when
 * there is none (or it changes as it is read).
 */
int		 memo_get(struct memo *, const char *name, int tag,
		    const unsigned char digest[MEMO_DIGEST], const char *owner,
		    char *reply, size_t *len);

/*
 * Remember the reply made from name's bytes of digest where tag says,
 * for owner, in name's slot.  Nothing is kept when it does not fit a
 * slot, another process is writing that slot, or there is no memo: a
 * memo only ever saves work.
 */
void		 memo_put(struct memo *, const char *name, int tag,
		    const unsigned char digest[MEMO_DIGEST], const char *owner,
		    const char *reply, size_t replylen);

#endif

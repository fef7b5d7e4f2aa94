/*
 * memo.c: replies remembered by the bytes they were made from, in slots
 * shared by a supervisor's workers (memo.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <nettle/sha2.h>

#include "http/memo.h"

struct memo_head {
	atomic_uint	 seq;		/* odd while written */
	int		 tag;
	unsigned int	 namelen, ownerlen, replylen;
	unsigned char	 digest[MEMO_DIGEST];
};

#define MEMO_DATA	(MEMO_SLOT_SIZE - sizeof(struct memo_head))

/* The head, then the name, owner and reply, one after the other. */
struct memo_slot {
	struct memo_head h;
	char		 data[MEMO_DATA];
};

_Static_assert(sizeof(struct memo_slot) == MEMO_SLOT_SIZE,
    "a slot is MEMO_SLOT_SIZE bytes");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
    "a slot's count is shared between processes: lock-free only");

int
memo_open(struct memo *m)
{
	void	*p;

	memset(m, 0, sizeof(*m));
	/* Zeroes: every count even, every slot empty (no name). */
	p = mmap(NULL, (size_t)MEMO_SLOTS * MEMO_SLOT_SIZE,
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	m->slots = p;
	return 0;
}

void
memo_close(struct memo *m)
{
	if (m->slots != NULL)
		munmap(m->slots, (size_t)MEMO_SLOTS * MEMO_SLOT_SIZE);
	memset(m, 0, sizeof(*m));
}

/* FNV-1a of name: its slot. */
static struct memo_slot *
slot_of(struct memo *m, const char *name, size_t nlen)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < nlen; i++) {
		h ^= (unsigned char)name[i];
		h *= 16777619u;
	}
	return &m->slots[h % MEMO_SLOTS];
}

void
memo_digest(const char *input, size_t len, unsigned char digest[MEMO_DIGEST])
{
	struct sha256_ctx	ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, len, (const uint8_t *)input);
	sha256_digest(&ctx, MEMO_DIGEST, digest);
}

int
memo_get(struct memo *m, const char *name, int tag,
    const unsigned char digest[MEMO_DIGEST], const char *owner, char *reply,
    size_t *len)
{
	struct memo_slot	*s;
	struct memo_head	 h;
	char			 who[MEMO_DATA];
	size_t			 nlen = strlen(name);
	unsigned int		 seq;
	int			 same = 0;

	if (m->slots == NULL)
		goto miss;
	s = slot_of(m, name, nlen);
	seq = atomic_load_explicit(&s->h.seq, memory_order_acquire);
	if (seq & 1)
		goto miss;
	/*
	 * A copy, checked against the count after: what a writer changes
	 * meanwhile (lengths too) is never used, and never read past the
	 * slot.
	 */
	memcpy(&h, &s->h, sizeof(h));
	if (h.tag == tag && h.namelen == nlen && h.ownerlen < MEMO_DATA &&
	    h.replylen < MEMO_DATA && (size_t)h.namelen + h.ownerlen +
	    h.replylen <= MEMO_DATA && memcmp(h.digest, digest,
	    MEMO_DIGEST) == 0 && memcmp(s->data, name, nlen) == 0) {
		memcpy(who, s->data + nlen, h.ownerlen);
		who[h.ownerlen] = '\0';
		memcpy(reply, s->data + nlen + h.ownerlen, h.replylen);
		same = 1;
	}
	atomic_thread_fence(memory_order_acquire);
	if (!same ||
	    atomic_load_explicit(&s->h.seq, memory_order_relaxed) != seq)
		goto miss;
	m->hits++;
	if (strcmp(who, owner) != 0)
		return 2;
	*len = h.replylen;
	return 1;
miss:
	m->misses++;
	return 0;
}

void
memo_put(struct memo *m, const char *name, int tag,
    const unsigned char digest[MEMO_DIGEST], const char *owner,
    const char *reply, size_t replylen)
{
	struct memo_slot	*s;
	size_t			 nlen = strlen(name), olen = strlen(owner);
	unsigned int		 seq;

	if (m->slots == NULL || nlen > MEMO_DATA || olen > MEMO_DATA ||
	    replylen > MEMO_DATA || nlen + olen + replylen > MEMO_DATA - 1)
		return;
	s = slot_of(m, name, nlen);
	seq = atomic_load_explicit(&s->h.seq, memory_order_relaxed);
	/* Another writer holds it (or died holding it): nothing kept. */
	if ((seq & 1) || !atomic_compare_exchange_strong_explicit(&s->h.seq,
	    &seq, seq + 1, memory_order_relaxed, memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	s->h.tag = tag;
	s->h.namelen = (unsigned int)nlen;
	s->h.ownerlen = (unsigned int)olen;
	s->h.replylen = (unsigned int)replylen;
	memcpy(s->h.digest, digest, MEMO_DIGEST);
	memcpy(s->data, name, nlen);
	memcpy(s->data + nlen, owner, olen);
	memcpy(s->data + nlen + olen, reply, replylen);
	atomic_store_explicit(&s->h.seq, seq + 2, memory_order_release);
}

/*
 * memo.c: replies remembered by the bytes they were made from (memo.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "http/memo.h"

/* FNV-1a of name: its slot. */
static size_t
slot_of(const char *name)
{
	uint32_t	h = 2166136261u;

	for (; *name != '\0'; name++) {
		h ^= (unsigned char)*name;
		h *= 16777619u;
	}
	return h % MEMO_SLOTS;
}

void
memo_digest(const char *input, size_t len, unsigned char digest[MEMO_DIGEST])
{
	struct sha256_ctx	ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, len, (const uint8_t *)input);
	sha256_digest(&ctx, MEMO_DIGEST, digest);
}

const struct memo_entry *
memo_get(struct memo *m, const char *name, int tag,
    const unsigned char digest[MEMO_DIGEST])
{
	const struct memo_entry	*e;

	if (m->slots != NULL && (e = m->slots[slot_of(name)]) != NULL &&
	    e->tag == tag && strcmp(e->name, name) == 0 &&
	    memcmp(e->digest, digest, MEMO_DIGEST) == 0) {
		m->hits++;
		return e;
	}
	m->misses++;
	return NULL;
}

void
memo_put(struct memo *m, const char *name, int tag,
    const unsigned char digest[MEMO_DIGEST], const char *owner,
    const char *reply, size_t replylen)
{
	struct memo_entry	**slot, *e;
	size_t			  nlen, olen, size;
	char			 *p;

	nlen = strlen(name);
	olen = strlen(owner);
	/* Each term is bounded before the sum: no overflow. */
	if (nlen > MEMO_ENTRY_MAX || olen > MEMO_ENTRY_MAX ||
	    replylen > MEMO_ENTRY_MAX ||
	    nlen + olen + replylen + 3 > MEMO_ENTRY_MAX)
		return;
	size = sizeof(*e) + nlen + olen + replylen + 3;
	if (m->slots == NULL &&
	    (m->slots = calloc(MEMO_SLOTS, sizeof(*m->slots))) == NULL)
		return;
	slot = &m->slots[slot_of(name)];
	if (m->bytes - (*slot != NULL ? (*slot)->size : 0) + size > MEMO_BYTES ||
	    (e = malloc(size)) == NULL)
		return;
	e->tag = tag;
	memcpy(e->digest, digest, MEMO_DIGEST);
	e->replylen = replylen;
	e->size = size;
	p = e->name;
	memcpy(p, name, nlen + 1);
	p += nlen + 1;
	e->owner = p;
	memcpy(p, owner, olen + 1);
	p += olen + 1;
	e->reply = p;
	memcpy(p, reply, replylen);
	p[replylen] = '\0';
	if (*slot != NULL) {
		m->bytes -= (*slot)->size;
		free(*slot);
	}
	*slot = e;
	m->bytes += size;
}

void
memo_free(struct memo *m)
{
	size_t	i;

	if (m->slots != NULL) {
		for (i = 0; i < MEMO_SLOTS; i++)
			free(m->slots[i]);
		free(m->slots);
	}
	memset(m, 0, sizeof(*m));
}

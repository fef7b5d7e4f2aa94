/*
 * memo.c: replies remembered by the bytes they were made from (memo.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static void
clear(struct memo *m, struct memo_entry *e)
{
	if (e->name == NULL)
		return;
	m->bytes -= e->size;
	free(e->name);
	free(e->input);
	free(e->owner);
	free(e->reply);
	memset(e, 0, sizeof(*e));
}

const struct memo_entry *
memo_get(struct memo *m, const char *name, int tag, const char *input,
    size_t len)
{
	const struct memo_entry	*e;

	if (m->slots != NULL) {
		e = &m->slots[slot_of(name)];
		if (e->name != NULL && e->tag == tag && e->inlen == len &&
		    strcmp(e->name, name) == 0 &&
		    memcmp(e->input, input, len) == 0) {
			m->hits++;
			return e;
		}
	}
	m->misses++;
	return NULL;
}

/* A copy of len bytes of p, NUL-terminated; NULL out of memory. */
static char *
copy(const char *p, size_t len)
{
	char	*c;

	if ((c = malloc(len + 1)) != NULL) {
		memcpy(c, p, len);
		c[len] = '\0';
	}
	return c;
}

void
memo_put(struct memo *m, const char *name, int tag, const char *input,
    size_t len, const char *owner, const char *reply, size_t replylen)
{
	struct memo_entry	*e, n;
	size_t			 nlen, olen, size;

	nlen = strlen(name);
	olen = strlen(owner);
	/* Each term is bounded by what the caller read: no overflow. */
	if (len > MEMO_ENTRY_MAX || replylen > MEMO_ENTRY_MAX ||
	    (size = nlen + len + olen + replylen + 4) > MEMO_ENTRY_MAX)
		return;
	if (m->slots == NULL &&
	    (m->slots = calloc(MEMO_SLOTS, sizeof(*m->slots))) == NULL)
		return;
	e = &m->slots[slot_of(name)];
	if (m->bytes - (e->name != NULL ? e->size : 0) + size > MEMO_BYTES)
		return;
	memset(&n, 0, sizeof(n));
	n.tag = tag;
	n.inlen = len;
	n.replylen = replylen;
	n.size = size;
	if ((n.name = copy(name, nlen)) == NULL ||
	    (n.input = copy(input, len)) == NULL ||
	    (n.owner = copy(owner, olen)) == NULL ||
	    (n.reply = copy(reply, replylen)) == NULL) {
		free(n.name);
		free(n.input);
		free(n.owner);
		free(n.reply);
		return;
	}
	clear(m, e);
	*e = n;
	m->bytes += size;
}

void
memo_free(struct memo *m)
{
	size_t	i;

	if (m->slots != NULL) {
		for (i = 0; i < MEMO_SLOTS; i++)
			clear(m, &m->slots[i]);
		free(m->slots);
	}
	memset(m, 0, sizeof(*m));
}

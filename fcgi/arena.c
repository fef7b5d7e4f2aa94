/*
 * arena.c: a bump allocator for the JSON values of one request of a
 * msgspool-fcgi worker (arena.h).  Chunks are mapped, not malloc'd, so
 * that the ones a large request needed go back to the system at its
 * end, whatever malloc would keep.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "arena.h"

#define ALIGN		alignof(max_align_t)
#define ROUND(n)	(((n) + ALIGN - 1) & ~(ALIGN - 1))

struct arena_chunk {
	struct arena_chunk	*next;		/* the one before */
	size_t			 size;		/* mapped, this header included */
};

/* Where a chunk's blocks begin. */
#define DATA(c)		((char *)(c) + ROUND(sizeof(struct arena_chunk)))

void
arena_init(struct arena *a)
{
	a->chunks = NULL;
	a->ptr = a->end = a->last = NULL;
	a->on = 0;
}

/*
 * A new chunk for at least need bytes, the newest: the first one
 * ARENA_FIRST, each next twice the one before, up to ARENA_CHUNK_MAX.
 * 0, or -1 when none can be mapped.
 */
static int
grow(struct arena *a, size_t need)
{
	struct arena_chunk	*c;
	size_t			 size;
	void			*p;

	size = a->chunks == NULL ? ARENA_FIRST : a->chunks->size * 2;
	if (size > ARENA_CHUNK_MAX)
		size = ARENA_CHUNK_MAX;
	if (size < ROUND(sizeof(*c)) + need)
		return -1;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	c = p;
	c->size = size;
	c->next = a->chunks;
	a->chunks = c;
	a->ptr = DATA(c);
	a->end = (char *)c + size;
	a->last = NULL;
	return 0;
}

void *
arena_alloc(struct arena *a, size_t size)
{
	size_t	 n;
	char	*p;

	if (!a->on || size > ARENA_BIG)
		return malloc(size);
	n = size == 0 ? ALIGN : ROUND(size);
	if ((size_t)(a->end - a->ptr) < n && grow(a, n) == -1)
		return malloc(size);
	p = a->ptr;
	a->ptr += n;
	a->last = p;
	return p;
}

int
arena_owns(const struct arena *a, const void *p)
{
	const struct arena_chunk	*c;
	uintptr_t			 u = (uintptr_t)p;

	for (c = a->chunks; c != NULL; c = c->next)
		if (u >= (uintptr_t)DATA(c) && u < (uintptr_t)c + c->size)
			return 1;
	return 0;
}

void
arena_free(struct arena *a, void *p)
{
	if (p == NULL)
		return;
	/* Freed right after it was made (a key, a lexer's token): reused. */
	if (p == a->last) {
		a->ptr = a->last;
		a->last = NULL;
		return;
	}
	if (!arena_owns(a, p))
		free(p);
}

void
arena_begin(struct arena *a)
{
	a->on = 1;
}

void
arena_end(struct arena *a)
{
	struct arena_chunk	*c;

	a->on = 0;
	a->last = NULL;
	/* The oldest, the first one, stays; newer ones go. */
	while (a->chunks != NULL && a->chunks->next != NULL) {
		c = a->chunks;
		a->chunks = c->next;
		munmap(c, c->size);
	}
	if ((c = a->chunks) != NULL) {
		a->ptr = DATA(c);
		a->end = (char *)c + c->size;
	}
}

void
arena_release(struct arena *a)
{
	struct arena_chunk	*c;

	while ((c = a->chunks) != NULL) {
		a->chunks = c->next;
		munmap(c, c->size);
	}
	arena_init(a);
}

size_t
arena_mapped(const struct arena *a)
{
	const struct arena_chunk	*c;
	size_t				 n = 0;

	for (c = a->chunks; c != NULL; c = c->next)
		n += c->size;
	return n;
}

/*
 * arena.h: the allocator a msgspool-fcgi worker gives jansson
 * (json_set_alloc_funcs) for the time of a request (msgspool-fcgi(8),
 * Memory).  A request's JSON values are many small blocks, all freed by
 * its end: in a request, a small allocation is a bump of a pointer in
 * the worker's chunks, a free does nothing (but of the last allocation,
 * whose room is taken back), and the request's end gives all of it back
 * at once, keeping the first chunk for the next and unmapping the
 * others, so that a large request leaves no more memory behind than a
 * small one.
 *
 * What the arena never holds, so that nothing that outlives a request
 * can be in it: an allocation outside a request, or of more than
 * ARENA_BIG bytes (a body's long string), is malloc's; and a free of a
 * block that is not the arena's goes to free().  The arena holds no
 * block from one request to the next: whatever a request allocates
 * through it must be freed, or dropped, by the request's end.
 */
#ifndef ARENA_H
#define ARENA_H

#include <stddef.h>

/* Larger allocations are malloc's, in a request too. */
#define ARENA_BIG		((size_t)16 * 1024)
/*
 * The first chunk, kept between requests; each other one twice the size
 * of the one before, up to ARENA_CHUNK_MAX.
 */
#define ARENA_FIRST		((size_t)64 * 1024)
#define ARENA_CHUNK_MAX		((size_t)4 * 1024 * 1024)

struct arena_chunk;

struct arena {
	struct arena_chunk	*chunks;	/* newest first */
	char			*ptr;		/* the newest one's free room */
	char			*end;
	char			*last;		/* the last allocation, or NULL */
	int			 on;		/* in a request */
};

/* An arena with no chunk yet, off (every allocation malloc's). */
void	 arena_init(struct arena *);

/*
 * size bytes aligned for any type: in the arena while it is on and size
 * is at most ARENA_BIG, else (or when no chunk can be mapped) malloc's.
 * NULL only when out of memory.
 */
void	*arena_alloc(struct arena *, size_t size);

/*
 * Free p (NULL: nothing): the arena's last allocation gives its room
 * back, another block of the arena stays until arena_end, and any other
 * pointer is free()d.
 */
void	 arena_free(struct arena *, void *p);

/* Whether p points into one of the arena's chunks. */
int	 arena_owns(const struct arena *, const void *p);

/* A request begins: small allocations go to the arena. */
void	 arena_begin(struct arena *);

/*
 * The request has ended: every block of the arena is free, the first
 * chunk is kept (emptied), the others are unmapped, and allocations go
 * to malloc again.
 */
void	 arena_end(struct arena *);

/* Unmap every chunk (the arena stays usable, as after arena_init). */
void	 arena_release(struct arena *);

/* Bytes of the chunks mapped now (headers included). */
size_t	 arena_mapped(const struct arena *);

#endif

/*
 * webhook_seen.c: the names of events/ whose client a scan of
 * webhook.c knows from the last one, sorted by name, so that a scan
 * passes over a client's backlog without opening its events.
 */
#include <stdlib.h>
#include <string.h>

#include "daemon/webhook_impl.h"

/* Forget the names of a scan, but those the next one took. */
void
webhook_seen_free(struct seen *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (!v[i].moved)
			free(v[i].name);
	free(v);
}

static int
seen_cmp(const void *a, const void *b)
{
	return strcmp(((const struct seen *)a)->name,
	    ((const struct seen *)b)->name);
}

/* The client of events/name by the last scan, or NULL. */
struct seen *
webhook_seen_find(const struct webhooks *w, const char *name)
{
	struct seen	key = { .name = (char *)name };

	if (w->nseen == 0)
		return NULL;
	return bsearch(&key, w->seen, w->nseen, sizeof(key), seen_cmp);
}

/* Remember the client of events/name for the next scan. */
void
webhook_seen_keep(struct webhooks *w, const char *name, size_t client)
{
	struct seen	*v, *old;
	char		*copy;
	size_t		 cap;

	if (w->nseen_next == w->seen_cap) {
		cap = w->seen_cap ? w->seen_cap * 2 : 64;
		if ((v = reallocarray(w->seen_next, cap, sizeof(*v))) == NULL)
			return;		/* read again next time */
		w->seen_next = v;
		w->seen_cap = cap;
	}
	/* The last scan's copy of the name moves over. */
	old = webhook_seen_find(w, name);
	if (old != NULL && !old->moved) {
		copy = old->name;
		old->moved = 1;
	} else if ((copy = strdup(name)) == NULL)
		return;
	v = &w->seen_next[w->nseen_next++];
	v->name = copy;
	v->client = client;
	v->moved = 0;
}

/* The scan ended: the next knows what it saw (in name order). */
void
webhook_seen_swap(struct webhooks *w)
{
	webhook_seen_free(w->seen, w->nseen);
	w->seen = w->seen_next;
	w->nseen = w->nseen_next;
	w->seen_next = NULL;
	w->nseen_next = w->seen_cap = 0;
}

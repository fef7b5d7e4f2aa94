/*
 * listutil.h: what the tests of the clients' lists share (listutil.c).
 */
#ifndef LISTUTIL_H
#define LISTUTIL_H

#include <jansson.h>

#include "spool/list.h"
#include "testutil.h"

/* Every filter off, limit 50. */
void		 filter_init(struct list_filter *);
/* A message of client to "to" (reference ref, or none) queued into new/
 * through the commit engine; its id into id. */
void		 queue(struct tu_spool *, const char *client, const char *to,
		    const char *ref, char *id);
/* A page as a JSON array; *next its cursor ("" at the end). */
json_t		*page(struct tu_spool *, const char *client,
		    const struct list_filter *, char *next);
/* strcmp for qsort over an array of ids. */
int		 idcmp(const void *, const void *);
/* The id of entry i of a page. */
const char	*id_at(json_t *, size_t i);
/* Lists built: what msgspoold makes of an empty spool. */
void		 build(struct tu_spool *);

#endif

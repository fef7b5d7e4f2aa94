/*
 * suppress_impl.h: what suppress.c and suppress_list.c share, and
 * nothing else sees.
 */
#ifndef SUPPRESS_IMPL_H
#define SUPPRESS_IMPL_H

#include <jansson.h>

#include "base/channel.h"

/* A suppression's "id" (and a page's cursor): 16 + 8 hex digits. */
#define SUPPRESS_KEY_LEN	24

/* Whether s is a suppression's "id": SUPPRESS_KEY_LEN upper-case hex. */
int	 suppress_key_valid(const char *s);

/*
 * Read the suppression open on fd (closed here), one of channel ch (and
 * of address addr when it is not NULL): its public object, its "id"
 * into id when id is not NULL (SUPPRESS_KEY_LEN + 1 bytes); or NULL with
 * errno set (EINVAL when it is not one; the reason logged naming what).
 */
json_t	*suppress_read(int fd, enum channel ch, const char *addr,
	    const char *what, char *id);

#endif

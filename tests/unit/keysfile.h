/*
 * keysfile.h: a keys file in a scratch directory as a cmocka fixture, and
 * lookups of its keys (keysfile.c).
 */
#ifndef MSGSPOOL_KEYSFILE_H
#define MSGSPOOL_KEYSFILE_H

#include "content/keys.h"
#include "testutil.h"

struct fixture {
	char	dir[TU_DIR_SIZE];	/* first: see testutil.h */
	char	keys[128];
};

/* The fixture: the scratch directory, keys the path of a keys file in it. */
int	 keysfile_setup(void **state);

/* keys_lookup of key in the keys file at path, c cleared to garbage first. */
enum keys_result
	 lookup(const char *path, const char *key, struct client *c);

/* key is an enabled key of client id with scopes. */
void	 assert_key(const struct fixture *f, const char *key, const char *id,
	    unsigned scopes);

#endif

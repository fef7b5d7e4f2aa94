/*
 * keysfile.c: a keys file in a scratch directory as a cmocka fixture, and
 * lookups of its keys, for the tests of lib/content/keys.c (msgspool.conf(5),
 * KEYS FILE).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "content/keys.h"
#include "keysfile.h"
#include "testutil.h"

int
keysfile_setup(void **state)
{
	struct fixture	*f;

	if ((f = tu_fixture_new(sizeof(*f), "keys")) == NULL)
		return -1;
	snprintf(f->keys, sizeof(f->keys), "%s/keys", f->dir);
	*state = f;
	return 0;
}

enum keys_result
lookup(const char *path, const char *key, struct client *c)
{
	memset(c, 0x5a, sizeof(*c));
	return keys_lookup(path, key, strlen(key), c);
}

/* key is an enabled key of client id with scopes. */
void
assert_key(const struct fixture *f, const char *key, const char *id,
    unsigned scopes)
{
	struct client	c;

	assert_int_equal(lookup(f->keys, key, &c), KEYS_OK);
	assert_string_equal(c.id, id);
	assert_int_equal(c.scopes, scopes);
	assert_int_equal(c.disabled, 0);
}

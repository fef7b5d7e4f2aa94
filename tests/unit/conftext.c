/*
 * conftext.c: configs for the tests of lib/base/config.c (msgspool.conf(5)):
 * a scratch directory as the fixture, a config written to it, a config
 * parsed from text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "base/msgspool.h"
#include "conftext.h"
#include "testutil.h"

/* The fixture is the scratch directory alone. */
int
setup_tmp(void **state)
{
	if ((*state = tu_fixture_new(TU_DIR_SIZE, "config")) == NULL)
		return -1;
	return 0;
}

/* Write text to dir/name; that path in path. */
void
write_file(const char *dir, const char *name, const char *text, char *path,
    size_t pathlen)
{
	snprintf(path, pathlen, "%s/%s", dir, name);
	tu_write_text(path, text);
}

/* Parse text as CONF_PATH; the test fails if it does not parse. */
struct config *
parse_ok(const char *text)
{
	struct config	*c;
	char		 err[256] = "";

	c = config_parse(CONF_PATH, text, strlen(text), err, sizeof(err));
	if (c == NULL)
		fail_msg("config_parse failed: %s", err);
	return c;
}

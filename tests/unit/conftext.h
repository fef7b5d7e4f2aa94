/*
 * conftext.h: configs for the tests of lib/base/config.c (conftext.c).
 */
#ifndef MSGSPOOL_CONFTEXT_H
#define MSGSPOOL_CONFTEXT_H

#include <stddef.h>

#include "base/config.h"

#define CONF_PATH	"/etc/msgspool/msgspool.conf"

/* The fixture is the scratch directory alone. */
int	 setup_tmp(void **state);

/* Write text to dir/name; that path in path. */
void	 write_file(const char *dir, const char *name, const char *text,
	    char *path, size_t pathlen);

/* Parse text as CONF_PATH; the test fails if it does not parse. */
struct config	*parse_ok(const char *text);

#endif

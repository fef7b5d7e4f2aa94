/*
 * fuzz_config: msgspool.conf through config_load (lib/base/config.c), the way
 * every program reads it: the input is written to a file first.  Then
 * every getter runs over what was parsed.  Besides memory errors:
 * config_load and config_parse agree, each [section] is listed once and
 * known, and values come back trimmed, without a comment.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "fuzzutil.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	path[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	dir[FUZZ_PATH_MAX];

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "config");
	fuzz_path(path, "%s/msgspool.conf", dir);
	return 0;
}

/* The keys the programs ask for, in each section they use. */
static const char *const keys[] = {
	"spool", "keys", "templates", "max-body", "max-email-body",
	"max-batch", "max-attachment", "max-message-attachments", "max-age",
	"concurrency", "provider", "dir", "url", "header", "auth-token",
	"account-sid", "from", "timeout", "retry", NULL
};

static void
check_value(const char *v)
{
	size_t	n = strlen(v);

	if (n > 0 && (strchr(" \t\r\n", v[0]) || strchr(" \t\r\n",
	    v[n - 1])))
		fuzz_fail("value '%s' is not trimmed", v);
	if (strstr(v, " #") != NULL || strstr(v, "\t#") != NULL)
		fuzz_fail("value '%s' keeps a comment", v);
}

static void
getters(const struct config *c, const char *section)
{
	struct limits	 l;
	const char	*v;
	char		*p, err[256];
	size_t		 i, n, sz;
	long		 secs;

	for (i = 0; keys[i] != NULL; i++) {
		if ((v = config_get(c, section, keys[i])) != NULL)
			check_value(v);
		for (n = 0; (v = config_get_n(c, section, keys[i], n)) != NULL;
		    n++)
			check_value(v);
		if (n > 0 && strcmp(config_get_n(c, section, keys[i], n - 1),
		    config_get(c, section, keys[i])) != 0)
			fuzz_fail("config_get is not the last value");
		p = config_path(c, section, keys[i], "default");
		if (p == NULL)
			fuzz_fail("config_path with a default gave NULL");
		free(p);
		config_size(c, section, keys[i], 7, &sz);
		config_seconds(c, section, keys[i], 7, &secs);
	}
	if (section == NULL)
		config_limits(c, &l, err, sizeof(err));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config	*c, *m;
	const char	*s, *t;
	char		 err[256], err2[256];
	size_t		 i, j;

	fuzz_write_file(path, data, size);
	c = config_load(path, err, sizeof(err));
	m = config_parse(path, (const char *)data, size, err2, sizeof(err2));
	if ((c == NULL) != (m == NULL))
		fuzz_fail("config_load %s, config_parse %s",
		    c ? "takes it" : err, m ? "takes it" : err2);
	if (c == NULL) {
		if (strcmp(err, err2) != 0)
			fuzz_fail("reasons differ: '%s' and '%s'", err, err2);
		return 0;
	}
	if (strcmp(config_file(c), path) != 0)
		fuzz_fail("config_file is '%s'", config_file(c));
	getters(c, NULL);
	getters(c, "");
	for (i = 0; (s = config_section(c, i)) != NULL; i++) {
		if (!config_has_section(c, s))
			fuzz_fail("section '%s' listed but not had", s);
		for (j = 0; j < i; j++)
			if (strcmp(config_section(c, j), s) == 0)
				fuzz_fail("section '%s' listed twice", s);
		getters(c, s);
		if ((t = config_section(m, i)) == NULL || strcmp(s, t) != 0)
			fuzz_fail("sections differ between load and parse");
	}
	config_free(c);
	config_free(m);
	return 0;
}

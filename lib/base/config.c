/*
 * config.c: the msgspool.conf parser, and the values it gives (paths,
 * sizes, seconds, limits); its secrets are config_secret.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "base/mime.h"
#include "base/msgspool.h"
#include "base/util.h"

struct entry {
	char	*section;
	char	*key;
	char	*value;
};

struct config {
	char		*path;
	char		*dir;		/* for relative paths */
	struct entry	*entries;
	size_t		 n;
	char		**sections;
	size_t		 nsections;
};

/* Largest config file we accept; it is hand-written text. */
#define CONFIG_MAX	(1024 * 1024)

const char *
config_default_path(char *const *envp)
{
	size_t	len = strlen("MSGSPOOL_CONFIG=");

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, "MSGSPOOL_CONFIG=", len) == 0 &&
		    (*envp)[len] != '\0')
			return *envp + len;
	return MSGSPOOL_DEFAULT_CONFIG;
}

void
config_free(struct config *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		free(c->entries[i].section);
		free(c->entries[i].key);
		free(c->entries[i].value);
	}
	for (i = 0; i < c->nsections; i++)
		free(c->sections[i]);
	free(c->sections);
	free(c->entries);
	free(c->path);
	free(c->dir);
	free(c);
}

static char *
trim(char *s, char *end)
{
	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

static int
add_entry(struct config *c, const char *section, const char *key,
    const char *value)
{
	struct entry	*e;

	e = reallocarray(c->entries, c->n + 1, sizeof(*e));
	if (e == NULL)
		return -1;
	c->entries = e;
	e = &c->entries[c->n];
	e->section = strdup(section);
	e->key = strdup(key);
	e->value = strdup(value);
	if (e->section == NULL || e->key == NULL || e->value == NULL) {
		free(e->section);
		free(e->key);
		free(e->value);
		return -1;
	}
	c->n++;
	return 0;
}

static int
add_section(struct config *c, const char *name)
{
	char	**s;

	if (config_has_section(c, name))
		return 0;
	s = reallocarray(c->sections, c->nsections + 1, sizeof(*s));
	if (s == NULL)
		return -1;
	c->sections = s;
	if ((s[c->nsections] = strdup(name)) == NULL)
		return -1;
	c->nsections++;
	return 0;
}

struct config *
config_parse(const char *path, const char *text, size_t len, char *err,
    size_t errlen)
{
	struct config	*c;
	char		*copy = NULL, *line, *next, *end, *eq, *key, *val, *hash;
	char		 section[128] = "";
	const char	*slash;
	size_t		 lineno = 0;

	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->path = strdup(path)) == NULL ||
	    (copy = malloc(len + 1)) == NULL)
		goto nomem;
	slash = strrchr(path, '/');
	c->dir = slash == NULL ? strdup(".") :
	    strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (c->dir == NULL)
		goto nomem;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (memchr(text, '\0', len) != NULL) {
		util_seterr(err, errlen, "%s: contains a NUL byte", path);
		goto fail;
	}

	for (line = copy; line != NULL; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		end = line + strlen(line);
		line = trim(line, end);
		if (*line == '\0' || *line == '#')
			continue;
		if (*line == '[') {
			end = line + strlen(line);
			if (end[-1] != ']' || end - line < 3 ||
			    (size_t)(end - line) > sizeof(section)) {
				util_seterr(err, errlen,
				    "%s:%zu: bad section header", path, lineno);
				goto fail;
			}
			key = trim(line + 1, end - 1);
			if (*key == '\0' || strpbrk(key, " \t[]") != NULL) {
				util_seterr(err, errlen,
				    "%s:%zu: bad section name", path, lineno);
				goto fail;
			}
			snprintf(section, sizeof(section), "%s", key);
			if (add_section(c, section) == -1)
				goto nomem;
			continue;
		}
		if ((eq = strchr(line, '=')) == NULL) {
			util_seterr(err, errlen, "%s:%zu: expected 'key = value'",
			    path, lineno);
			goto fail;
		}
		key = trim(line, eq);
		/* A '#' after blank space starts a comment, as on its own line. */
		for (hash = eq + 1; (hash = strchr(hash, '#')) != NULL; hash++)
			if (hash[-1] == ' ' || hash[-1] == '\t') {
				*hash = '\0';
				break;
			}
		val = trim(eq + 1, eq + 1 + strlen(eq + 1));
		if (*key == '\0' || strpbrk(key, " \t") != NULL) {
			util_seterr(err, errlen, "%s:%zu: bad key", path, lineno);
			goto fail;
		}
		if (add_entry(c, section, key, val) == -1)
			goto nomem;
	}
	free(copy);
	return c;
nomem:
	util_seterr(err, errlen, "%s: out of memory", path);
fail:
	free(copy);
	config_free(c);
	return NULL;
}

struct config *
config_load(const char *path, char *err, size_t errlen)
{
	struct config	*c;
	struct stat	 st;
	char		*buf;
	size_t		 len;
	int		 fd;

	/* A FIFO or device named here never blocks the reader. */
	if ((fd = util_open_regular_st(AT_FDCWD, path, 0, &st)) == -1) {
		util_seterr(err, errlen, "%s: %s", path, errno == EINVAL ?
		    "not a regular file" : strerror(errno));
		return NULL;
	}
	if (util_read_sized(fd, st.st_size, CONFIG_MAX, &buf, &len) == -1) {
		util_seterr(err, errlen, "%s: %s", path, errno == EFBIG ?
		    "not a regular file of at most 1 MiB" : strerror(errno));
		close(fd);
		return NULL;
	}
	close(fd);
	c = config_parse(path, buf, len, err, errlen);
	free(buf);
	return c;
}

const char *
config_get_n(const struct config *c, const char *section, const char *key,
    size_t n)
{
	size_t	i;

	if (section == NULL)
		section = "";
	for (i = 0; i < c->n; i++)
		if (strcmp(c->entries[i].section, section) == 0 &&
		    strcmp(c->entries[i].key, key) == 0 && n-- == 0)
			return c->entries[i].value;
	return NULL;
}

const char *
config_get(const struct config *c, const char *section, const char *key)
{
	const char	*last = NULL;
	size_t		 i;

	if (section == NULL)
		section = "";
	for (i = 0; i < c->n; i++)
		if (strcmp(c->entries[i].section, section) == 0 &&
		    strcmp(c->entries[i].key, key) == 0)
			last = c->entries[i].value;
	return last;
}

int
config_has_section(const struct config *c, const char *section)
{
	size_t	i;

	for (i = 0; i < c->nsections; i++)
		if (strcmp(c->sections[i], section) == 0)
			return 1;
	return 0;
}

char *
config_path(const struct config *c, const char *section, const char *key,
    const char *def)
{
	const char	*v;
	char		*out;

	if ((v = config_get(c, section, key)) == NULL || *v == '\0')
		v = def;
	if (v == NULL)
		return NULL;
	if (*v == '/')
		return strdup(v);
	if (asprintf(&out, "%s/%s", c->dir, v) == -1)
		return NULL;
	return out;
}

int
config_size(const struct config *c, const char *section, const char *key,
    size_t def, size_t *out)
{
	const char		*v;
	char			*end;
	unsigned long long	 n, mul = 1;

	if ((v = config_get(c, section, key)) == NULL) {
		*out = def;
		return 0;
	}
	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 'k': case 'K':
		mul = 1024ULL;
		end++;
		break;
	case 'm': case 'M':
		mul = 1024ULL * 1024;
		end++;
		break;
	case 'g': case 'G':
		mul = 1024ULL * 1024 * 1024;
		end++;
		break;
	default:
		return -1;
	}
	if (*end != '\0' || n > SIZE_MAX / mul)
		return -1;
	*out = (size_t)(n * mul);
	return 0;
}

int
config_seconds(const struct config *c, const char *section, const char *key,
    long def, long *out)
{
	const char	*v;
	char		*end;
	long		 n, mul = 1;

	if ((v = config_get(c, section, key)) == NULL) {
		*out = def;
		return 0;
	}
	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0)
		return -1;
	switch (*end) {
	case '\0':
		break;
	case 's':
		end++;
		break;
	case 'm':
		mul = 60;
		end++;
		/* "2min" as well as "2m". */
		if (strncmp(end, "in", 2) == 0)
			end += 2;
		break;
	case 'h':
		mul = 3600;
		end++;
		break;
	case 'd':
		mul = 86400;
		end++;
		break;
	default:
		return -1;
	}
	if (*end != '\0' || n > LONG_MAX / mul)
		return -1;
	*out = n * mul;
	return 0;
}

int
config_limits(const struct config *c, struct limits *l, char *err,
    size_t errlen)
{
	static const struct {
		const char	*key;
		size_t		 def;
		size_t		 off;
	} keys[] = {
		{ "max-body", 1024 * 1024, offsetof(struct limits, body) },
		{ "max-email-body", 32 * 1024 * 1024,
		    offsetof(struct limits, body_email) },
		{ "max-batch", 1000, offsetof(struct limits, batch) },
		{ "max-attachment", 10 * 1024 * 1024,
		    offsetof(struct limits, attachment) },
		{ "max-message-attachments", 25 * 1024 * 1024,
		    offsetof(struct limits, attachments) },
	};
	size_t	i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (config_size(c, NULL, keys[i].key, keys[i].def,
		    (size_t *)((char *)l + keys[i].off)) == -1) {
			util_seterr(err, errlen, "%s: %s: not a size",
			    c->path, keys[i].key);
			return -1;
		}
	return 0;
}

const char *
config_file(const struct config *c)
{
	return c->path;
}

const char *
config_section(const struct config *c, size_t n)
{
	return n < c->nsections ? c->sections[n] : NULL;
}

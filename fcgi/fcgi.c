/*
 * fcgi.c: the parts of msgspool-fcgi that are functions of their input:
 * the route of a request's path, the CGI environment a route's program
 * would get, and the config and keys file read once and re-read when
 * they change.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "base/util.h"
#include "content/keys.h"
#include "endpoints.h"
#include "http/cgi.h"

#include "fcgi.h"

/*
 * The exact routes; /messages/{id} and /receipts/{provider} below, and
 * /suppressions/{channel}/{address}, whose address may hold a '/'.
 */
#define SUPPRESSIONS_PREFIX	"/suppressions/"
#define CONSOLE_PREFIX		"/console/"

static const struct route {
	const char		*path;
	const struct endpoint	*ep;
} routes[] = {
	{ "/ping",			&ep_ping },
	{ "/templates",			&ep_templates },
	{ "/ott/v1/deliver",		&ep_ott_deliver },
	{ "/sms/v1/deliver",		&ep_sms_deliver },
	{ "/sms/v1/deliver/batch",	&ep_sms_batch },
	{ "/voice/v1/deliver",		&ep_voice_deliver },
	{ "/deliver",			&ep_email_deliver },
	{ "/email/v1/deliver",		&ep_email_deliver },
	{ "/email/v1/attachments",	&ep_attachments },
	{ "/suppressions",		&ep_suppressions },
	{ "/messages",			&ep_messages },
	{ "/metrics",			&ep_metrics },
	{ "/console",			&ep_console },
};

static const struct route prefixes[] = {
	{ "/messages/",			&ep_messages },
	{ "/receipts/",			&ep_receipts },
	{ "/unsubscribe/",		&ep_unsubscribe },
};

const struct endpoint *
fcgi_route(const char *path, const char **path_info)
{
	const char	*p;
	size_t		 len, plen, i;

	*path_info = NULL;
	if (path == NULL)
		return NULL;
	len = strlen(path);
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(path, routes[i].path) == 0)
			return routes[i].ep;
	/* /suppressions/{channel}/{address}: the address is the rest. */
	plen = strlen(SUPPRESSIONS_PREFIX);
	if (len > plen && strncmp(path, SUPPRESSIONS_PREFIX, plen) == 0 &&
	    (p = strchr(path + plen, '/')) != NULL && p > path + plen &&
	    p[1] != '\0') {
		*path_info = path + plen - 1;
		return &ep_suppressions;
	}
	/* /console/PAGE...: the pages of the console, any depth. */
	plen = strlen(CONSOLE_PREFIX);
	if (len > plen && strncmp(path, CONSOLE_PREFIX, plen) == 0) {
		*path_info = path + plen - 1;
		return &ep_console;
	}
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		plen = strlen(prefixes[i].path);
		/* One segment after the prefix, as the servers map it. */
		if (len > plen && strncmp(path, prefixes[i].path, plen) == 0 &&
		    strchr(path + plen, '/') == NULL) {
			/* "/ID": what the route gives a CGI as PATH_INFO. */
			*path_info = path + plen - 1;
			return prefixes[i].ep;
		}
	}
	return NULL;
}

static void
file_free(struct fcgi_file *f)
{
	free(f->path);
	free(f->text);
	memset(f, 0, sizeof(*f));
}

static void
config_drop(struct fcgi_cache *c)
{
	config_free(c->cfg);
	free(c->path);
	c->cfg = NULL;
	c->path = NULL;
}

void
fcgi_cache_free(struct fcgi_cache *c)
{
	config_drop(c);
	file_free(&c->keys);
	tmpl_cache_free(&c->tmpls);
	spool_keep_free(&c->spool);
	spool_seen_release(&c->seen);
	memset(c, 0, sizeof(*c));
}

/* A keys file of more than this is refused (EFBIG): about 500,000 keys. */
#define FCGI_FILE_MAX	((size_t)64 * 1024 * 1024)

/*
 * The text of the regular file at path in f, read again unless a stat
 * finds it unchanged.  0, or -1 with errno set (EINVAL: not a regular
 * file) and nothing kept.
 */
static int
file_get(struct fcgi_file *f, const char *path, unsigned long *reads)
{
	struct stat	 st;
	char		*text;
	size_t		 len;
	int		 fd, e;

	if (stat(path, &st) == -1)
		goto fail;
	if (f->path != NULL && strcmp(f->path, path) == 0 &&
	    util_same_file(&f->st, &st))
		return 0;
	file_free(f);
	if ((fd = util_open_regular(AT_FDCWD, path, 0)) == -1)
		goto fail;
	if (fstat(fd, &st) == -1 ||
	    util_read_all(fd, FCGI_FILE_MAX, &text, &len) == -1) {
		e = errno;
		close(fd);
		errno = e;
		goto fail;
	}
	close(fd);
	if ((f->path = strdup(path)) == NULL) {
		free(text);
		errno = ENOMEM;
		return -1;
	}
	f->text = text;
	f->len = len;
	f->st = st;
	f->gen = ++*reads;
	return 0;
fail:
	file_free(f);
	return -1;
}

enum keys_result
fcgi_cache_keys(struct fcgi_cache *c, const char *path, const char *key,
    size_t len, struct client *out)
{
	char		 hash[KEY_HASH_HEX + 1];
	enum keys_result rc;

	if (key == NULL || len == 0)
		return KEYS_UNKNOWN;
	if (file_get(&c->keys, path, &c->keys_read) == -1) {
		/* As keys_lookup says it. */
		log_err("keys: %s: %s", path, errno == EINVAL ?
		    "not a regular file" : strerror(errno));
		return KEYS_ERROR;
	}
	/*
	 * A client sends its key again and again: its line is looked for
	 * once in a text.  Only the key's hash is kept, and compared.
	 */
	keys_hash_hex(key, len, hash);
	if (c->key.gen == c->keys.gen && strcmp(c->key.hash, hash) == 0) {
		if (c->key.rc != KEYS_UNKNOWN)
			*out = c->key.client;
		return c->key.rc;
	}
	rc = keys_lookup_hash(path, c->keys.text, c->keys.len, hash, out);
	if (rc != KEYS_ERROR) {
		c->key.gen = c->keys.gen;
		memcpy(c->key.hash, hash, sizeof(hash));
		c->key.rc = rc;
		if (rc != KEYS_UNKNOWN)
			c->key.client = *out;
	}
	return rc;
}

const struct config *
fcgi_cache_config(struct fcgi_cache *c, const char *path, char *err,
    size_t errlen)
{
	struct config	*cfg;
	struct stat	 st;

	if (stat(path, &st) == -1) {
		/* As config_load says it. */
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		config_drop(c);
		return NULL;
	}
	if (c->cfg != NULL && strcmp(c->path, path) == 0 &&
	    util_same_file(&c->st, &st))
		return c->cfg;
	config_drop(c);
	if ((cfg = config_load(path, err, errlen)) == NULL)
		return NULL;
	if ((c->path = strdup(path)) == NULL) {
		config_free(cfg);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->cfg = cfg;
	c->st = st;
	return cfg;
}

/*
 * "PATH_INFO=" and path_info decoded, as a web server decodes the
 * PATH_INFO it gives a CGI (RFC 3875 4.1.5), but for "%00", which no
 * string can hold and stays as it came.  malloc'd; NULL out of memory.
 */
static char *
path_info_var(const char *path_info)
{
	char	*var, *p;
	int	 c;

	if ((var = malloc(strlen("PATH_INFO=") + strlen(path_info) + 1)) ==
	    NULL)
		return NULL;
	p = stpcpy(var, "PATH_INFO=");
	for (; *path_info != '\0'; path_info++) {
		if ((c = util_escape_at(path_info)) > 0) {
			*p++ = (char)c;
			path_info += 2;
		} else
			*p++ = *path_info;
	}
	*p = '\0';
	return var;
}

/*
 * The environment a route's program gets as a CGI: the request's
 * parameters, with PATH_INFO "/ID" for the routes with a parameter (and
 * none for the others), and MSGSPOOL_CONFIG the process's own when it
 * has one (-c or its environment).  Only the two new strings and the
 * array are allocated (*extra, freed with the array).
 */
char **
fcgi_env(char *const *params, const char *path_info, const char *config,
    char *extra[2])
{
	char	**env;
	size_t	  n = 0, i, j = 0;

	extra[0] = extra[1] = NULL;
	while (params != NULL && params[n] != NULL)
		n++;
	if ((env = calloc(n + 3, sizeof(*env))) == NULL)
		return NULL;
	if ((path_info != NULL &&
	    (extra[0] = path_info_var(path_info)) == NULL) ||
	    (config != NULL &&
	    asprintf(&extra[1], "MSGSPOOL_CONFIG=%s", config) == -1)) {
		free(extra[0]);
		extra[0] = NULL;
		free(env);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (strncmp(params[i], "PATH_INFO=", 10) == 0 ||
		    (config != NULL &&
		    strncmp(params[i], "MSGSPOOL_CONFIG=", 16) == 0))
			continue;
		env[j++] = params[i];
	}
	if (extra[0] != NULL)
		env[j++] = extra[0];
	if (extra[1] != NULL)
		env[j++] = extra[1];
	env[j] = NULL;
	return env;
}


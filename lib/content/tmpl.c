/*
 * tmpl.c: template files.  Ids are checked before a path is built, so a
 * request can never name a file outside its client's directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/mime.h"
#include "base/rfc3339.h"
#include "base/util.h"
#include "base/valid.h"
#include "content/html.h"
#include "content/tmpl.h"

#define TMPL_FILE_MAX	(4 * 1024 * 1024)
#define TMPL_SUFFIX	".tmpl"

static const char *const kinds[TMPL__MAX] = { "email", "ott" };

int
tmpl_id_valid(const char *id)
{
	return id != NULL && valid_ident(id, strlen(id)) == NULL;
}

struct tmpl *
tmpl_ref(struct tmpl *t)
{
	if (t != NULL)
		t->refs++;
	return t;
}

void
tmpl_free(struct tmpl *t)
{
	if (t == NULL || --t->refs > 0)
		return;
	free(t->id);
	free(t->name);
	free(t->subject);
	free(t->from);
	free(t->tags);
	free(t->created);
	free(t->language);
	free(t->provider_template);
	free(t->body);
	free(t);
}

/* Store a header value, replacing an earlier one. */
static int
set(char **dst, const char *v, size_t len)
{
	char	*s;

	if ((s = strndup(v, len)) == NULL)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

/* The highest N of the {{N}} markers of a body, 0 when it has none. */
static long
highest_marker(const char *s, size_t len)
{
	const char	*p = s, *end = s + len, *open;
	char		*stop;
	long		 n, high = 0;

	while ((open = memmem(p, (size_t)(end - p), "{{", 2)) != NULL) {
		p = open + 2;
		while (p < end && *p == ' ')
			p++;
		if (p >= end || *p < '1' || *p > '9')
			continue;
		n = strtol(p, &stop, 10);
		while (stop < end && *stop == ' ')
			stop++;
		if (stop + 1 < end && stop[0] == '}' && stop[1] == '}' &&
		    n > high && n <= 100)
			high = n;
	}
	return high;
}

struct tmpl *
tmpl_parse(const char *id, const char *text, size_t len, long long mtime,
    char *err, size_t errlen)
{
	struct tmpl	*t;
	const char	*p = text, *end = text + len, *eol, *colon, *v;
	size_t		 lineno = 0, vlen, nlen;
	char		*num, *numend, created[RFC3339_LEN];
	time_t		 when;

	if ((t = calloc(1, sizeof(*t))) != NULL)
		t->refs = 1;
	if (t == NULL || (t->id = strdup(id)) ==
	    NULL)
		goto nomem;
	t->parameters = -1;
	if (valid_utf8(text, len) < 0) {
		util_seterr(err, errlen, "%s: not UTF-8 text", id);
		goto fail;
	}
	for (;;) {
		lineno++;
		if (p >= end) {
			util_seterr(err, errlen, "%s: no blank line after the "
			    "headers", id);
			goto fail;
		}
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			eol = end;
		nlen = (size_t)(eol - p);
		if (nlen > 0 && p[nlen - 1] == '\r')
			nlen--;
		if (nlen == 0) {
			p = eol < end ? eol + 1 : end;
			break;
		}
		if ((colon = memchr(p, ':', nlen)) == NULL) {
			util_seterr(err, errlen, "%s:%zu: expected 'Name: value'",
			    id, lineno);
			goto fail;
		}
		v = colon + 1;
		while (v < p + nlen && (*v == ' ' || *v == '\t'))
			v++;
		vlen = (size_t)(p + nlen - v);
		while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
			vlen--;
#define IS(h)	((size_t)(colon - p) == strlen(h) && \
		    strncasecmp(p, h, strlen(h)) == 0)
		if ((IS("Name") && set(&t->name, v, vlen)) ||
		    (IS("Subject") && set(&t->subject, v, vlen)) ||
		    (IS("From") && set(&t->from, v, vlen)) ||
		    (IS("Tags") && set(&t->tags, v, vlen)) ||
		    (IS("Created") && set(&t->created, v, vlen)) ||
		    (IS("Language") && set(&t->language, v, vlen)) ||
		    (IS("Provider-Template") &&
		    set(&t->provider_template, v, vlen)))
			goto nomem;
		if (IS("Parameters")) {
			if ((num = strndup(v, vlen)) == NULL)
				goto nomem;
			t->parameters = strtol(num, &numend, 10);
			if (vlen == 0 || *numend != '\0' ||
			    t->parameters < 0 || t->parameters > 100) {
				free(num);
				util_seterr(err, errlen, "%s:%zu: Parameters must "
				    "be a number from 0 to 100", id, lineno);
				goto fail;
			}
			free(num);
		}
#undef IS
		p = eol + 1;
	}
	if (t->created == NULL)
		when = (time_t)mtime;
	else if (rfc3339_parse(t->created, &when) == -1) {
		util_seterr(err, errlen, "%s: Created is not an ISO 8601 time",
		    id);
		goto fail;
	}
	/* Listed in UTC (createdDate), whatever offset the header has. */
	rfc3339_format(when, created, sizeof(created));
	free(t->created);
	if ((t->created = strdup(created)) == NULL)
		goto nomem;
	if (set(&t->body, p, (size_t)(end - p)))
		goto nomem;
	t->body_len = (size_t)(end - p);
	return t;
nomem:
	util_seterr(err, errlen, "out of memory");
fail:
	tmpl_free(t);
	return NULL;
}

/* Stat and read a whole file of at most TMPL_FILE_MAX bytes; 0, or -1 (errno). */
static int
slurp(int fd, char **out, size_t *outlen, struct stat *st)
{
	if (fstat(fd, st) == -1)
		return -1;
	return util_read_all(fd, TMPL_FILE_MAX, out, outlen);
}

struct tmpl *
tmpl_load(const char *root, const char *client, enum tmpl_kind kind,
    const char *id, enum msg_status *status, char *err, size_t errlen)
{
	struct tmpl	*t;
	struct stat	 st;
	char		*path = NULL, *text;
	size_t		 len;
	int		 fd;

	*status = MSG_PERMFAIL;
	if (!tmpl_id_valid(id)) {
		util_seterr(err, errlen, "'%s' is not a valid template id", id);
		return NULL;
	}
	if (!valid_client_id(client) || kind >= TMPL__MAX) {
		util_seterr(err, errlen, "bad client id");
		return NULL;
	}
	if (asprintf(&path, "%s/%s/%s/%s%s", root, client, kinds[kind], id,
	    TMPL_SUFFIX) == -1) {
		*status = MSG_TEMPFAIL;
		util_seterr(err, errlen, "out of memory");
		return NULL;
	}
	if ((fd = util_open_regular(AT_FDCWD, path, 0)) == -1) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EINVAL)
			util_seterr(err, errlen, "no %s template '%s'",
			    kinds[kind], id);
		else {
			*status = MSG_TEMPFAIL;
			util_seterr(err, errlen, "%s: %s", path, strerror(errno));
		}
		free(path);
		return NULL;
	}
	if (slurp(fd, &text, &len, &st) == -1) {
		*status = MSG_TEMPFAIL;
		util_seterr(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		free(path);
		return NULL;
	}
	close(fd);
	if ((t = tmpl_parse(id, text, len, (long long)st.st_mtime, err,
	    errlen)) == NULL)
		*status = MSG_TEMPFAIL;
	else {
		*status = MSG_OK;
		/* An OTT template without Parameters: its markers say. */
		if (kind == TMPL_OTT && t->parameters < 0)
			t->parameters = highest_marker(t->body, t->body_len);
	}
	free(text);
	free(path);
	return t;
}

static void
cache_drop(struct tmpl_cache_entry *e)
{
	free(e->path);
	tmpl_free(e->t);
	memset(e, 0, sizeof(*e));
}

/* Drop an entry; the last one takes its place. */
static void
cache_remove(struct tmpl_cache *c, struct tmpl_cache_entry *e)
{
	cache_drop(e);
	if (e != &c->v[c->n - 1]) {
		*e = c->v[c->n - 1];
		memset(&c->v[c->n - 1], 0, sizeof(*e));
	}
	c->n--;
}

struct tmpl *
tmpl_cache_load(struct tmpl_cache *c, const char *root, const char *client,
    enum tmpl_kind kind, const char *id, enum msg_status *status, char *err,
    size_t errlen)
{
	struct tmpl_cache_entry	*e = NULL;
	struct tmpl		*t;
	struct stat		 st;
	char			*path;
	size_t			 i;

	/* Only a valid name is looked at; tmpl_load says why not. */
	if (!tmpl_id_valid(id) || !valid_client_id(client) ||
	    kind >= TMPL__MAX)
		return tmpl_load(root, client, kind, id, status, err, errlen);
	if (asprintf(&path, "%s/%s/%s/%s%s", root, client, kinds[kind], id,
	    TMPL_SUFFIX) == -1) {
		*status = MSG_TEMPFAIL;
		util_seterr(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < c->n; i++)
		if (strcmp(c->v[i].path, path) == 0) {
			e = &c->v[i];
			break;
		}
	/* Taken before the read: a change meanwhile reads it again. */
	if (lstat(path, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (e != NULL)
			cache_remove(c, e);
		free(path);
		return tmpl_load(root, client, kind, id, status, err, errlen);
	}
	if (e != NULL && util_same_file(&e->st, &st)) {
		free(path);
		e->used = ++c->clock;
		*status = MSG_OK;
		return tmpl_ref(e->t);
	}
	if ((t = tmpl_load(root, client, kind, id, status, err, errlen)) ==
	    NULL) {
		if (e != NULL)
			cache_remove(c, e);
		free(path);
		return NULL;
	}
	if (e == NULL && c->n < TMPL_CACHE_MAX)
		e = &c->v[c->n++];
	else if (e == NULL) {
		/* Full: the least recently used goes. */
		e = &c->v[0];
		for (i = 1; i < c->n; i++)
			if (c->v[i].used < e->used)
				e = &c->v[i];
	}
	if (e->path != NULL)
		cache_drop(e);
	e->path = path;
	e->t = tmpl_ref(t);
	e->st = st;
	e->used = ++c->clock;
	return t;
}

void
tmpl_cache_free(struct tmpl_cache *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		cache_drop(&c->v[i]);
	c->n = 0;
}

struct summary {
	time_t	 when;
	json_t	*obj;
};

static int
summary_cmp(const void *a, const void *b)
{
	const struct summary	*x = a, *y = b;

	if (x->when != y->when)
		return x->when < y->when ? -1 : 1;
	return strcmp(json_string_value(json_object_get(x->obj, "id")),
	    json_string_value(json_object_get(y->obj, "id")));
}

json_t *
tmpl_list_email(const char *root, const char *client)
{
	struct summary	*v = NULL, *nv;
	struct dirent	*de;
	struct tmpl	*t;
	struct stat	 st;
	DIR		*dir;
	json_t		*out;
	char		*path, *text, id[256], err[256];
	size_t		 n = 0, i, len, nlen;
	int		 fd, dfd;

	if (!valid_client_id(client))
		return NULL;
	if (asprintf(&path, "%s/%s/email", root, client) == -1)
		return NULL;
	if ((dir = opendir(path)) == NULL) {
		free(path);
		return errno == ENOENT || errno == ENOTDIR ? json_array() :
		    NULL;
	}
	dfd = dirfd(dir);
	while ((de = readdir(dir)) != NULL) {
		nlen = strlen(de->d_name);
		if (nlen <= strlen(TMPL_SUFFIX) || nlen >= sizeof(id) ||
		    strcmp(de->d_name + nlen - strlen(TMPL_SUFFIX),
		    TMPL_SUFFIX) != 0)
			continue;
		memcpy(id, de->d_name, nlen - strlen(TMPL_SUFFIX));
		id[nlen - strlen(TMPL_SUFFIX)] = '\0';
		if (!tmpl_id_valid(id))
			continue;
		if ((fd = util_open_regular(dfd, de->d_name, 0)) == -1)
			continue;
		if (slurp(fd, &text, &len, &st) == -1) {
			log_warn("templates: %s/%s: %s", path, de->d_name,
			    strerror(errno));
			close(fd);
			continue;
		}
		close(fd);
		t = tmpl_parse(id, text, len, (long long)st.st_mtime, err,
		    sizeof(err));
		free(text);
		if (t == NULL) {
			log_warn("templates: %s/%s: %s", path, de->d_name,
			    err);
			continue;
		}
		if ((nv = reallocarray(v, n + 1, sizeof(*v))) == NULL) {
			tmpl_free(t);
			break;
		}
		v = nv;
		rfc3339_parse(t->created, &v[n].when);
		v[n].obj = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
		    "id", t->id, "name", t->name ? t->name : t->id,
		    "subject", t->subject ? t->subject : "",
		    "fromAddress", t->from ? t->from : "",
		    "tags", t->tags ? t->tags : "",
		    "createdDate", t->created);
		tmpl_free(t);
		if (v[n].obj != NULL)
			n++;
	}
	closedir(dir);
	free(path);
	if (n > 0)
		qsort(v, n, sizeof(*v), summary_cmp);
	out = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(out, v[i].obj);
	free(v);
	return out;
}

/* Whether name is already in the comma-separated list. */
static int
listed(const char *list, const char *name, size_t len)
{
	const char	*p = list, *comma;
	size_t		 n;

	while (*p != '\0') {
		comma = strstr(p, ", ");
		n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == len && strncmp(p, name, len) == 0)
			return 1;
		if (comma == NULL)
			break;
		p = comma + 2;
	}
	return 0;
}

/* The value for a marker name, or NULL. */
static const json_t *
lookup(const json_t *values, const char *name, size_t len)
{
	char	 key[256], *end;
	long	 n;

	if (len == 0 || len >= sizeof(key))
		return NULL;
	memcpy(key, name, len);
	key[len] = '\0';
	if (json_is_object(values))
		return json_object_get(values, key);
	if (json_is_array(values)) {
		n = strtol(key, &end, 10);
		if (*end != '\0' || n < 1 || (size_t)n > json_array_size(values))
			return NULL;
		return json_array_get(values, (size_t)n - 1);
	}
	return NULL;
}

char *
tmpl_merge(const char *text, size_t len, const json_t *values, int html,
    size_t *outlen, char *missing, size_t missinglen)
{
	struct buf	 out = { 0 };
	const char	*p = text, *end = text + len, *open, *close, *name;
	const json_t	*v;
	size_t		 nlen, used = 0;
	int		 lacking = 0;

	if (missinglen > 0)
		missing[0] = '\0';
	while (p < end) {
		open = memmem(p, (size_t)(end - p), "{{", 2);
		if (open == NULL ||
		    (close = memmem(open + 2, (size_t)(end - open - 2), "}}",
		    2)) == NULL) {
			buf_add(&out, p, (size_t)(end - p));
			break;
		}
		buf_add(&out, p, (size_t)(open - p));
		name = open + 2;
		nlen = (size_t)(close - name);
		while (nlen > 0 && *name == ' ') {
			name++;
			nlen--;
		}
		while (nlen > 0 && name[nlen - 1] == ' ')
			nlen--;
		/* Not a marker ("{{ }}", "{{a b}}"): leave it as written. */
		if (nlen == 0 || valid_ident(name, nlen) != NULL) {
			buf_add(&out, open, (size_t)(close + 2 - open));
			p = close + 2;
			continue;
		}
		if ((v = lookup(values, name, nlen)) == NULL ||
		    !json_is_string(v)) {
			/* Name each missing field once. */
			lacking = 1;
			if (missinglen > 0 && !listed(missing, name, nlen)) {
				snprintf(missing + used, missinglen - used,
				    "%s%.*s", used ? ", " : "", (int)nlen, name);
				used = strlen(missing);
			}
		} else if (html)
			html_escape(&out, json_string_value(v),
			    json_string_length(v));
		else
			buf_add(&out, json_string_value(v),
			    json_string_length(v));
		p = close + 2;
	}
	if (lacking) {
		buf_free(&out);
		return NULL;
	}
	return buf_take(&out, outlen);
}

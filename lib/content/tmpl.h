/*
 * tmpl.h: the templates directory (msgspool.conf(5), templates).
 *
 *	templates/CLIENT_ID/email/TEMPLATE_ID.tmpl
 *	templates/CLIENT_ID/ott/TEMPLATE_ID.tmpl
 *
 * A file is a header block ("Name: value" lines), a blank line, then the
 * body.  Ids are checked before any path is built.
 */
#ifndef TMPL_H
#define TMPL_H

#include <sys/stat.h>

#include <stddef.h>
#include <jansson.h>

#include "base/msgspool.h"

enum tmpl_kind {
	TMPL_EMAIL,
	TMPL_OTT,
	TMPL__MAX
};

struct tmpl {
	char	*id;
	char	*name;
	char	*subject;		/* email */
	char	*from;			/* email */
	char	*tags;			/* email */
	char	*created;		/* email, ISO 8601 UTC */
	long	 parameters;		/* ott: declared (tmpl_load: else the
					   highest {{N}} of the body); -1 */
	char	*language;		/* ott */
	char	*provider_template;	/* ott */
	char	*body;
	size_t	 body_len;
	unsigned refs;			/* tmpl_free when the last goes */
};

/* Whether id is [A-Za-z0-9_.-]{1,128} not starting with '.'. */
int		 tmpl_id_valid(const char *id);

/*
 * Load one template of a client.  Returns NULL with *status MSG_PERMFAIL
 * when the id is invalid or there is no such template (a 400 to the
 * client), MSG_TEMPFAIL when it cannot be read or parsed (a 500); a
 * reason in err.  Free with tmpl_free.
 */
struct tmpl	*tmpl_load(const char *root, const char *client,
		    enum tmpl_kind, const char *id, enum msg_status *status,
		    char *err, size_t errlen);

/* Parse a template from memory; mtime fills a missing Created. */
struct tmpl	*tmpl_parse(const char *id, const char *text, size_t len,
		    long long mtime, char *err, size_t errlen);

/* Drop a reference (tmpl_ref takes one more); the last frees it. */
void		 tmpl_free(struct tmpl *);
struct tmpl	*tmpl_ref(struct tmpl *);

/*
 * Templates read once and again only when their file changes, for a
 * persistent process (msgspool-fcgi(8)): each use costs one lstat of the
 * file, compared with the one it had when read (device, inode, size,
 * modification and change times).  At most TMPL_CACHE_MAX are kept, the
 * least recently used going first.  The caller owns the cache.
 */
#define TMPL_CACHE_MAX	128

struct tmpl_cache_entry {
	char		*path;
	struct tmpl	*t;
	struct stat	 st;		/* of the file when it was read */
	unsigned long	 used;
};

struct tmpl_cache {
	struct tmpl_cache_entry	 v[TMPL_CACHE_MAX];
	size_t			 n;
	unsigned long		 clock;
};

/*
 * tmpl_load through the cache: the same answers, the template shared
 * (tmpl_free it as one from tmpl_load).
 */
struct tmpl	*tmpl_cache_load(struct tmpl_cache *, const char *root,
		    const char *client, enum tmpl_kind, const char *id,
		    enum msg_status *status, char *err, size_t errlen);
void		 tmpl_cache_free(struct tmpl_cache *);

/*
 * Replace each {{name}} marker of text (spaces inside the braces
 * allowed) by the value of values[name]: values is a JSON object of
 * strings, or an array for {{1}}..{{N}} (1-based).  With html, values
 * are HTML-escaped.  Returns the malloc'd result (length in *outlen), or
 * NULL: then missing holds the names without a value, comma-separated
 * (empty when out of memory).
 */
char		*tmpl_merge(const char *text, size_t len, const json_t *values,
		    int html, size_t *outlen, char *missing, size_t missinglen);

/*
 * The client's email templates as an array of summaries (conf/openapi.yaml, Template) sorted
 * by createdDate (then id).  A client with no directory has none.
 * Unreadable or malformed files are skipped with a warning logged.
 * NULL only on an I/O error listing the directory.
 */
json_t		*tmpl_list_email(const char *root, const char *client);

#endif

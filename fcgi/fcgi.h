/*
 * fcgi.h: routing, environment and config cache of msgspool-fcgi
 * (msgspool-fcgi(8)).
 */
#ifndef FCGI_H
#define FCGI_H

#include <sys/stat.h>

#include "base/config.h"
#include "content/keys.h"
#include "content/tmpl.h"
#include "http/cgi.h"
#include "http/memo.h"
#include "spool/spool.h"

/*
 * The endpoint of a path as cgi_path gives it, or NULL when it is no
 * route: a route exactly (case counts, "/ping/" is not "/ping"), or
 * /messages/{id} and /receipts/{provider} with one segment after the
 * prefix, for which *path_info points at "/ID" inside path, what the
 * route's program gets as PATH_INFO (still encoded), or
 * /suppressions/{channel}/{address} with a segment and more after the
 * prefix (PATH_INFO "/CHANNEL/ADDRESS"); else NULL.
 */
const struct endpoint *fcgi_route(const char *path, const char **path_info);

/*
 * The environment of a request as its program gets it as a CGI: params
 * (the FastCGI parameters), PATH_INFO replaced by path_info decoded, as
 * a web server decodes it ("%00" kept; none when NULL), MSGSPOOL_CONFIG
 * by config when not NULL.  The array is malloc'd, its strings
 * borrowed from params but for extra[0] and extra[1], which the caller
 * frees with it.  NULL when out of memory.
 */
char		**fcgi_env(char *const *params, const char *path_info,
		    const char *config, char *extra[2]);

/* A file's text as last read, and what a stat said of it then. */
struct fcgi_file {
	char		*path;
	char		*text;
	size_t		 len;
	struct stat	 st;
	unsigned long	 gen;	/* which reading: 0 none yet, then 1, 2... */
};

/*
 * The last key looked up in the keys file, by its SHA-256, and what it
 * gave, while the file's text is the one of reading gen.
 */
struct fcgi_key {
	unsigned long	 gen;
	char		 hash[KEY_HASH_HEX + 1];
	enum keys_result rc;
	struct client	 client;
};

/*
 * A config, keys file and templates read once and again only when they
 * change.
 */
struct fcgi_cache {
	char		*path;
	struct config	*cfg;
	struct stat	 st;
	struct fcgi_file keys;
	struct fcgi_key	 key;
	unsigned long	 keys_read;	/* readings of the keys file so far */
	struct tmpl_cache tmpls;
	struct spool_seen seen;	/* the spool's root (spool_open_seen) */
	struct spool_keep spool;	/* the group commit's record */
	struct memo	*memo;	/* replies by the bytes they came from:
				 * the supervisor's, shared */
};

/*
 * The config at path: the cached one while a stat finds the same file
 * unchanged, else read anew.  NULL with a reason in err when it cannot
 * be read (then nothing is cached).
 */
const struct config *fcgi_cache_config(struct fcgi_cache *, const char *path,
		    char *err, size_t errlen);
void		 fcgi_cache_free(struct fcgi_cache *);

/*
 * keys_lookup on the keys file at path, from the cached text while a
 * stat finds the same file unchanged, else read anew; the same key as
 * the last, the same answer while the text is the same.  KEYS_ERROR
 * (with the message keys_lookup logs) when it cannot be read.
 */
enum keys_result fcgi_cache_keys(struct fcgi_cache *, const char *path,
		    const char *key, size_t len, struct client *out);

#endif

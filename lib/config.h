/*
 * config.h: the msgspool.conf file (msgspool.conf(5)).
 *
 *	# comment
 *	spool = /var/spool/msgspool
 *	[sms]
 *	provider = twilio
 *	auth-token-file = /etc/msgspool/twilio.token
 *
 * Keys before the first [section] are top-level; their section is "".
 * A '#' after blank space ends a value: "concurrency = 16  # at once".
 * A key may repeat (the http provider's "header"); config_get returns
 * the last value, config_get_n walks them all.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include <stddef.h>

struct config;

/* Limits (msgspool.conf(5)), each settable at top level. */
struct limits {
	size_t	body;		/* max-body: SMS, OTT, voice bodies */
	size_t	body_email;	/* max-email-body: email and upload bodies */
	size_t	batch;		/* max-batch: entries in one batch */
	size_t	attachment;	/* max-attachment: decoded bytes each */
	size_t	attachments;	/* max-message-attachments: per message */
};

/*
 * The config file to use: MSGSPOOL_CONFIG from envp (a NULL-terminated
 * environment, as main() gets it), else the compiled-in default.
 */
const char	*config_default_path(char *const *envp);

/*
 * Load and parse a file.  Returns NULL on failure with a one-line reason
 * ("msgspool.conf:12: missing '='") in err.  Free with config_free.
 */
struct config	*config_load(const char *path, char *err, size_t errlen);

/* Parse from memory; path is used in messages and to resolve paths. */
struct config	*config_parse(const char *path, const char *text, size_t len,
		    char *err, size_t errlen);

void		 config_free(struct config *);

/*
 * The last value of key in section ("" or NULL: top level), or NULL.
 * The string is borrowed from the config.
 */
const char	*config_get(const struct config *, const char *section,
		    const char *key);

/* The n-th (from 0) value of a repeatable key, or NULL past the end. */
const char	*config_get_n(const struct config *, const char *section,
		    const char *key, size_t n);

/* The n-th (from 0) [section] name in file order, or NULL past the end. */
const char	*config_section(const struct config *, size_t n);

/* Whether a [section] header appeared. */
int		 config_has_section(const struct config *, const char *section);

/*
 * A path value; a relative one is taken relative to the directory of the
 * config file.  Returns a malloc'd string (caller frees), def (resolved
 * the same way) when the key is absent, NULL when def is NULL too.
 */
char		*config_path(const struct config *, const char *section,
		    const char *key, const char *def);

/*
 * A secret: the value of key, or the contents of the file named by
 * "key-file" with one trailing newline removed.  Returns a malloc'd
 * string, or NULL (absent or unreadable; a reason in err).
 */
char		*config_secret(const struct config *, const char *section,
		    const char *key, char *err, size_t errlen);

/*
 * A size or count: digits with an optional K, M or G suffix (binary).
 * Returns 0 and sets *out (def when absent), -1 when the value is bad.
 */
int		 config_size(const struct config *, const char *section,
		    const char *key, size_t def, size_t *out);

/*
 * A duration: digits with an optional s, m, h or d suffix; seconds
 * without one.  Returns 0 and sets *out (def when absent), or -1.
 */
int		 config_seconds(const struct config *, const char *section,
		    const char *key, long def, long *out);

/* Fill the limits, defaults of msgspool.conf(5). 0, or -1 (err). */
int		 config_limits(const struct config *, struct limits *,
		    char *err, size_t errlen);

/* The config file's own path, as given to config_load. */
const char	*config_file(const struct config *);

#endif

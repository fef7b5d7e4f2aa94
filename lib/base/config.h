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

/* A Standard Webhooks secret's bytes ("whsec_" and base64), at least. */
#define CONFIG_WHSEC_MIN	24

/*
 * A secret (msgspool.conf(5), Values): the value of key or, when it is
 * absent or empty, the contents of the file named by "key-file" with one
 * trailing newline removed.  Every secret is checked here, by its kind:
 * none may be empty, blank or hold a NUL byte, receipt-secret and
 * webhook-secret must be "whsec_" and the base64 of CONFIG_WHSEC_MIN
 * bytes or more (config_whsec_key), and unsubscribe-secret that or any
 * other value of CONFIG_WHSEC_MIN bytes or more (config_secret_key).
 * Returns a malloc'd string, or NULL with a reason that names
 * "[section] key" ("key" at top level) in err (absent, empty,
 * unreadable, too weak).
 */
char		*config_secret(const struct config *, const char *section,
		    const char *key, char *err, size_t errlen);

/* Whether section gives key or "key-file" at all, even empty. */
int		 config_secret_given(const struct config *,
		    const char *section, const char *key);

/*
 * Check every secret a section gives (auth-token, token, app-secret,
 * verify-token, password, receipt-secret, webhook-secret,
 * unsubscribe-secret; each absent one is fine; NULL or "": the
 * top-level keys) as config_secret does.  0, or -1 with the reason of the
 * first bad one in err.
 */
int		 config_secrets_check(const struct config *,
		    const char *section, char *err, size_t errlen);

/*
 * The key of a Standard Webhooks secret: the bytes of the base64 after
 * "whsec_", malloc'd (caller frees), their count in *len.  NULL when
 * secret is not that or decodes to fewer than CONFIG_WHSEC_MIN bytes.
 */
unsigned char	*config_whsec_key(const char *secret, size_t *len);

/*
 * The key of a secret msgspool keys its own HMACs with
 * (unsubscribe-secret): the bytes config_whsec_key gives for one that
 * begins "whsec_", else the secret's own bytes.  malloc'd (caller
 * frees), their count in *len; NULL when they are fewer than
 * CONFIG_WHSEC_MIN (or "whsec_" and not base64).
 */
unsigned char	*config_secret_key(const char *secret, size_t *len);

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

/*
 * config_secret.c: the secrets of msgspool.conf(5): inline or from a
 * file, never empty, each of the kind its key must be (a word, a
 * Standard Webhooks secret, a key of msgspool's own).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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

#define SECRET_MAX	65536	/* a secret file read by config_secret */

/*
 * The secrets of msgspool.conf(5) and what each must be: a word of
 * some kind (the providers' tokens and passwords, which their own
 * services check), a Standard Webhooks secret, which msgspool keys
 * its HMACs with and so must be long enough, or a key of msgspool's
 * own (config_secret_key): such a secret or any other value of as
 * many bytes.  A key not listed here is checked as a word.
 */
enum secret_kind_type {
	SECRET_WORD,
	SECRET_WHSEC,
	SECRET_KEY
};

static const struct secret_kind {
	const char		*key;
	enum secret_kind_type	 kind;
} secret_kinds[] = {
	{ "auth-token", SECRET_WORD },		/* twilio */
	{ "token", SECRET_WORD },		/* whatsapp */
	{ "app-secret", SECRET_WORD },
	{ "verify-token", SECRET_WORD },
	{ "password", SECRET_WORD },		/* smtp, smpp */
	{ "receipt-secret", SECRET_WHSEC },	/* http */
	{ "webhook-secret", SECRET_WHSEC },	/* client.ID */
	{ "unsubscribe-secret", SECRET_KEY },	/* top level */
	{ "console-secret", SECRET_KEY },	/* top level */
};

unsigned char *
config_whsec_key(const char *secret, size_t *len)
{
	unsigned char	*key = NULL;

	*len = 0;
	if (secret == NULL || strncmp(secret, "whsec_", 6) != 0 ||
	    mime_base64_decode(secret + 6, strlen(secret + 6), 4096,
	    &key, len) != 0 || *len < CONFIG_WHSEC_MIN) {
		free(key);
		*len = 0;
		return NULL;
	}
	return key;
}

unsigned char *
config_secret_key(const char *secret, size_t *len)
{
	unsigned char	*key;

	*len = 0;
	if (secret == NULL)
		return NULL;
	if (strncmp(secret, "whsec_", 6) == 0)
		return config_whsec_key(secret, len);
	if (strlen(secret) < CONFIG_WHSEC_MIN ||
	    (key = malloc(strlen(secret))) == NULL)
		return NULL;
	memcpy(key, secret, strlen(secret));
	*len = strlen(secret);
	return key;
}

/*
 * Whether the len bytes of a secret (from key, read from where) are
 * one of its kind; the reason in err when they are not.
 */
static int
secret_valid(const char *label, const char *key, const char *where,
    const char *s, size_t len, char *err, size_t errlen)
{
	enum secret_kind_type	 kind = SECRET_WORD;
	unsigned char		*k;
	size_t			 i, klen;

	for (i = 0; i < sizeof(secret_kinds) / sizeof(secret_kinds[0]); i++)
		if (strcmp(secret_kinds[i].key, key) == 0)
			kind = secret_kinds[i].kind;
	for (i = 0; i < len && isspace((unsigned char)s[i]); i++)
		;
	if (i == len) {
		util_seterr(err, errlen, "%s%s: %s%s", label, where,
		    len == 0 ? "empty" : "blank", strcmp(key, where) == 0 ?
		    "" : " file");
		return 0;
	}
	if (memchr(s, '\0', len) != NULL) {
		util_seterr(err, errlen, "%s%s: holds a NUL byte", label,
		    where);
		return 0;
	}
	if (kind == SECRET_WHSEC) {
		if ((k = config_whsec_key(s, &klen)) == NULL) {
			util_seterr(err, errlen, "%s%s: not \"whsec_\" and "
			    "the base64 of %d bytes or more", label, where,
			    CONFIG_WHSEC_MIN);
			return 0;
		}
		free(k);
	}
	if (kind == SECRET_KEY) {
		if ((k = config_secret_key(s, &klen)) == NULL) {
			util_seterr(err, errlen, "%s%s: %s %d bytes", label,
			    where, strncmp(s, "whsec_", 6) == 0 ?
			    "\"whsec_\" and not the base64 of" :
			    "shorter than", CONFIG_WHSEC_MIN);
			return 0;
		}
		free(k);
	}
	return 1;
}

int
config_secret_given(const struct config *c, const char *section,
    const char *key)
{
	char	fkey[256];

	snprintf(fkey, sizeof(fkey), "%s-file", key);
	return config_get(c, section, key) != NULL ||
	    config_get(c, section, fkey) != NULL;
}

char *
config_secret(const struct config *c, const char *section, const char *key,
    char *err, size_t errlen)
{
	char		 fkey[256], sec[160], *path, *buf;
	const char	*v;
	size_t		 len;
	int		 fd;

	snprintf(fkey, sizeof(fkey), "%s-file", key);
	/* "[section] key: why", or "key: why" for a top-level one. */
	snprintf(sec, sizeof(sec), section && *section ? "[%s] " : "%s",
	    section ? section : "");
	/* An empty key = never hides its key-file (msgspool.conf(5)). */
	if ((v = config_get(c, section, key)) != NULL &&
	    (*v != '\0' || config_get(c, section, fkey) == NULL)) {
		if (!secret_valid(sec, key, key, v, strlen(v), err, errlen))
			return NULL;
		return strdup(v);
	}
	if ((v = config_get(c, section, fkey)) == NULL) {
		util_seterr(err, errlen, "%s%s %s nor %s", sec, *sec ?
		    "has neither" : "neither", key, fkey);
		return NULL;
	}
	if (*v == '\0') {
		util_seterr(err, errlen, "%s%s: empty, no file named", sec,
		    fkey);
		return NULL;
	}
	if ((path = config_path(c, section, fkey, NULL)) == NULL) {
		util_seterr(err, errlen, "%s%s: out of memory", sec, fkey);
		return NULL;
	}
	if ((fd = util_open_regular(AT_FDCWD, path, 0)) == -1 ||
	    util_read_all(fd, SECRET_MAX, &buf, &len) == -1) {
		util_seterr(err, errlen, "%s%s: %s: %s", sec, fkey, path,
		    errno == EFBIG ? "too large for a secret" :
		    errno == EINVAL ? "not a regular file" : strerror(errno));
		if (fd != -1)
			close(fd);
		free(path);
		return NULL;
	}
	close(fd);
	free(path);
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (len > 0 && buf[len - 1] == '\r')
		buf[--len] = '\0';
	if (!secret_valid(sec, key, fkey, buf, len, err, errlen)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int
config_secrets_check(const struct config *c, const char *section,
    char *err, size_t errlen)
{
	size_t	 i;
	char	*s;

	for (i = 0; i < sizeof(secret_kinds) / sizeof(secret_kinds[0]); i++) {
		if (!config_secret_given(c, section, secret_kinds[i].key))
			continue;
		if ((s = config_secret(c, section, secret_kinds[i].key, err,
		    errlen)) == NULL)
			return -1;
		free(s);
	}
	return 0;
}

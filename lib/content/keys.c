/*
 * keys.c: the keys file.  Lines are CLIENT:SHA256HEX:SCOPES[:FLAGS],
 * FLAGS a comma list of disabled and test.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "base/channel.h"
#include "base/log.h"
#include "base/util.h"
#include "content/keys.h"

#define KEYS_LINE_MAX	512

void
keys_hash_hex(const char *key, size_t len, char out[KEY_HASH_HEX + 1])
{
	static const char	 hex[] = "0123456789abcdef";
	struct sha256_ctx	 ctx;
	uint8_t			 d[SHA256_DIGEST_SIZE];
	size_t			 i;

	sha256_init(&ctx);
	sha256_update(&ctx, len, (const uint8_t *)key);
	sha256_digest(&ctx, sizeof(d), d);
	for (i = 0; i < sizeof(d); i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 0xf];
	}
	out[KEY_HASH_HEX] = '\0';
}

int
keys_scopes_parse(const char *s, unsigned *out)
{
	const char	*end, *name;
	size_t		 len;
	unsigned	 bits = 0, bit;
	int		 c;

	if (s == NULL || *s == '\0')
		return -1;
	for (;;) {
		end = strchr(s, ',');
		len = end ? (size_t)(end - s) : strlen(s);
		/*
		 * A channel's name, "*" for every channel, or "metrics" or
		 * "admin", which "*" does not grant.
		 */
		bit = len == 1 && *s == '*' ? SCOPE_ALL : 0;
		for (c = 0; bit == 0 && c < CHANNEL__MAX; c++) {
			name = channel_info((enum channel)c)->name;
			if (strlen(name) == len && strncmp(name, s, len) == 0)
				bit = channel_info((enum channel)c)->scope;
		}
		if (bit == 0 && len == 7 && strncmp(s, "metrics", 7) == 0)
			bit = SCOPE_METRICS;
		if (bit == 0 && len == 5 && strncmp(s, "admin", 5) == 0)
			bit = SCOPE_ADMIN;
		if (bit == 0)
			return -1;
		bits |= bit;
		if (end == NULL)
			break;
		s = end + 1;
	}
	*out = bits;
	return 0;
}

/* Compare two 64-byte hex hashes in time independent of their contents. */
static int
hash_equal(const char *a, const char *b)
{
	unsigned char	diff = 0;
	size_t		i;

	for (i = 0; i < KEY_HASH_HEX; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/*
 * Split a line (modified in place) into its fields.  Returns 0, or -1
 * when it is malformed.
 */
static int
parse_line(char *line, char **client, char **hash, char **scopes,
    int *flags)
{
	char	*f[5], *flag, *save;
	size_t	 n = 0;
	char	*p = line;
	int	 bit;

	while (n < 5) {
		f[n++] = p;
		if ((p = strchr(p, ':')) == NULL)
			break;
		*p++ = '\0';
	}
	if (n < 3 || n > 4 || p != NULL)
		return -1;
	*flags = 0;
	/* FLAGS: a comma list of disabled and test, each at most once. */
	if (n == 4) {
		if (*f[3] == '\0')
			return -1;
		for (flag = strtok_r(f[3], ",", &save); flag != NULL;
		    flag = strtok_r(NULL, ",", &save)) {
			if (strcmp(flag, "disabled") == 0)
				bit = KEY_DISABLED;
			else if (strcmp(flag, "test") == 0)
				bit = KEY_TEST;
			else
				return -1;
			if (*flags & bit)
				return -1;
			*flags |= bit;
		}
	}
	if (strlen(f[1]) != KEY_HASH_HEX || !valid_client_id(f[0]))
		return -1;
	*client = f[0];
	*hash = f[1];
	*scopes = f[2];
	return 0;
}

/*
 * Open the keys file for reading: never blocking on a FIFO, only a
 * regular file.  NULL with errno set.
 */
static FILE *
keys_open(const char *path)
{
	FILE	*f;
	int	 fd, e;

	if ((fd = util_open_regular(AT_FDCWD, path, 0)) == -1)
		return NULL;
	if ((f = fdopen(fd, "r")) == NULL) {
		e = errno;
		close(fd);
		errno = e;
	}
	return f;
}

/*
 * The lookup of the key whose hash is want over an open keys file (path
 * for the messages).
 */
static enum keys_result
lookup(FILE *f, const char *path, const char *want, struct client *out)
{
	char		*line = NULL, *client, *hash, *scopes;
	size_t		 lineno = 0, cap = 0, l;
	int		 flags, found = 0;
	unsigned	 bits;
	enum keys_result rc = KEYS_UNKNOWN;

	/*
	 * Every line is compared, so the time taken says nothing.  Lines
	 * are read whole, however long: a long one is never split in two.
	 */
	while (getline(&line, &cap, f) != -1) {
		lineno++;
		l = strcspn(line, "\r\n");
		line[l] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (parse_line(line, &client, &hash, &scopes, &flags) ||
		    keys_scopes_parse(scopes, &bits)) {
			log_warn("keys: %s:%zu: malformed line skipped",
			    path, lineno);
			continue;
		}
		if (hash_equal(hash, want) && !found) {
			found = 1;
			snprintf(out->id, sizeof(out->id), "%s", client);
			out->scopes = bits;
			out->disabled = (flags & KEY_DISABLED) != 0;
			out->test = (flags & KEY_TEST) != 0;
			rc = out->disabled ? KEYS_DISABLED : KEYS_OK;
		}
	}
	if (ferror(f)) {
		log_err("keys: %s: read error", path);
		rc = KEYS_ERROR;
	}
	free(line);
	return rc;
}

enum keys_result
keys_lookup(const char *path, const char *key, size_t len, struct client *out)
{
	FILE		*f;
	char		 want[KEY_HASH_HEX + 1];
	enum keys_result rc;

	if (key == NULL || len == 0)
		return KEYS_UNKNOWN;
	if ((f = keys_open(path)) == NULL) {
		log_err("keys: %s: %s", path, errno == EINVAL ?
		    "not a regular file" : strerror(errno));
		return KEYS_ERROR;
	}
	keys_hash_hex(key, len, want);
	rc = lookup(f, path, want, out);
	fclose(f);
	return rc;
}

enum keys_result
keys_lookup_text(const char *path, const char *text, size_t textlen,
    const char *key, size_t len, struct client *out)
{
	char	want[KEY_HASH_HEX + 1];

	if (key == NULL || len == 0)
		return KEYS_UNKNOWN;
	keys_hash_hex(key, len, want);
	return keys_lookup_hash(path, text, textlen, want, out);
}

enum keys_result
keys_lookup_hash(const char *path, const char *text, size_t textlen,
    const char *hash, struct client *out)
{
	FILE		*f;
	enum keys_result rc;

	if (textlen == 0)
		return KEYS_UNKNOWN;
	if ((f = fmemopen((void *)(uintptr_t)text, textlen, "r")) == NULL) {
		log_err("keys: %s: %s", path, strerror(errno));
		return KEYS_ERROR;
	}
	rc = lookup(f, path, hash, out);
	fclose(f);
	return rc;
}

/*
 * Rewrite the keys file: its lines passed through edit (which may change
 * a line in place and returns how many it changed), then extra appended.
 * The new file replaces the old whole, with its owner, group and mode
 * (util_replace_file; 0640 less the umask for a new one).  Returns the
 * number of lines edit changed, or -1.
 */
static int
rewrite(const char *path, int (*edit)(char **, size_t *, const char *),
    const char *arg, const char *extra, char *err, size_t errlen)
{
	FILE		*in, *out;
	char		*line = NULL, *text = NULL;
	size_t		 cap = 0, textlen = 0;
	ssize_t		 n;
	int		 changed = 0, rc = -1;
	char		 last = '\n';

	if ((in = keys_open(path)) == NULL && errno != ENOENT) {
		util_seterr(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if ((out = open_memstream(&text, &textlen)) == NULL) {
		util_seterr(err, errlen, "%s", strerror(errno));
		goto out;
	}
	/* Lines are copied as they are, NUL bytes and all. */
	while (in != NULL && (n = getline(&line, &cap, in)) > 0) {
		if (edit != NULL && edit(&line, &cap, arg) > 0) {
			changed++;
			n = (ssize_t)strlen(line);
		}
		fwrite(line, 1, (size_t)n, out);
		last = line[n - 1];
	}
	/* A last line without its newline must not swallow the next. */
	if (extra != NULL && last != '\n')
		fputc('\n', out);
	if (extra != NULL)
		fputs(extra, out);
	if (in != NULL && ferror(in)) {
		util_seterr(err, errlen, "%s: read error", path);
		fclose(out);
		goto out;
	}
	if (fclose(out) != 0) {
		util_seterr(err, errlen, "%s", strerror(errno));
		goto out;
	}
	if (util_replace_file(path, text, textlen, 0640, err, errlen) == 0)
		rc = changed;
out:
	if (in != NULL)
		fclose(in);
	free(line);
	free(text);
	return rc;
}

/*
 * Whether line is an enabled line of client: a test key's when test is
 * 1, a live key's when 0, either when -1.
 */
static int
is_enabled(const char *line, const char *client, int test)
{
	char	*copy, *c, *h, *s;
	int	 flags, yes;

	if ((copy = strdup(line)) == NULL)
		return 0;
	copy[strcspn(copy, "\r\n")] = '\0';
	yes = copy[0] != '#' && parse_line(copy, &c, &h, &s, &flags) == 0 &&
	    strcmp(c, client) == 0 && !(flags & KEY_DISABLED) &&
	    (test == -1 || test == ((flags & KEY_TEST) != 0));
	free(copy);
	return yes;
}

/* edit: mark an enabled line of client disabled. */
static int
disable_line(char **line, size_t *cap, const char *client)
{
	const char	*sep;
	char		*v;
	size_t		 len, need, i, colons;

	if (!is_enabled(*line, client, -1))
		return 0;
	len = strcspn(*line, "\r\n");
	need = len + strlen(":disabled\n") + 1;
	if (need > *cap) {
		if ((v = realloc(*line, need)) == NULL)
			return 0;
		*line = v;
		*cap = need;
	}
	/* A fourth field (flags) gets one more; else it is the fourth. */
	for (i = 0, colons = 0; i < len; i++)
		colons += (*line)[i] == ':';
	sep = colons == 3 ? "," : ":";
	snprintf(*line + len, *cap - len, "%sdisabled\n", sep);
	return 1;
}

/*
 * Serialise changes to the keys file: an flock on its directory, which
 * stays the same inode while the file is replaced by rename.  Returns
 * the fd to pass to unlock, or -1 with a reason in err.
 */
static int
lock(const char *path, char *err, size_t errlen)
{
	char	*dir, *slash;
	int	 fd;

	if ((dir = strdup(path)) == NULL) {
		util_seterr(err, errlen, "out of memory");
		return -1;
	}
	if ((slash = strrchr(dir, '/')) == NULL)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || flock(fd, LOCK_EX) == -1) {
		util_seterr(err, errlen, "%s: %s", dir, strerror(errno));
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	free(dir);
	return fd;
}

static void
unlock(int fd)
{
	close(fd);
}

static int
count_client(const char *path, const char *client, int test)
{
	FILE	*f;
	char	*line = NULL;
	size_t	 cap = 0;
	int	 n = 0;

	if ((f = keys_open(path)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while (getline(&line, &cap, f) != -1)
		n += is_enabled(line, client, test);
	free(line);
	fclose(f);
	return n;
}

int
keys_add(const char *path, const char *client, const char *scopes,
    int test, char *keyout, size_t keyoutlen, char *err, size_t errlen)
{
	static const char b64url[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char	 raw[33];
	char		 key[45], hash[KEY_HASH_HEX + 1], line[KEYS_LINE_MAX];
	unsigned	 bits;
	size_t		 i, j;
	int		 fd, rc;

	if (!valid_client_id(client)) {
		util_seterr(err, errlen, "bad client id '%s': use 1 to 64 of "
		    "A-Z a-z 0-9 _ . -, not starting with '.'", client);
		return -1;
	}
	if (keys_scopes_parse(scopes, &bits) == -1) {
		util_seterr(err, errlen, "bad scopes '%s': use a comma-separated "
		    "list of sms, ott, email, voice, *, metrics, admin", scopes);
		return -1;
	}
	if (keyoutlen < sizeof(key)) {
		util_seterr(err, errlen, "key buffer too small");
		return -1;
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		util_seterr(err, errlen, "getrandom: %s", strerror(errno));
		return -1;
	}
	/* 33 random bytes are 44 base64url characters, no padding. */
	for (i = 0, j = 0; i < sizeof(raw); i += 3) {
		key[j++] = b64url[raw[i] >> 2];
		key[j++] = b64url[((raw[i] & 3) << 4) | (raw[i + 1] >> 4)];
		key[j++] = b64url[((raw[i + 1] & 15) << 2) | (raw[i + 2] >> 6)];
		key[j++] = b64url[raw[i + 2] & 63];
	}
	key[j] = '\0';
	keys_hash_hex(key, j, hash);
	snprintf(line, sizeof(line), "%s:%s:%s%s\n", client, hash, scopes,
	    test ? ":test" : "");
	if ((fd = lock(path, err, errlen)) == -1)
		return -1;
	if (count_client(path, client, test) != 0) {
		util_seterr(err, errlen, "client '%s' already has an enabled "
		    "%skey; disable it first", client, test ? "test " : "");
		rc = -1;
	} else
		rc = rewrite(path, NULL, NULL, line, err, errlen);
	unlock(fd);
	if (rc == -1)
		return -1;
	snprintf(keyout, keyoutlen, "%s", key);
	return 0;
}

int
keys_disable(const char *path, const char *client, char *err, size_t errlen)
{
	int	n, fd, rc = -1;

	if ((fd = lock(path, err, errlen)) == -1)
		return -1;
	if ((n = count_client(path, client, -1)) <= 0)
		util_seterr(err, errlen, n == 0 ? "client '%s' has no enabled key" :
		    "cannot read the keys file", client);
	else if (rewrite(path, disable_line, client, NULL, err, errlen) != -1)
		rc = 0;
	unlock(fd);
	return rc;
}

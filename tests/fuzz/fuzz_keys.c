/*
 * fuzz_keys: the keys file (lib/content/keys.c).  The input is the file; then
 *
 *  - keys_lookup of a known key must find what a plain reading of
 *    msgspool.conf(5) finds: the first line, split at newlines only
 *    (lines of any length), that is exactly CLIENT:SHA256:SCOPES[:FLAGS]
 *    with a CRLF ending allowed.  Files with a NUL or a CR elsewhere are only
 *    looked up, their reading being a matter of taste;
 *  - keys_add of a new client (a test key for inputs of odd length)
 *    keeps every byte of the file and appends one line, whose key
 *    keys_lookup then finds;
 *  - keys_disable of that client makes its key disabled and leaves the
 *    known key's answer as it was.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "content/keys.h"
#include "fuzzutil.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The key the seed corpus's lines hash (tests/fuzz/corpus/keys/). */
#define KNOWN_KEY	"fuzz-known-key"
#define NEW_CLIENT	"fuzz-new-client"

static char	path[FUZZ_PATH_MAX];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	dir[FUZZ_PATH_MAX];

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "keys");
	fuzz_path(path, "%s/keys", dir);
	return 0;
}

struct answer {
	enum keys_result	rc;
	struct client		c;
};

/* FLAGS: a comma list of disabled and test, each at most once. */
static int
flags_parse(char *s, struct client *c)
{
	char	*flag, *save;

	c->disabled = c->test = 0;
	if (*s == '\0')
		return -1;
	for (flag = strtok_r(s, ",", &save); flag != NULL;
	    flag = strtok_r(NULL, ",", &save)) {
		if (strcmp(flag, "disabled") == 0 && !c->disabled)
			c->disabled = 1;
		else if (strcmp(flag, "test") == 0 && !c->test)
			c->test = 1;
		else
			return -1;
	}
	return 0;
}

/* Whether line (len bytes, no newline) is a good line for hash. */
static int
good_line(const char *line, size_t len, const char *hash, struct client *c)
{
	char		*copy, *f[4], *p;
	size_t		 n = 0;
	int		 ok = 0;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0 || line[0] == '#' || (copy = strndup(line, len)) == NULL)
		return 0;
	for (p = copy; n < 4; ) {
		f[n++] = p;
		if ((p = strchr(p, ':')) == NULL)
			break;
		*p++ = '\0';
	}
	c->disabled = c->test = 0;
	if (p == NULL && n >= 3 && (n == 3 || flags_parse(f[3], c) == 0) &&
	    strlen(f[1]) == KEY_HASH_HEX && valid_client_id(f[0]) &&
	    keys_scopes_parse(f[2], &c->scopes) == 0 &&
	    strcmp(f[1], hash) == 0) {
		snprintf(c->id, sizeof(c->id), "%s", f[0]);
		ok = 1;
	}
	free(copy);
	return ok;
}

/*
 * The answer keys.h promises for key in data; 0 when the file holds what
 * may be read either way (a NUL, a CR not ending a line).
 */
static int
reference(const char *data, size_t size, const char *key, struct answer *a)
{
	char		 hash[KEY_HASH_HEX + 1];
	const char	*p = data, *end = data + size, *nl, *cr;

	if (memchr(data, '\0', size) != NULL)
		return 0;
	for (cr = data; (cr = memchr(cr, '\r', (size_t)(end - cr))) != NULL;
	    cr++)
		if (cr + 1 < end && cr[1] != '\n')
			return 0;
	keys_hash_hex(key, strlen(key), hash);
	memset(a, 0, sizeof(*a));
	a->rc = KEYS_UNKNOWN;
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if (good_line(p, (size_t)(nl - p), hash, &a->c)) {
			a->rc = a->c.disabled ? KEYS_DISABLED : KEYS_OK;
			break;
		}
	}
	return 1;
}

static void
lookup(const char *key, struct answer *a)
{
	memset(a, 0, sizeof(*a));
	a->rc = keys_lookup(path, key, strlen(key), &a->c);
}

static int
same(const struct answer *a, const struct answer *b)
{
	if (a->rc != b->rc)
		return 0;
	if (a->rc != KEYS_OK && a->rc != KEYS_DISABLED)
		return 1;
	return strcmp(a->c.id, b->c.id) == 0 && a->c.scopes == b->c.scopes &&
	    a->c.test == b->c.test;
}

static const char *
name(enum keys_result rc)
{
	switch (rc) {
	case KEYS_OK: return "ok";
	case KEYS_UNKNOWN: return "unknown";
	case KEYS_DISABLED: return "disabled";
	default: return "error";
	}
}

/* The file, NUL-terminated, its size in *len. */
static char *
slurp(size_t *len)
{
	FILE	*f;
	char	*buf;
	long	 n;

	if ((f = fopen(path, "re")) == NULL)
		fuzz_fail("%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	if (n < 0 || (buf = malloc((size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n)
		fuzz_fail("%s: cannot read it back", path);
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*text = (const char *)data;
	struct answer	 got, want, added, after;
	char		 newkey[64], err[256], *now, line[256];
	size_t		 len, keep;
	int		 strict, test = size & 1;

	fuzz_write_file(path, data, size);
	lookup(KNOWN_KEY, &got);
	if (got.rc == KEYS_ERROR)
		fuzz_fail("a readable file gave KEYS_ERROR");
	strict = reference(text, size, KNOWN_KEY, &want);
	if (strict && !same(&got, &want))
		fuzz_fail("lookup says %s '%s' %#x, the file says %s '%s' %#x",
		    name(got.rc), got.c.id, got.c.scopes, name(want.rc),
		    want.c.id, want.c.scopes);

	/* A client of the file already, or a line that reads as one. */
	if (memmem(text, size, NEW_CLIENT, strlen(NEW_CLIENT)) != NULL)
		return 0;
	if (keys_add(path, NEW_CLIENT, "sms,voice", test, newkey,
	    sizeof(newkey), err, sizeof(err)) == -1)
		fuzz_fail("keys_add: %s", err);
	now = slurp(&len);
	keep = size + (size > 0 && text[size - 1] != '\n');
	if (len < keep || memcmp(now, text, size) != 0 ||
	    (keep > size && now[size] != '\n'))
		fuzz_fail("keys_add changed the lines before its own");
	snprintf(line, sizeof(line), "%s:", NEW_CLIENT);
	if (strncmp(now + keep, line, strlen(line)) != 0 ||
	    strchr(now + keep, '\n') != now + len - 1)
		fuzz_fail("keys_add appended '%s'", now + keep);
	free(now);
	lookup(newkey, &added);
	if (added.rc != KEYS_OK || strcmp(added.c.id, NEW_CLIENT) != 0 ||
	    added.c.scopes != (SCOPE_SMS | SCOPE_VOICE) || added.c.test != test)
		fuzz_fail("the key keys_add made is %s '%s' %#x",
		    name(added.rc), added.c.id, added.c.scopes);

	if (keys_disable(path, NEW_CLIENT, err, sizeof(err)) == -1)
		fuzz_fail("keys_disable: %s", err);
	lookup(newkey, &added);
	if (added.rc != KEYS_DISABLED)
		fuzz_fail("the disabled key is %s", name(added.rc));
	lookup(KNOWN_KEY, &after);
	if (!same(&got, &after))
		fuzz_fail("keys_add and keys_disable changed the known key "
		    "from %s '%s' to %s '%s'", name(got.rc), got.c.id,
		    name(after.rc), after.c.id);
	return 0;
}

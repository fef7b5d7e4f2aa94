/*
 * keys.h: the keys file (msgspool.conf(5), KEYS FILE).
 *
 *	CLIENT_ID:SHA256_HEX_OF_KEY:SCOPES[:disabled]
 *
 * The key itself is never stored; lookups hash the presented key and
 * compare hashes in constant time against every line.
 */
#ifndef KEYS_H
#define KEYS_H

#include <stddef.h>

#include "base/channel.h"	/* the scopes */
#include "base/valid.h"	/* CLIENT_ID_MAX */


#define KEY_HASH_HEX	64

/* The FLAGS of a key's line. */
#define KEY_DISABLED	0x1
#define KEY_TEST	0x2	/* its messages are never sent for real */

struct client {
	char		id[CLIENT_ID_MAX + 1];
	unsigned	scopes;
	int		disabled;
	int		test;		/* a test key (msgspool.conf(5)) */
};

enum keys_result {
	KEYS_OK,	/* found, enabled: *out filled */
	KEYS_UNKNOWN,	/* no line matches (401) */
	KEYS_DISABLED,	/* the line is disabled (403); *out filled */
	KEYS_ERROR	/* the file cannot be read (500) */
};

/*
 * Look up a presented key (len bytes) in the keys file.  An empty key
 * is KEYS_UNKNOWN.  Malformed lines are skipped with a warning logged.
 */
enum keys_result keys_lookup(const char *path, const char *key, size_t len,
		    struct client *out);

/*
 * The same lookup in the keys file's text (textlen bytes, already read:
 * a persistent process's copy); path names it in the messages.
 */
enum keys_result keys_lookup_text(const char *path, const char *text,
		    size_t textlen, const char *key, size_t len,
		    struct client *out);

/*
 * The same lookup of the key whose SHA-256 is hash (keys_hash_hex), in
 * the keys file's text.
 */
enum keys_result keys_lookup_hash(const char *path, const char *text,
		    size_t textlen, const char *hash, struct client *out);

/* Parse "sms,ott" or "*" into SCOPE_* bits.  0, or -1 on a bad name. */
int		 keys_scopes_parse(const char *s, unsigned *out);

/* SHA-256 of len bytes as 64 lowercase hex digits and a NUL. */
void		 keys_hash_hex(const char *key, size_t len,
		    char out[KEY_HASH_HEX + 1]);

/*
 * Make a random key for client (44 URL-safe characters, 264 bits), append
 * its line to the keys file atomically (a new file renamed over the old),
 * and copy the key into keyout (at least 64 bytes).  With test, the line
 * has the flag "test".  The client must not already have an enabled key
 * of the same kind (live or test).  0, or -1 with a reason in err.
 */
int		 keys_add(const char *path, const char *client,
		    const char *scopes, int test, char *keyout,
		    size_t keyoutlen, char *err, size_t errlen);

/*
 * Mark every line of client disabled, atomically.  0, or -1 with a
 * reason in err (no such client, or I/O).
 */
int		 keys_disable(const char *path, const char *client,
		    char *err, size_t errlen);

#endif

/*
 * ulid.h: message ids (ULIDs), unique, URL-safe, sorted by creation time.
 */
#ifndef ULID_H
#define ULID_H

#define ULID_LEN	26

/* A new id into out (ULID_LEN + 1 bytes).  0, or -1 (no entropy). */
int		 ulid_new(char *out);

/*
 * A new id that sorts after prev (an id, or "" for none): a fresh one
 * when the clock has moved past prev's millisecond, else prev plus one,
 * so that ids made one after another in a millisecond keep their order.
 * 0, or -1 (no entropy).
 */
int		 ulid_after(char *out, const char *prev);

/* Whether s is an id: exactly 26 Crockford base32 characters. */
int		 ulid_valid(const char *s);

/* Whether s begins with an id (a spool file's name does). */
int		 ulid_prefix(const char *s);

/* The milliseconds since the epoch encoded in an id. */
long long	 ulid_time(const char *id);

#endif

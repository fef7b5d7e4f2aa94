/*
 * ulid.c: message ids.  A ULID: 26 characters of Crockford's base32, the
 * first 10 the creation time in milliseconds, the other 16 random, so
 * ids are unique, URL-safe and sort by time (msgspool-spool(5)).
 */
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/ulid.h"

/* Crockford's base32: no I, L, O, U; sorts like the numbers it encodes. */
static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int
ulid_new(char *out)
{
	struct timespec		ts;
	unsigned long long	ms;
	unsigned char		rnd[10];
	unsigned		acc = 0, bits = 0;
	size_t			i, j;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (unsigned long long)ts.tv_sec * 1000 +
	    (unsigned long long)ts.tv_nsec / 1000000;
	/* 48 bits of milliseconds in 10 characters, most significant first. */
	for (i = 0; i < 10; i++)
		out[i] = crockford[(ms >> (45 - 5 * i)) & 31];
	/* 80 random bits in 16 characters. */
	for (i = 0, j = 10; i < sizeof(rnd); i++) {
		acc = (acc << 8) | rnd[i];
		bits += 8;
		while (bits >= 5) {
			out[j++] = crockford[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	out[ULID_LEN] = '\0';
	return 0;
}

int
ulid_after(char *out, const char *prev)
{
	const char	*c;
	size_t		 i;

	if (ulid_new(out) == -1)
		return -1;
	/* Crockford's digits sort as ASCII does: strcmp orders ids. */
	if (!ulid_valid(prev) || strcmp(out, prev) > 0)
		return 0;
	memcpy(out, prev, ULID_LEN + 1);
	/* 80 random bits never all carry over in practice. */
	for (i = ULID_LEN; i-- > 10; ) {
		c = strchr(crockford, out[i]);
		if (c[1] != '\0') {
			out[i] = c[1];
			return 0;
		}
		out[i] = crockford[0];
	}
	return ulid_new(out);
}

/* Whether c is a character of Crockford's base32 (upper case). */
static int
crockford_char(unsigned char c)
{
	/* 0-9 and A-Z but I, L, O, U: a test per character, no search
	 * (a page of GET /messages checks hundreds of ids). */
	if (c >= '0' && c <= '9')
		return 1;
	return c >= 'A' && c <= 'Z' && c != 'I' && c != 'L' && c != 'O' &&
	    c != 'U';
}

int
ulid_prefix(const char *s)
{
	size_t	i;

	for (i = 0; i < ULID_LEN; i++)
		if (!crockford_char((unsigned char)s[i]))
			return 0;
	/* The first character holds only 3 bits of the time. */
	return s[0] <= '7';
}

int
ulid_valid(const char *s)
{
	return ulid_prefix(s) && s[ULID_LEN] == '\0';
}

long long
ulid_time(const char *id)
{
	long long	ms = 0;
	size_t		i;

	for (i = 0; i < 10; i++)
		ms = (ms << 5) | (strchr(crockford, id[i]) - crockford);
	return ms;
}

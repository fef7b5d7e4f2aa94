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

/*
 * The characters of Crockford's base32 (upper case): 0-9 and A-Z but I,
 * L, O and U.  A look-up per character: a page of GET /messages checks
 * hundreds of ids (a test of ranges cost 13 instructions a character).
 */
static const unsigned char crockford_ok[256] = {
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
	['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1,
	['G'] = 1, ['H'] = 1, ['J'] = 1, ['K'] = 1, ['M'] = 1, ['N'] = 1,
	['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['V'] = 1,
	['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1
};

int
ulid_prefix(const char *s)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i;

	/* Stops at the first other character: a NUL ends a short one. */
	for (i = 0; i < ULID_LEN; i++)
		if (!crockford_ok[u[i]])
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

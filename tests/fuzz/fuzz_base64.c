/*
 * fuzz_base64: mime_base64_decode (lib/base/mime.c, through nettle) against a
 * plain reading of its comment in mime.h, and mime_base64_encode's round
 * trip.  The first byte picks the size limit, the rest is the text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mime.h"
#include "fuzzutil.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
sixbits(char c)
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const char	*p;

	if (c == '\0' || (p = strchr(alphabet, c)) == NULL)
		return -1;
	return (int)(p - alphabet);
}

/*
 * RFC 4648 base64: blank space (the C locale's) ignored anywhere, at
 * most two '=' and only at the end, padding optional but whole when
 * given, unused bits of the last group zero (what nettle asks).  The
 * decoded length, with the bytes in out, or -1.
 */
static long
reference(const char *s, size_t len, unsigned char *out)
{
	size_t		 i, n = 0, pads = 0, o = 0;
	unsigned long	 acc = 0;
	int		 v, bits = 0;

	for (i = 0; i < len; i++) {
		if (strchr(" \t\n\v\f\r", s[i]) != NULL && s[i] != '\0')
			continue;
		if (s[i] == '=') {
			pads++;
			continue;
		}
		if (pads > 0 || (v = sixbits(s[i])) < 0)
			return -1;
		n++;
		acc = acc << 6 | (unsigned long)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1UL << bits) - 1;
		}
	}
	if (n % 4 == 1 || pads > 2 || (pads > 0 && (n + pads) % 4 != 0))
		return -1;
	if (acc != 0)
		return -1;
	return (long)o;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data + 1;
	unsigned char	*out, *out2, *ref;
	char		*enc;
	size_t		 len, outlen, outlen2, max;
	long		 rlen;
	int		 rc, rc2;

	if (size < 1)
		return 0;
	len = size - 1;
	/* 0: no limit; else a small one, so the limit is reached. */
	max = data[0] & 0x80 ? (size_t)(data[0] & 0x7f) : 0;

	if ((ref = malloc(len + 1)) == NULL)
		return 0;
	rlen = reference(s, len, ref);
	rc = mime_base64_decode(s, len, 0, &out, &outlen);
	if (rc == -2)
		fuzz_fail("-2 without a limit");
	if ((rc == 0) != (rlen >= 0))
		fuzz_fail("decode says %d, the RFC %s", rc,
		    rlen >= 0 ? "accepts it" : "rejects it");
	if (rc == 0 && ((size_t)rlen != outlen ||
	    memcmp(ref, out, outlen) != 0))
		fuzz_fail("decodes to %zu bytes, not the %ld expected",
		    outlen, rlen);

	if (max > 0) {
		rc2 = mime_base64_decode(s, len, max, &out2, &outlen2);
		if (rc2 == 0 && (rc != 0 || outlen2 != outlen ||
		    memcmp(out, out2, outlen) != 0 || outlen2 > max))
			fuzz_fail("with a limit of %zu: %zu bytes", max,
			    outlen2);
		/* Over the limit, or bad: -2 may come before the check. */
		if (rc2 == -2 && rc == 0 && outlen <= max)
			fuzz_fail("-2 for %zu bytes with a limit of %zu",
			    outlen, max);
		if (rc2 == -1 && rc == 0)
			fuzz_fail("-1 with a limit, 0 without");
		if (rc2 == 0)
			free(out2);
	}

	/* Whatever the bytes, their encoding decodes back to them. */
	if ((enc = mime_base64_encode(data, size)) != NULL) {
		if (strlen(enc) != (size + 2) / 3 * 4)
			fuzz_fail("encoding of %zu bytes is %zu long", size,
			    strlen(enc));
		if (mime_base64_decode(enc, strlen(enc), size ? size : 1,
		    &out2, &outlen2) != 0 || outlen2 != size ||
		    memcmp(out2, data, size) != 0)
			fuzz_fail("round trip of %zu bytes fails", size);
		free(out2);
		free(enc);
	}
	if (rc == 0)
		free(out);
	free(ref);
	return 0;
}

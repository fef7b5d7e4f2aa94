/*
 * gsm.c: GSM 03.38 and UCS-2 encoding of an SMS text, and its split
 * into concatenated parts (gsm.h; msgspool.conf(5), "The smpp
 * provider").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smpp/gsm.h"

#define GSM_ESC		0x1b

/* The default alphabet, by septet (0x1b is the escape to the table
 * below, never a character of its own). */
static const uint16_t gsm_basic[128] = {
	0x0040, 0x00a3, 0x0024, 0x00a5, 0x00e8, 0x00e9, 0x00f9, 0x00ec,
	0x00f2, 0x00c7, 0x000a, 0x00d8, 0x00f8, 0x000d, 0x00c5, 0x00e5,
	0x0394, 0x005f, 0x03a6, 0x0393, 0x039b, 0x03a9, 0x03a0, 0x03a8,
	0x03a3, 0x0398, 0x039e, 0xffff, 0x00c6, 0x00e6, 0x00df, 0x00c9,
	0x0020, 0x0021, 0x0022, 0x0023, 0x00a4, 0x0025, 0x0026, 0x0027,
	0x0028, 0x0029, 0x002a, 0x002b, 0x002c, 0x002d, 0x002e, 0x002f,
	0x0030, 0x0031, 0x0032, 0x0033, 0x0034, 0x0035, 0x0036, 0x0037,
	0x0038, 0x0039, 0x003a, 0x003b, 0x003c, 0x003d, 0x003e, 0x003f,
	0x00a1, 0x0041, 0x0042, 0x0043, 0x0044, 0x0045, 0x0046, 0x0047,
	0x0048, 0x0049, 0x004a, 0x004b, 0x004c, 0x004d, 0x004e, 0x004f,
	0x0050, 0x0051, 0x0052, 0x0053, 0x0054, 0x0055, 0x0056, 0x0057,
	0x0058, 0x0059, 0x005a, 0x00c4, 0x00d6, 0x00d1, 0x00dc, 0x00a7,
	0x00bf, 0x0061, 0x0062, 0x0063, 0x0064, 0x0065, 0x0066, 0x0067,
	0x0068, 0x0069, 0x006a, 0x006b, 0x006c, 0x006d, 0x006e, 0x006f,
	0x0070, 0x0071, 0x0072, 0x0073, 0x0074, 0x0075, 0x0076, 0x0077,
	0x0078, 0x0079, 0x007a, 0x00e4, 0x00f6, 0x00f1, 0x00fc, 0x00e0,
};

/* The extension table: the septet after an escape, and its character. */
static const struct {
	uint8_t		septet;
	uint16_t	cp;
} gsm_ext[] = {
	{ 0x0a, 0x000c }, { 0x14, 0x005e }, { 0x28, 0x007b },
	{ 0x29, 0x007d }, { 0x2f, 0x005c }, { 0x3c, 0x005b },
	{ 0x3d, 0x007e }, { 0x3e, 0x005d }, { 0x40, 0x007c },
	{ 0x65, 0x20ac },
};

/*
 * The next code point of s (n bytes left) into *cp: the bytes it took,
 * or 0 when it is not valid UTF-8 (overlong, a surrogate, beyond
 * U+10FFFF, cut short).
 */
static size_t
utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t	c;
	size_t		len, i;

	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/*
 * The septets of code point cp into out (2 at most): how many, or 0
 * when it has none.
 */
static size_t
gsm_septets(uint32_t cp, uint8_t *out)
{
	size_t	i;

	for (i = 0; i < 128; i++)
		if (gsm_basic[i] == cp) {
			out[0] = (uint8_t)i;
			return 1;
		}
	for (i = 0; i < sizeof(gsm_ext) / sizeof(gsm_ext[0]); i++)
		if (gsm_ext[i].cp == cp) {
			out[0] = GSM_ESC;
			out[1] = gsm_ext[i].septet;
			return 2;
		}
	return 0;
}

int
gsm_fits(const char *text, size_t len, size_t *septets)
{
	const unsigned char	*s = (const unsigned char *)text;
	uint32_t		 cp;
	uint8_t			 sep[2];
	size_t			 n, k, total = 0;
	int			 fits = 1;

	while (len > 0) {
		if ((n = utf8_next(s, len, &cp)) == 0)
			return -1;
		if (fits && (k = gsm_septets(cp, sep)) > 0)
			total += k;
		else
			fits = 0;
		s += n;
		len -= n;
	}
	if (septets != NULL)
		*septets = fits ? total : 0;
	return fits;
}

/*
 * The text as units of width 1 (septets) or 2 (UTF-16 code units, big
 * endian) in buf, with brk[i] set where a part may begin (not inside an
 * escape or a surrogate pair).  The number of units.
 */
static size_t
units_of(const unsigned char *s, size_t len, int ucs2, uint8_t *buf,
    uint8_t *brk)
{
	uint32_t	cp, hi, lo;
	size_t		n, k, u = 0, i;
	uint8_t		sep[2];

	while (len > 0) {
		n = utf8_next(s, len, &cp);
		if (!ucs2) {
			k = gsm_septets(cp, sep);
			for (i = 0; i < k; i++) {
				buf[u] = sep[i];
				brk[u++] = i == 0;
			}
		} else if (cp >= 0x10000) {
			hi = 0xd800 + ((cp - 0x10000) >> 10);
			lo = 0xdc00 + ((cp - 0x10000) & 0x3ff);
			buf[2 * u] = hi >> 8;
			buf[2 * u + 1] = hi & 0xff;
			brk[u++] = 1;
			buf[2 * u] = lo >> 8;
			buf[2 * u + 1] = lo & 0xff;
			brk[u++] = 0;
		} else {
			buf[2 * u] = cp >> 8;
			buf[2 * u + 1] = cp & 0xff;
			brk[u++] = 1;
		}
		s += n;
		len -= n;
	}
	return u;
}

int
gsm_encode(const char *text, size_t len, uint8_t ref, struct gsm_sms *sms,
    char *err, size_t errlen)
{
	uint8_t		*buf = NULL, *brk = NULL;
	size_t		 units, one, per, width, start, end, i, n;
	int		 fits;

	memset(sms, 0, sizeof(*sms));
	if ((fits = gsm_fits(text, len, NULL)) == -1) {
		snprintf(err, errlen, "the text is not valid UTF-8");
		return -1;
	}
	if (len == 0) {
		snprintf(err, errlen, "the text is empty");
		return -1;
	}
	/* At most 2 units of 2 bytes for each byte of UTF-8. */
	if ((buf = malloc(len * 4)) == NULL ||
	    (brk = malloc(len * 2)) == NULL) {
		free(buf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	width = fits ? 1 : 2;
	one = fits ? GSM_SEPTETS_ONE : GSM_UCS2_ONE;
	per = fits ? GSM_SEPTETS_PART : GSM_UCS2_PART;
	units = units_of((const unsigned char *)text, len, !fits, buf, brk);
	sms->coding = fits ? GSM_CODING_DEFAULT : GSM_CODING_UCS2;
	sms->units = units;
	/* Count the parts first: breaks decide where each ends. */
	n = 0;
	if (units <= one)
		n = 1;
	else
		for (start = 0; start < units; n++) {
			end = start + per < units ? start + per : units;
			while (end < units && !brk[end])
				end--;
			start = end;
		}
	if (n > GSM_PARTS_MAX) {
		snprintf(err, errlen, "the text needs %zu SMS, more than %d", n,
		    GSM_PARTS_MAX);
		goto fail;
	}
	if ((sms->parts = calloc(n, sizeof(*sms->parts))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	sms->nparts = n;
	sms->udhi = n > 1;
	if (n == 1) {
		memcpy(sms->parts[0].octets, buf, units * width);
		sms->parts[0].len = units * width;
	} else
		for (i = 0, start = 0; i < n; i++) {
			struct gsm_part	*p = &sms->parts[i];

			end = start + per < units ? start + per : units;
			while (end < units && !brk[end])
				end--;
			p->octets[0] = 0x05;	/* UDH length */
			p->octets[1] = 0x00;	/* concatenation, 8-bit ref */
			p->octets[2] = 0x03;	/* its length */
			p->octets[3] = ref;
			p->octets[4] = (uint8_t)n;
			p->octets[5] = (uint8_t)(i + 1);
			memcpy(p->octets + GSM_UDH_LEN, buf + start * width,
			    (end - start) * width);
			p->len = GSM_UDH_LEN + (end - start) * width;
			start = end;
		}
	free(buf);
	free(brk);
	return 0;
fail:
	free(buf);
	free(brk);
	gsm_free(sms);
	return -1;
}

/* Append code point cp as UTF-8 at *o. */
static void
utf8_put(uint32_t cp, char **o)
{
	unsigned char	*p = (unsigned char *)*o;

	if (cp < 0x80)
		*p++ = (unsigned char)cp;
	else if (cp < 0x800) {
		*p++ = (unsigned char)(0xc0 | cp >> 6);
		*p++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*p++ = (unsigned char)(0xe0 | cp >> 12);
		*p++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*p++ = (unsigned char)(0x80 | (cp & 0x3f));
	} else {
		*p++ = (unsigned char)(0xf0 | cp >> 18);
		*p++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
		*p++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		*p++ = (unsigned char)(0x80 | (cp & 0x3f));
	}
	*o = (char *)p;
}

#define REPLACEMENT	0xfffd

/* The character of a septet after an escape: the table's, else the
 * basic table's (23.038, 6.2.1.1). */
static uint32_t
gsm_extended(uint8_t septet)
{
	size_t	i;

	for (i = 0; i < sizeof(gsm_ext) / sizeof(gsm_ext[0]); i++)
		if (gsm_ext[i].septet == septet)
			return gsm_ext[i].cp;
	/* A second escape: a table of another language, shown a space. */
	return septet == GSM_ESC ? ' ' : gsm_basic[septet];
}

int
gsm_decode(uint8_t coding, const uint8_t *octets, size_t len, char **out)
{
	uint32_t	 cp, lo;
	size_t		 i;
	char		*o;
	int		 gsm;

	*out = NULL;
	gsm = coding == GSM_CODING_DEFAULT || (coding & 0xfc) == 0xf0;
	if (!gsm && coding != GSM_CODING_ASCII &&
	    coding != GSM_CODING_LATIN1 && coding != GSM_CODING_UCS2)
		return 1;
	/* At most 4 bytes of UTF-8 for each octet. */
	if ((*out = o = malloc(len * 4 + 1)) == NULL)
		return -1;
	for (i = 0; i < len; i++) {
		if (gsm) {
			if (octets[i] > 0x7f)
				cp = REPLACEMENT;
			else if (octets[i] == GSM_ESC)
				cp = i + 1 < len && octets[i + 1] <= 0x7f ?
				    gsm_extended(octets[++i]) : ' ';
			else
				cp = gsm_basic[octets[i]];
		} else if (coding == GSM_CODING_UCS2) {
			if (i + 1 >= len)
				cp = REPLACEMENT;	/* an odd octet */
			else {
				cp = (uint32_t)octets[i] << 8 | octets[i + 1];
				i++;
				if (cp >= 0xd800 && cp <= 0xdbff &&
				    i + 2 < len && (lo = (uint32_t)octets[i +
				    1] << 8 | octets[i + 2]) >= 0xdc00 &&
				    lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					    (lo - 0xdc00);
					i += 2;
				} else if (cp >= 0xd800 && cp <= 0xdfff)
					cp = REPLACEMENT;
			}
		} else
			cp = coding == GSM_CODING_ASCII && octets[i] > 0x7f ?
			    REPLACEMENT : octets[i];
		utf8_put(cp, &o);
	}
	*o = '\0';
	return 0;
}

void
gsm_free(struct gsm_sms *sms)
{
	if (sms == NULL)
		return;
	free(sms->parts);
	sms->parts = NULL;
	sms->nparts = 0;
}

/*
 * fuzzutil.c: scratch directories, files, failures and the message
 * checks of the fuzz targets.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mime.h"
#include "base/util.h"
#include "fuzzutil.h"

/* Directories to remove at exit; a process makes one or two. */
/* Whether v holds the addr-spec a: local part as it is, domain in any case. */
static int
has_address(const char *v, const char *a, size_t alen)
{
	const char	*at = memchr(a, '@', alen);
	size_t		 local = at ? (size_t)(at - a) : alen, vlen = strlen(v), k;

	for (k = 0; k + alen <= vlen; k++)
		if (strncmp(v + k, a, local) == 0 &&
		    strncasecmp(v + k, a, alen) == 0)
			return 1;
	return 0;
}

static char	scratch[4][FUZZ_PATH_MAX];
static int	nscratch;

void
fuzz_fail(const char *fmt, ...)
{
	va_list	ap;

	printf("fuzz check failed: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	abort();
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
remove_scratch(void)
{
	int	i;

	for (i = 0; i < nscratch; i++)
		nftw(scratch[i], rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void
fuzz_scratch(char *dir, size_t len, const char *name)
{
	const char	*base = getenv("FUZZ_TMPDIR");
	struct stat	 st;
	int		 n;

	if (base == NULL || *base == '\0')
		base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
		    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	n = snprintf(dir, len, "%s/msgspool-fuzz-%s-XXXXXX", base, name);
	if (n < 0 || (size_t)n >= len || mkdtemp(dir) == NULL)
		fuzz_fail("cannot make a scratch directory in %s: %s", base,
		    strerror(errno));
	if (nscratch == 0)
		atexit(remove_scratch);
	if (nscratch < (int)(sizeof(scratch) / sizeof(scratch[0])))
		snprintf(scratch[nscratch++], sizeof(scratch[0]), "%s", dir);
}

/* Empty the directory open as fd (closed here), sparing keep. */
static void
empty_fd(int fd, const char *path, const char *keep)
{
	DIR		*d;
	struct dirent	*de;
	char		 sub[FUZZ_PATH_MAX];
	int		 subfd;

	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (keep != NULL && strcmp(sub, keep) == 0)
			continue;
		/* Directories stay: the programs expect the spool's own. */
		if ((subfd = openat(dirfd(d), de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1)
			empty_fd(subfd, sub, keep);
		else
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

void
fuzz_empty_dir(const char *dir, const char *keep)
{
	int	fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
		empty_fd(fd, dir, keep);
}

void
fuzz_write_file(const char *path, const void *data, size_t len)
{
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1 || util_write_all(fd, data, len) == -1)
		fuzz_fail("%s: %s", path, strerror(errno));
	close(fd);
}

void
fuzz_path(char *out, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(out, FUZZ_PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= FUZZ_PATH_MAX)
		fuzz_fail("path too long: %s", out);
}

const char *
fuzz_str(const json_t *obj, const char *key)
{
	const char	*v = json_string_value(json_object_get(obj, key));

	return v ? v : "";
}

int
fuzz_open_fds(void)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;		/* the one opendir holds */
}

int
fuzz_utf8(const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, need, k;
	unsigned long		 cp, min;

	while (i < len) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0) {
			need = 1;
			cp = p[i] & 0x1f;
			min = 0x80;
		} else if ((p[i] & 0xf0) == 0xe0) {
			need = 2;
			cp = p[i] & 0x0f;
			min = 0x800;
		} else if ((p[i] & 0xf8) == 0xf0) {
			need = 3;
			cp = p[i] & 0x07;
			min = 0x10000;
		} else
			return 0;
		for (k = 1; k <= need; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) ||
		    cp > 0x10ffff)
			return 0;
		i += need + 1;
	}
	return 1;
}

/* One unfolded header field of a message. */
struct field {
	char	*name;
	char	*value;
};

/* Decode the text of a Q word (RFC 2047 section 4.2); -1 when bad. */
static int
q_decode(const char *t, size_t len, struct buf *out)
{
	size_t	i;
	int	hi, lo;

	for (i = 0; i < len; i++) {
		if (t[i] == '_')
			buf_putc(out, ' ');
		else if (t[i] != '=')
			buf_putc(out, t[i]);
		else if (i + 2 < len &&
		    (hi = util_hexval((unsigned char)t[i + 1])) >= 0 &&
		    (lo = util_hexval((unsigned char)t[i + 2])) >= 0) {
			buf_putc(out, (char)(hi << 4 | lo));
			i += 2;
		} else
			return -1;
	}
	return 0;
}

/* Append raw (a word's bytes in charset) as UTF-8; -1: unknown. */
static int
to_utf8(const char *charset, size_t clen, const char *raw, size_t len,
    struct buf *out)
{
	size_t	i;

	if (clen == 5 && strncasecmp(charset, "utf-8", 5) == 0) {
		buf_add(out, raw, len);
		return 0;
	}
	if ((clen == 8 && strncasecmp(charset, "us-ascii", 8) == 0) ||
	    (clen == 10 && strncasecmp(charset, "iso-8859-1", 10) == 0)) {
		for (i = 0; i < len; i++) {
			if ((unsigned char)raw[i] < 0x80) {
				buf_putc(out, raw[i]);
				continue;
			}
			buf_putc(out, (char)(0xc0 | (unsigned char)raw[i] >> 6));
			buf_putc(out, (char)(0x80 | (raw[i] & 0x3f)));
		}
		return 0;
	}
	return -1;
}

/*
 * The encoded word at p ("=?CHARSET?B?...?=" or Q, in UTF-8, US-ASCII or
 * ISO-8859-1, as GMime writes them), decoded onto out as UTF-8; its
 * length, or 0 when p starts none.
 */
static size_t
word(const char *p, struct buf *out)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
	    "opqrstuvwxyz0123456789+/=";
	struct buf	 dec = { NULL, 0, 0, 0 };
	unsigned char	*raw = NULL;
	const char	*charset, *t;
	size_t		 clen, tlen, rawlen;
	int		 rc = -1;
	char		 enc;

	if (strncmp(p, "=?", 2) != 0)
		return 0;
	charset = p + 2;
	clen = strcspn(charset, "? ");
	if (clen == 0 || charset[clen] != '?' || charset[clen + 1] == '\0' ||
	    charset[clen + 2] != '?')
		return 0;
	enc = charset[clen + 1];
	t = charset + clen + 3;
	if (enc == 'B' || enc == 'b') {
		tlen = strspn(t, b64);
		if (strncmp(t + tlen, "?=", 2) == 0 &&
		    mime_base64_decode(t, tlen, 0, &raw, &rawlen) == 0)
			rc = to_utf8(charset, clen, (const char *)raw, rawlen,
			    out);
		free(raw);
	} else if (enc == 'Q' || enc == 'q') {
		for (tlen = 0; t[tlen] > ' ' && t[tlen] < 0x7f &&
		    t[tlen] != '?'; tlen++)
			;
		if (strncmp(t + tlen, "?=", 2) == 0 &&
		    q_decode(t, tlen, &dec) == 0)
			rc = to_utf8(charset, clen, dec.p ? dec.p : "",
			    dec.len, out);
		buf_free(&dec);
	}
	return rc == 0 ? (size_t)(t + tlen + 2 - p) : 0;
}

char *
fuzz_decode_words(const char *v, size_t *outlen)
{
	struct buf	 out = { NULL, 0, 0, 0 }, skip = { NULL, 0, 0, 0 };
	const char	*p = v, *next;
	size_t		 gap, n;
	int		 after_word = 0;

	while (*p != '\0') {
		if ((n = word(p, &out)) > 0) {
			p += n;
			after_word = 1;
			continue;
		}
		gap = strspn(p, " \t");
		next = p + gap;
		/* Blank between two words is not text. */
		if (after_word && gap > 0 && word(next, &skip) > 0) {
			p = next;
			continue;
		}
		buf_add(&out, p, gap > 0 ? gap : 1);
		p += gap > 0 ? gap : 1;
		after_word = 0;
	}
	buf_free(&skip);
	return buf_take(&out, outlen);
}

/* The address of "Name <addr>" or "addr": the part a reader routes on. */
static void
addr_spec(const char *v, const char **start, size_t *len)
{
	const char	*lt = strrchr(v, '<');
	size_t		 n = strlen(v);

	if (lt != NULL && n > 0 && v[n - 1] == '>') {
		*start = lt + 1;
		*len = (size_t)(v + n - 1 - lt - 1);
	} else {
		*start = v;
		*len = n;
	}
}

static const char *
field_value(const struct field *f, size_t n, const char *name)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (strcasecmp(f[i].name, name) == 0)
			return f[i].value;
	return NULL;
}

void
fuzz_check_message(const json_t *msg, const char *text, size_t len)
{
	static const char *const once[] = { "Date", "From", "To", "Subject",
	    "Message-ID", "MIME-Version", "Content-Type", NULL };
	struct field	 fields[64];
	const char	*p = text, *end = text + len, *eol, *colon, *v, *a;
	const char	*subject;
	char		*dec;
	size_t		 n, nfields = 0, i, j, count, alen, declen;
	int		 in_header = 1, top = 1;

	if (len < 2 || text[len - 2] != '\r' || text[len - 1] != '\n')
		fuzz_fail("message does not end with CRLF");
	for (; p < end; p = eol + 2) {
		eol = p;
		while (eol < end && *eol != '\r' && *eol != '\n')
			eol++;
		if (eol + 1 >= end || eol[0] != '\r' || eol[1] != '\n')
			fuzz_fail("bare CR or LF at byte %zu",
			    (size_t)(eol - text));
		n = (size_t)(eol - p);
		if (n > 998)
			fuzz_fail("line of %zu characters at byte %zu", n,
			    (size_t)(p - text));
		if (!in_header) {
			/* A boundary line opens the headers of a part. */
			if (n > 4 && strncmp(p, "--=_", 4) == 0 &&
			    strncmp(eol - 2, "--", 2) != 0)
				in_header = 1;
			continue;
		}
		if (n == 0) {
			in_header = 0;
			top = 0;
			continue;
		}
		for (i = 0; i < n; i++)
			if ((unsigned char)p[i] >= 0x80 || (p[i] < 0x20 &&
			    p[i] != '\t') || p[i] == 0x7f)
				fuzz_fail("header line with byte 0x%02x: %.*s",
				    (unsigned char)p[i], (int)n, p);
		if (p[0] == ' ' || p[0] == '\t') {
			if (top && nfields == 0)
				fuzz_fail("continuation before any field");
			if (top) {
				/* Unfold: the CRLF goes, the blank stays. */
				j = strlen(fields[nfields - 1].value);
				fields[nfields - 1].value = realloc(
				    fields[nfields - 1].value, j + n + 1);
				memcpy(fields[nfields - 1].value + j, p, n);
				fields[nfields - 1].value[j + n] = '\0';
			}
			continue;
		}
		if ((colon = memchr(p, ':', n)) == NULL || colon == p)
			fuzz_fail("header line is no field: %.*s", (int)n, p);
		for (v = p; v < colon; v++)
			if (*v <= ' ' || *v > '~')
				fuzz_fail("bad field name: %.*s", (int)n, p);
		if (!top)
			continue;
		if (nfields == sizeof(fields) / sizeof(fields[0]))
			fuzz_fail("more than %zu header fields", nfields);
		v = colon + 1;
		if (v < eol && *v == ' ')
			v++;
		fields[nfields].name = strndup(p, (size_t)(colon - p));
		fields[nfields].value = strndup(v, (size_t)(eol - v));
		nfields++;
	}
	for (i = 0; once[i] != NULL; i++) {
		for (j = 0, count = 0; j < nfields; j++)
			count += strcasecmp(fields[j].name, once[i]) == 0;
		if (count != 1)
			fuzz_fail("%zu %s fields in the header", count,
			    once[i]);
	}
	if (nfields != i)
		fuzz_fail("%zu header fields, not %zu", nfields, i);
	/*
	 * The address is never encoded: a reader routes on its bytes, the
	 * local part's exactly, the domain's in any case (GMime writes an
	 * IDNA label in lower case).
	 */
	for (i = 0; i < 2; i++) {
		addr_spec(json_string_value(json_object_get(msg,
		    i ? "to" : "from")), &a, &alen);
		v = field_value(fields, nfields, i ? "To" : "From");
		if (!has_address(v, a, alen))
			fuzz_fail("%s: the address '%.*s' is not in '%s'",
			    i ? "To" : "From", (int)alen, a, v);
	}
	subject = json_string_value(json_object_get(msg, "subject"));
	if (subject == NULL)
		subject = "";
	v = field_value(fields, nfields, "Subject");
	/* Written as it is: fine, even when it looks like a word. */
	if (strcmp(v, subject) == 0)
		dec = strdup(v), declen = strlen(v);
	else if ((dec = fuzz_decode_words(v, &declen)) == NULL)
		fuzz_fail("Subject: out of memory");
	/*
	 * Whitespace around an unstructured value is not part of it (RFC
	 * 5322 2.2.3: it cannot be told from the separator or the fold),
	 * so it is compared without.
	 */
	{
		const char	*a0 = subject, *b0 = dec;
		size_t		 al = strlen(subject), bl = declen;

		while (al > 0 && (*a0 == ' ' || *a0 == '\t'))
			a0++, al--;
		while (al > 0 && (a0[al - 1] == ' ' || a0[al - 1] == '\t'))
			al--;
		while (bl > 0 && (*b0 == ' ' || *b0 == '\t'))
			b0++, bl--;
		while (bl > 0 && (b0[bl - 1] == ' ' || b0[bl - 1] == '\t'))
			bl--;
		if (al != bl || memcmp(a0, b0, al) != 0)
			fuzz_fail("Subject: '%s' reads as '%s', not '%s'", v,
			    dec, subject);
	}
	free(dec);
	for (i = 0; i < nfields; i++) {
		free(fields[i].name);
		free(fields[i].value);
	}
}

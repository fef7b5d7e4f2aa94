/*
 * fuzzutil.h: what the libFuzzer targets share: a scratch directory,
 * whole-file writes, the failure of a check, and the checks of an RFC
 * 5322 message that more than one target makes.
 *
 * A target reports a broken property with fuzz_fail, which prints on
 * stdout (the fuzzing runs close stderr, where the library logs) and
 * aborts, so libFuzzer keeps the input as a crash.
 */
#ifndef MSGSPOOL_FUZZUTIL_H
#define MSGSPOOL_FUZZUTIL_H

#include <stddef.h>
#include <jansson.h>

#define FUZZ_PATH_MAX	512

/*
 * Make a fresh directory msgspool-fuzz-NAME-XXXXXX under $FUZZ_TMPDIR,
 * else /dev/shm (the spool's fsyncs cost nothing there), else /tmp, and
 * put its path in dir.  It is removed at exit; a crash leaves it.
 * Aborts when it cannot be made.
 */
void	 fuzz_scratch(char *dir, size_t len, const char *name);

/* Remove everything below dir (dir itself stays); keep, if not NULL. */
void	 fuzz_empty_dir(const char *dir, const char *keep);

/* Write len bytes to path (mode 0600, truncated), or fuzz_fail. */
void	 fuzz_write_file(const char *path, const void *data, size_t len);

/* Printf-style path into a FUZZ_PATH_MAX buffer, or fuzz_fail. */
void	 fuzz_path(char *out, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* Print why on stdout and abort. */
void	 fuzz_fail(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/* A string member's value, "" when it is absent or no string. */
const char	*fuzz_str(const json_t *obj, const char *key);

/* How many file descriptors this process has open. */
int	 fuzz_open_fds(void);

/* Whether len bytes are UTF-8 (any code point but NUL allowed). */
int	 fuzz_utf8(const char *s, size_t len);

/*
 * A header value as a reader decodes it (RFC 2047): each well-formed
 * word, B or Q, in UTF-8, US-ASCII or ISO-8859-1, decoded to UTF-8, the
 * blank between two of them dropped,
 * anything else, a lone "=?" too, taken as it is.  Words may be longer
 * than 75 characters: GMime cuts them by characters (message.h).
 * malloc'd (length in *outlen), NULL out of memory.
 */
char	*fuzz_decode_words(const char *v, size_t *outlen);

/*
 * Check what message_build made of msg (len bytes): every line ends with
 * CRLF and has at most 998 characters, the header block is 7-bit ASCII
 * and its lines are either fields or folded continuations, the address
 * part of From and To appears verbatim (encoded words are for display
 * names only, RFC 2047 section 5), and the Subject decodes back to
 * msg's "subject".  fuzz_fail on the first violation.
 */
void	 fuzz_check_message(const json_t *msg, const char *text, size_t len);

#endif

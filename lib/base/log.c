/*
 * log.c: one line per event on stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

static const char *const levels[] = { "info", "warn", "error" };

void
log_msg(enum log_level level, const char *fmt, ...)
{
	char		 line[2048], stamp[80];
	struct tm	 tm;
	time_t		 now;
	va_list		 ap;
	size_t		 len, i;
	int		 n, saved = errno;

	now = time(NULL);
	gmtime_r(&now, &tm);
	snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec);

	n = snprintf(line, sizeof(line), "%s %s[%ld]: %s: ", stamp,
	    program_invocation_short_name, (long)getpid(),
	    levels[level > LOG_LEVEL_ERR ? LOG_LEVEL_ERR : level]);
	if (n < 0)
		return;
	len = (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len += (size_t)n;
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	/* One event, one line, whatever the message carried. */
	for (i = 0; i < len; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[len++] = '\n';
	/* A single write keeps lines of concurrent processes whole. */
	if (write(STDERR_FILENO, line, len) < 0) {
		/* Nowhere left to report it. */
	}
	errno = saved;
}

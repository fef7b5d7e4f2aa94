/*
 * rfc3339.c: times as msgspool writes and reads them (RFC 3339).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rfc3339.h"

static int
two(const char *s, int *out)
{
	if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
		return -1;
	*out = (s[0] - '0') * 10 + (s[1] - '0');
	return 0;
}

void
rfc3339_format(time_t t, char *buf, size_t len)
{
	struct tm	tm;

	/* Not strftime: it reads the time zone database, a cost per CGI. */
	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int
rfc3339_parse(const char *s, time_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	struct tm	tm;
	int		y1, y2, mon, day, h, mi, sec, oh = 0, om = 0, sign = 0;
	long		off;
	time_t		t;

	/* YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */
	if (strlen(s) < 20 || two(s, &y1) || two(s + 2, &y2) ||
	    s[4] != '-' || two(s + 5, &mon) || s[7] != '-' ||
	    two(s + 8, &day) || (s[10] != 'T' && s[10] != 't') ||
	    two(s + 11, &h) || s[13] != ':' || two(s + 14, &mi) ||
	    s[16] != ':' || two(s + 17, &sec))
		return -1;
	s += 19;
	if (*s == '.') {
		if (!isdigit((unsigned char)*++s))
			return -1;
		while (isdigit((unsigned char)*s))
			s++;
	}
	if ((*s == 'Z' || *s == 'z') && s[1] == '\0')
		sign = 0;
	else if ((*s == '+' || *s == '-') && two(s + 1, &oh) == 0 &&
	    s[3] == ':' && two(s + 4, &om) == 0 && s[6] == '\0' &&
	    oh < 24 && om < 60)
		sign = *s == '+' ? 1 : -1;
	else
		return -1;
	if (mon < 1 || mon > 12 || day < 1 || day > mdays[mon - 1] ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	y1 = y1 * 100 + y2;
	if (mon == 2 && day == 29 &&
	    !((y1 % 4 == 0 && y1 % 100 != 0) || y1 % 400 == 0))
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y1 - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec == 60 ? 59 : sec;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	off = (long)sign * (oh * 3600L + om * 60L);
	*out = t - off;
	return 0;
}

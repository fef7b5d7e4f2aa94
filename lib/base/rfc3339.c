/*
 * rfc3339.c: times as msgspool writes and reads them (RFC 3339).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/rfc3339.h"

static int
two(const char *s, int *out)
{
	if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
		return -1;
	*out = (s[0] - '0') * 10 + (s[1] - '0');
	return 0;
}

/*
 * Days since 1970-01-01 of a date of the proleptic Gregorian calendar,
 * and back.  Counted here, not with timegm or gmtime_r: glibc reads the
 * time zone database (/etc/localtime, six system calls) the first time
 * a process converts a time, whichever zone it asks for: a cost per CGI.
 * Years are shifted to start in March, so that a leap day ends one; an
 * era is the 400 years after which the calendar repeats (146097 days).
 */
static long long
days_from_civil(long long y, int m, int d)
{
	long long	era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(long long z, long long *y, int *m, int *d)
{
	long long	era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Two decimal digits of n (0 to 99) at p. */
static void
put2(char *p, int n)
{
	p[0] = (char)('0' + n / 10);
	p[1] = (char)('0' + n % 10);
}

void
rfc3339_format(time_t t, char *buf, size_t len)
{
	long long	days, secs, y;
	int		m, d;

	days = (long long)t / 86400;
	secs = (long long)t % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	/* Its digits put by hand: snprintf's parse was a tenth of a queued
	 * SMS's formatting.  Years of other than four digits as before. */
	if (y < 0 || y > 9999 || len < RFC3339_LEN) {
		snprintf(buf, len, "%04lld-%02d-%02dT%02lld:%02lld:%02lldZ",
		    y, m, d, secs / 3600, secs / 60 % 60, secs % 60);
		return;
	}
	put2(buf, (int)(y / 100));
	put2(buf + 2, (int)(y % 100));
	buf[4] = '-';
	put2(buf + 5, m);
	buf[7] = '-';
	put2(buf + 8, d);
	buf[10] = 'T';
	put2(buf + 11, (int)(secs / 3600));
	buf[13] = ':';
	put2(buf + 14, (int)(secs / 60 % 60));
	buf[16] = ':';
	put2(buf + 17, (int)(secs % 60));
	buf[19] = 'Z';
	buf[20] = '\0';
}

int
rfc3339_parse(const char *s, time_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
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
	t = (time_t)(days_from_civil(y1, mon, day) * 86400 + h * 3600 +
	    mi * 60 + (sec == 60 ? 59 : sec));
	off = (long)sign * (oh * 3600L + om * 60L);
	*out = t - off;
	return 0;
}

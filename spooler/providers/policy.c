/*
 * policy.c: temporary or permanent, when to retry, when to give up,
 * which failures mean an address is gone for good, whose webhook goes
 * next.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/random.h>
#include <unistd.h>

#include "providers/policy.h"

enum msg_status
policy_http(long code)
{
	if (code >= 200 && code <= 299)
		return MSG_OK;
	if (code == 408 || code == 429 || code >= 500 || code < 200)
		return MSG_TEMPFAIL;
	return MSG_PERMFAIL;
}

long
policy_backoff(long attempt, unsigned rnd)
{
	long	delay = POLICY_BACKOFF_FIRST;

	while (--attempt > 1 && delay < POLICY_BACKOFF_MAX)
		delay *= 2;
	if (delay > POLICY_BACKOFF_MAX)
		delay = POLICY_BACKOFF_MAX;
	return delay * 8 / 10 + (long)(rnd % (unsigned)(delay * 4 / 10 + 1));
}

long
policy_retry_after(long long seconds)
{
	if (seconds <= 0)
		return 0;
	return seconds > POLICY_RETRY_AFTER_MAX ? POLICY_RETRY_AFTER_MAX :
	    (long)seconds;
}

time_t
policy_not_before(const struct timespec *now, long seconds)
{
	return now->tv_sec + seconds + (now->tv_nsec > 0);
}

enum msg_status
policy_max_age(enum msg_status st, time_t now, time_t age_from,
    long max_age, const char **gave_up)
{
	*gave_up = NULL;
	if (st == MSG_TEMPFAIL && now - age_from >= max_age) {
		*gave_up = "older than max-age";
		return MSG_PERMFAIL;
	}
	return st;
}

/* SMPP 3.4, 5.1.3: "Invalid Dest Addr". */
#define SMPP_RINVDSTADR	0x0000000b

/* Twilio's codes that say a number cannot be reached, and on what. */
static const struct {
	long		 code;
	const char	*channels;	/* comma-separated */
} twilio_codes[] = {
	{ 21610, "sms" },	/* the recipient unsubscribed (STOP) */
	{ 21211, "sms,voice" },	/* not a valid phone number */
	{ 21614, "sms" },	/* not a mobile number */
};

/* Whether word is one of the comma-separated list. */
static int
listed(const char *list, const char *word)
{
	const char	*p;
	size_t		 n = strlen(word);

	for (p = list; n > 0 && (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' ||
		    p[n] == '\0'))
			return 1;
	return 0;
}

/* The channel of a message whose Twilio code says so, or -1. */
static int
twilio_unreachable(const char *channel, long code)
{
	size_t	i;

	for (i = 0; i < sizeof(twilio_codes) / sizeof(twilio_codes[0]); i++)
		if (twilio_codes[i].code == code &&
		    listed(twilio_codes[i].channels, channel))
			return channel_parse(channel);
	return -1;
}

/* A number of 1 to 3 digits at *s, moved past it; -1 when none. */
static int
digits3(const char **s)
{
	int	v = 0, n = 0;

	while (n < 3 && isdigit((unsigned char)**s)) {
		v = v * 10 + (**s - '0');
		(*s)++;
		n++;
	}
	return n == 0 || isdigit((unsigned char)**s) ? -1 : v;
}

int
policy_email_unreachable(const char *status, long code)
{
	const char	*p = status;
	int		 cls = -1, subject = 0, detail = 0;

	while (p != NULL && (*p == ' ' || *p == '\t'))
		p++;
	if (p != NULL && (*p == '2' || *p == '4' || *p == '5') &&
	    p[1] == '.') {
		cls = *p - '0';
		p += 2;
		if ((subject = digits3(&p)) == -1 || *p++ != '.' ||
		    (detail = digits3(&p)) == -1 ||
		    (*p != '\0' && !isspace((unsigned char)*p)))
			cls = -1;
	}
	/* No enhanced code: the reply's class, as 5.0.0. */
	if (cls == -1) {
		if (code < 500 || code > 599)
			return 0;
		cls = 5;
		subject = detail = 0;
	}
	if (cls != 5)
		return 0;
	switch (subject) {
	case 1:		/* the sender's mailbox or system */
		return detail != 7 && detail != 8;
	case 2:		/* the message too long for the mailbox */
		return detail != 3;
	case 3:		/* too big for the system */
		return detail != 4;
	case 4:		/* time expired: temporary failures gave up */
		return detail != 7;
	case 5:		/* the protocol */
	case 6:		/* the content */
	case 7:		/* policy, security */
		return 0;
	default:
		return 1;
	}
}

/* The enhanced code of an SMTP reply line ("550 5.1.1 ..."), or NULL. */
static const char *
reply_enhanced(const char *line)
{
	if (line == NULL || strlen(line) < 4 || !isdigit((unsigned char)
	    line[0]) || !isdigit((unsigned char)line[1]) ||
	    !isdigit((unsigned char)line[2]) || (line[3] != ' ' &&
	    line[3] != '-'))
		return NULL;
	return line + 4;
}

int
policy_unreachable(const char *channel, enum msg_status status,
    const json_t *reply, const char *err, char *why, size_t whylen)
{
	const char	*prov, *cmd;
	json_t		*code;
	int		 ch = -1;

	if (status != MSG_PERMFAIL || channel == NULL ||
	    (prov = json_string_value(json_object_get(reply, "provider"))) ==
	    NULL)
		return -1;
	code = json_object_get(reply, "code");
	if (strcmp(prov, "twilio") == 0 && json_is_integer(code))
		ch = twilio_unreachable(channel, (long)json_integer_value(code));
	else if (strcmp(prov, "smpp") == 0 && strcmp(channel, "sms") == 0 &&
	    json_integer_value(json_object_get(reply, "commandStatus")) ==
	    SMPP_RINVDSTADR)
		ch = CHANNEL_SMS;
	else if (strcmp(prov, "smtp") == 0 && strcmp(channel, "email") == 0 &&
	    (cmd = json_string_value(json_object_get(reply, "command"))) !=
	    NULL && strcasecmp(cmd, "RCPT TO") == 0 && json_is_integer(code) &&
	    policy_email_unreachable(reply_enhanced(json_string_value(
	    json_object_get(reply, "reply"))), (long)json_integer_value(code)))
		ch = CHANNEL_EMAIL;
	if (ch != -1)
		snprintf(why, whylen, "%s", err != NULL && *err != '\0' ? err :
		    prov);
	return ch;
}

int
policy_receipt_unreachable(const char *channel, const json_t *receipt,
    char *why, size_t whylen)
{
	const char	*prov, *status, *theirs, *code, *msg;
	const json_t	*error;
	char		*end;
	long		 n;
	int		 ch = -1;

	prov = json_string_value(json_object_get(receipt, "provider"));
	status = json_string_value(json_object_get(receipt, "status"));
	theirs = json_string_value(json_object_get(receipt, "providerStatus"));
	error = json_object_get(receipt, "error");
	code = json_string_value(json_object_get(error, "code"));
	msg = json_string_value(json_object_get(error, "message"));
	if (channel == NULL || prov == NULL || status == NULL || code ==
	    NULL || strcmp(status, "undelivered") != 0)
		return -1;
	if (strcmp(prov, "email") == 0) {
		/* A bounce: failed for good, not delayed nor given up. */
		if (strcmp(channel, "email") != 0 || theirs == NULL ||
		    strcasecmp(theirs, "failed") != 0 ||
		    !policy_email_unreachable(code, 0))
			return -1;
		ch = CHANNEL_EMAIL;
		snprintf(why, whylen, "bounce %s: %s", code, msg ? msg :
		    "failed");
	} else if (strcmp(prov, "twilio") == 0) {
		n = strtol(code, &end, 10);
		if (*code == '\0' || *end != '\0' ||
		    (ch = twilio_unreachable(channel, n)) == -1)
			return -1;
		snprintf(why, whylen, "Twilio error %s: %s", code, msg ? msg :
		    status);
	}
	return ch;
}

size_t
policy_schedule_parse(const char *s, long *out, size_t max)
{
	char	*end;
	long	 v;
	size_t	 n = 0;

	if (s == NULL || *s == '\0')
		return 0;
	for (;;) {
		if (*s < '0' || *s > '9')
			return 0;
		v = strtol(s, &end, 10);
		if (v < 1 || v > POLICY_RETRY_AFTER_MAX || n == max)
			return 0;
		out[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
}

enum msg_status
policy_webhook_http(long code)
{
	if (code >= 200 && code <= 299)
		return MSG_OK;
	return code == 410 ? MSG_PERMFAIL : MSG_TEMPFAIL;
}

long
policy_webhook_delay(long failures, unsigned rnd, long retry_after,
    const long *schedule, size_t n)
{
	long	delay;

	if (failures < 1 || (size_t)failures > n)
		return -1;
	delay = schedule[failures - 1];
	delay = delay * 8 / 10 + (long)(rnd % (unsigned)(delay * 4 / 10 + 1));
	if (delay < 1)
		delay = 1;
	retry_after = policy_retry_after(retry_after);
	return retry_after > delay ? retry_after : delay;
}

size_t
policy_webhook_next(const struct policy_webhook_client *c, size_t n,
    size_t cap, size_t *turn)
{
	size_t	i, k, busy = 0, active = 0, idle = 0, share;

	for (i = 0; i < n; i++) {
		busy += c[i].busy;
		if (c[i].busy > 0 || c[i].due > 0)
			active++;
		if (c[i].wants && c[i].busy == 0)
			idle++;
	}
	if (busy >= cap || active == 0)
		return n;
	share = cap / active > 1 ? cap / active : 1;
	for (k = 0; k < n; k++) {
		i = (*turn + k) % n;
		if (c[i].due == 0 || c[i].busy >= share)
			continue;
		/* A further one keeps a free one for each client with none. */
		if (c[i].busy > 0 && cap - busy - 1 < idle)
			continue;
		*turn = (i + 1) % n;
		return i;
	}
	return n;
}

unsigned
policy_jitter(void)
{
	unsigned short	r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned short)getpid();
	return r;
}

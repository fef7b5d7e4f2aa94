/*
 * provider_twilio.c: SMS through Twilio's Messages API and calls through
 * its Calls API with TwiML <Say> or <Play>, HTTP Basic auth with the
 * account SID and auth token.  The message or call SID Twilio returns is
 * recorded in the spool file.
 *
 *	[sms]
 *	provider = twilio
 *	account-sid = AC...
 *	auth-token-file = /etc/msgspool/twilio.token
 *	from = +15005550006
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/provider.h"

#define TWILIO_API	"https://api.twilio.com"

struct twilio_state {
	char	*sid;
	char	*token;
	char	*from;
	char	*base;
	char	*public;	/* public-url without its last "/", or NULL */
	long	 timeout;
};

static void
twilio_free(void *state)
{
	struct twilio_state	*st = state;

	if (st == NULL)
		return;
	free(st->sid);
	free(st->token);
	free(st->from);
	free(st->base);
	free(st->public);
	free(st);
}

static void *
twilio_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct twilio_state	*st;
	const char		*sid, *from, *base;
	size_t			 len;

	(void)spool_root;
	if ((sid = config_get(cfg, section, "account-sid")) == NULL) {
		snprintf(err, errlen, "[%s] provider twilio needs account-sid",
		    section);
		return NULL;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL)
		goto nomem;
	if ((st->token = config_secret(cfg, section, "auth-token", err,
	    errlen)) == NULL) {
		twilio_free(st);
		return NULL;
	}
	from = config_get(cfg, section, "from");
	base = config_get(cfg, section, "api-base");
	if ((st->sid = strdup(sid)) == NULL ||
	    (from != NULL && (st->from = strdup(from)) == NULL) ||
	    (st->base = strdup(base ? base : TWILIO_API)) == NULL)
		goto nomem;
	len = strlen(st->base);
	while (len > 0 && st->base[len - 1] == '/')
		st->base[--len] = '\0';
	/* With a public URL, Twilio reports each status to us. */
	if ((base = config_get(cfg, NULL, "public-url")) != NULL) {
		if ((st->public = strdup(base)) == NULL)
			goto nomem;
		len = strlen(st->public);
		while (len > 0 && st->public[len - 1] == '/')
			st->public[--len] = '\0';
	}
	if (provider_timeout(cfg, section, &st->timeout, err, errlen) == -1) {
		twilio_free(st);
		return NULL;
	}
	return st;
nomem:
	snprintf(err, errlen, "out of memory");
	twilio_free(st);
	return NULL;
}

/* Append name=value, form-encoded. */
static void
form(struct buf *b, CURL *e, const char *name, const char *value)
{
	char	*v;

	if (value == NULL)
		return;
	if ((v = curl_easy_escape(e, value, 0)) == NULL) {
		b->failed = 1;
		return;
	}
	if (b->len > 0)
		buf_putc(b, '&');
	buf_puts(b, name);
	buf_putc(b, '=');
	buf_puts(b, v);
	curl_free(v);
}

/* Append s escaped for XML text and attribute values. */
static void
xml(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '&': buf_puts(b, "&amp;"); break;
		case '<': buf_puts(b, "&lt;"); break;
		case '>': buf_puts(b, "&gt;"); break;
		case '"': buf_puts(b, "&quot;"); break;
		case '\'': buf_puts(b, "&apos;"); break;
		default: buf_putc(b, *s); break;
		}
	}
}

/* The TwiML of a call: <Say> the text, or <Play> the audio URL. */
static char *
twiml(const struct job *job)
{
	struct buf	 b = { NULL, 0, 0, 0 };
	const char	*say, *play, *lang;

	say = provider_msg_str(job, "say");
	play = provider_msg_str(job, "play");
	lang = provider_msg_str(job, "language");
	buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response>");
	if (say != NULL) {
		buf_puts(&b, "<Say");
		if (lang != NULL) {
			buf_puts(&b, " language=\"");
			xml(&b, lang);
			buf_putc(&b, '"');
		}
		buf_putc(&b, '>');
		xml(&b, say);
		buf_puts(&b, "</Say>");
	} else {
		buf_puts(&b, "<Play>");
		xml(&b, play ? play : "");
		buf_puts(&b, "</Play>");
	}
	buf_puts(&b, "</Response>");
	return buf_take(&b, NULL);
}

static void
twilio_start(void *state, struct job *job)
{
	struct twilio_state	*st = state;
	struct buf		 body = { NULL, 0, 0, 0 };
	const char		*channel, *from;
	char			*url = NULL, *tw;
	int			 call;

	job->status = MSG_TEMPFAIL;
	channel = json_string_value(json_object_get(job->doc, "channel"));
	call = channel != NULL && strcmp(channel, "voice") == 0;
	from = provider_msg_str(job, "from");
	if (from == NULL)
		from = st->from;
	if (from == NULL) {
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "no sender: set from in "
		    "the config section (or callerId for calls)");
		return;
	}
	if (asprintf(&url, "%s/2010-04-01/Accounts/%s/%s.json", st->base,
	    st->sid, call ? "Calls" : "Messages") == -1 ||
	    (job->easy = provider_easy(job, url, st->timeout)) == NULL) {
		free(url);
		snprintf(job->err, sizeof(job->err), "out of memory");
		return;
	}
	free(url);
	form(&body, job->easy, "To", provider_msg_str(job, "to"));
	form(&body, job->easy, "From", from);
	if (call) {
		tw = twiml(job);
		form(&body, job->easy, "Twiml", tw);
		free(tw);
	} else
		form(&body, job->easy, "Body", provider_msg_str(job, "body"));
	/* The receipt names our id: it needs no index to find us. */
	if (st->public != NULL && asprintf(&url, "%s/receipts/twilio?id=%s",
	    st->public, msgdoc_id(job->doc)) != -1) {
		form(&body, job->easy, "StatusCallback", url);
		free(url);
	}
	job->body = buf_take(&body, NULL);
	curl_easy_setopt(job->easy, CURLOPT_POSTFIELDS, job->body ?
	    job->body : "");
	curl_easy_setopt(job->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	curl_easy_setopt(job->easy, CURLOPT_USERNAME, st->sid);
	curl_easy_setopt(job->easy, CURLOPT_PASSWORD, st->token);
}

static void
twilio_finish(void *state, struct job *job, CURLcode rc, long code)
{
	json_t	*body;
	char	 what[400];

	(void)state;
	body = json_loadb(job->resp.p ? job->resp.p : "", job->resp.len, 0,
	    NULL);
	if (rc == CURLE_OK && code >= 200 && code < 300 &&
	    json_is_string(json_object_get(body, "sid"))) {
		job->reply = json_pack("{s:s, s:O, s:O?, s:i}", "provider",
		    "twilio", "sid", json_object_get(body, "sid"), "status",
		    json_object_get(body, "status"), "httpStatus", (int)code);
		job->status = MSG_OK;
	} else {
		/* Twilio's errors: {"code","message","more_info","status"}. */
		snprintf(what, sizeof(what), "Twilio error %lld: %s",
		    (long long)json_integer_value(json_object_get(body,
		    "code")), json_string_value(json_object_get(body,
		    "message")) ? json_string_value(json_object_get(body,
		    "message")) : "no message");
		if (rc == CURLE_OK && code >= 200 && code < 300)
			snprintf(what, sizeof(what), "no sid in the reply");
		provider_http_outcome(job, rc, code, json_is_object(body) ||
		    (code >= 200 && code < 300) ? what : NULL);
		/* Its code is the status object's (msgspool-spool(5)). */
		if (json_is_object(body)) {
			json_object_set_new(body, "provider",
			    json_string("twilio"));
			job->reply = json_incref(body);
		}
	}
	json_decref(body);
}

const struct provider provider_twilio = {
	.name = "twilio",
	.channels = "sms,voice",
	.init = twilio_init,
	.start = twilio_start,
	.finish = twilio_finish,
	.free_state = twilio_free,
};

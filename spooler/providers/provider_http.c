/*
 * provider_http.c: a generic JSON webhook.  Each message is POSTed to
 * [section] url as {"id","channel","client","message"}, with the
 * section's "header = Name: value" lines; any 2xx is a send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/provider.h"

struct http_state {
	char	*url;
	char	**headers;
	size_t	 nheaders;
	long	 timeout;
};

static void
http_free(void *state)
{
	struct http_state	*st = state;
	size_t			 i;

	if (st == NULL)
		return;
	for (i = 0; i < st->nheaders; i++)
		free(st->headers[i]);
	free(st->headers);
	free(st->url);
	free(st);
}

static void *
http_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct http_state	*st;
	const char		*url, *h;
	char			**v;
	size_t			 i;

	(void)spool_root;
	if ((url = config_get(cfg, section, "url")) == NULL) {
		snprintf(err, errlen, "[%s] provider http needs url", section);
		return NULL;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->url = strdup(url)) == NULL)
		goto nomem;
	for (i = 0; (h = config_get_n(cfg, section, "header", i)) != NULL;
	    i++) {
		if (strchr(h, ':') == NULL || strpbrk(h, "\r\n")) {
			snprintf(err, errlen, "[%s] header must be "
			    "'Name: value'", section);
			http_free(st);
			return NULL;
		}
		if ((v = reallocarray(st->headers, st->nheaders + 1,
		    sizeof(*v))) == NULL)
			goto nomem;
		st->headers = v;
		if ((v[st->nheaders] = strdup(h)) == NULL)
			goto nomem;
		st->nheaders++;
	}
	if (provider_timeout(cfg, section, &st->timeout, err, errlen) == -1) {
		http_free(st);
		return NULL;
	}
	return st;
nomem:
	snprintf(err, errlen, "out of memory");
	http_free(st);
	return NULL;
}

static void
http_start(void *state, struct job *job)
{
	struct http_state	*st = state;
	json_t			*what;
	size_t			 i;

	job->status = MSG_TEMPFAIL;
	what = json_pack("{s:O, s:O, s:O, s:O}", "id", json_object_get(job->doc,
	    "id"), "channel", json_object_get(job->doc, "channel"), "client",
	    json_object_get(job->doc, "client"), "message",
	    json_object_get(job->doc, "message"));
	job->body = what ? json_dumps(what, JSON_COMPACT) : NULL;
	json_decref(what);
	if (job->body == NULL || (job->easy = provider_easy(job, st->url,
	    st->timeout)) == NULL) {
		snprintf(job->err, sizeof(job->err), "out of memory");
		return;
	}
	job->headers = curl_slist_append(NULL,
	    "Content-Type: application/json");
	for (i = 0; i < st->nheaders; i++)
		job->headers = curl_slist_append(job->headers, st->headers[i]);
	curl_easy_setopt(job->easy, CURLOPT_HTTPHEADER, job->headers);
	curl_easy_setopt(job->easy, CURLOPT_POSTFIELDS, job->body);
}

static void
http_finish(void *state, struct job *job, CURLcode rc, long code)
{
	json_t	*body;

	(void)state;
	if (rc == CURLE_OK && code >= 200 && code < 300) {
		body = json_loadb(job->resp.p ? job->resp.p : "", job->resp.len,
		    0, NULL);
		job->reply = json_pack("{s:s, s:i, s:o?}", "provider", "http",
		    "status", (int)code, "body", body);
		job->status = MSG_OK;
		return;
	}
	provider_http_outcome(job, rc, code, job->resp.p);
}

const struct provider provider_http = {
	.name = "http",
	.channels = "sms,voice,ott",
	.init = http_init,
	.start = http_start,
	.finish = http_finish,
	.free_state = http_free,
};

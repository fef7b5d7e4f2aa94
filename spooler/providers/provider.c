/*
 * provider.c: routing by channel, and what the HTTP providers share: easy handles and the outcome policy of
 * msgspoold(8) (policy.h).
 */
#include <stdio.h>
#include <string.h>

#include "providers/policy.h"
#include "providers/provider.h"

int
provider_serves(const struct provider *p, const char *channel)
{
	const char	*c = p->channels;
	size_t		 len = strlen(channel);

	while ((c = strstr(c, channel)) != NULL) {
		if ((c == p->channels || c[-1] == ',') &&
		    (c[len] == '\0' || c[len] == ','))
			return 1;
		c += len;
	}
	return 0;
}

static size_t
gather(char *p, size_t size, size_t n, void *arg)
{
	struct job	*job = arg;

	/* A provider's answer is small; a huge one is cut, not stored. */
	if (job->resp.len + size * n > 1024 * 1024)
		return size * n;
	if (buf_add(&job->resp, p, size * n) == -1)
		return 0;
	return size * n;
}

CURL *
provider_easy(struct job *job, const char *url, long timeout)
{
	CURL	*e;

	if ((e = curl_easy_init()) == NULL)
		return NULL;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, job);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, gather);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, job);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, job->curlerr);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, timeout);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, timeout < 10 ? timeout :
	    10L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "msgspool/1");
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https,smtp,smtps");
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	job->curlerr[0] = '\0';
	return e;
}

void
provider_http_outcome(struct job *job, CURLcode rc, long code,
    const char *what)
{
	if (rc != CURLE_OK) {
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "%s",
		    job->curlerr[0] ? job->curlerr : curl_easy_strerror(rc));
		return;
	}
	/* Called for what did not succeed: a stray 2xx is no success. */
	job->status = policy_http(code) == MSG_TEMPFAIL ? MSG_TEMPFAIL :
	    MSG_PERMFAIL;
	snprintf(job->err, sizeof(job->err), "HTTP %ld%s%s", code,
	    what ? ": " : "", what ? what : "");
}

int
provider_timeout(const struct config *cfg, const char *section, long *out,
    char *err, size_t errlen)
{
	if (config_seconds(cfg, section, "timeout", 30, out) == -1 ||
	    *out < 1) {
		snprintf(err, errlen, "[%s] timeout: not a duration", section);
		return -1;
	}
	return 0;
}

const json_t *
provider_message(const struct job *job)
{
	return json_object_get(job->doc, "message");
}

const char *
provider_msg_str(const struct job *job, const char *key)
{
	return json_string_value(json_object_get(provider_message(job), key));
}

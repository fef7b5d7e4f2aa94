/*
 * provider_whatsapp.c: OTT messages through the Meta WhatsApp Cloud API
 * as template messages: the template's Provider-Template name and
 * Language, its parameters as body parameters in order, a Bearer token.
 * The wamid the API returns is recorded in the spool file.
 *
 *	[ott.1]
 *	provider = whatsapp
 *	phone-number-id = 106540352242922
 *	token-file = /etc/msgspool/whatsapp.token
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/provider.h"

#define GRAPH_API	"https://graph.facebook.com/v21.0"

struct whatsapp_state {
	char	*phone;
	char	*auth;		/* "Authorization: Bearer TOKEN" */
	char	*base;
	long	 timeout;
};

static void
whatsapp_free(void *state)
{
	struct whatsapp_state	*st = state;

	if (st == NULL)
		return;
	free(st->phone);
	free(st->auth);
	free(st->base);
	free(st);
}

static void *
whatsapp_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct whatsapp_state	*st;
	const char		*phone, *base;
	char			*token;
	size_t			 len;

	(void)spool_root;
	if ((phone = config_get(cfg, section, "phone-number-id")) == NULL) {
		snprintf(err, errlen, "[%s] provider whatsapp needs "
		    "phone-number-id", section);
		return NULL;
	}
	if ((token = config_secret(cfg, section, "token", err, errlen)) ==
	    NULL)
		return NULL;
	base = config_get(cfg, section, "api-base");
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->phone = strdup(phone)) == NULL ||
	    (asprintf(&st->auth, "Authorization: Bearer %s", token) == -1 &&
	    (st->auth = NULL) == NULL) ||
	    (st->base = strdup(base ? base : GRAPH_API)) == NULL) {
		free(token);
		snprintf(err, errlen, "out of memory");
		whatsapp_free(st);
		return NULL;
	}
	free(token);
	len = strlen(st->base);
	while (len > 0 && st->base[len - 1] == '/')
		st->base[--len] = '\0';
	if (provider_timeout(cfg, section, &st->timeout, err, errlen) == -1) {
		whatsapp_free(st);
		return NULL;
	}
	return st;
}

/* The Cloud API body of a template message. */
static json_t *
template_message(const struct job *job)
{
	const char	*name, *lang;
	json_t		*params, *p, *list, *tmpl, *msg;
	size_t		 i;

	name = provider_msg_str(job, "providerTemplate");
	if (name == NULL)
		name = provider_msg_str(job, "templateId");
	lang = provider_msg_str(job, "language");
	tmpl = json_pack("{s:s, s:{s:s}}", "name", name ? name : "",
	    "language", "code", lang ? lang : "en_US");
	params = json_object_get(provider_message(job), "parameters");
	if (tmpl != NULL && json_array_size(params) > 0) {
		list = json_array();
		json_array_foreach(params, i, p)
			json_array_append_new(list, json_pack("{s:s, s:O}",
			    "type", "text", "text", p));
		json_object_set_new(tmpl, "components", json_pack(
		    "[{s:s, s:o}]", "type", "body", "parameters", list));
	}
	msg = json_pack("{s:s, s:s, s:O, s:s, s:o}", "messaging_product",
	    "whatsapp", "recipient_type", "individual", "to",
	    json_object_get(provider_message(job), "to"), "type", "template",
	    "template", tmpl);
	return msg;
}

static void
whatsapp_start(void *state, struct job *job)
{
	struct whatsapp_state	*st = state;
	json_t			*msg;
	char			*url = NULL;

	job->status = MSG_TEMPFAIL;
	msg = template_message(job);
	job->body = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (job->body == NULL ||
	    asprintf(&url, "%s/%s/messages", st->base, st->phone) == -1 ||
	    (job->easy = provider_easy(job, url, st->timeout)) == NULL) {
		free(url);
		snprintf(job->err, sizeof(job->err), "out of memory");
		return;
	}
	free(url);
	job->headers = curl_slist_append(NULL,
	    "Content-Type: application/json");
	job->headers = curl_slist_append(job->headers, st->auth);
	curl_easy_setopt(job->easy, CURLOPT_HTTPHEADER, job->headers);
	curl_easy_setopt(job->easy, CURLOPT_POSTFIELDS, job->body);
}

static void
whatsapp_finish(void *state, struct job *job, CURLcode rc, long code)
{
	json_t		*body, *error, *wamid;
	char		 what[400];

	(void)state;
	body = json_loadb(job->resp.p ? job->resp.p : "", job->resp.len, 0,
	    NULL);
	wamid = json_object_get(json_array_get(json_object_get(body,
	    "messages"), 0), "id");
	if (rc == CURLE_OK && code >= 200 && code < 300 &&
	    json_is_string(wamid)) {
		job->reply = json_pack("{s:s, s:O, s:i}", "provider",
		    "whatsapp", "wamid", wamid, "httpStatus", (int)code);
		job->status = MSG_OK;
	} else {
		/* Graph API errors: {"error":{"message","type","code",...}}. */
		error = json_object_get(body, "error");
		snprintf(what, sizeof(what), "WhatsApp error %lld: %s",
		    (long long)json_integer_value(json_object_get(error,
		    "code")), json_string_value(json_object_get(error,
		    "message")) ? json_string_value(json_object_get(error,
		    "message")) : "no message");
		if (rc == CURLE_OK && code >= 200 && code < 300)
			snprintf(what, sizeof(what), "no message id in the "
			    "reply");
		provider_http_outcome(job, rc, code, error != NULL ||
		    (code >= 200 && code < 300) ? what : NULL);
		/* Its code is the status object's (msgspool-spool(5)). */
		if (json_is_object(body)) {
			json_object_set_new(body, "provider",
			    json_string("whatsapp"));
			job->reply = json_incref(body);
		}
	}
	json_decref(body);
}

const struct provider provider_whatsapp = {
	.name = "whatsapp",
	.channels = "ott",
	.init = whatsapp_init,
	.start = whatsapp_start,
	.finish = whatsapp_finish,
	.free_state = whatsapp_free,
};

/*
 * fuzz_request: the whole request path of one POST program of cgi-bin/,
 * in process.  Built once per program: CGI_SOURCE names its file, which
 * is included here with its main renamed, so the target runs the very
 * struct endpoint and handler the program serves, through cgi_run.
 *
 * The input is the request body, sent as a web server would (POST,
 * CONTENT_LENGTH, Content-Type application/json, a valid key with every
 * scope) to a scratch instance: a config with small limits and two OTT
 * channels, a keys file, templates like the black-box tests', a spool
 * holding one upload.  The spool is healthy, so after each request:
 *
 *  - cgi_run returned 0, and the reply is "Status:", header lines, a
 *    blank line and a body of Content-Length bytes, JSON (a problem
 *    naming the same status when it is one);
 *  - the status is a success or a client error (400, 413): a 5xx or a
 *    per-entry "retry" from a healthy spool is a bug;
 *  - tmp/ is empty; the ids in the reply are exactly the files in new/
 *    and deferred/ (the uploads, for the upload route), each once, of
 *    mode 0640 or less, a spool document of this client whose "id" is
 *    its name; no blob (blobs/ID.N) but a queued message's; and an email
 *    queued is built (message_build, as msgspoold sends it) into a
 *    well-formed message;
 *  - no file descriptor is left open.
 *
 * Then the spool is emptied for the next input.  FUZZ_VERBOSE=1 in the
 * environment prints each reply (to replay a crash).
 *
 * The receipts program (POST /receipts/PROVIDER) is fuzzed the same way,
 * its input's first byte choosing the provider (byte % 3) and the config
 * (byte / 3 % 3), the rest signed as the provider would, so that the
 * fuzzer gets past the signature; a receipt is stored (as many as the
 * reply says, each a document of that provider) or refused (403 for a
 * bad one), and never queues a message; so is an inbound message (kept
 * in inbox/ and noted in inbox-new/, as many as the reply's "received",
 * fewer for a provider's id repeated, one for Twilio's TwiML answer).
 * The configs (confs): good
 * secrets; every one empty; or empty beside its NAME-file, and a
 * receipt-secret of one byte.  With the last two the body is signed with
 * the empty or short key, as anyone could: it must be refused (403).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cgireply.h"
#include "fuzzutil.h"
#include "http/cgi.h"
#include "receiptsign.h"

#include "base/util.h"
#include "content/keys.h"
#include "providers/message.h"
#include "spool/inbox.h"
#include "spool/spool.h"

int	cgi_program_main(int, char *[], char *[]);
#define main cgi_program_main
#include CGI_SOURCE
#undef main

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define KEY		"fuzz-request-key"
#define CLIENT		"acme"
/* The upload the seeds' attachmentId names. */
#define UPLOAD_ID	"01J000000000000000000ATTCH"

#define RETRY		"the spool cannot take messages now; retry this "

/* The providers' secrets, so that receipts can be signed as theirs. */
#define PUBLIC_URL	"https://msg.example.com"
#define TWILIO_SID	"ACfuzz"
#define TWILIO_TOKEN	"fuzz-twilio-token"
#define WA_PHONE	"1234567890"
#define WA_SECRET	"fuzz-app-secret"
#define HTTP_SECRET	"whsec_ZnV6ei1yZWNlaXB0LXNlY3JldC0yNGJ5"
#define SHORT_SECRET	"whsec_aw=="	/* one byte */

/* The configs' provider sections, and the keys receipts are signed with. */
static const struct {
	const char	*name, *twilio, *whatsapp, *http;
	const char	*key[3];	/* twilio, whatsapp, http */
} confs[] = {
	{ "msgspool.conf", "auth-token = " TWILIO_TOKEN,
	    "app-secret = " WA_SECRET "\nverify-token = v",
	    "receipt-secret = " HTTP_SECRET,
	    { TWILIO_TOKEN, WA_SECRET, HTTP_SECRET } },
	{ "empty.conf", "auth-token =", "app-secret =\nverify-token =",
	    "receipt-secret =", { "", "", "whsec_" } },
	{ "weak.conf", "auth-token =\nauth-token-file = twilio.token",
	    "app-secret =\napp-secret-file = wa.secret\nverify-token = v",
	    "receipt-secret = " SHORT_SECRET, { "", "", SHORT_SECRET } },
};

static const char *const id_keys[] = { "smsId", "messageId", "callId",
    "attachmentId", NULL };

static struct {
	char		 conf[3][FUZZ_PATH_MAX + 32];	/* MSGSPOOL_CONFIG=... */
	char		 spool[FUZZ_PATH_MAX];
	char		 upload[FUZZ_PATH_MAX];		/* kept between runs */
	struct spool	*s;
	int		 uploads;	/* the route stores uploads */
	int		 receipts;	/* the route stores receipts */
	const char	*channel;
} inst;

static void
write_text(const char *dir, const char *name, const char *text)
{
	char	path[FUZZ_PATH_MAX];

	fuzz_path(path, "%s/%s", dir, name);
	fuzz_write_file(path, text, strlen(text));
}

static void
make_dir(const char *dir, const char *name)
{
	char	path[FUZZ_PATH_MAX];

	fuzz_path(path, "%s/%s", dir, name);
	if (mkdir(path, 0700) == -1)
		fuzz_fail("mkdir %s: %s", path, strerror(errno));
}

static void
write_templates(const char *dir)
{
	static const char *const email[][2] = {
		{ "welcome", "Name: Welcome\nSubject: Welcome, {{first_name}}!\n"
		    "From: hello@acme.example\nTags: onboarding,welcome\n"
		    "Created: 2024-05-01T09:00:00Z\n\n<html><body><p>Hello "
		    "{{first_name}},</p><p>welcome to ACME &amp; friends."
		    "</p></body></html>\n" },
		{ "invoice", "Name: Monthly invoice\nSubject: Your invoice "
		    "{{number}}\nFrom: Billing <billing@acme.example>\n"
		    "Tags: billing\n\n<p>Invoice {{number}}: {{amount}}</p>\n"
		    "<ul><li>{{item}}</li></ul><a href=\"https://acme.example/"
		    "i/{{number}}\">view</a>\n" },
		{ "utf8", "Name: Grüße – € 😀\nSubject: Grüße, {{name}}\n"
		    "From: Post Öffice <post@intl.example>\nTags: ä,ö\n"
		    "Created: 2024-02-02T02:02:02Z\n\n<p>Grüße {{name}}</p>\n" },
		{ "reset-pw.v2", "Name: Password reset\nSubject: Reset your "
		    "password\nFrom: security@acme.example\n\n<p>Reset: "
		    "<a href=\"{{link}}\">{{link}}</a></p>\n" },
		{ "nofrom", "Name: No sender\nSubject: Hi\n\n<p>hi</p>\n" },
	};
	static const char *const ott[][2] = {
		{ "otp", "Name: OTP\nParameters: 1\nLanguage: en\n"
		    "Provider-Template: otp_code\n\nYour code is {{1}}\n" },
		{ "order_update", "Name: Order update\nParameters: 2\n"
		    "Language: en_US\nProvider-Template: order_update\n\n"
		    "Hello {{1}}, your order {{2}} has shipped.\n" },
		{ "plain.v1", "Name: Plain\nParameters: 1\nLanguage: en\n"
		    "Provider-Template: plain_text\n\nNote: {{1}}\n" },
		{ "promo", "Name: Promo\n\nHi {{1}}, use {{ 3 }} by {{2}}\n" },
	};
	char	sub[FUZZ_PATH_MAX], name[160];
	size_t	i;

	make_dir(dir, "templates");
	fuzz_path(sub, "%s/templates", dir);
	make_dir(sub, CLIENT);
	fuzz_path(sub, "%s/templates/" CLIENT, dir);
	make_dir(sub, "email");
	make_dir(sub, "ott");
	fuzz_path(sub, "%s/templates/" CLIENT "/email", dir);
	for (i = 0; i < sizeof(email) / sizeof(email[0]); i++) {
		snprintf(name, sizeof(name), "%s.tmpl", email[i][0]);
		write_text(sub, name, email[i][1]);
	}
	fuzz_path(sub, "%s/templates/" CLIENT "/ott", dir);
	for (i = 0; i < sizeof(ott) / sizeof(ott[0]); i++) {
		snprintf(name, sizeof(name), "%s.tmpl", ott[i][0]);
		write_text(sub, name, ott[i][1]);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	 dir[FUZZ_PATH_MAX], hash[KEY_HASH_HEX + 1], text[2048];
	char	 now[32], err[256];
	json_t	*doc;
	size_t	 i;

	(void)argc;
	(void)argv;
	fuzz_scratch(dir, sizeof(dir), "request");
	fuzz_path(inst.spool, "%s/spool", dir);
	/* Small limits, so that inputs of a few KiB reach them. */
	for (i = 0; i < sizeof(confs) / sizeof(confs[0]); i++) {
		snprintf(inst.conf[i], sizeof(inst.conf[i]),
		    "MSGSPOOL_CONFIG=%s/%s", dir, confs[i].name);
		snprintf(text, sizeof(text), "spool = %s/spool\n"
		    "keys = %s/keys\ntemplates = templates\nmax-body = 64K\n"
		    "max-email-body = 256K\nmax-batch = 8\n"
		    "max-attachment = 4K\nmax-message-attachments = 6K\n"
		    "public-url = " PUBLIC_URL "/\n[sms]\nprovider = twilio\n"
		    "account-sid = " TWILIO_SID "\n%s\nfrom = +15005550006\n"
		    "[ott.1]\nprovider = whatsapp\nphone-number-id = "
		    WA_PHONE "\ntoken = t\n%s\n[ott.3]\nprovider = file\n"
		    "[voice]\nprovider = http\nurl = http://127.0.0.1:9/hook\n"
		    "%s\n[client." CLIENT "]\ninbound = +15005550006 "
		    "+15550783881\n", dir, dir, confs[i].twilio,
		    confs[i].whatsapp, confs[i].http);
		write_text(dir, confs[i].name, text);
	}
	write_text(dir, "twilio.token", TWILIO_TOKEN "\n");
	write_text(dir, "wa.secret", WA_SECRET "\n");
	keys_hash_hex(KEY, strlen(KEY), hash);
	snprintf(text, sizeof(text), "# fuzz instance\n" CLIENT ":%s:*\n"
	    "other:%064d:sms\n", hash, 0);
	write_text(dir, "keys", text);
	write_templates(dir);
	if ((inst.s = spool_open(inst.spool, 1, err, sizeof(err))) == NULL)
		fuzz_fail("spool_open: %s", err);
	rfc3339_format(time(NULL), now, sizeof(now));
	doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:s, s:s}",
	    "version", MSGDOC_VERSION, "attachmentId", UPLOAD_ID,
	    "client", CLIENT, "attachmentName", "notes.txt",
	    "contentType", "text/plain", "size", 13, "created", now,
	    "content", "aGVsbG8gdXBsb2FkCg==");
	if (spool_upload_store(inst.s, CLIENT, doc) != MSG_OK)
		fuzz_fail("spool_upload_store failed");
	json_decref(doc);
	fuzz_path(inst.upload, "%s/uploads/" CLIENT "/" UPLOAD_ID ".json",
	    inst.spool);
	inst.uploads = strcmp(CGI_PROGRAM, "attachments") == 0;
	inst.receipts = strcmp(CGI_PROGRAM, "receipts") == 0;
	message_init();
	inst.channel = strncmp(CGI_PROGRAM, "sms", 3) == 0 ? "sms" :
	    strncmp(CGI_PROGRAM, "ott", 3) == 0 ? "ott" :
	    strncmp(CGI_PROGRAM, "voice", 5) == 0 ? "voice" : "email";
	return 0;
}

/* Add the ids of one reply object (and its "error" check). */
static void
entry_ids(const json_t *e, json_t *ids)
{
	const json_t	*v;
	const char	*err;
	size_t		 i;

	for (i = 0; id_keys[i] != NULL; i++) {
		v = json_object_get(e, id_keys[i]);
		if (json_is_string(v)) {
			if (json_object_get(ids, json_string_value(v)))
				fuzz_fail("id %s twice in the reply",
				    json_string_value(v));
			json_object_set_new(ids, json_string_value(v),
			    json_true());
		}
	}
	/*
	 * The spool's own words (BATCH_TRY_AGAIN), whole: a message about a
	 * client's field starts with its name, which may be anything, and
	 * has a ':' after it.
	 */
	err = json_string_value(json_object_get(e, "error"));
	if (err != NULL && strncmp(err, RETRY, strlen(RETRY)) == 0 &&
	    strchr(err, ':') == NULL)
		fuzz_fail("a healthy spool answered '%s'", err);
}

/* The ids a reply gives: top level, and in its lists of results. */
static json_t *
reply_ids(const json_t *body)
{
	static const char *const lists[] = { "recipients", "calls", NULL };
	const json_t	*e;
	json_t		*ids = json_object();
	size_t		 i, j;

	if (json_is_array(body))
		json_array_foreach(body, i, e)
			entry_ids(e, ids);
	else {
		entry_ids(body, ids);
		for (j = 0; lists[j] != NULL; j++)
			json_array_foreach(json_object_get(body, lists[j]),
			    i, e)
				entry_ids(e, ids);
	}
	return ids;
}

/* Add the ids of the files of dir (spool-relative) to files. */
static void
dir_ids(const char *rel, json_t *files, const char *skip)
{
	char		 path[FUZZ_PATH_MAX], id[SPOOL_ID_LEN + 1];
	DIR		*d;
	struct dirent	*de;

	fuzz_path(path, "%s/%s", inst.spool, rel);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || (skip != NULL &&
		    strcmp(de->d_name, skip) == 0))
			continue;
		if (strlen(de->d_name) != SPOOL_ID_LEN + 5 ||
		    strcmp(de->d_name + SPOOL_ID_LEN, ".json") != 0)
			fuzz_fail("%s/%s: not ID.json", rel, de->d_name);
		memcpy(id, de->d_name, SPOOL_ID_LEN);
		id[SPOOL_ID_LEN] = '\0';
		json_object_set_new(files, id, json_string(rel));
	}
	closedir(d);
}

/* A queued file: mode 0640 or less, a document of ours named by its id. */
static void
check_file(const char *id, const char *rel)
{
	char		 path[FUZZ_PATH_MAX], name[SPOOL_NAME_MAX], err[512];
	struct stat	 st;
	json_t		*doc;
	const json_t	*msg;
	struct message	*m;
	enum msg_status	 ms;

	snprintf(name, sizeof(name), "%s.json", id);
	fuzz_path(path, "%s/%s/%s", inst.spool, rel, name);
	/* msgspool-spool(5): mode 0640 less the umask, never more. */
	if (lstat(path, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 07777 & ~0640) != 0 || (st.st_mode & 0600) != 0600)
		fuzz_fail("%s/%s: not a regular file of mode 0640 or less",
		    rel, name);
	if (inst.uploads)
		return;
	if ((doc = spool_load(inst.s, strcmp(rel, "new") == 0 ? SPOOL_NEW :
	    SPOOL_DEFERRED, name, err, sizeof(err))) == NULL)
		fuzz_fail("spool_load: %s", err);
	if (strcmp(fuzz_str(doc, "id"), id) != 0 ||
	    strcmp(fuzz_str(doc, "client"), CLIENT) != 0 ||
	    strcmp(fuzz_str(doc, "channel"), inst.channel) != 0)
		fuzz_fail("%s/%s: id, client or channel wrong", rel, name);
	msg = json_object_get(doc, "message");
	if (!json_is_object(msg))
		fuzz_fail("%s/%s: no message", rel, name);
	if (strcmp(inst.channel, "email") == 0) {
		/* What msgspoold's file and smtp providers send. */
		if ((m = message_build(inst.s, name, id, msg, NULL, NULL,
		    &ms, err, sizeof(err))) == NULL)
			fuzz_fail("%s: message_build: %s", name, err);
		fuzz_check_message(msg, m->data, m->len);
		message_free(m);
	}
	json_decref(doc);
}

/* Each blob (blob.h: blobs/ID.N) belongs to a message queued. */
static void
check_blobs(const json_t *files)
{
	char		 path[FUZZ_PATH_MAX], id[SPOOL_ID_LEN + 1];
	DIR		*d;
	struct dirent	*de;

	fuzz_path(path, "%s/blobs", inst.spool);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(id, sizeof(id), "%s", de->d_name);
		if (strlen(de->d_name) < SPOOL_ID_LEN + 2 ||
		    de->d_name[SPOOL_ID_LEN] != '.' ||
		    json_object_get(files, id) == NULL)
			fuzz_fail("blobs/%s belongs to no message queued",
			    de->d_name);
	}
	closedir(d);
}

/* Nothing left in tmp/: every temporary file committed or removed. */
static void
check_tmp(void)
{
	char		 tmp[FUZZ_PATH_MAX];
	DIR		*d;
	struct dirent	*de;

	fuzz_path(tmp, "%s/tmp", inst.spool);
	if ((d = opendir(tmp)) == NULL)
		fuzz_fail("no tmp/");
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			fuzz_fail("tmp/%s left behind", de->d_name);
	closedir(d);
}

static void
check_spool(int status, const json_t *body)
{
	json_t		*ids, *files;
	const char	*id;
	json_t		*v;

	check_tmp();
	files = json_object();
	dir_ids("new", files, NULL);
	dir_ids("deferred", files, NULL);
	if (inst.uploads) {
		if (json_object_size(files) > 0)
			fuzz_fail("the upload route queued a message");
		dir_ids("uploads/" CLIENT, files, UPLOAD_ID ".json");
	}
	ids = status < 300 ? reply_ids(body) : json_object();
	json_object_foreach(files, id, v)
		if (json_object_get(ids, id) == NULL)
			fuzz_fail("%s/%s.json is in no reply (status %d)",
			    json_string_value(v), id, status);
	json_object_foreach(ids, id, v)
		if (json_object_get(files, id) == NULL)
			fuzz_fail("the reply's %s is in no file", id);
	json_object_foreach(files, id, v)
		check_file(id, json_string_value(v));
	check_blobs(files);
	json_decref(ids);
	json_decref(files);
}

/* The request an input makes: its body and CGI environment. */
struct req {
	const uint8_t	*body;
	size_t		 len;
	const char	*provider;	/* receipts: twilio, whatsapp, http */
	int		 weak;		/* receipts: signed with a weak key */
	char		*envp[12];
	char		 clen[48], path[48], uri[64], sig[128], ts[64];
};

/*
 * The request of an input.  For a send route, the input is the JSON
 * body.  For receipts, its first byte picks the provider (twilio,
 * whatsapp, http) and the config, and the rest is the body, signed as
 * that provider signs it with the config's key (Twilio's signature
 * needs a form to sign).
 */
static void
request_of(const uint8_t *data, size_t size, struct req *r)
{
	static const char *const providers[] = { "twilio", "whatsapp",
	    "http" };
	size_t	 n = 0, c = 0, p;

	memset(r, 0, sizeof(*r));
	r->body = data;
	r->len = size;
	if (inst.receipts && size > 0)
		c = data[0] / 3 % 3;
	r->envp[n++] = "REQUEST_METHOD=POST";
	r->envp[n++] = inst.conf[c];
	r->envp[n++] = r->clen;
	if (!inst.receipts) {
		r->envp[n++] = "CONTENT_TYPE=application/json";
		r->envp[n++] = "HTTP_X_API_KEY=" KEY;
		/* The email route's two URIs, by the input's length. */
		r->envp[n++] = size % 2 ? "REQUEST_URI=/email/v1/deliver" :
		    "REQUEST_URI=/deliver";
	} else if (size > 0) {
		p = data[0] % 3;
		r->provider = providers[p];
		r->weak = c > 0;
		r->body = data + 1;
		r->len = size - 1;
		snprintf(r->path, sizeof(r->path), "PATH_INFO=/%s",
		    r->provider);
		snprintf(r->uri, sizeof(r->uri), "REQUEST_URI=/receipts/%s",
		    r->provider);
		r->envp[n++] = r->path;
		r->envp[n++] = r->uri;
		r->envp[n++] = r->sig;
		r->envp[n++] = p == 0 ? "CONTENT_TYPE=application/"
		    "x-www-form-urlencoded" : "CONTENT_TYPE=application/json";
		snprintf(r->ts, sizeof(r->ts), "HTTP_WEBHOOK_TIMESTAMP=%lld",
		    (long long)time(NULL));
		if (p == 2) {
			r->envp[n++] = "HTTP_WEBHOOK_ID=msg_fuzz";
			r->envp[n++] = r->ts;
		}
		fuzz_receipt_signature(r->provider, confs[c].key[p],
		    PUBLIC_URL "/receipts/twilio", "msg_fuzz",
		    r->ts + strlen("HTTP_WEBHOOK_TIMESTAMP="), r->body, r->len,
		    r->sig, sizeof(r->sig));
	}
	snprintf(r->clen, sizeof(r->clen), "CONTENT_LENGTH=%zu", r->len);
	r->envp[n] = NULL;
}

/*
 * A receipt is stored or refused, never queued: with 200 the receipts/
 * area holds "stored" documents of the provider, else none.
 */
static void
check_receipts(int status, const json_t *body, const char *provider)
{
	char		 path[FUZZ_PATH_MAX], err[256];
	DIR		*d;
	struct dirent	*de;
	json_t		*doc;
	json_int_t	 stored = 0;
	int		 n = 0;

	if (status == 200)
		stored = json_integer_value(json_object_get(body, "stored"));
	fuzz_path(path, "%s/receipts", inst.spool);
	if ((d = opendir(path)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			n++;
			if ((doc = spool_area_load(inst.s, "receipts",
			    de->d_name, err, sizeof(err))) == NULL)
				fuzz_fail("receipts/%s: %s", de->d_name, err);
			if (strcmp(fuzz_str(doc, "provider"), provider) != 0)
				fuzz_fail("receipts/%s: not a %s receipt",
				    de->d_name, provider);
			json_decref(doc);
		}
		closedir(d);
	}
	if (n != stored)
		fuzz_fail("%d receipts stored, the reply (status %d) says "
		    "%lld", n, status, (long long)stored);
}

/*
 * The files of an area of the spool; with provider, each an inbound
 * message of that provider (given a client or none).
 */
static int
area_files(const char *area, const char *provider)
{
	char		 path[FUZZ_PATH_MAX], id[SPOOL_ID_LEN + 1], err[256];
	DIR		*d;
	struct dirent	*de;
	json_t		*doc;
	int		 n = 0;

	fuzz_path(path, "%s/%s", inst.spool, area);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		if (provider == NULL)
			continue;
		snprintf(id, sizeof(id), "%s", de->d_name);
		if ((doc = inbox_load(inst.s, id, err, sizeof(err))) == NULL)
			fuzz_fail("%s/%s: %s", area, de->d_name, err);
		if (strcmp(fuzz_str(doc, "provider"), provider) != 0 ||
		    json_object_get(doc, "client") == NULL)
			fuzz_fail("%s/%s: not a %s inbound message", area,
			    de->d_name, provider);
		json_decref(doc);
	}
	closedir(d);
	return n;
}

/*
 * Inbound messages are kept, each noted for msgspoold, only when the
 * answer is 200: as many as it says it received (fewer when one came
 * twice in a body), one for Twilio's TwiML answer.
 */
static void
check_inbound(int status, const json_t *body, const char *provider)
{
	json_int_t	got;
	int		n = area_files(INBOX_AREA, provider);

	if (n != area_files(INBOX_NEW_AREA, NULL))
		fuzz_fail("%d inbound messages kept, %d noted", n,
		    area_files(INBOX_NEW_AREA, NULL));
	got = status != 200 ? 0 : body == NULL ? 1 :
	    json_integer_value(json_object_get(body, "received"));
	if (n > got || (got > 0 && n == 0))
		fuzz_fail("%d inbound messages kept, the reply (status %d) "
		    "says %lld", n, status, (long long)got);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct itimerval timer;
	struct req	 r;
	char		*reply;
	json_t		*body, *files;
	size_t		 len;
	int		 in, out, rc, status, fds;

	if (inst.receipts && size == 0)
		return 0;
	fds = fuzz_open_fds();
	request_of(data, size, &r);
	if ((in = memfd_create("body", MFD_CLOEXEC)) == -1 ||
	    (out = memfd_create("reply", MFD_CLOEXEC)) == -1 ||
	    util_write_all(in, r.body, r.len) == -1 ||
	    lseek(in, 0, SEEK_SET) == -1)
		fuzz_fail("memfd: %s", strerror(errno));

	/* cgi_run sets alarm(); libFuzzer's -timeout needs its timer. */
	getitimer(ITIMER_REAL, &timer);
	rc = cgi_run(&CGI_ENDPOINT, r.envp, in, out);
	setitimer(ITIMER_REAL, &timer, NULL);
	if (rc != 0)
		fuzz_fail("cgi_run returned %d", rc);
	reply = fuzz_read_all(out, &len);
	close(in);
	close(out);
	if (fuzz_open_fds() != fds)
		fuzz_fail("%d file descriptors open after the request, %d "
		    "before", fuzz_open_fds(), fds);

	/* FUZZ_VERBOSE=1 when replaying: what the program answered. */
	if (getenv("FUZZ_VERBOSE") != NULL)
		printf("%s\n", reply);
	status = fuzz_check_reply(reply, len, &body);
	if (status >= 500 || (status >= 300 && status != 400 &&
	    status != 413 && !(inst.receipts && status == 403)))
		fuzz_fail("status %d from a healthy instance: %s", status,
		    reply);
	if (inst.receipts) {
		/* Signed with a key anyone has: refused, nothing stored. */
		if (r.weak && status != 403)
			fuzz_fail("status %d for a %s receipt signed with an "
			    "empty or short secret: %s", status, r.provider,
			    reply);
		check_receipts(status, body, r.provider);
		check_inbound(status, body, r.provider);
		files = json_object();
		dir_ids("new", files, NULL);
		dir_ids("deferred", files, NULL);
		if (json_object_size(files) > 0)
			fuzz_fail("a receipt queued a message");
		json_decref(files);
		check_tmp();
	} else
		check_spool(status, body);
	json_decref(body);
	free(reply);
	fuzz_empty_dir(inst.spool, inst.upload);
	return 0;
}

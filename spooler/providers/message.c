/*
 * message.c: the email message, built with GMime (message.h says what it
 * holds).  GMime knows RFC 2045-2049, 2047, 2231 and 5322; this file only
 * says which fields of the document go where.
 *
 * Memory from GLib (g_malloc) is the system's malloc since GLib 2.46, so
 * the serialised bytes are handed out as they are and freed with free();
 * GLib aborts when memory runs out, which GMime cannot report anyway.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gmime/gmime.h>

#include "base/mime.h"
#include "base/ulid.h"
#include "base/util.h"
#include "providers/message.h"
#include "spool/blob.h"

/*
 * GMime cannot be set up again once shut down (its tables are made when
 * its types are registered, once a process), so it is set up once and
 * shut down at exit.
 */
void
message_init(void)
{
	static int	done;

	if (done)
		return;
	done = 1;
	g_mime_init();
	atexit(g_mime_shutdown);
}

void
message_free(struct message *m)
{
	if (m == NULL)
		return;
	free(m->data);
	free(m->sender);
	free(m->recipient);
	free(m->id);
	free(m);
}

/*
 * A mailbox of what mime_address_parse read: the display name unquoted
 * (GMime quotes or encodes it again as it needs).  A new reference.
 */
static InternetAddress *
mailbox(const struct mime_address *a)
{
	InternetAddress	*ia;
	GString		*name;
	char		*addr;
	size_t		 i;

	name = g_string_new(NULL);
	if (a->quoted) {
		for (i = 1; i + 1 < a->namelen; i++) {
			if (a->name[i] == '\\' && i + 2 < a->namelen)
				i++;
			g_string_append_c(name, a->name[i]);
		}
	} else if (a->name != NULL)
		g_string_append_len(name, a->name, (gssize)a->namelen);
	addr = g_strndup(a->addr, a->addrlen);
	ia = internet_address_mailbox_new(name->len ? name->str : NULL, addr);
	internet_address_set_charset(ia, "utf-8");
	g_string_free(name, TRUE);
	g_free(addr);
	return ia;
}

/*
 * Add the mailbox of a parsed address to list.  -1 when GMime would
 * write another address than the one given: a domain label that is
 * not valid IDNA ("xn--" and no valid Punycode) is rewritten when it is
 * encoded, and the message would go to another domain.
 */
static int
add_address(InternetAddressList *list, const struct mime_address *a)
{
	InternetAddress	*ia = mailbox(a);
	const char	*idn;

	idn = internet_address_mailbox_get_idn_addr(
	    INTERNET_ADDRESS_MAILBOX(ia));
	if (idn == NULL || strlen(idn) != a->addrlen ||
	    strncasecmp(idn, a->addr, a->addrlen) != 0) {
		g_object_unref(ia);
		return -1;
	}
	internet_address_list_add(list, ia);
	g_object_unref(ia);
	return 0;
}

/*
 * A part of len bytes (taken: freed with the part) that GMime encodes
 * with encoding when it writes the part.
 */
static void
set_content(GMimePart *part, unsigned char *p, size_t len,
    GMimeContentEncoding encoding)
{
	GMimeDataWrapper	*content;
	GMimeStream		*stream;
	GByteArray		*bytes;

	bytes = g_byte_array_new_take(p, len);
	stream = g_mime_stream_mem_new_with_byte_array(bytes);
	content = g_mime_data_wrapper_new_with_stream(stream,
	    GMIME_CONTENT_ENCODING_DEFAULT);
	g_mime_part_set_content(part, content);
	g_mime_part_set_content_encoding(part, encoding);
	g_object_unref(content);
	g_object_unref(stream);
}

/*
 * A text/subtype part of text, UTF-8, quoted-printable.  CRs are
 * dropped: the line ends are GMime's, CRLF when written.
 */
static GMimeObject *
text_part(const char *subtype, const char *text)
{
	GMimeTextPart	*part;
	unsigned char	*p;
	size_t		 i, n = 0, len = strlen(text);

	part = g_mime_text_part_new_with_subtype(subtype);
	g_mime_object_set_content_type_parameter(GMIME_OBJECT(part),
	    "charset", "utf-8");
	p = g_malloc(len + 1);
	for (i = 0; i < len; i++)
		if (text[i] != '\r')
			p[n++] = (unsigned char)text[i];
	set_content(GMIME_PART(part), p, n,
	    GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE);
	return GMIME_OBJECT(part);
}

/* The parameter name of a parameter list: encoded with method, UTF-8. */
static void
param_encoding(GMimeParamList *list, const char *name,
    GMimeParamEncodingMethod method)
{
	GMimeParam	*p;

	if ((p = g_mime_param_list_get_parameter(list, name)) == NULL)
		return;
	g_mime_param_set_charset(p, "utf-8");
	g_mime_param_set_encoding_method(p, method);
}

/*
 * Attachment i of the message, a ({"name","contentType","content"}, the
 * content base64), as a part.  NULL with the reason in err.
 */
static GMimeObject *
attachment(const json_t *a, size_t i, char *err, size_t errlen)
{
	GMimeContentType	*ct = NULL;
	GMimePart		*part;
	const json_t		*c = json_object_get(a, "content");
	const char		*name, *type;
	unsigned char		*data;
	size_t			 len;

	name = json_string_value(json_object_get(a, "name"));
	type = json_string_value(json_object_get(a, "contentType"));
	if (name == NULL || *name == '\0') {
		util_seterr(err, errlen, "attachment %zu has no name", i);
		return NULL;
	}
	/* Checked when queued; a document from elsewhere is checked here. */
	if (mime_filename_check(name, json_string_length(json_object_get(a,
	    "name"))) != NULL) {
		util_seterr(err, errlen, "attachment %zu: its name %s", i,
		    mime_filename_check(name, json_string_length(
		    json_object_get(a, "name"))));
		return NULL;
	}
	/* Sent without its content it would be sent wrong: not at all. */
	if (!json_is_string(c) || mime_base64_decode(json_string_value(c),
	    json_string_length(c), 0, &data, &len) != 0) {
		util_seterr(err, errlen, "attachment %zu has no content", i);
		return NULL;
	}
	if (type != NULL)
		ct = g_mime_content_type_parse(NULL, type);
	if (ct == NULL || ct->type == NULL || ct->subtype == NULL) {
		if (ct != NULL)
			g_object_unref(ct);
		ct = g_mime_content_type_new("application", "octet-stream");
	}
	part = g_mime_part_new();
	g_mime_object_set_content_type(GMIME_OBJECT(part), ct);
	g_object_unref(ct);
	g_mime_object_set_disposition(GMIME_OBJECT(part),
	    GMIME_DISPOSITION_ATTACHMENT);
	g_mime_part_set_filename(part, name);
	/*
	 * RFC 2231 in Content-Disposition; RFC 2047 words in the type's
	 * name=, the fallback mail programs without RFC 2231 read.
	 */
	param_encoding(g_mime_content_type_get_parameters(
	    g_mime_object_get_content_type(GMIME_OBJECT(part))), "name",
	    GMIME_PARAM_ENCODING_METHOD_RFC2047);
	param_encoding(g_mime_content_disposition_get_parameters(
	    g_mime_object_get_content_disposition(GMIME_OBJECT(part))),
	    "filename", GMIME_PARAM_ENCODING_METHOD_RFC2231);
	/* GLib's memory is malloc's: the bytes go to GMime as they are. */
	set_content(part, data, len, GMIME_CONTENT_ENCODING_BASE64);
	return GMIME_OBJECT(part);
}

/*
 * A multipart/subtype with its boundary ("=_subtype_ID").  Made as a
 * bare object and typed here: g_mime_multipart_new_with_subtype would
 * first draw a random boundary from /dev/urandom (an open, a read and a
 * close each time) for ours to replace.
 */
static GMimeMultipart *
multipart(const char *subtype, const char *id)
{
	GMimeMultipart		*mp;
	GMimeContentType	*ct;
	char			*boundary;

	mp = g_object_new(GMIME_TYPE_MULTIPART, NULL);
	ct = g_mime_content_type_new("multipart", subtype);
	g_mime_object_set_content_type(GMIME_OBJECT(mp), ct);
	g_object_unref(ct);
	/* "=_" never starts a line of base64 or quoted-printable. */
	boundary = g_strdup_printf("=_%s_%s", subtype, id);
	g_mime_multipart_set_boundary(mp, boundary);
	g_free(boundary);
	return mp;
}

/*
 * The body: a multipart/mixed of the alternatives (text, HTML) and the
 * attachments.  NULL with the reason in err.
 */
static GMimeObject *
body(const json_t *msg, const char *id, char *err, size_t errlen)
{
	GMimeMultipart	*mixed, *alt;
	GMimeObject	*part;
	const json_t	*a;
	const char	*html, *text;
	size_t		 i;

	html = json_string_value(json_object_get(msg, "html"));
	text = json_string_value(json_object_get(msg, "text"));
	mixed = multipart("mixed", id);
	alt = multipart("alternative", id);
	g_mime_multipart_add(mixed, GMIME_OBJECT(alt));
	g_object_unref(alt);
	if (text != NULL) {
		part = text_part("plain", text);
		g_mime_multipart_add(alt, part);
		g_object_unref(part);
	}
	if (html != NULL) {
		part = text_part("html", html);
		g_mime_multipart_add(alt, part);
		g_object_unref(part);
	}
	json_array_foreach(json_object_get(msg, "attachments"), i, a) {
		if ((part = attachment(a, i, err, errlen)) == NULL) {
			g_object_unref(mixed);
			return NULL;
		}
		g_mime_multipart_add(mixed, part);
		g_object_unref(part);
	}
	return GMIME_OBJECT(mixed);
}

/*
 * Set the Subject of message to subject as base64 encoded words of at
 * most 45 bytes of UTF-8 each, cut between characters, folded.
 */
static void
literal_subject(GMimeMessage *message, const char *subject)
{
	GMimeHeader	*h;
	GString		*raw;
	const char	*p = subject;
	gchar		*b64;
	size_t		 left = strlen(subject), n;

	raw = g_string_new("");
	while (left > 0) {
		n = left < 45 ? left : 45;
		/* Not inside a character: back to its first byte. */
		while (n > 1 && n < left && ((unsigned char)p[n] & 0xc0) ==
		    0x80)
			n--;
		b64 = g_base64_encode((const guchar *)p, n);
		g_string_append_printf(raw, "%s=?UTF-8?B?%s?=",
		    raw->len > 0 ? "\r\n " : " ", b64);
		g_free(b64);
		p += n;
		left -= n;
	}
	g_string_append(raw, "\r\n");
	h = g_mime_header_list_get_header(g_mime_object_get_header_list(
	    GMIME_OBJECT(message)), "Subject");
	if (h != NULL)
		g_mime_header_set_raw_value(h, raw->str);
	g_string_free(raw, TRUE);
}

/* The bytes of message, CRLF line ends, into m (a NUL after them). */
static void
serialise(GMimeMessage *message, struct message *m)
{
	GMimeFormatOptions	*options;
	GMimeStream		*stream;
	GByteArray		*bytes;

	options = g_mime_format_options_new();
	g_mime_format_options_set_newline_format(options,
	    GMIME_NEWLINE_FORMAT_DOS);
	bytes = g_byte_array_new();
	stream = g_mime_stream_mem_new_with_byte_array(bytes);
	g_mime_stream_mem_set_owner(GMIME_STREAM_MEM(stream), FALSE);
	g_mime_object_write_to_stream(GMIME_OBJECT(message), options, stream);
	g_object_unref(stream);
	g_mime_format_options_free(options);
	m->len = bytes->len;
	g_byte_array_append(bytes, (const guint8 *)"", 1);
	m->data = (char *)g_byte_array_free(bytes, FALSE);
}

/*
 * The one-click unsubscribe of RFC 8058 (message.h): the link in
 * List-Unsubscribe, and List-Unsubscribe-Post saying that a POST of
 * "List-Unsubscribe=One-Click" to it unsubscribes.  The URL (the
 * public-url and a base64url token: ASCII, no blank) is written raw,
 * on one line: GMime would take a word this long for text and encode
 * it (RFC 2047), which no mail program reads as a URL.
 */
static void
list_unsubscribe(GMimeMessage *message, const char *url)
{
	GMimeHeader	*h;
	char		*raw;

	g_mime_object_set_header(GMIME_OBJECT(message), "List-Unsubscribe",
	    "", NULL);
	h = g_mime_header_list_get_header(g_mime_object_get_header_list(
	    GMIME_OBJECT(message)), "List-Unsubscribe");
	raw = g_strdup_printf(" <%s>\r\n", url);
	if (h != NULL)
		g_mime_header_set_raw_value(h, raw);
	g_free(raw);
	g_mime_object_set_header(GMIME_OBJECT(message),
	    "List-Unsubscribe-Post", "List-Unsubscribe=One-Click", NULL);
}

struct message *
message_build(struct spool *spool, const char *name, const char *id,
    const json_t *msg, const struct unsub *unsub, const char *client,
    enum msg_status *st, char *err, size_t errlen)
{
	struct mime_address	 from, to;
	struct message		*m = NULL;
	GMimeMessage		*message = NULL;
	GMimeObject		*mixed;
	GDateTime		*date;
	json_t			*whole = NULL;
	const char		*f, *t, *subject;
	char			*unsub_link = NULL;

	*st = MSG_PERMFAIL;
	f = json_string_value(json_object_get(msg, "from"));
	t = json_string_value(json_object_get(msg, "to"));
	subject = json_string_value(json_object_get(msg, "subject"));
	if (id == NULL || !ulid_valid(id)) {
		util_seterr(err, errlen, "not a message id");
		return NULL;
	}
	/* Checked when queued; a document from elsewhere is checked here. */
	if (f == NULL || mime_address_parse(f, strlen(f), &from) != NULL ||
	    t == NULL || mime_address_parse(t, strlen(t), &to) != NULL) {
		util_seterr(err, errlen, "from or to is not one address");
		return NULL;
	}
	/* The attachments stored once, read back as inline ones. */
	if (spool != NULL && (whole = blob_message(spool, name, msg, st, err,
	    errlen)) == NULL)
		return NULL;
	if (whole != NULL)
		msg = whole;
	*st = MSG_PERMFAIL;
	if ((m = calloc(1, sizeof(*m))) == NULL ||
	    (m->sender = strndup(from.addr, from.addrlen)) == NULL ||
	    (m->recipient = strndup(to.addr, to.addrlen)) == NULL ||
	    asprintf(&m->id, "<%s@%s>", id, strrchr(m->sender, '@') + 1) ==
	    -1) {
		if (m != NULL)
			m->id = NULL;
		*st = MSG_TEMPFAIL;
		util_seterr(err, errlen, "out of memory");
		goto fail;
	}
	/* A client's link names the recipient (msgspool.conf(5)). */
	if (unsub_url(unsub, client, m->recipient, &unsub_link) == -1) {
		if (errno == ENOMEM)
			*st = MSG_TEMPFAIL;
		util_seterr(err, errlen, "no List-Unsubscribe link for client "
		    "%s and %s: %s", client ? client : "(none)", m->recipient,
		    strerror(errno));
		goto fail;
	}
	if ((mixed = body(msg, id, err, errlen)) == NULL)
		goto fail;

	/* Headers in this order, each set once. */
	message = g_mime_message_new(FALSE);
	date = g_date_time_new_from_unix_utc(ulid_time(id) / 1000);
	g_mime_message_set_date(message, date);
	g_date_time_unref(date);
	if (add_address(g_mime_message_get_from(message), &from) == -1 ||
	    add_address(g_mime_message_get_addresses(message,
	    GMIME_ADDRESS_TYPE_TO), &to) == -1) {
		util_seterr(err, errlen, "from or to has a domain that is not "
		    "a valid internationalized name (an xn-- label that is "
		    "not Punycode)");
		g_object_unref(mixed);
		g_object_unref(message);
		goto fail;
	}
	g_mime_message_set_subject(message, subject ? subject : "", "utf-8");
	/*
	 * Text that reads as an encoded word ("=?UTF-8?B?QQ==?=") would be
	 * decoded by every reader, and GMime writes it as it is: such a
	 * subject goes wholly as encoded words (RFC 2047 section 5).
	 */
	if (subject != NULL && strstr(subject, "=?") != NULL)
		literal_subject(message, subject);
	g_mime_object_set_header(GMIME_OBJECT(message), "Message-ID", m->id,
	    NULL);
	g_mime_object_set_header(GMIME_OBJECT(message), "MIME-Version", "1.0",
	    NULL);
	if (unsub_link != NULL)
		list_unsubscribe(message, unsub_link);
	g_mime_message_set_mime_part(message, mixed);
	g_object_unref(mixed);

	serialise(message, m);
	g_object_unref(message);
	json_decref(whole);
	free(unsub_link);
	*st = MSG_OK;
	return m;
fail:
	json_decref(whole);
	free(unsub_link);
	message_free(m);
	return NULL;
}

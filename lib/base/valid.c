/*
 * valid.c: field validators and the table-driven checker of request
 * bodies.  Handlers only see what got through here.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/rfc3339.h"
#include "base/valid.h"

void
valid_error(json_t *errors, const char *path, const char *fmt, ...)
{
	json_t	*list;
	char	*msg;
	va_list	 ap;
	int	 rc;

	va_start(ap, fmt);
	rc = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (rc == -1)
		return;
	if ((list = json_object_get(errors, path)) == NULL) {
		list = json_array();
		json_object_set_new(errors, path, list);
	}
	json_array_append_new(list, json_string(msg));
	free(msg);
}

long
valid_utf8(const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, need, k;
	unsigned long		 cp, min;
	long			 chars = 0;

	while (i < len) {
		if (p[i] == 0)
			return -1;
		if (p[i] < 0x80) {
			i++;
			chars++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0) {
			need = 1;
			cp = p[i] & 0x1f;
			min = 0x80;
		} else if ((p[i] & 0xf0) == 0xe0) {
			need = 2;
			cp = p[i] & 0x0f;
			min = 0x800;
		} else if ((p[i] & 0xf8) == 0xf0) {
			need = 3;
			cp = p[i] & 0x07;
			min = 0x10000;
		} else
			return -1;
		for (k = 1; k <= need; k++) {
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return -1;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		/* Overlong forms, surrogates and beyond Unicode. */
		if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) ||
		    cp > 0x10ffff)
			return -1;
		i += need + 1;
		chars++;
	}
	return chars;
}

static const char *
digits(const char *s, size_t len, size_t min, size_t max)
{
	size_t	i;

	if (len < min || len > max)
		return NULL;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return NULL;
	return s;
}

const char *
valid_e164(const char *s, size_t len)
{
	if (len < 1 || s[0] != '+' || digits(s + 1, len - 1, 8, 15) == NULL)
		return "must be '+' and 8 to 15 digits (E.164)";
	if (s[1] == '0')
		return "must not start with a 0 after the '+' (E.164)";
	return NULL;
}

const char *
valid_msisdn(const char *s, size_t len)
{
	if (digits(s, len, 8, 15) == NULL)
		return "must be 8 to 15 digits with the country code, "
		    "no '+'";
	if (s[0] == '0')
		return "must start with the country code, not 0";
	return NULL;
}

const char *
valid_rfc3339(const char *s, size_t len)
{
	char	copy[65];
	time_t	t;

	/* Exactly len bytes are the value, as for every validator. */
	if (len >= sizeof(copy) || memchr(s, '\0', len) != NULL)
		return "must be an RFC 3339 time such as "
		    "2026-11-23T10:00:00Z";
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (rfc3339_parse(copy, &t) == -1)
		return "must be an RFC 3339 time such as "
		    "2026-11-23T10:00:00Z";
	return NULL;
}

const char *
valid_email(const char *s, size_t len)
{
	static const char atext[] = "!#$%&'*+-/=?^_`{|}~.";
	const char	*at;
	size_t		 i, local;

	if (len > 254 || memchr(s, '\0', len) != NULL ||
	    (at = memchr(s, '@', len)) == NULL)
		return "must be an email address such as name@example.com";
	local = (size_t)(at - s);
	if (local == 0 || local > 64 || s[0] == '.' || s[local - 1] == '.')
		return "must be an email address such as name@example.com";
	for (i = 0; i < local; i++)
		if (!isalnum((unsigned char)s[i]) &&
		    strchr(atext, s[i]) == NULL &&
		    (unsigned char)s[i] < 0x80)
			return "must be an email address such as "
			    "name@example.com";
	/* Domain: labels of letters, digits and '-', at least one dot. */
	if (len - local - 1 < 3 || memchr(at + 1, '.', len - local - 1) == NULL)
		return "must be an email address such as name@example.com";
	for (i = local + 1; i < len; i++) {
		if (s[i] == '.' && (i == local + 1 || i == len - 1 ||
		    s[i - 1] == '.'))
			return "must be an email address such as "
			    "name@example.com";
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '.' && (unsigned char)s[i] < 0x80)
			return "must be an email address such as "
			    "name@example.com";
	}
	return NULL;
}

const char *
valid_https_url(const char *s, size_t len)
{
	size_t	i;

	if (len < 9 || len > 2048 || strncasecmp(s, "https://", 8) != 0 ||
	    s[8] == '/' || s[8] == '?' || s[8] == '#')
		return "must be an https:// URL";
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return "must be an https:// URL without spaces or "
			    "control characters";
	return NULL;
}

const char *
valid_header(const char *s, size_t len)
{
	if (memchr(s, '\r', len) != NULL || memchr(s, '\n', len) != NULL)
		return "must not contain CR or LF";
	return NULL;
}

const char *
valid_ident(const char *s, size_t len)
{
	size_t	i;

	if (len < 1 || len > 128 || s[0] == '.')
		return "must be 1 to 128 of A-Z a-z 0-9 _ . -, "
		    "not starting with '.'";
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '.' && s[i] != '-')
			return "must be 1 to 128 of A-Z a-z 0-9 _ . -, "
			    "not starting with '.'";
	return NULL;
}

/* A number's macro as a string literal. */
#define NUMBER_(n)	#n
#define NUMBER(n)	NUMBER_(n)

const char *
valid_reference(const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i;
	long			 chars;

	/* C1 is U+0080 to U+009F: 0xc2 then 0x80 to 0x9f in UTF-8. */
	for (i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] == 0x7f || (p[i] == 0xc2 &&
		    i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f))
			return "must not contain control characters "
			    "(U+0000 to U+001F, U+007F to U+009F)";
	if ((chars = valid_utf8(s, len)) < 0)
		return "must be UTF-8";
	if (chars == 0)
		return "must not be empty";
	if (chars > REFERENCE_MAX)
		return "must be at most " NUMBER(REFERENCE_MAX) " characters";
	return NULL;
}

static const char *
type_name(enum field_type t)
{
	switch (t) {
	case FIELD_STRING: return "a string";
	case FIELD_INTEGER: return "an integer";
	case FIELD_BOOLEAN: return "a boolean";
	case FIELD_OBJECT: return "an object";
	case FIELD_ARRAY: return "an array";
	case FIELD_STRMAP: return "an object of strings";
	}
	return "?";
}

static int
type_ok(const json_t *v, enum field_type t)
{
	switch (t) {
	case FIELD_STRING: return json_is_string(v);
	case FIELD_INTEGER: return json_is_integer(v);
	case FIELD_BOOLEAN: return json_is_boolean(v);
	case FIELD_OBJECT:
	case FIELD_STRMAP: return json_is_object(v);
	case FIELD_ARRAY: return json_is_array(v);
	}
	return 0;
}

/* Check one string value; returns the number of messages added. */
static size_t
check_string(const json_t *v, const struct field *f, const char *path,
    json_t *errors)
{
	const char	*s = json_string_value(v), *why;
	size_t		 len = json_string_length(v);
	long		 chars;

	if ((chars = valid_utf8(s, len)) < 0) {
		valid_error(errors, path, "must not contain NUL characters");
		return 1;
	}
	if ((f->flags & FIELD_NONEMPTY) && chars == 0) {
		valid_error(errors, path, "must not be empty");
		return 1;
	}
	if ((size_t)chars < f->min) {
		valid_error(errors, path, "must be at least %zu characters",
		    f->min);
		return 1;
	}
	if (f->max > 0 && (size_t)chars > f->max) {
		valid_error(errors, path, "must be at most %zu characters "
		    "(has %ld)", f->max, chars);
		return 1;
	}
	if (f->check != NULL && (why = f->check(s, len)) != NULL) {
		valid_error(errors, path, "%s", why);
		return 1;
	}
	return 0;
}

static size_t check_value(const json_t *, const struct field *,
    enum field_type, const char *, json_t *);

/* Room for most paths of a field: "messages[999].recipient". */
#define PATH_ROOM	128

/*
 * The path a, sep, b ("sms.recipient", "messages[3]") in buf when it
 * fits, else malloc'd into *own (the caller frees it); NULL out of
 * memory.  Every field of every message has one made, named or not:
 * asprintf cost more than checking the field.
 */
static const char *
join(const char *a, const char *sep, const char *b, char *buf, char **own)
{
	size_t	 al = strlen(a), sl = strlen(sep), bl = strlen(b);
	char	*p = buf;

	*own = NULL;
	if (al + sl + bl >= PATH_ROOM && (p = *own = malloc(al + sl + bl +
	    1)) == NULL)
		return NULL;
	memcpy(p, a, al);
	memcpy(p + al, sep, sl);
	memcpy(p + al + sl, b, bl + 1);
	return p;
}

/* "[i]" into buf, of at least 24 bytes. */
static const char *
index_text(size_t i, char *buf)
{
	char	 digits[24];
	size_t	 n = 0, j;

	do
		digits[n++] = (char)('0' + i % 10);
	while ((i /= 10) > 0);
	buf[0] = '[';
	for (j = 0; j < n; j++)
		buf[1 + j] = digits[n - 1 - j];
	buf[1 + n] = ']';
	buf[2 + n] = '\0';
	return buf;
}

static size_t
check_value(const json_t *v, const struct field *f, enum field_type t,
    const char *path, json_t *errors)
{
	char		 room[PATH_ROOM], idx[32], *own;
	const char	*key, *sub;
	json_t		*item;
	size_t		 n = 0, i;
	json_int_t	 iv;

	if (!type_ok(v, t)) {
		valid_error(errors, path, "must be %s", type_name(t));
		return 1;
	}
	switch (t) {
	case FIELD_STRING:
		return check_string(v, f, path, errors);
	case FIELD_INTEGER:
		iv = json_integer_value(v);
		if (iv < (json_int_t)f->min ||
		    (f->max > 0 && iv > (json_int_t)f->max)) {
			if (f->max > 0)
				valid_error(errors, path,
				    "must be from %zu to %zu", f->min, f->max);
			else
				valid_error(errors, path,
				    "must be at least %zu", f->min);
			return 1;
		}
		return 0;
	case FIELD_BOOLEAN:
		return 0;
	case FIELD_OBJECT:
		return f->sub ? valid_object(v, f->sub, path, errors) : 0;
	case FIELD_STRMAP:
		json_object_foreach((json_t *)v, key, item) {
			if ((sub = join(path, ".", key, room, &own)) == NULL)
				return n + 1;
			if (!json_is_string(item)) {
				valid_error(errors, sub, "must be a string");
				n++;
			} else if (valid_utf8(json_string_value(item),
			    json_string_length(item)) < 0) {
				valid_error(errors, sub,
				    "must not contain NUL characters");
				n++;
			}
			free(own);
		}
		return n;
	case FIELD_ARRAY:
		if (json_array_size(v) < f->min) {
			valid_error(errors, path, f->min == 1 ?
			    "must not be empty" :
			    "must have at least %zu entries", f->min);
			return 1;
		}
		if (f->max > 0 && json_array_size(v) > f->max) {
			valid_error(errors, path, "must have at most %zu "
			    "entries (has %zu)", f->max, json_array_size(v));
			return 1;
		}
		/* Objects with no sub-table are checked by the handler. */
		if (f->item == FIELD_OBJECT && f->sub == NULL)
			return 0;
		json_array_foreach((json_t *)v, i, item) {
			if ((sub = join(path, "", index_text(i, idx), room,
			    &own)) == NULL)
				return n + 1;
			n += check_value(item, &(struct field){ .name = f->name,
			    .type = f->item, .check = f->check,
			    .sub = f->sub, .flags = FIELD_NONEMPTY & f->flags },
			    f->item, sub, errors);
			free(own);
		}
		return n;
	}
	return 0;
}

size_t
valid_object(const json_t *obj, const struct field *table,
    const char *prefix, json_t *errors)
{
	const struct field	*f;
	const char		*key, *path, *pre, *sep;
	json_t			*v;
	char			 room[PATH_ROOM], *own;
	size_t			 n = 0;

	if (!json_is_object(obj)) {
		valid_error(errors, prefix ? prefix : "", "must be an object");
		return 1;
	}
	pre = prefix ? prefix : "";
	sep = *pre != '\0' ? "." : "";
	/* Unknown members first, so a misspelt field is named as such. */
	json_object_foreach((json_t *)obj, key, v) {
		for (f = table; f->name != NULL; f++)
			if (strcmp(f->name, key) == 0)
				break;
		if (f->name != NULL)
			continue;
		if ((path = join(pre, sep, key, room, &own)) == NULL)
			return n + 1;
		valid_error(errors, path, "is not a known field");
		free(own);
		n++;
	}
	for (f = table; f->name != NULL; f++) {
		if ((path = join(pre, sep, f->name, room, &own)) == NULL)
			return n + 1;
		v = json_object_get(obj, f->name);
		if (v == NULL || (json_is_null(v) &&
		    (f->flags & FIELD_NULLABLE))) {
			if (f->flags & FIELD_REQUIRED) {
				valid_error(errors, path, "is required");
				n++;
			}
		} else
			n += check_value(v, f, f->type, path, errors);
		free(own);
	}
	return n;
}

size_t
valid_batch(const json_t *body, const char *name, size_t max, json_t *errors)
{
	size_t	n = json_array_size(json_object_get(body, name));

	if (n <= max)
		return 0;
	valid_error(errors, name, "must have at most %zu entries (has %zu)",
	    max, n);
	return 1;
}

int
valid_client_id(const char *id)
{
	size_t	i;

	if (id == NULL || id[0] == '\0' || id[0] == '.')
		return 0;
	for (i = 0; id[i] != '\0'; i++) {
		if (i >= CLIENT_ID_MAX)
			return 0;
		if (!((id[i] >= 'a' && id[i] <= 'z') ||
		    (id[i] >= 'A' && id[i] <= 'Z') ||
		    (id[i] >= '0' && id[i] <= '9') ||
		    id[i] == '_' || id[i] == '.' || id[i] == '-'))
			return 0;
	}
	return 1;
}

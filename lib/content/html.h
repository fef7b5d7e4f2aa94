/*
 * html.h: HTML for email: escaping and a plain-text rendering.
 */
#ifndef HTML_H
#define HTML_H

#include <stddef.h>

#include "base/buf.h"

/* Append s with & < > " ' escaped as HTML entities.  0, or -1 (ENOMEM). */
int	 html_escape(struct buf *, const char *s, size_t len);

/*
 * A readable plain-text rendering of HTML: tags dropped (script, style
 * and head with their content), block elements and <br> as line breaks,
 * list items as "- ", links as "text (href)", common entities decoded,
 * runs of blank space collapsed.  malloc'd, NULL on ENOMEM.
 */
char	*html_to_text(const char *html, size_t len);

#endif

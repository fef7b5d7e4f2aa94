/*
 * test_html.c: unit tests for lib/content/html.c: HTML escaping (STYLE habit 9)
 * and the HTML to text rendering used for the text/plain alternative.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "content/html.h"

/* Escape s; the test fails unless the buffer holds exactly want. */
static void
escape_is(const char *s, size_t len, const char *want, size_t wantlen)
{
	struct buf	 b = { 0 };

	assert_int_equal(html_escape(&b, s, len), 0);
	assert_non_null(b.p);
	if (b.len != wantlen || memcmp(b.p, want, wantlen) != 0 ||
	    b.p[b.len] != '\0') {
		buf_free(&b);
		fail_msg("escaping \"%.*s\" did not give \"%s\"",
		    (int)len, s, want);
	}
	buf_free(&b);
}

#define ESCAPE_IS(s, want)	escape_is(s, strlen(s), want, strlen(want))

static void
test_html_escape(void **state)
{
	(void)state;
	ESCAPE_IS("&", "&amp;");
	ESCAPE_IS("<", "&lt;");
	ESCAPE_IS(">", "&gt;");
	ESCAPE_IS("\"", "&quot;");
	ESCAPE_IS("'", "&#39;");
	ESCAPE_IS("<a href=\"x\">Tom & Jerry's</a>",
	    "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
	ESCAPE_IS("&&<<>>", "&amp;&amp;&lt;&lt;&gt;&gt;");
	/* An entity is escaped again, not passed through. */
	ESCAPE_IS("&amp;", "&amp;amp;");
}

static void
test_html_escape_plain(void **state)
{
	(void)state;
	ESCAPE_IS("", "");
	ESCAPE_IS("Hello, world. 1+1=2; 50% off!", "Hello, world. 1+1=2; "
	    "50% off!");
	ESCAPE_IS("line\r\nbreak\ttab", "line\r\nbreak\ttab");
	/* UTF-8 bytes pass through untouched. */
	ESCAPE_IS("caf\xc3\xa9 \xe2\x82\xac 5 \xf0\x9f\x98\x80",
	    "caf\xc3\xa9 \xe2\x82\xac 5 \xf0\x9f\x98\x80");
	ESCAPE_IS("\xc3\xa9<\xc3\xa9", "\xc3\xa9&lt;\xc3\xa9");
}

static void
test_html_escape_appends(void **state)
{
	struct buf	 b = { 0 };

	(void)state;
	assert_int_equal(buf_puts(&b, "<p>"), 0);
	assert_int_equal(html_escape(&b, "a<b", 3), 0);
	assert_int_equal(buf_puts(&b, "</p>"), 0);
	assert_string_equal(b.p, "<p>a&lt;b</p>");
	/* Only len bytes are read. */
	assert_int_equal(html_escape(&b, "x&y<z", 3), 0);
	assert_string_equal(b.p, "<p>a&lt;b</p>x&amp;y");
	buf_free(&b);
	/* An embedded NUL is kept as a byte. */
	escape_is("a\0&", 3, "a\0&amp;", 7);
}

/* Render html; the test fails unless the result is exactly want. */
static void
text_is(const char *html, size_t len, const char *want)
{
	char	*t;

	t = html_to_text(html, len);
	assert_non_null(t);
	if (strcmp(t, want) != 0) {
		print_error("rendering \"%.*s\"\n   got \"%s\"\nwanted \"%s\"\n",
		    (int)len, html, t, want);
		free(t);
		fail();
	}
	free(t);
}

#define TEXT_IS(html, want)	text_is(html, strlen(html), want)

static void
test_text_plain(void **state)
{
	(void)state;
	TEXT_IS("hello", "hello\n");
	TEXT_IS("hello world", "hello world\n");
	TEXT_IS("caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac\n");
	/* Inline tags vanish without adding space. */
	TEXT_IS("<b>bold</b> and <i>it</i>al<span>ic</span>",
	    "bold and italic\n");
}

static void
test_text_empty(void **state)
{
	(void)state;
	text_is("", 0, "");
	TEXT_IS("   \n\t  ", "");
	/* Nothing but markup renders as nothing. */
	TEXT_IS("<p></p><br><div> </div>", "");
	TEXT_IS("<html><head><title>T</title></head><body></body></html>",
	    "");
	TEXT_IS("<!-- only a comment -->", "");
}

static void
test_text_paragraphs(void **state)
{
	(void)state;
	TEXT_IS("<p>one</p><p>two</p>", "one\n\ntwo\n");
	TEXT_IS("<p>one</p>\n\n\n<p>two</p>\n<p>three</p>",
	    "one\n\ntwo\n\nthree\n");
	TEXT_IS("<div>a</div><div>b</div>", "a\n\nb\n");
	TEXT_IS("<h1>Title</h1><p>Body</p>", "Title\n\nBody\n");
	TEXT_IS("<P>upper</P><P>case</P>", "upper\n\ncase\n");
	TEXT_IS("<p class=\"x\" style=\"y\">attrs</p><p>b</p>",
	    "attrs\n\nb\n");
	/* Several block tags in a row: still one blank line. */
	TEXT_IS("<div><p>a</p></div><div><div><p>b</p></div></div>",
	    "a\n\nb\n");
	/* Text before the first block element. */
	TEXT_IS("intro<p>para</p>", "intro\n\npara\n");
}

static void
test_text_br(void **state)
{
	(void)state;
	TEXT_IS("a<br>b", "a\nb\n");
	TEXT_IS("a<br/>b<br />c<BR>d", "a\nb\nc\nd\n");
	TEXT_IS("a<br>\nb", "a\nb\n");
	TEXT_IS("a <br> b", "a\nb\n");
	/* Two breaks: one blank line; more: still one. */
	TEXT_IS("a<br><br>b", "a\n\nb\n");
	TEXT_IS("a<br><br><br><br>b", "a\n\nb\n");
	TEXT_IS("<p>line one<br>line two</p><p>next</p>",
	    "line one\nline two\n\nnext\n");
}

static void
test_text_list(void **state)
{
	(void)state;
	TEXT_IS("<ul><li>one<li>two</ul>", "- one\n- two\n");
	TEXT_IS("<p>Items:</p><ol><li>first<li>second</ol><p>end</p>",
	    "Items:\n\n- first\n- second\n\nend\n");
	TEXT_IS("<ul>\n  <li>  spaced  </li>\n</ul>", "- spaced\n");
}

/* The usual, closed form of a list. */
static void
test_text_list_closed(void **state)
{
	(void)state;
	TEXT_IS("<ul><li>one</li><li>two</li></ul>", "- one\n- two\n");
	TEXT_IS("<ul>\n<li>one</li>\n<li>two</li>\n</ul>", "- one\n- two\n");
}

static void
test_text_skipped(void **state)
{
	(void)state;
	TEXT_IS("a<script>alert('x');</script>b", "ab\n");
	TEXT_IS("a<script type=\"text/javascript\">var x = 1;"
	    "</script>b", "ab\n");
	TEXT_IS("a<style>p { color: red; }</style>b", "ab\n");
	TEXT_IS("<head><meta charset=\"utf-8\"><title>Hidden</title>"
	    "<style>x{}</style></head><p>Shown</p>", "Shown\n");
	TEXT_IS("<title>Hidden</title>Shown", "Shown\n");
	TEXT_IS("<SCRIPT>x</SCRIPT>ok", "ok\n");
	TEXT_IS("<!DOCTYPE html><html><head><title>T</title></head>"
	    "<body><p>Hi</p></body></html>", "Hi\n");
}

static void
test_text_comments(void **state)
{
	(void)state;
	TEXT_IS("a<!-- gone -->b", "ab\n");
	TEXT_IS("a <!-- gone <p>also</p> --> b", "a b\n");
	TEXT_IS("a<!--\nmulti\nline\n-->b", "ab\n");
	TEXT_IS("<!--[if mso]><p>outlook</p><![endif]-->x", "x\n");
}

static void
test_text_entities(void **state)
{
	(void)state;
	TEXT_IS("&amp;", "&\n");
	TEXT_IS("&lt;tag&gt;", "<tag>\n");
	TEXT_IS("&quot;q&quot; &#39;s&#39;", "\"q\" 's'\n");
	TEXT_IS("&#x41;&#X42;&#67;", "ABC\n");
	TEXT_IS("a&nbsp;b", "a b\n");
	TEXT_IS("&apos;", "'\n");
	TEXT_IS("&eacute;&#233;&#xe9;", "&eacute;\xc3\xa9\xc3\xa9\n");
	TEXT_IS("&euro; &#x20AC; &#128512;",
	    "\xe2\x82\xac \xe2\x82\xac \xf0\x9f\x98\x80\n");
	/* Decoded once only. */
	TEXT_IS("&amp;lt;", "&lt;\n");
	/* Not entities: left as they are. */
	TEXT_IS("AT&T", "AT&T\n");
	TEXT_IS("a & b", "a & b\n");
	TEXT_IS("&amp", "&amp\n");
	TEXT_IS("&unknown;", "&unknown;\n");
	TEXT_IS("&#xZZ;", "&#xZZ;\n");
}

static void
test_text_whitespace(void **state)
{
	(void)state;
	TEXT_IS("a    b", "a b\n");
	TEXT_IS("a \t\r\n b", "a b\n");
	TEXT_IS("  leading and trailing  ", "leading and trailing\n");
	TEXT_IS("<p>\n   wrapped\n   text\n</p>", "wrapped text\n");
	TEXT_IS("a <b> b </b> c", "a b c\n");
	TEXT_IS("\n\n\n<p>x</p>\n\n\n", "x\n");
}

static void
test_text_links(void **state)
{
	(void)state;
	TEXT_IS("<a href=\"https://x.example/\">here</a>",
	    "here (https://x.example/)\n");
	TEXT_IS("Click <a href=\"https://x.example/\">here</a>.",
	    "Click here (https://x.example/).\n");
	TEXT_IS("<a href='https://x.example/q'>single</a>",
	    "single (https://x.example/q)\n");
	TEXT_IS("<a href=https://x.example/ class=c>bare</a>",
	    "bare (https://x.example/)\n");
	TEXT_IS("<A HREF=\"https://x.example/\">upper</A>",
	    "upper (https://x.example/)\n");
	TEXT_IS("<a class=\"btn\" href=\"https://x.example/\">two</a>",
	    "two (https://x.example/)\n");
	/* No href: just the text. */
	TEXT_IS("<a name=\"top\">anchor</a>", "anchor\n");
	/* The text is the address: not repeated. */
	TEXT_IS("<a href=\"https://x.example/\">https://x.example/</a>",
	    "https://x.example/\n");
}

/* A script holding '<' and no '>' before its end tag. */
static void
test_text_script_with_lt(void **state)
{
	(void)state;
	TEXT_IS("a<script>if (a<b) x = 1;</script>b", "ab\n");
}

/* A link whose text is its address, after a word. */
static void
test_text_link_self_after_text(void **state)
{
	(void)state;
	TEXT_IS("see <a href=\"https://x.example/\">https://x.example/</a>",
	    "see https://x.example/\n");
}

/* An href holding an entity, as in any query string with two fields. */
static void
test_text_link_href_entity(void **state)
{
	(void)state;
	TEXT_IS("<a href=\"https://x.example/?a=1&amp;b=2\">here</a>",
	    "here (https://x.example/?a=1&b=2)\n");
}

/* An attribute value that looks like href=: the real href counts. */
static void
test_text_link_href_in_other_attribute(void **state)
{
	(void)state;
	TEXT_IS("<a title=\"x href=evil\" href=\"https://x.example/\">t</a>",
	    "t (https://x.example/)\n");
}

/* Numeric references without digits are not references. */
static void
test_text_numeric_entity_no_digits(void **state)
{
	(void)state;
	TEXT_IS("&#;", "&#;\n");
	TEXT_IS("&#x;", "&#x;\n");
	TEXT_IS("&# 65;", "&# 65;\n");
}

/* A bare '<' in text that starts no tag. */
static void
test_text_bare_lt(void **state)
{
	(void)state;
	TEXT_IS("1 < 2", "1 < 2\n");
}

static void
test_text_one_final_newline(void **state)
{
	(void)state;
	TEXT_IS("x<br><br><br>", "x\n");
	TEXT_IS("x</p></div></p>", "x\n");
	TEXT_IS("<br><br><p></p>x", "x\n");
	TEXT_IS("<p>a</p><p>b</p><p></p><p></p>", "a\n\nb\n");
}

/* A whole message body, as an email would carry it. */
static void
test_text_document(void **state)
{
	static const char html[] =
	    "<!DOCTYPE html>\n"
	    "<html>\n"
	    "<head>\n"
	    "  <title>Your order</title>\n"
	    "  <style>body { font: 12px sans-serif; }</style>\n"
	    "</head>\n"
	    "<body>\n"
	    "  <!-- greeting -->\n"
	    "  <h1>Hello   Ana &amp; Bo</h1>\n"
	    "  <p>Your order contains:</p>\n"
	    "  <ul>\n"
	    "    <li>Tea\n"
	    "    <li>Biscuits &lt;3\n"
	    "  </ul>\n"
	    "  <p>Track it <a href=\"https://x.example/t\">here</a>.<br>\n"
	    "  Thanks!</p>\n"
	    "  <script>track();</script>\n"
	    "</body>\n"
	    "</html>\n";

	(void)state;
	TEXT_IS(html,
	    "Hello Ana & Bo\n"
	    "\n"
	    "Your order contains:\n"
	    "\n"
	    "- Tea\n"
	    "- Biscuits <3\n"
	    "\n"
	    "Track it here (https://x.example/t).\n"
	    "Thanks!\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_html_escape),
		cmocka_unit_test(test_html_escape_plain),
		cmocka_unit_test(test_html_escape_appends),
		cmocka_unit_test(test_text_plain),
		cmocka_unit_test(test_text_empty),
		cmocka_unit_test(test_text_paragraphs),
		cmocka_unit_test(test_text_br),
		cmocka_unit_test(test_text_list),
		cmocka_unit_test(test_text_list_closed),
		cmocka_unit_test(test_text_skipped),
		cmocka_unit_test(test_text_script_with_lt),
		cmocka_unit_test(test_text_comments),
		cmocka_unit_test(test_text_entities),
		cmocka_unit_test(test_text_whitespace),
		cmocka_unit_test(test_text_links),
		cmocka_unit_test(test_text_link_self_after_text),
		cmocka_unit_test(test_text_link_href_entity),
		cmocka_unit_test(test_text_link_href_in_other_attribute),
		cmocka_unit_test(test_text_numeric_entity_no_digits),
		cmocka_unit_test(test_text_bare_lt),
		cmocka_unit_test(test_text_one_final_newline),
		cmocka_unit_test(test_text_document),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

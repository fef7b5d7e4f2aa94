/*
 * tmplsample.h: the texts of two templates, an email and an OTT one
 * (msgspool.conf(5), templates), for the tests of lib/content/tmpl.c.
 */
#ifndef MSGSPOOL_TMPLSAMPLE_H
#define MSGSPOOL_TMPLSAMPLE_H

static const char email_text[] =
    "Name: Welcome mail\n"
    "Subject: Hello {{name}}\n"
    "From: news@example.com\n"
    "Tags: onboarding,welcome\n"
    "Created: 2026-01-02T03:04:05Z\n"
    "\n"
    "<p>Hi {{name}},</p>\n"
    "<p>welcome.</p>\n";

static const char email_body[] =
    "<p>Hi {{name}},</p>\n"
    "<p>welcome.</p>\n";

static const char ott_text[] =
    "Name: Order shipped\n"
    "Parameters: 2\n"
    "Language: en_US\n"
    "Provider-Template: order_shipped\n"
    "\n"
    "Your order {{1}} ships on {{2}}.\n";

#endif

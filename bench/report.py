"""bench/results.md from what bench/run.py measured: render(results) is
its text.  results is what run.measure() returns (or a --dump of it, read
back as JSON): the machine at the start, the rows of each section that
ran, keyed by its name in --only, the load at the end, and the parameters
the text names (rounds, workers).  Nothing here measures.
"""
import re


def median(xs):
    return sorted(xs)[len(xs) // 2]


def verdict(ok):
    return "met" if ok else "**MISSED**"


def cost_lines(c):
    """The rows of costs(c) for results.md."""
    lines = ["What a client's rate and an Idempotency-Key cost POST /sms/v1/deliver: "
             "each against the same route without it, in %d alternating rounds "
             "of %d s (req/s, medians):" % (c["rounds"], c["seconds"]), "",
             "| POST /sms/v1/deliver with | without, req/s | with, req/s | with / without "
             "| target | every round, req/s (without; with) |",
             "|---|---|---|---|---|---|"]
    for r in c["rows"]:
        rps = {k: [x["rps"] for x in v] for k, v in r["runs"].items()}
        ratio = median(rps["with"]) / median(rps["without"]) if median(rps["without"]) else 0
        non2xx = {k: sum(x["non2xx"] for x in v) for k, v in r["runs"].items()}
        errors = {k: sum(x["errors"] for x in v) for k, v in r["runs"].items()}
        clean = not any(non2xx.values()) and not any(errors.values())
        tgt = "none (information)"
        if r["target"]:
            # A 429 or an error, quicker than a 202, would flatter its side.
            tgt = "≥ %.2f: %s" % (r["target"], verdict(
                ratio >= r["target"] and r["policy"] and clean))
            tgt += ("; %d non-2xx; replies' `RateLimit-Policy: %s`" % (non2xx["with"], r["policy"])
                    if r["policy"] else
                    "; **the rate was not in effect** (no RateLimit-Policy)")
        lines.append("| %s | %.0f | %.0f | %.2f | %s | %s; %s |" % (
            r["name"], median(rps["without"]), median(rps["with"]), ratio, tgt,
            ", ".join("%.0f" % x for x in rps["without"]),
            ", ".join("%.0f" % x for x in rps["with"])))
        if not clean:
            lines.append("|  ↳ non-2xx %d, socket errors %d without; non-2xx %d, socket "
                         "errors %d with | | | | | |" % (non2xx["without"], errors["without"],
                                                         non2xx["with"], errors["with"]))
    return lines + [""]


def cgi_lines(rows, pair_rounds):
    """Section 1, the CGI rows."""
    lines = ["## 1. CGI under lighttpd (wrk, 2 threads, 16 connections)", "",
             "| Endpoint | req/s | p50 ms | p99 ms | vs no-op | exec→exit p50 ms | peak RSS KiB | target |",
             "|---|---|---|---|---|---|---|---|"]
    naive = next((r["rps"] for r in rows if r["prog"] == "naive"), 0)
    for r in rows:
        tgt = ""
        if r["prog"] == "sms-deliver":
            vs = r.get("vs_naive", r["rps"] / naive if naive else 0)
            tgt = ("≥ 0.80: " + verdict(r["ratio"] >= 0.80) +
                   "; %.2f× the naive durable CGI (median of %d "
                   "alternating rounds), ≥ 0.95×: %s"
                   % (vs, pair_rounds, verdict(vs >= 0.95)))
        elif r["prog"] == "ping":
            tgt = "≥ 0.95: " + verdict(r["ratio"] >= 0.95)
        if r["prog"] not in ("noop", "naive", "diagnostic"):
            tgt += ("; " if tgt else "") + "p50 ≤ 1 ms: " + verdict(
                r.get("p50_us", 1e9) <= 1000) + "; RSS ≤ 4 MiB: " + verdict(
                r.get("maxrss_kib", 1e9) <= 4096)
        lines.append("| %s | %.0f | %.2f | %.2f | %.2f | %.2f | %s | %s |" % (
            r["name"], r["rps"], r["p50_ms"], r["p99_ms"], r["ratio"],
            r.get("p50_us", float("nan")) / 1000, int(r.get("maxrss_kib", 0)), tgt))
        if r["non2xx"] or r["errors"]:
            lines.append("|  ↳ non-2xx %d, socket errors %d | | | | | | | |"
                         % (r["non2xx"], r["errors"]))
    lines.append("")
    pair = next((r["pair"] for r in rows if "pair" in r), None)
    if pair:
        lines += ["POST /sms/v1/deliver and the naive durable CGI in %d "
                  "alternating rounds of 5 s, req/s: naive %s; sms-deliver %s."
                  % (pair_rounds,
                     ", ".join("%.0f" % x for x in pair["naive"]),
                     ", ".join("%.0f" % x for x in pair["sms-deliver"])), ""]
    cost = next((r["costs"] for r in rows if "costs" in r), None)
    if cost:
        lines += cost_lines(cost)
    return lines


def fcgi_lines(fc, rows, rounds, workers):
    """Section 1b, FastCGI, next to the CGI rows (rows, [] if none ran)
    with `workers`, the default number."""
    lines = ["## 1b. FastCGI: msgspool-fcgi under lighttpd mod_fastcgi "
             "(wrk, 2 threads, 16 connections)", "",
             "POST /sms/v1/deliver by the number of workers (`-w`; every "
             "message synced before its reply), the median of %d interleaved "
             "rounds of 5 s:" % rounds, "",
             "| Workers | req/s (median) | p50 ms | p99 ms | every round, req/s |",
             "|---|---|---|---|---|"]
    for r in fc["sweep"]:
        lines.append("| %d | %.0f | %.2f | %.2f | %s |" % (
            r["workers"], r["rps"], r["p50_ms"], r["p99_ms"],
            ", ".join("%.0f" % x for x in r["all"])))
    lines += ["", "Best here: %d workers; the default is %d." % (
        fc["best_workers"], workers), ""]
    if fc["disk_rps"]:
        lines += [
            "The disk's limit for the same promise, in the same rounds: "
            "bench/durable, %d processes each queueing 400-byte messages "
            "as msgspool-spool(5) says (new file in tmp/, write, fsync, "
            "rename into new/, fsync new/), no HTTP, no parsing: **%.0f** "
            "messages/s (median; rounds %s). msgspool-fcgi with %d workers "
            "reaches **%.2f** of it." % (
                workers, fc["disk_rps"],
                ", ".join("%.0f" % x for x in fc["disk_all"]),
                workers,
                next(r["rps"] for r in fc["sweep"]
                     if r["workers"] == workers) / fc["disk_rps"]),
            ""]
    lines += [
        "With %d workers, next to a no-op FastCGI responder in C (libfcgi, "
        "same config, same number of processes: the limit of the server "
        "and the FastCGI path) and to the CGI rows above:" % workers, "",
        "| Endpoint | req/s | p50 ms | p99 ms | no-op responder req/s | vs no-op | CGI req/s | vs CGI |",
        "|---|---|---|---|---|---|---|---|"]
    for r in fc["rows"]:
        cgi = r.get("cgi") or next(
            (c["rps"] for c in rows if c["name"] == r["name"]), None)
        lines.append("| %s | %.0f | %.2f | %.2f | %s | %s | %s | %s |" % (
            r["name"], r["rps"], r["p50_ms"], r["p99_ms"],
            "%.0f" % r["base"] if r.get("base") else "",
            "%.2f" % (r["rps"] / r["base"]) if r.get("base") else "",
            "%.0f" % cgi if cgi else "",
            "%.1f×" % (r["rps"] / cgi) if cgi else ""))
        if r["non2xx"] or r["errors"]:
            lines.append("|  ↳ non-2xx %d, socket errors %d | | | | | | | |"
                         % (r["non2xx"], r["errors"]))
    lines.append("")
    if fc.get("costs"):
        lines += cost_lines(fc["costs"])
    m = fc["rss"]
    lines += ["Workers' RSS (all %d and their supervisor, KiB) after a warm-up: "
              "%d; after %d more requests in %.0f s: %d." % (
                  workers, m["before_kib"], m["requests"],
                  m["seconds"], m["after_kib"]), ""]
    return lines


def kannel_lines(k, sms_rps, fcgi_sms, fcgi_disk, fcgi_batch):
    """Section 2, Kannel's sendsms next to msgspool's figures for SMS
    (None where their section did not run)."""
    lines = ["## 2. Accepting SMS: msgspool vs Kannel's sendsms", ""]
    if "error" in k:
        lines.append("Kannel could not be measured: %s" % k["error"])
    else:
        lines += ["| | req/s | p50 ms | p99 ms |", "|---|---|---|---|",
                  "| msgspool POST /sms/v1/deliver, CGI (above) | %s | | |"
                  % ("%.0f" % sms_rps if sms_rps else "-"),
                  "| msgspool POST /sms/v1/deliver, msgspool-fcgi (above) | %s | | |"
                  % ("%.0f" % fcgi_sms if fcgi_sms else "-"),
                  "| Kannel smsbox sendsms (file store) | %.0f | %.2f | %.2f |"
                  % (k["rps"], k["p50_ms"], k["p99_ms"])]
        if sms_rps:
            lines.append("")
            lines.append("Ratio msgspool CGI / Kannel: **%.2f** (no target). %s"
                         % (sms_rps / k["rps"], k.get("note", "")))
        if fcgi_sms:
            lines.append("")
            lines.append("Ratio msgspool-fcgi / Kannel: **%.2f**, target ≥ 1.0: %s "
                         "(every msgspool message synced, file and directory, "
                         "before its reply; Kannel's store is not)."
                         % (fcgi_sms / k["rps"], verdict(fcgi_sms >= k["rps"])))
        if fcgi_batch:
            lines.append("")
            lines.append(
                "Messages a second, 100 SMS a request (POST /sms/v1/deliver/batch "
                "through msgspool-fcgi, section 1b; one durable commit for a "
                "request's files): **%.0f**, %.2f× Kannel's messages a second, "
                "target ≥ 1.5: %s (every message durable before the reply)."
                % (fcgi_batch, fcgi_batch / k["rps"],
                   verdict(fcgi_batch >= 1.5 * k["rps"])))
        if fcgi_sms and fcgi_disk:
            lines.append("")
            lines.append(
                "This disk's own limit for durable messages (bench/durable, section "
                "1b) is %.0f/s, %.2f× Kannel's rate: no spool that syncs each "
                "message's file and directory before its reply reaches Kannel here; "
                "msgspool-fcgi reaches %.2f of that limit."
                % (fcgi_disk, fcgi_disk / k["rps"], fcgi_sms / fcgi_disk))
    lines.append("")
    return lines


def http_lines(h):
    """Section 3, the daemon against a slow HTTP provider."""
    return ["## 3. Spooler to HTTP (provider answers after 50 ms)", "",
            "| Messages | sent | seconds | msg/s | connections | max in flight | target ≥ 1000 msg/s |",
            "|---|---|---|---|---|---|---|",
            "| %d | %d | %.2f | %.0f | %d | %d | %s |" % (
                h["n"], h["sent"], h["seconds"], h["msgs_per_s"], h["connections"],
                h["max_in_flight"], verdict(h["msgs_per_s"] >= 1000)), ""]


def smpp_lines(rows_smpp):
    """Section 3b, the daemon through one SMPP session, by window."""
    lines = ["## 3b. Spooler to an SMSC: one SMPP session, SMSC latency 5 ms", "",
             "The stand-in SMSC of the tests (Python, checking every PDU) answers "
             "each submit_sm 5 ms after it came; the window bounds the submits "
             "awaiting their answer, so it bounds the rate at window / 5 ms.", "",
             "| Window | messages | sent | seconds | msg/s | most unanswered at once "
             "| bound (window / 5 ms) | PDU violations |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows_smpp:
        lines.append("| %d | %d | %d | %.2f | %.0f | %d | %d | %d |" % (
            r["window"], r["n"], r["sent"], r["seconds"], r["msgs_per_s"],
            r["max_outstanding"], r["window"] * 200, r["violations"]))
    lines.append("")
    return lines


def smtp_lines(rounds):
    """Section 4, rounds of msgspoold then Postfix, (ours, theirs) each."""
    lines = ["## 4. Spooler to SMTP (Postfix smtp-sink on loopback)", "",
             "Rounds alternate: msgspoold, then Postfix, each on a fresh spool or queue.",
             "", "| Round | sender | messages | seconds | msg/s | ratio msgspool / Postfix |",
             "|---|---|---|---|---|---|"]
    if any(len(rnd) > 2 for rnd in rounds):
        lines[2] += (" With --baseline, another build's msgspoold too in each round, "
                     "before ours in every other one.")
    ratios, based = [], []
    for i, rnd in enumerate(rounds, 1):
        ours, theirs = rnd[0], rnd[1]
        if "error" in theirs:
            ratio = "-"
        else:
            ratios.append(ours["msgs_per_s"] / theirs["msgs_per_s"])
            ratio = "%.2f" % ratios[-1]
        lines.append("| %d | msgspoold (smtp provider, concurrency 16) | %d | %.2f | %.0f | %s |"
                     % (i, ours["sent"], ours["seconds"], ours["msgs_per_s"], ratio))
        # --baseline: another build's msgspoold in the same round.
        if len(rnd) > 2:
            b = rnd[2]
            based.append(ours["msgs_per_s"] / b["msgs_per_s"])
            lines.append("| %d | msgspoold of the baseline build | %d | %.2f | %.0f | %s |"
                         % (i, b["sent"], b["seconds"], b["msgs_per_s"],
                            "-" if "error" in theirs else
                            "%.2f" % (b["msgs_per_s"] / theirs["msgs_per_s"])))
        if "error" in theirs:
            lines.append("| %d | Postfix | - | - | - | could not be measured: %s |"
                         % (i, theirs["error"]))
        else:
            lines.append("| %d | Postfix (own instance, relayhost = the sink) | %d | %.2f | %.0f | |"
                         % (i, theirs["n"], theirs["seconds"], theirs["msgs_per_s"]))
    if ratios:
        med = sorted(ratios)[len(ratios) // 2]
        lines += ["", "Target msgspool ≥ 1.2× Postfix: %s (median ratio %.2f of %d "
                  "rounds; %s)." % (verdict(med >= 1.2), med, len(ratios),
                     ", ".join("%.2f" % x for x in ratios))]
    if based:
        lines += ["", "This build against the baseline's msgspoold: median ratio %.2f (%s)."
                  % (sorted(based)[len(based) // 2], ", ".join("%.2f" % x for x in based))]
    lines.append("")
    return lines


def scale_lines(small, large):
    """Section 5, the daemon with few and with many files waiting."""
    lines = ["## 5. Scale: files waiting in deferred/", "",
             "| Waiting | daemon peak RSS KiB | pickup of a new message (median of 5) |",
             "|---|---|---|"]
    for s in (small, large):
        lines.append("| %d | %d | %.3f s |" % (s["waiting"], s["rss_kib"], s["pickup_s"]))
    lines += ["", "Targets: RSS ratio %.2f (≤ 1.2): %s; pickup under 1 s: %s." % (
        large["rss_kib"] / small["rss_kib"],
        verdict(large["rss_kib"] <= 1.2 * small["rss_kib"]),
        verdict(max(small["pickup_s"], large["pickup_s"]) < 1.0)), ""]
    return lines


def rounds_text(runs, key="rps"):
    return ", ".join("%.0f" % x[key] for x in runs)


def unclean(runs):
    """The non-2xx replies and socket errors of runs, summed."""
    return (sum(x["non2xx"] for x in runs), sum(x["errors"] for x in runs))


def suppress_lines(sp):
    """Section 6, POST /sms/v1/deliver with a client's list of 100,000
    suppressions against an empty list."""
    lines = ["## 6. Acceptance with a suppression list of %s entries" % "{:,}".format(
             sp["entries"]), "",
             "POST /sms/v1/deliver of a client whose sms suppression list holds "
             "%s entries (written as lib/spool/suppress.c lays them out, in %.1f s) "
             "against the same route of a client whose list is empty, the same "
             "recipient (on neither list), one spool and server, in %d alternating "
             "rounds of %d s (req/s, medians; wrk, 2 threads, 16 connections). "
             "Checked through the server first: one of the entries by GET "
             "/suppressions/sms/ADDRESS, a message to it refused, the rows' "
             "recipient accepted for both clients." % (
                 "{:,}".format(sp["entries"]), sp["write_s"], sp["rounds"],
                 sp["seconds"]), "",
             "| Mode | empty list, req/s | %s entries, req/s | with / without "
             "| target | every round, req/s (empty; %s) |" % (
                 ("{:,}".format(sp["entries"]),) * 2),
             "|---|---|---|---|---|---|"]
    for m in sp["modes"]:
        rps = {k: [x["rps"] for x in v] for k, v in m["runs"].items()}
        ratio = median(rps["with"]) / median(rps["without"]) if median(rps["without"]) else 0
        bad = {k: unclean(v) for k, v in m["runs"].items()}
        clean = not any(a or b for a, b in bad.values())
        tgt = "≥ %.2f: %s" % (sp["target"], verdict(ratio >= sp["target"] and clean
                                                     and m["checks"]["ok"]))
        if not m["checks"]["ok"]:
            tgt += "; **the lists were not as they should be**: %s" % ", ".join(
                "%s %s" % (k, v) for k, v in m["checks"]["statuses"].items())
        lines.append("| %s | %.0f | %.0f | %.2f | %s | %s; %s |" % (
            m["mode"], median(rps["without"]), median(rps["with"]), ratio, tgt,
            rounds_text(m["runs"]["without"]), rounds_text(m["runs"]["with"])))
        if not clean:
            lines.append("|  ↳ non-2xx %d, socket errors %d empty; non-2xx %d, socket "
                         "errors %d long | | | | | |" % (bad["without"] + bad["with"]))
    lk = sp.get("lookup_us")
    if lk:
        lines += ["", "What the list's size can change in a lookup (diagnostic: "
                  "the recipient's name, on no list, opened in the directory of "
                  "the list of %s and in an empty one, from Python, the median of "
                  "3 rounds of 20,000): %.2f µs and %.2f µs. That difference is "
                  "what the list's size can cost a request of hundreds of µs; a "
                  "row's ratio further from 1 than it allows is the noise of the "
                  "disk and of the machine." % (
                      "{:,}".format(sp["entries"]), lk["with"], lk["without"])]
    return lines + [""]


def inbound_lines(ib):
    """Section 7, inbound messages kept through POST /receipts/twilio,
    next to GET /ping."""
    lines = ["## 7. Inbound messages through POST /receipts/twilio", "",
             "Twilio's incoming-message webhook: signed forms (X-Twilio-Signature, "
             "HMAC-SHA1 over the URL and the sorted parameters), a MessageSid of "
             "its own each (%s made before, cycled by wrk), each checked, indexed "
             "and kept with its note durably before its 200; next to GET /ping of "
             "the same server, in %d alternating rounds of %d s (wrk, 2 threads, "
             "16 connections). Stored a second: the requests answered 200 whose "
             "messages are in inbox/ after the round, over its seconds (medians)." % (
                 "{:,}".format(ib["forms"]), ib["rounds"], ib["seconds"]), "",
             "| Mode | stored / s | POST req/s | GET /ping req/s | stored / ping "
             "| p50 ms | p99 ms | every round (stored / s; ping req/s) |",
             "|---|---|---|---|---|---|---|---|"]
    for m in ib["modes"]:
        if not m["check"]["ok"]:
            lines.append("| %s | could not be measured: one form by hand got %s, %s, "
                         "kept for %s | | | | | | |" % (
                             m["mode"], m["check"]["status"], m["check"]["type"],
                             m["check"]["kept"]))
            continue
        runs = m["runs"]["inbound"]
        # Answered 200 within wrk's seconds and found in inbox/ (which
        # also holds what the last connections' requests kept after).
        stored = [min(x["kept"], x["requests"] - x["non2xx"]) / x["seconds"]
                  if x["seconds"] else 0 for x in runs]
        ping = [x["rps"] for x in m["runs"]["ping"]]
        mid = sorted(runs, key=lambda x: x["rps"])[len(runs) // 2]
        lines.append("| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %s; %s |" % (
            m["mode"], median(stored), median([x["rps"] for x in runs]), median(ping),
            median(stored) / median(ping) if median(ping) else 0,
            mid["p50_ms"], mid["p99_ms"], ", ".join("%.0f" % x for x in stored),
            ", ".join("%.0f" % x for x in ping)))
        non2xx, errors = unclean(runs)
        lost = sum(max(0, x["requests"] - x["non2xx"] - x["kept"]) for x in runs)
        if non2xx or errors or lost:
            lines.append("|  ↳ non-2xx %d, socket errors %d, answered but not kept "
                         "(or a MessageSid again) %d | | | | | | | |"
                         % (non2xx, errors, lost))
    return lines + [""]


def received_lines(rows):
    """Section 8, message.received webhooks delivered by msgspoold."""
    lines = ["## 8. message.received webhooks from msgspoold", "",
             "Inbound messages waiting in the inbox (written as the receipts "
             "program keeps them, each noted in inbox-new/), handed over by "
             "msgspoold to a receiver on 127.0.0.1 answering 200 at once: timed "
             "from the daemon's start until the receiver has every one. Webhook "
             "transfers are a quarter of `concurrency`. The first event goes once "
             "the daemon's pass over inbox-new/ has stored every waiting message's "
             "event in events/, a durable write each (msgspoold(8), Inbound "
             "messages); from the first to the last, the rate of the transfers "
             "alone.", "",
             "| Messages | concurrency (webhook transfers) | delivered | seconds "
             "| delivered / s | first after s | first to last, / s | most in flight "
             "| signed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %d | %d (%d) | %d%s | %.2f | %.0f | %s | %s | %d | %d of %d |" % (
            r["n"], r["concurrency"], r["transfers"], r["messages"],
            " (**timed out**)" if r["timed_out"] else "", r["seconds"], r["per_s"],
            "%.2f" % r["first_s"] if r["first_s"] is not None else "-",
            "%.0f" % r["flowing_per_s"] if r.get("flowing_per_s") else "-",
            r["max_in_flight"], r["signed"], r["requests"]))
        if r["requests"] != r["messages"]:
            lines.append("|  ↳ %d requests for %d messages (%d events) | | | | | | | | |"
                         % (r["requests"], r["messages"], r["events"]))
    return lines + [""]



def thousands(n):
    return "{:,}".format(n)


# What GET /messages/{id} measured from outside before issue 23, against
# GET /ping, with 10,000 messages in sent/ (for comparison, no target).
BYID_BEFORE = {"CGI": 0.85, "msgspool-fcgi": 0.63}
# Issue 27's targets for GET /messages/{id} against GET /ping.
BYID_TARGET = {"CGI": 0.90, "msgspool-fcgi": 0.75}


def list_lines(ls):
    """Section 9, GET /messages and what msgspoold does over a spool of
    many messages of several clients."""
    total = ls["clients"] * ls["per_client"]
    lines = ["## 9. Listing messages: GET /messages over %s messages of %d clients"
             % (thousands(total), ls["clients"]), ""]
    cap = ls["capture"]
    if cap.get("error"):
        return lines + ["Could not be measured: the templates' run failed: %s"
                        % cap["error"], ""]
    f, c = ls["fill"], ls["fill"]["counts"]
    sent = sum(c.get(k, 0) for k in ("sent", "delivered", "undelivered"))
    lines += [
        "The spool: %d clients with %s messages each (SMS), created over the last "
        "5 days, written in %.1f s as copies of the documents this build wrote in "
        "a real run (bench/bigspool.py: SMS posted through lighttpd and the CGI "
        "programs, sent by msgspoold through the twilio provider to the tests' "
        "stand-in, given its receipts), each with an id, client, recipient, text, "
        "Twilio id and times of its own%s: sent/ %s (sent %s, delivered %s, "
        "undelivered %s), failed/ %s, deferred/ %s (retrying %s, scheduled %s), "
        "new/ %s." % (
            ls["clients"], thousands(ls["per_client"]), f["seconds"],
            ", and a reference" if cap.get("reference") else
            " (the send route took no reference)",
            thousands(sent), thousands(c.get("sent", 0)),
            thousands(c.get("delivered", 0)), thousands(c.get("undelivered", 0)),
            thousands(c.get("failed", 0)),
            thousands(c.get("retrying", 0) + c.get("scheduled", 0)),
            thousands(c.get("retrying", 0)), thousands(c.get("scheduled", 0)),
            thousands(c.get("new", 0))), ""]
    un = ls.get("unindexed")
    if un:
        lines += ["Before the lists were built (lists/ never made, so every file "
                  "is read): GET /messages?limit=50 of one client took %.0f ms "
                  "(one request, CGI), and %s." % (
                      un["ms"], "gave the newest 50 as it should"
                      if un["ok"] else "**did not give the newest 50 of the client**"),
                  ""]
    ri = ls["reindex"]
    if ri["rc"]:
        lines += ["`msgspool reindex` **failed** (exit %d): %s" % (ri["rc"], ri["error"]), ""]
    else:
        lines += ["`msgspool reindex` built the lists of the %s messages in %.1f s: "
                  "**%s messages/s** (it said: %s)." % (
                      thousands(ri["messages"]), ri["seconds"],
                      thousands(int(ri["per_s"])), ri["said"] or "nothing"), ""]
    once = ls.get("once")
    if once:
        lines += ["Then msgspoold `--once` over the spool, as a running one would "
                  "have (SMS through the file provider): the messages waiting in "
                  "new/ sent, the lists made good at its start: %.1f s, exit %d, "
                  "%d left in new/." % (once["seconds"], once["rc"], once["new_left"]),
                  ""]
    modes = ls["modes"]
    for m in modes:
        bad = [(k, v["seen"]) for k, v in m["checks"]["checks"].items() if not v["ok"]]
        if bad:
            lines += ["**%s: the lists were not as written**: %s." % (
                m["mode"], "; ".join("%s: %s" % kv for kv in bad)), ""]
    if modes and all(m["checks"]["ok"] for m in modes):
        lines += ["Checked through each server first, as one client: %s: as written." % (
            "; ".join(modes[0]["checks"]["checks"])), ""]
    lines += ["GET /messages?limit=50 (the newest page) and GET /messages/{id} (each "
              "of 1,000 of the client's messages in turn, of every state) next to "
              "GET /ping of the same server, in %d alternating rounds of %d s "
              "(wrk, 2 threads, 16 connections; req/s, medians):" % (
                  ls["rounds"], ls["seconds"]), "",
              "| Mode | GET /ping | GET /messages?limit=50 | list / ping | target "
              "| GET /messages/{id} | id / ping | every round (ping; list; id) |",
              "|---|---|---|---|---|---|---|---|"]
    for m in modes:
        r = m["runs"]
        med = {k: median([x["rps"] for x in v]) for k, v in r.items()}
        ok = {k: not any(unclean(v)) for k, v in r.items() if k != "one"}
        lr = med["list"] / med["ping"] if med["ping"] else 0
        ir = med["id"] / med["ping"] if med["ping"] else 0
        tgt = BYID_TARGET.get(m["mode"], 0)
        lines.append("| %s | %.0f | %.0f | %.2f | ≥ 0.50: %s | %.0f | %.2f, ≥ %.2f: %s | %s; %s; %s |" % (
            m["mode"], med["ping"], med["list"], lr,
            verdict(lr >= 0.5 and ok["list"] and m["checks"]["ok"]), med["id"], ir,
            tgt, verdict(ir >= tgt and ok["id"]),
            rounds_text(r["ping"]), rounds_text(r["list"]), rounds_text(r["id"])))
        if not all(ok.values()):
            lines.append("|  ↳ non-2xx, socket errors: %s | | | | | | | |" % "; ".join(
                "%s %d, %d" % ((k,) + unclean(v)) for k, v in r.items() if k != "one"))
    alls = [m for m in modes if "all" in m["runs"]]
    if alls:
        lines += ["", "GET /messages/{id} of every one of the client's %s messages in "
                  "turn, in the same rounds: more than msgspool-fcgi's workers "
                  "remember replies of (msgspool-fcgi(8), Per request: 4096 slots), "
                  "so most are parsed and written anew; the target applies to it "
                  "too: %s." % (thousands(ls["per_client"]), "; ".join(
                      "under %s %.0f req/s, %.2f of ping, ≥ %.2f: %s (rounds %s)%s" % (
                          m["mode"], median([x["rps"] for x in m["runs"]["all"]]),
                          median([x["rps"] for x in m["runs"]["all"]]) /
                          median([x["rps"] for x in m["runs"]["ping"]]),
                          BYID_TARGET.get(m["mode"], 0),
                          verdict(median([x["rps"] for x in m["runs"]["all"]]) /
                                  median([x["rps"] for x in m["runs"]["ping"]]) >=
                                  BYID_TARGET.get(m["mode"], 0)
                                  and not any(unclean(m["runs"]["all"]))),
                          rounds_text(m["runs"]["all"]),
                          " (non-2xx %d, socket errors %d)" % unclean(m["runs"]["all"])
                          if any(unclean(m["runs"]["all"])) else "")
                      for m in alls))]
    lines += ["", "GET /messages/{id} against GET /ping, for comparison: %s, "
              "measured from outside before issue 23 with 10,000 messages in sent/ "
              "(no target)." % ", ".join("%.2f under %s" % (v, k)
                                         for k, v in BYID_BEFORE.items()), ""]
    ones = [m for m in modes if "one" in m["runs"]]
    if ones:
        lines += ["What the page's size costs (a diagnostic, in the same rounds): "
                  "GET /messages?limit=1, the same look-up with a reply of one "
                  "message, %s." % "; ".join(
                      "under %s %.0f req/s, %.2f of ping, its body %s bytes against "
                      "the page of 50's %s%s" % (
                          m["mode"], median([x["rps"] for x in m["runs"]["one"]]),
                          median([x["rps"] for x in m["runs"]["one"]]) /
                          median([x["rps"] for x in m["runs"]["ping"]]),
                          thousands(m["bytes"]["one"]), thousands(m["bytes"]["list"]),
                          " (non-2xx %d, socket errors %d)" % unclean(m["runs"]["one"])
                          if any(unclean(m["runs"]["one"])) else "")
                      for m in ones), ""]
    if modes:
        names = list(modes[0]["latency"])
        n = modes[0]["latency"][names[0]]["n"]
        lines += ["Single requests, one after another on one kept-alive connection, "
                  "as the same client, %d of each (ms):" % n, "",
                  "| Request | %s | target |" % " | ".join(
                      "%s p50 | %s max" % (m["mode"], m["mode"]) for m in modes),
                  "|---|%s---|" % ("---|---|" * len(modes))]
        for name in names:
            cells, tgt = [], ""
            for m in modes:
                x = m["latency"][name]
                cells.append("%.1f%s | %.1f" % (x["p50_ms"], " (%d not 200: %s)" % (
                    x["nbad"], x["bad"]) if x["nbad"] else "", x["max_ms"]))
            if "status=read" in name:
                tgt = "p50 ≤ 100 ms: %s" % verdict(all(
                    m["latency"][name]["p50_ms"] <= 100 and not m["latency"][name]["nbad"]
                    for m in modes))
            lines.append("| %s | %s | %s |" % (name, " | ".join(cells), tgt))
        lines += ["", "A walk of the client's whole list (limit=500, the next cursors): "
                  "%s." % ", ".join("%d pages in %.2f s under %s" % (
                      m["checks"]["walk_pages"], m["checks"]["walk_s"], m["mode"])
                      for m in modes), ""]
    rc = ls.get("receipts")
    if rc:
        lines += ["msgspoold over the same spool, SMS through the file provider, "
                  "so that its own work is what is timed.", "",
                  "Receipts applied: Twilio's status callbacks saying delivered, "
                  "signed, for %s of the client's sent messages, POSTed to "
                  "/receipts/twilio (each once, 16 at a time, CGI: %.0f/s stored), "
                  "then msgspoold started and timed until receipts/ is empty; each "
                  "applied is a durable rewrite of its message (msgspoold(8), "
                  "Receipts)." % (thousands(rc["n"]), rc["n"] / rc["post_s"]
                                  if rc["post_s"] else 0), "",
                  "| Receipts | stored (200s) | messages delivered after | seconds "
                  "| applied / s | first after s | first to last, / s |",
                  "|---|---|---|---|---|---|---|",
                  "| %d | %d (%s) | %d%s | %.2f | **%.0f** | %s | %s |" % (
                      rc["n"], rc["stored"], rc["posted"].get("200", rc["posted"].get(200, 0)),
                      rc["delivered"], " (**timed out**)" if rc["timed_out"] else "",
                      rc["seconds"], rc["per_s"],
                      "%.2f" % rc["first_s"] if rc["first_s"] is not None else "-",
                      "%.0f" % rc["flowing_per_s"] if rc.get("flowing_per_s") else "-"), ""]
    hooks = ls.get("webhooks")
    if hooks:
        lines += ["Webhook events delivered: SMS of a client with a `webhook-url` on "
                  "127.0.0.1 (a receiver answering 200 at once) queued through POST "
                  "/sms/v1/deliver/batch, then msgspoold started and timed until the "
                  "receiver has a message.sent event of each: its sends, each event "
                  "stored in events/, and the events POSTed (webhook transfers: a "
                  "quarter of `concurrency`); from the first to the last, the rate "
                  "of the transfers alone.", "",
                  "| Messages | concurrency (webhook transfers) | delivered | seconds "
                  "| delivered / s | first after s | first to last, / s | signed |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in hooks:
            lines.append("| %d | %d (%d) | %d%s | %.2f | **%.0f** | %s | %s | %d of %d |" % (
                r["n"], r["concurrency"], r["transfers"], r["messages"],
                " (**timed out**)" if r["timed_out"] else "", r["seconds"], r["per_s"],
                "%.2f" % r["first_s"] if r["first_s"] is not None else "-",
                "%.0f" % r["flowing_per_s"] if r.get("flowing_per_s") else "-",
                r["signed"], r["requests"]))
            if r["requests"] != r["messages"] or r.get("batches_refused"):
                lines.append("|  ↳ %d requests for %d messages (%d events), %d "
                             "batches refused | | | | | | | |" % (
                                 r["requests"], r["messages"], r["events"],
                                 r.get("batches_refused", 0)))
        lines.append("")
    return lines


def baseline_lines(b):
    """Section 10, POST /sms/v1/deliver of this build and of another
    (--baseline DIR), rounds alternating."""
    ratio = b["ratio"]
    rounds = [t / x for t, x in zip(b["rps"]["this"], b["rps"]["base"]) if x]
    return ["## 10. POST /sms/v1/deliver: this build against another", "",
            "The CGI programs of this build (%s) and of %s (%s), each under its own "
            "lighttpd over its own instance, in %d alternating rounds%s (req/s; "
            "wrk, 2 threads, 16 connections):" % (
                b.get("this_rev") or "?", b["base"], b.get("base_rev") or "?",
                len(b["rps"]["this"]),
                " of %d s" % b["seconds"] if b.get("seconds") else ""), "",
            "| Build | req/s (median) | every round |", "|---|---|---|",
            "| this | %.0f | %s |" % (b["median"]["this"],
                                    ", ".join("%.0f" % x for x in b["rps"]["this"])),
            "| base | %.0f | %s |" % (b["median"]["base"],
                                    ", ".join("%.0f" % x for x in b["rps"]["base"])),
            "", "this / base: **%.2f** (the medians), target ≥ 0.95: %s; round by "
            "round, neighbours sharing the machine's load: %s (median %.2f)." % (
                ratio, verdict(ratio >= 0.95), ", ".join("%.2f" % x for x in rounds),
                median(rounds) if rounds else 0),
            ""]


FAILOVER_ROWS = {
    "alone": "the fallback alone: [sms] the only route",
    "reset": "first route refusing: each connection reset at once",
    "silent": "first route timing out: it accepts, never answers",
}
FAILOVER_NAMES = {"reset": "refusing", "silent": "timing out"}
# The least share of the fallback alone's msg/s each row should keep.
FAILOVER_TARGET = {"reset": 0.9, "silent": 0.8}


def failover_bound(fo, run):
    """The attempts the first route may see in run: `breaker` in each
    `breaker-time` it lasted."""
    return fo["breaker"] * max(1, -(-int(run["seconds"]) // fo["breaker_time"]))


def failover_whole(run):
    """Whether run sent every message once and msgspoold ended well."""
    return (run["sent"] == run["n"] == run["spare_requests"] and run["rc"] == 0
            and not run["timed_out"])


def failover_lines(fo):
    """Section 11, msgspoold failing over from a dead first route to an
    http fallback answering after 50 ms, next to the fallback alone."""
    runs = fo["runs"]
    med = {k: median([x["msgs_per_s"] for x in v]) for k, v in runs.items() if v}
    base = med.get("alone") or 0
    lines = ["## 11. Failover: a dead first route (issue 24)", "",
             "msgspoold `--once` sending %s SMS (`concurrency = 128`) through the "
             "http provider to the bench's stand-in answering every POST after 50 ms "
             "(as in section 3), timed from its start to its exit: as `[sms]`, the "
             "channel's only route, and as `[route.spare]`, the `fallback` of an "
             "`[sms]` that is down (`breaker = %d`, `breaker-time = %ds`): one that "
             "accepts each connection and resets it at once (a refusal, but "
             "counted), and one that accepts and never answers (`timeout = %d`). In "
             "%d alternating rounds, each run on a spool of its own; msg/s is what "
             "was sent over the seconds, the medians. The first route's attempts "
             "are the connections it saw; the bound is `breaker` in each "
             "`breaker-time` a run lasted. msgspoold's CPU time (user and system, "
             "the median) is a diagnostic: what the row's work costs, which the "
             "machine's other load changes less than the seconds." % (
                 thousands(fo["n"]), fo["breaker"], fo["breaker_time"],
                 fo["timeout"], fo["rounds"]), "",
             "| Row | sent (every round) | seconds | msg/s | vs alone | target "
             "| attempts at the first route (every round; bound) "
             "| requests at the fallback | msgspoold CPU s | every round, msg/s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for mode, rs in runs.items():
        if not rs:
            continue
        ratio = med[mode] / base if base else 0
        whole = all(failover_whole(x) for x in rs)
        tgt = att = ""
        if mode in FAILOVER_TARGET:
            tgt = "≥ %.1f: %s" % (FAILOVER_TARGET[mode], verdict(
                ratio >= FAILOVER_TARGET[mode] and whole))
            bounds = [failover_bound(fo, x) for x in rs]
            att = "%s; ≤ %d: %s" % (
                ", ".join(thousands(x["attempts"]) for x in rs), max(bounds),
                verdict(whole and all(x["attempts"] <= b for x, b in zip(rs, bounds))))
        lines.append("| %s | %s of %s | %.2f | **%.0f** | %.2f | %s | %s | %s | %.2f | %s |" % (
            FAILOVER_ROWS[mode], ", ".join(thousands(x["sent"]) for x in rs),
            thousands(fo["n"]), median([x["seconds"] for x in rs]), med[mode], ratio,
            tgt, att, ", ".join(thousands(x["spare_requests"]) for x in rs),
            median([x.get("cpu_s", 0) for x in rs]),
            ", ".join("%.0f" % x["msgs_per_s"] for x in rs)))
        # What went wrong, each different thing once.
        notes = []
        for x in rs:
            if failover_whole(x):
                continue
            note = "%s; exit %s%s%s" % (
                ", ".join("%s %s" % (k, thousands(v)) for k, v in x["states"].items()
                          if v), x["rc"],
                " (**timed out** after %.0f s)" % x["seconds"] if x["timed_out"] else "",
                "; it said: %s" % re.sub(r"^\S+ msgspoold\[\d+\]: ", "",
                                         x["log_tail"]).replace("|", "\\|")
                if x.get("log_tail") else "")
            if x["spare_requests"] != x["sent"]:
                note += "; %s requests at the fallback for %s sent" % (
                    thousands(x["spare_requests"]), thousands(x["sent"]))
            if note not in notes:
                notes.append(note)
        for note in notes:
            lines.append("|  ↳ %s | | | | | | | | | |" % note)
    lines.append("")
    alone = [x["msgs_per_s"] for x in runs.get("alone", [])]
    by_round = ["%s %s" % (FAILOVER_NAMES[mode], ", ".join(
        "%.2f" % (x["msgs_per_s"] / a) if a else "-" for x, a in zip(rs, alone)))
        for mode, rs in runs.items() if mode != "alone" and rs]
    if alone and by_round:
        lines += ["Round by round, each row over the fallback alone of its round "
                  "(neighbours sharing the machine's load): %s." % "; ".join(by_round),
                  ""]
    for mode, rs in runs.items():
        if mode == "alone" or not rs:
            continue
        x, st = rs[-1], rs[-1].get("status")
        times = x["attempt_s"] or []
        lines += ["%s, in the last round: sent by route %s; %s events name the "
                  "first route; %s; its status file (`msgspool status`) %s." % (
                      FAILOVER_NAMES[mode].capitalize(),
                      ", ".join("%s %s" % (k, thousands(v)) for k, v in
                                sorted(x["routes"].items())) or "none",
                      thousands(x["events_first"]),
                      ("it saw its attempts at " + ", ".join(
                          "%.3f" % t for t in times[:10]) + " s from the start" +
                       (" and %s more" % thousands(len(times) - 10)
                        if len(times) > 10 else "")) if times else "it saw no attempt",
                      "said %s since %s after %s failures, the last: %s" % (
                          st.get("state"), st.get("since"), st.get("failures"),
                          st.get("lastError")) if st else "was not written"), ""]
    return lines

SECTION_RE = re.compile(r"## (\d+)([a-z]?)\. ")


def ops_lines(op):
    """Section 12, GET /metrics and the console's overview over a spool
    of many messages."""
    total = op["clients"] * op["per_client"]
    lines = ["## 12. Operations: GET /metrics and the console's overview over %s "
             "messages" % thousands(total), ""]
    cap = op["capture"]
    if cap.get("error"):
        return lines + ["Could not be measured: the templates' run failed: %s"
                        % cap["error"], ""]
    f, c, o = op["fill"], op["fill"]["counts"], op["once"]
    lines += [
        "The spool of section 9 (bench/bigspool.py: %d clients, %s SMS each, "
        "written in %.1f s: sent/ %s, failed/ %s, deferred/ %s, new/ %s), then "
        "msgspoold `--once` over it (SMS through the file provider; %.1f s, exit "
        "%d), which %s status/daemon.json. A key of the scopes metrics and admin; "
        "the console on (console-secret-file), signed in once with POST "
        "/console/sign-in." % (
            op["clients"], thousands(op["per_client"]), f["seconds"],
            thousands(sum(c.get(k, 0) for k in ("sent", "delivered", "undelivered"))),
            thousands(c.get("failed", 0)),
            thousands(c.get("retrying", 0) + c.get("scheduled", 0)),
            thousands(c.get("new", 0)), o["seconds"], o["rc"],
            "left" if o["status"] else "**did not leave**"), ""]
    lines += [
        "The first GET /metrics of each server, its cache of the queue's "
        "channels (SPOOL/metrics/queue-STATE) removed before it, so that every "
        "file is read as far as its channel: " + "; ".join(
            "%s %.0f ms (%d, %s of %s files in the queue's gauges%s)" % (
                m["mode"], m["cold"]["ms"], m["cold"]["status"],
                thousands(m["cold"]["queue"]), thousands(op["files"]),
                ", msgspoold's heartbeat" if m["cold"]["heartbeat"]
                else ", **no heartbeat**")
            for m in op["modes"]) + ".", ""]
    lines += [
        "Then GET /metrics (X-API-KEY), GET /console (the overview, the "
        "session's cookie) and GET /ping (what any request costs on this machine "
        "at this load: no target) one after another, %d of each, on one "
        "kept-alive connection (ms; p99 between the two greatest of %d):"
        % (op["n"], op["n"]),
        "",
        "| Mode | Request | p50 | p99 | max | bytes | target p50 ≤ %d ms | not 200 |"
        % op["target_ms"],
        "|---|---|---|---|---|---|---|---|"]
    for m in op["modes"]:
        for name, label in (("metrics", "GET /metrics"),
                            ("console", "GET /console (overview)"),
                            ("ping", "GET /ping")):
            r = m.get(name)
            if r is None:
                continue
            lines.append("| %s | %s | %.1f | %.1f | %.1f | %s | %s | %s |" % (
                m["mode"], label, r["p50_ms"], r["p99_ms"], r["max_ms"],
                thousands(r["bytes"]), "—" if name == "ping"
                else verdict(r["p50_ms"] <= op["target_ms"]),
                "%d %s" % (r["nbad"], r["bad"]) if r["nbad"] else "0"))
    return lines + [""]


def ceiling_cells(runs, c, rr):
    """A ceiling's median req/s at c connections and its ratio to the
    responder's rr, as two cells ("-" when the run had none)."""
    x = runs.get("ceiling/%d" % c)
    if not x:
        return "-", "-"
    cr = median([y["rps"] for y in x])
    return "%.0f" % cr, "%.2f" % (cr / rr) if rr else "-"


def durable_lines(du, kannel=None):
    """Section 13, durable enqueue: msgspool-fcgi against the naive
    durable FastCGI responder, with the ceilings of the same path."""
    lines = ["## 13. Durable enqueue: msgspool-fcgi against the naive durable "
             "FastCGI responder", "",
             "POST /sms/v1/deliver through msgspool-fcgi, and through "
             "bench/durable-fcgi (each request's body written to tmp/, fsynced, "
             "renamed into new/, new/ fsynced, then 202: the promise of "
             "msgspool-spool(5) with nothing else), each with %d workers behind "
             "the same lighttpd config (conf/lighttpd-fcgi.conf), in %d "
             "alternating rounds of %d s at each number of connections (req/s, "
             "wrk, 2 threads; medians). The ceiling is the same responder "
             "without the sync of new/ (not durable): no sharing of directory "
             "syncs among requests, however good, can beat it; only a sync "
             "that serves many files can:" % (du["workers"], du["rounds"],
                                               du["duration"]), "",
             "| Connections | msgspool-fcgi | p99 ms | responder | p99 ms | ratio | "
             "target ≥ 1.3 | p99 no worse | ceiling | ceiling / responder | "
             "msgspool-fcgi's directory syncs per message |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    rounds = []
    for c in du["conns"]:
        m = du["runs"]["msgspool-fcgi/%d" % c]
        r = du["runs"]["responder/%d" % c]
        cl = du["runs"].get("ceiling/%d" % c, [])
        mr, rr = median([x["rps"] for x in m]), median([x["rps"] for x in r])
        mp, rp = median([x["p99_ms"] for x in m]), median([x["p99_ms"] for x in r])
        ren, syn = du["syncs"].get(str(c), [0, 0])
        bad = sum(x["non2xx"] + x["errors"] for x in m + r + cl)
        lines.append("| %d | %.0f | %.1f | %.0f | %.1f | **%.2f** | %s | %s | %s | %s | %s |" % (
            (c, mr, mp, rr, rp, mr / rr if rr else 0, verdict(rr and mr / rr >= 1.3),
             verdict(mp <= rp)) + ceiling_cells(du["runs"], c, rr) +
            ("%.2f (%d syncs for %d)" % (syn / ren, syn, ren) if ren else "-",)))
        rounds.append("%d connections: msgspool-fcgi %s; responder %s%s%s" % (
            c, ", ".join("%.0f" % x["rps"] for x in m),
            ", ".join("%.0f" % x["rps"] for x in r),
            "; ceiling %s" % ", ".join("%.0f" % x["rps"] for x in cl) if cl else "",
            "; **%d requests not 2xx or failed**" % bad if bad else ""))
    lines += ["", "Every round (req/s): " + "; ".join(rounds) + ".", "",
              "msgspool-fcgi syncs each message's file (written unnamed, O_TMPFILE) "
              "and shares the sync of new/ with the workers queueing at the same "
              "time (msgspool-spool(5), Group commit); the responder syncs its file "
              "and new/ for each request.", ""]
    k = kannel.get("rps") if kannel and "error" not in kannel else None
    if du.get("batch"):
        lines += ["POST /sms/v1/deliver/batch, 100 SMS a request, on the machine's "
                  "disk: msgspool-fcgi under each `sync` (msgspool.conf(5)), and "
                  "the responder cutting the same body into 100 files with "
                  "nothing else (the ceiling of each: its files each synced and "
                  "new/ once, or the file system synced once for the files and "
                  "once for their names), in alternating rounds:", ""]
        lines += batch_table(du["batch"], k)
    return lines + durable_fs_lines(du, kannel)


def batch_table(b, k):
    """The rows of batch_rounds' runs b (messages a second, medians),
    against Kannel's rate k (None: not measured)."""
    lines = ["| side | messages/s | p99 ms | file system syncs a request | "
             "vs Kannel's sendsms | target ≥ 1.5 | every round |",
             "|---|---|---|---|---|---|---|"]
    names = {"filesystem": "msgspool-fcgi, `sync = filesystem`",
             "file": "msgspool-fcgi, `sync = file`",
             "ceiling-filesystem": "ceiling: 100 files, syncfs twice",
             "ceiling-file": "ceiling: 100 files each synced, new/ once"}
    for how in ("filesystem", "file", "ceiling-filesystem", "ceiling-file"):
        runs = b.get(how)
        if not runs:
            continue
        msgs = median([x["msgs"] for x in runs])
        reqs = sum(x.get("queued", 0) for x in runs) / 100
        syncs = sum(x.get("fs_syncs", 0) for x in runs)
        bad = sum(x["non2xx"] + x["errors"] for x in runs)
        mine = not how.startswith("ceiling")
        lines.append("| %s | %.0f | %.1f | %s | %s | %s | %s%s |" % (
            names[how], msgs, median([x["p99_ms"] for x in runs]),
            "%.2f (%d for %d)" % (syncs / reqs, syncs, reqs)
            if reqs and how == "filesystem" else "-",
            "%.2f" % (msgs / k) if k else "-",
            verdict(msgs / k >= 1.5) if k and mine else "-",
            ", ".join("%.0f" % x["msgs"] for x in runs),
            "; **%d requests not 2xx or failed**" % bad if bad else ""))
    lines += ["", "Kannel's figure is section 2's, on the machine's own disk, "
              "without a sync." if k else "Kannel not measured in this run.", ""]
    return lines


def durable_fs_lines(du, kannel):
    """Section 13's second part: the same on a file system of the spool's
    own, and batches of 100 with each sync and their ceilings."""
    fs = du.get("fs")
    if not fs:
        return ["On a file system of the spool's own: not measured (the bench "
                "mounts one only when run as root, with mkfs.ext4 and a loop "
                "device).", ""]
    lines = ["On a file system of the spool's own (%s, made for the run), the "
             "same rounds (req/s, medians):" % fs["fstype"], "",
             "| Connections | msgspool-fcgi | p99 ms | responder | p99 ms | ratio | "
             "target ≥ 1.3 | ceiling | ceiling / responder |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in du["conns"]:
        m = fs["runs"]["msgspool-fcgi/%d" % c]
        r = fs["runs"]["responder/%d" % c]
        cl = fs["runs"].get("ceiling/%d" % c, [])
        mr, rr = median([x["rps"] for x in m]), median([x["rps"] for x in r])
        bad = sum(x["non2xx"] + x["errors"] for x in m + r + cl)
        lines.append("| %d | %.0f | %.1f | %.0f | %.1f | **%.2f** | %s | %s | %s |%s" % (
            (c, mr, median([x["p99_ms"] for x in m]), rr,
             median([x["p99_ms"] for x in r]), mr / rr if rr else 0,
             verdict(rr and mr / rr >= 1.3)) + ceiling_cells(fs["runs"], c, rr) +
            (" **%d requests not 2xx or failed**" % bad if bad else "",)))
    k = kannel.get("rps") if kannel and "error" not in kannel else None
    lines += ["", "POST /sms/v1/deliver/batch, 100 SMS a request, on that file "
              "system, as on the machine's disk above (messages a second, "
              "medians):", ""]
    return lines + batch_table(fs["batch"], k)


def split_sections(text):
    """text (a results.md) as its head, its sections [(key, lines)] in
    order, key (number, letter) of each title, and the line of the load
    at the end (or None)."""
    head, secs, tail = [], [], None
    for line in text.rstrip("\n").split("\n"):
        m = SECTION_RE.match(line)
        if line.startswith("Load average at the end"):
            tail = line
        elif m:
            secs.append(((int(m.group(1)), m.group(2)), [line]))
        elif secs:
            secs[-1][1].append(line)
        else:
            head.append(line)
    return head, secs, tail


def merge(old, new, note):
    """The text of results.md old with the sections of new (render()'s
    text of a run of some sections) in place of its own of the same
    number, or added in their order; each of them says, after its title,
    note: that it was measured apart from the rest of the file."""
    if old is None:
        return new
    head, secs, tail = split_sections(old)
    _, fresh, _ = split_sections(new)
    byk = dict(secs)
    for k, lines in fresh:
        byk[k] = lines[:2] + [note, ""] + lines[2:]
    out = head[:]
    for k in sorted(byk):
        out += byk[k]
    if tail:
        out.append(tail)
    return "\n".join(out) + "\n"

def render(res):
    """The text of bench/results.md for the results res."""
    s = res["started"]
    lines = ["# msgspool benchmarks", "",
             "Run by `make bench` on %s, %s, %d CPUs, load average %.1f at the start "
             "(the machine may be shared: other load slows every row, the baselines "
             "too). Ratios are against baselines measured in the same run."
             % (s["time"], s["release"], s["cpus"], s["load"]), ""]
    p = res["params"]
    rows = res.get("cgi", [])
    sms_rps = None
    if "cgi" in res:
        lines += cgi_lines(rows, p["cgi_pair_rounds"])
        sms_rps = next(r["rps"] for r in rows if r["prog"] == "sms-deliver")
    fcgi_sms = fcgi_disk = fcgi_batch = None
    if "fcgi" in res:
        fc = res["fcgi"]
        fcgi_sms = fc["sms_rps"]
        fcgi_disk = fc["disk_rps"]
        fcgi_batch = fc.get("batch_msgs")
        lines += fcgi_lines(fc, rows, p["fcgi_rounds"], p["fcgi_workers"])
    if "kannel" in res:
        lines += kannel_lines(res["kannel"], sms_rps, fcgi_sms, fcgi_disk, fcgi_batch)
    if "http" in res:
        lines += http_lines(res["http"])
    if "smpp" in res:
        lines += smpp_lines(res["smpp"])
    if "smtp" in res:
        lines += smtp_lines(res["smtp"])
    if "scale" in res:
        lines += scale_lines(*res["scale"])
    if "suppress" in res:
        lines += suppress_lines(res["suppress"])
    if "inbound" in res:
        lines += inbound_lines(res["inbound"])
    if "received" in res:
        lines += received_lines(res["received"])
    if "list" in res:
        lines += list_lines(res["list"])
    if "baseline" in res:
        lines += baseline_lines(res["baseline"])
    if "failover" in res:
        lines += failover_lines(res["failover"])
    if "ops" in res:
        lines += ops_lines(res["ops"])
    if "durable" in res:
        lines += durable_lines(res["durable"], res.get("kannel"))
    lines.append("Load average at the end: %.1f." % res["load_end"])
    return "\n".join(lines) + "\n"

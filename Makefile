# msgspool: GNU make.  `make`, `make check`, `make run`; see README.md.
#
# Everything the build makes goes under build/ (objects, libmsgspool.a,
# the programs, the test binaries; the fuzz targets under build/fuzz/);
# O=dir/ builds under another directory (make sanitize uses
# O=build/asan/).  The sources are in folders by layer (README.md, "Source
# layout"), which tests/layers.py checks.

PREFIX		?= /usr/local
SYSCONFDIR	?= $(PREFIX)/etc
DESTDIR		?=
O		?= build/
PORT		?= 8080
SPOOLDIR	?= /var/spool/msgspool
SPOOL_USER	?= msgspool
CGI_USER	?= www-data
CGI_GROUP	?= www-data
CGIDIR		 = $(PREFIX)/lib/msgspool/cgi-bin
SHAREDIR	 = $(PREFIX)/share/msgspool
# mkspool (conf/mkspool.sh), which lays out the spool.
LIBEXECDIR	 = $(PREFIX)/lib/msgspool
# The systemd units (the Debian package: /lib/systemd/system).
UNITDIR		 = $(SHAREDIR)
# The version: that of the newest entry of debian/changelog, its one place
# (make deb, msgspool_build_info of GET /metrics, status/daemon.json).
VERSION		:= $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)

CC		?= cc
CFLAGS		?= -O2 -g
PKG_CONFIG	?= pkg-config
PYTHON		?= /usr/bin/python3
NPROC		:= $(shell nproc 2>/dev/null || echo 2)

WARN		 = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
		   -Wmissing-prototypes -Wformat=2
BASE_CPPFLAGS	 = -std=c11 -D_GNU_SOURCE -Ilib -Ispooler \
		   -DMSGSPOOL_SYSCONFDIR='"$(SYSCONFDIR)"' \
		   -DMSGSPOOL_VERSION='"$(VERSION)"'

# Per-program libraries: no CGI program links libcurl; only the
# attachment-handling ones (issue 3) link libmagic.
JANSSON_CFLAGS	 = $(shell $(PKG_CONFIG) --cflags jansson 2>/dev/null)
JANSSON_LIBS	 = $(shell $(PKG_CONFIG) --libs jansson 2>/dev/null)
NETTLE_CFLAGS	 = $(shell $(PKG_CONFIG) --cflags nettle 2>/dev/null)
NETTLE_LIBS	 = $(shell $(PKG_CONFIG) --libs nettle 2>/dev/null)
CURL_CFLAGS	 = $(shell $(PKG_CONFIG) --cflags libcurl 2>/dev/null)
CURL_LIBS	 = $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null)
# GMime builds the email (spooler/message.c): msgspoold alone links it.
GMIME_CFLAGS	 = $(shell $(PKG_CONFIG) --cflags gmime-3.0 2>/dev/null)
GMIME_LIBS	 = $(shell $(PKG_CONFIG) --libs gmime-3.0 2>/dev/null)
# libsmpp34 packs and unpacks the SMPP PDUs: msgspoold alone links it.
SMPP_CFLAGS	 = $(shell $(PKG_CONFIG) --cflags libsmpp34 2>/dev/null)
SMPP_LIBS	 = $(shell $(PKG_CONFIG) --libs libsmpp34 2>/dev/null)
CMOCKA_CFLAGS	 = $(shell $(PKG_CONFIG) --cflags cmocka 2>/dev/null)
CMOCKA_LIBS	 = $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)
MAGIC_LIBS	 = -lmagic
# CGI programs run once per request: linked statically they skip the
# dynamic loader (measured: exec to exit 0.47 ms static, 0.74 ms dynamic).
# The libmagic ones stay dynamic.  CGI_STATIC= turns it off.
CGI_STATIC	?= -static

ALL_CFLAGS	 = $(BASE_CPPFLAGS) $(JANSSON_CFLAGS) $(NETTLE_CFLAGS) \
		   $(CPPFLAGS) $(WARN) $(CFLAGS)
LIBS_BASE	 = $(JANSSON_LIBS) $(NETTLE_LIBS)

# The library's folders, lowest layer first: base (generic), spool (the
# spool's files), content (channels, clients, templates, messages), http
# (requests and replies).
LIB_BASE	 = buf log util ulid rfc3339 netfs config config_secret valid mime \
		   channel
LIB_SPOOL	 = spool claim commit hold area msgdoc msgdoc_receipt receipt blob \
		   event suppress \
		   suppress_list \
		   inbox inbound list list_append list_seg list_cache list_page \
		   list_rewrite list_build metrics dsync tmpfile
LIB_CONTENT	 = keys html sms tmpl unsub keyword route
LIB_HTTP	 = http problem cgi serve batch idem rate attach memo
# msgspool erase: an address erased from every area of the spool.
LIB_SPOOL	+= erase erase_files
# Who holds a claim: its owner's record in claims/ (spool/claim_owner.c).
LIB_SPOOL	+= claim_owner
# A message looked up by its id, and its cancel (spool/cancel.h); the
# CGI programs' counters for GET /metrics (spool/counts.h).
LIB_SPOOL	+= cancel counts
# The queue by state and channel for GET /metrics and the console
# (spool/metrics.h, metrics_queue).
LIB_SPOOL	+= metrics_queue
# A spool opened request after request, its states looked at again only
# when its root changed (spool/spool_seen.c).
LIB_SPOOL	+= spool_seen
LIB_SRCS	 = $(LIB_BASE:%=base/%) $(LIB_SPOOL:%=spool/%) \
		   $(LIB_CONTENT:%=content/%) $(LIB_HTTP:%=http/%)
LIB_MODULES	 = $(notdir $(LIB_SRCS))
LIB_HDRS	 = $(wildcard lib/*/*.h)
SPOOLER_HDRS	 = $(wildcard spooler/*/*.h)
# mimetype.o is pulled only by the programs that call it, which link -lmagic.
LIB_OBJS	 = $(LIB_SRCS:%=$(O)lib/%.o) $(O)lib/content/mimetype.o
LIBA		 = $(O)lib/libmsgspool.a

CGI_PROGS	 = ping templates sms-deliver sms-batch ott-deliver \
		   voice-deliver email-deliver attachments messages receipts \
		   suppressions unsubscribe console
# GET /metrics (spool/metrics.h).
CGI_PROGS	+= metrics
MAGIC_PROGS	 = email-deliver attachments
CGI_BINS	 = $(CGI_PROGS:%=$(O)cgi-bin/%)
# The console's program in files by concern (cgi-bin/console.h): its
# routes (console.c, the program), its session, its pages' frame, its
# pages; the same objects link into msgspool-fcgi.
CONSOLE_MODS	 = console_session console_html console_overview console_msgs \
		   console_supp
CONSOLE_OBJS	 = $(CONSOLE_MODS:%=$(O)cgi-bin/%.o)
# The smpp provider: its entry points, then its session, messages,
# receipts, inbound messages and PDUs (spooler/smpp.h), on libsmpp34.
SMPP_MODS	 = provider_smpp smpp_session smpp_submit smpp_receipt \
		   smpp_inbound smpp_pdu
SMPP_OBJS	 = $(SMPP_MODS:%=$(O)spooler/smpp/%.o)
# The providers (spooler/providers/) and the smpp one with its text
# encoder (spooler/smpp/).
PROVIDER_MODS	 = policy provider provider_file provider_http provider_smtp \
		   provider_test provider_twilio provider_whatsapp
SPOOLER_OBJS	 = $(PROVIDER_MODS:%=$(O)spooler/providers/%.o) \
		   $(O)spooler/smpp/gsm.o $(SMPP_OBJS)
DAEMON		 = $(O)spooler/msgspoold
# msgspool-fcgi: the programs' endpoints compiled in (-DMSGSPOOL_FCGI),
# linked dynamically with libfcgi; the CGI programs never link it.
FCGI		 = $(O)fcgi/msgspool-fcgi
FCGI_EP_OBJS	 = $(CGI_PROGS:%=$(O)fcgi/ep-%.o)
FCGI_OBJS	 = $(O)fcgi/fcgi.o $(O)fcgi/arena.o $(FCGI_EP_OBJS) \
		   $(CONSOLE_OBJS)
FCGI_LIBS	 = -lfcgi
CLI		 = $(O)spooler/msgspool
BOUNCE		 = $(O)spooler/msgspool-bounce
UNIT_TESTS	 = $(LIB_MODULES:%=$(O)tests/unit/test_%) \
		   $(O)tests/unit/test_mimetype $(O)tests/unit/test_policy
# The SMS text encoder of the smpp provider, with its own test.
UNIT_TESTS	+= $(O)tests/unit/test_gsm
# The email builder, on GMime: the daemon's alone, with its own test.
SPOOLER_OBJS	+= $(O)spooler/providers/message.o
UNIT_TESTS	+= $(O)tests/unit/test_message
UNIT_TESTS	+= $(O)tests/unit/test_fcgi
# Its workers' allocator for jansson.
UNIT_TESTS	+= $(O)tests/unit/test_arena
# The shared spool's claim keeper, on a spool of this host.
UNIT_TESTS	+= $(O)tests/unit/test_claimkeep
# The recorder of a spool of this host.
UNIT_TESTS	+= $(O)tests/unit/test_recorder
# The tests of a module in more than one file: spool, config, keys,
# tmpl, valid.
UNIT_TESTS	+= $(O)tests/unit/test_spool_move
UNIT_TESTS	+= $(O)tests/unit/test_config_values
UNIT_TESTS	+= $(O)tests/unit/test_keys_add
UNIT_TESTS	+= $(O)tests/unit/test_tmpl_load
UNIT_TESTS	+= $(O)tests/unit/test_valid_object

# Debian packages: to build, to test, to benchmark.
DEB_BUILD	 = gcc make pkg-config libjansson-dev nettle-dev \
		   libcurl4-openssl-dev libmagic-dev libgmime-3.0-dev \
		   libsmpp34-dev \
		   libfcgi-dev
DEB_TEST	 = libcmocka-dev lighttpd python3 python3-pytest \
		   python3-pytest-xdist python3-requests python3-aiosmtpd python3-yaml \
		   python3-jsonschema mandoc curl nginx fcgiwrap apache2-bin \
		   busybox postfix spawn-fcgi chromium chromium-driver \
		   python3-selenium
# test_metrics.py parses GET /metrics with Prometheus' own parser.
DEB_TEST	+= python3-prometheus-client
DEB_BENCH	 = wrk kannel
# make deb and make check-deb: the package's build and its test in a
# fresh Debian 12 root.
DEB_DEB		 = debhelper dpkg-dev fakeroot lintian mmdebstrap \
		   systemd-container
# make check-nfs: NFS server and clients as user-mode Linux kernels.
DEB_NFS		 = user-mode-linux nfs-kernel-server nfs-common kmod iproute2

.PHONY: all build deps deps-test deps-bench check check-build check-nfs \
	check-servers run install install-files deb check-deb \
	uninstall sanitize bench fuzz clean FORCE
.SUFFIXES:

all: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build

build: $(LIBA) $(CGI_BINS) $(DAEMON) $(CLI) $(BOUNCE) $(FCGI)

deps:
	@tests/deps.sh $(DEB_BUILD)

deps-test:
	@tests/deps.sh $(DEB_BUILD) $(DEB_TEST)
	@tests/openapi/lint.sh --install || \
	    echo "deps: the OpenAPI lint of make check will be skipped" >&2

$(O)lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The default config path is compiled in: rebuild config.o when it moves.
$(O)lib/sysconfdir.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(SYSCONFDIR)' | cmp -s - $@ || echo '$(SYSCONFDIR)' >$@
$(O)lib/base/config.o: $(O)lib/sysconfdir.stamp
# The version is compiled in too, where it is used.
$(O)lib/version.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' >$@
$(O)lib/spool/metrics.o $(O)spooler/daemon/daemon_metrics.o \
    $(O)spooler/cli/msgspool.o: $(O)lib/version.stamp
FORCE:

$(LIBA): $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $(LIB_OBJS)

$(O)cgi-bin/%: cgi-bin/%.c $(LIBA) $(LIB_HDRS) cgi-bin/endpoints.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) \
	    $(if $(filter $*,$(MAGIC_PROGS)),,$(CGI_STATIC)) -o $@ $< \
	    $(filter %.o,$^) \
	    $(LIBA) $(LIBS_BASE) $(if $(filter $*,$(MAGIC_PROGS)),$(MAGIC_LIBS))

$(O)cgi-bin/console: $(CONSOLE_OBJS) cgi-bin/console.h
$(O)fcgi/ep-console.o: cgi-bin/console.h
$(CONSOLE_OBJS): $(O)cgi-bin/%.o: cgi-bin/%.c cgi-bin/console.h $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(O)fcgi/ep-%.o: cgi-bin/%.c $(LIB_HDRS) cgi-bin/endpoints.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DMSGSPOOL_FCGI -c -o $@ $<

$(O)fcgi/%.o: fcgi/%.c fcgi/fcgi.h $(LIB_HDRS) cgi-bin/endpoints.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Icgi-bin -c -o $@ $<

$(O)fcgi/arena.o $(O)fcgi/msgspool-fcgi.o: fcgi/arena.h

$(FCGI): $(O)fcgi/msgspool-fcgi.o $(FCGI_OBJS) $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(O)fcgi/msgspool-fcgi.o $(FCGI_OBJS) $(LIBA) \
	    $(LIBS_BASE) $(MAGIC_LIBS) $(FCGI_LIBS)

$(O)spooler/%.o: spooler/%.c $(SPOOLER_HDRS) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -c -o $@ $<

$(SMPP_OBJS): $(O)spooler/%.o: spooler/%.c $(SPOOLER_HDRS) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) $(SMPP_CFLAGS) -c -o $@ $<

$(O)spooler/providers/message.o: spooler/providers/message.c \
    $(SPOOLER_HDRS) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GMIME_CFLAGS) -c -o $@ $<

# The bounce reader parses with GMime too.
$(O)spooler/bounce/msgspool-bounce.o: spooler/bounce/msgspool-bounce.c \
    $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(GMIME_CFLAGS) -c -o $@ $<

$(BOUNCE): $(O)spooler/bounce/msgspool-bounce.o $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(O)spooler/bounce/msgspool-bounce.o $(LIBA) \
	    $(LIBS_BASE) $(GMIME_LIBS)

# The claim keeper of a shared spool: made, freed and proving; claiming;
# recording and housekeeping (spooler/claimkeep_impl.h); and the recorder
# of a spool of this host (spooler/daemon/recorder.h).
CLAIMKEEP_OBJS	 = $(O)spooler/daemon/claimkeep.o \
		   $(O)spooler/daemon/claimkeep_claim.o \
		   $(O)spooler/daemon/claimkeep_tasks.o \
		   $(O)spooler/daemon/recorder.o
DAEMON_MODS	 = msgspoold daemon_config daemon_chores daemon_receipts \
		   daemon_inbox daemon_record daemon_batch daemon_bounce webhook \
		   webhook_seen daemon_routes
# Its counts for GET /metrics (daemon_metrics.h).
DAEMON_MODS	+= daemon_metrics
# How it waits for work (daemon_wait.c).
DAEMON_MODS	+= daemon_wait
DAEMON_OBJS	 = $(DAEMON_MODS:%=$(O)spooler/daemon/%.o) $(CLAIMKEEP_OBJS)
$(DAEMON): $(DAEMON_OBJS) $(SPOOLER_OBJS) \
    $(LIBA)
	$(CC) $(LDFLAGS) -pthread -o $@ $(DAEMON_OBJS) $(SPOOLER_OBJS) \
	    $(LIBA) $(LIBS_BASE) $(CURL_LIBS) $(GMIME_LIBS) $(SMPP_LIBS)

CLI_OBJS	 = $(O)spooler/cli/msgspool.o $(O)spooler/cli/cli_admin.o \
		   $(O)spooler/cli/cli_inbox.o
CLI_OBJS	+= $(O)spooler/cli/cli_suppress.o
CLI_OBJS	+= $(O)spooler/cli/cli_progress.o
CLI_OBJS	+= $(O)spooler/cli/cli_erase.o
$(CLI): $(CLI_OBJS) $(LIBA)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIBA) $(LIBS_BASE)

$(O)tests/unit/testutil.o: tests/unit/testutil.c tests/unit/testutil.h $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -c -o $@ $<

$(O)tests/unit/test_%: tests/unit/test_%.c $(O)tests/unit/testutil.o \
    $(LIBA) $(LIB_HDRS) tests/unit/testutil.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< \
	    $(filter %.o,$^) $(LIBA) \
	    $(LIBS_BASE) $(CMOCKA_LIBS) \
	    $(if $(filter mimetype attach,$*),$(MAGIC_LIBS))

# Helpers that some tests share beyond testutil.o, each linked into the
# tests that need it: a temporary installation for the pipeline (cgirun.c),
# a spool's fixture and checks of its files (spooldir.c), configs
# written and parsed (conftext.c), a keys file and its lookups
# (keysfile.c), the lists' fixtures (listutil.c).
UNIT_HELPERS	 = $(O)tests/unit/cgirun.o $(O)tests/unit/spooldir.o \
		   $(O)tests/unit/conftext.o $(O)tests/unit/keysfile.o \
		   $(O)tests/unit/listutil.o

$(UNIT_HELPERS): $(O)tests/unit/%.o: tests/unit/%.c tests/unit/%.h \
    tests/unit/testutil.h $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit -c -o $@ $<

$(O)tests/unit/test_serve: $(O)tests/unit/cgirun.o tests/unit/cgirun.h
$(O)tests/unit/test_spool $(O)tests/unit/test_spool_move \
    $(O)tests/unit/test_spool_seen \
    $(O)tests/unit/test_metrics $(O)tests/unit/test_cancel \
    $(O)tests/unit/test_counts $(O)tests/unit/test_metrics_queue: \
    $(O)tests/unit/spooldir.o tests/unit/spooldir.h
$(O)tests/unit/test_config $(O)tests/unit/test_config_values \
    $(O)tests/unit/test_config_secret: \
    $(O)tests/unit/conftext.o tests/unit/conftext.h
$(O)tests/unit/test_keys $(O)tests/unit/test_keys_add: \
    $(O)tests/unit/keysfile.o tests/unit/keysfile.h
$(O)tests/unit/test_tmpl $(O)tests/unit/test_tmpl_load: \
    tests/unit/tmplsample.h
$(O)tests/unit/test_list $(O)tests/unit/test_list_page \
    $(O)tests/unit/test_list_rewrite $(O)tests/unit/test_list_build: \
    $(O)tests/unit/listutil.o tests/unit/listutil.h

# A test build of three routes, of msgspoold and of the CLI with fault
# points (FAULT, lib/base/util.h) in the modules of the durable write and
# of claims: the kill-and-retry test of Idempotency-Key
# (tests/blackbox/test_idempotency.py), the cancel that races a daemon's
# record (tests/blackbox/test_cancel_race.py) and the one that races an
# operator's retry (tests/blackbox/test_retry_race.py) run them.
FAULT_MODS	 = base/util spool/commit spool/hold http/idem spool/claim \
		   spool/dsync
FAULT_BINS	 = $(O)tests/fault/sms-deliver $(O)tests/fault/sms-batch \
		   $(O)tests/fault/messages $(O)tests/fault/msgspoold \
		   $(O)tests/fault/msgspool
.SECONDARY: $(FAULT_MODS:%=$(O)tests/fault/%.o)

$(O)tests/fault/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DMSGSPOOL_FAULTS -c -o $@ $<

$(O)tests/fault/%: cgi-bin/%.c $(FAULT_MODS:%=$(O)tests/fault/%.o) \
    $(LIBA) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(FAULT_MODS:%=$(O)tests/fault/%.o) $(LIBA) $(LIBS_BASE)

$(O)tests/fault/msgspoold: $(DAEMON_OBJS) $(SPOOLER_OBJS) \
    $(FAULT_MODS:%=$(O)tests/fault/%.o) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -pthread -o $@ $(DAEMON_OBJS) $(SPOOLER_OBJS) \
	    $(FAULT_MODS:%=$(O)tests/fault/%.o) $(LIBA) $(LIBS_BASE) \
	    $(CURL_LIBS) $(GMIME_LIBS) $(SMPP_LIBS)

$(O)tests/fault/msgspool: $(CLI_OBJS) $(FAULT_MODS:%=$(O)tests/fault/%.o) \
    $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) \
	    $(FAULT_MODS:%=$(O)tests/fault/%.o) $(LIBA) $(LIBS_BASE)

# The spooler's rules, tested on their own (no curl).
$(O)tests/unit/test_policy: tests/unit/test_policy.c \
    $(O)spooler/providers/policy.o spooler/providers/policy.h \
    lib/base/msgspool.h $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(O)spooler/providers/policy.o $(LIBA) $(LIBS_BASE) \
	    $(CMOCKA_LIBS)

$(O)tests/unit/test_gsm: tests/unit/test_gsm.c $(O)spooler/smpp/gsm.o \
    spooler/smpp/gsm.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(O)spooler/smpp/gsm.o $(CMOCKA_LIBS)

$(O)tests/unit/test_claimkeep: tests/unit/test_claimkeep.c \
    $(O)tests/unit/testutil.o $(CLAIMKEEP_OBJS) $(LIBA) $(LIB_HDRS) \
    spooler/daemon/claimkeep.h tests/unit/testutil.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit \
	    $(LDFLAGS) -pthread -o $@ $< $(O)tests/unit/testutil.o \
	    $(CLAIMKEEP_OBJS) $(LIBA) $(LIBS_BASE) $(CMOCKA_LIBS)

$(O)tests/unit/test_recorder: tests/unit/test_recorder.c \
    $(O)tests/unit/testutil.o $(O)spooler/daemon/recorder.o $(LIBA) \
    $(LIB_HDRS) spooler/daemon/recorder.h tests/unit/testutil.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit \
	    $(LDFLAGS) -pthread -o $@ $< $(O)tests/unit/testutil.o \
	    $(O)spooler/daemon/recorder.o $(LIBA) $(LIBS_BASE) $(CMOCKA_LIBS)

# The email builder's test links it and GMime, as msgspoold does.
$(O)tests/unit/test_message: tests/unit/test_message.c \
    $(O)tests/unit/testutil.o $(O)spooler/providers/message.o $(LIBA) \
    $(LIB_HDRS) spooler/providers/message.h tests/unit/testutil.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit \
	    $(LDFLAGS) -o $@ $< $(O)tests/unit/testutil.o \
	    $(O)spooler/providers/message.o $(LIBA) $(LIBS_BASE) $(CMOCKA_LIBS) \
	    $(GMIME_LIBS)

# msgspool-fcgi's routing, environment and config cache, with the
# endpoints it serves.
$(O)tests/unit/test_fcgi: tests/unit/test_fcgi.c $(O)tests/unit/testutil.o \
    $(FCGI_OBJS) $(LIBA) $(LIB_HDRS) fcgi/fcgi.h tests/unit/testutil.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Itests/unit -Ifcgi -Icgi-bin \
	    $(LDFLAGS) -o $@ $< $(O)tests/unit/testutil.o $(FCGI_OBJS) \
	    $(LIBA) $(LIBS_BASE) $(MAGIC_LIBS) $(CMOCKA_LIBS)

# The allocator of msgspool-fcgi's workers, alone and under jansson.
$(O)tests/unit/test_arena: tests/unit/test_arena.c $(O)fcgi/arena.o \
    fcgi/arena.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -Ifcgi $(LDFLAGS) -o $@ $< \
	    $(O)fcgi/arena.o $(LIBS_BASE) $(CMOCKA_LIBS)

# make check: every unit test, the man page, OpenAPI and layers checks,
# the fuzz targets' regressions and the NFS chaos test, then the
# black-box suite, its files side by side (pytest-xdist): all of it under
# lighttpd (CGI) and lighttpd-fcgi, the files that test what a web server
# changes under nginx, Apache, busybox httpd and nginx-fcgi too (README.md,
# "Tests"; MSGSPOOL_SERVERS= to choose).
check: deps-test
	-@tests/deps.sh $(DEB_NFS)
	@$(MAKE) --no-print-directory -j$(NPROC) check-build
	@O='$(O)' PYTHON='$(PYTHON)' tests/run-all.sh $(UNIT_TESTS)

# make check-servers: the whole black-box suite under all six server
# setups (.ci/run runs it after make check).
ALL_SERVERS	 = lighttpd nginx apache busybox lighttpd-fcgi nginx-fcgi
check-servers: deps-test
	@$(MAKE) --no-print-directory -j$(NPROC) check-build
	@O='$(O)' PYTHON='$(PYTHON)' MSGSPOOL_SERVERS='$(ALL_SERVERS)' \
	    MSGSPOOL_FULL='$(ALL_SERVERS)' MSGSPOOL_NFS=0 \
	    MSGSPOOL_FUZZ_SECONDS=0 tests/run-all.sh

check-build: build $(UNIT_TESTS) $(FAULT_BINS)

# make check-nfs: several hosts on one spool over real NFS, under
# user-mode Linux (tests/nfs/run.sh): kills and a partition, bounded
# by MSGSPOOL_NFS_TIMEOUT (600 s); skipped, saying why, where UML
# cannot run.  make check runs it too (MSGSPOOL_NFS=0 leaves it out).
check-nfs: build
	-@tests/deps.sh $(DEB_NFS)
	@O='$(O)' tests/nfs/run.sh chaos; rc=$$?; [ $$rc -eq 2 ] || exit $$rc

# The fuzz targets are sanitized builds already: here they only replay
# their regressions (make check fuzzes them briefly).
sanitize: deps-test
	@MSGSPOOL_FUZZ_SECONDS=0 $(MAKE) --no-print-directory O=build/asan/ \
	    CFLAGS='-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all' \
	    LDFLAGS='-fsanitize=address,undefined' CGI_STATIC= check

# make run: the whole service on 127.0.0.1:$(PORT) with a demo key.
run: all
	@PORT='$(PORT)' tests/run-local.sh

# make install: the layout README "Deploying under a web server" gives.
# An existing config or keys file is never overwritten; the spool is
# created, never removed.
# As root (and without DESTDIR) it also creates the daemon's user and
# hands the spool to it and to the web server's group.
SUBST		 = sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' \
		   -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		   -e 's|@SPOOLDIR@|$(SPOOLDIR)|g' \
		   -e 's|@SPOOL_USER@|$(SPOOL_USER)|g' \
		   -e 's|@CGI_USER@|$(CGI_USER)|g' -e 's|@CGI_GROUP@|$(CGI_GROUP)|g'
# The man pages give the paths of the default install (/usr/local):
# installed, they give those of this one (the Debian package's too).
MANSUBST	 = sed -e 's,/usr/local/share/msgspool/\(msgspool[a-z-]*\.\(service\|socket\)\),$(UNITDIR)/\1,g' \
		   -e 's|/usr/local/share/msgspool|$(SHAREDIR)|g' \
		   -e 's|/usr/local/etc|$(SYSCONFDIR)|g' \
		   -e 's|/usr/local/sbin|$(PREFIX)/sbin|g'
WEB_CONFS	 = $(wildcard conf/*.conf)
MAN5		 = $(wildcard man/*.5)
MAN8		 = $(wildcard man/*.8)

# install-files installs what is built without building (debian/rules).
install: all
	@$(MAKE) --no-print-directory install-files

install-files:
	install -d $(DESTDIR)$(CGIDIR) $(DESTDIR)$(PREFIX)/sbin \
	    $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SHAREDIR) \
	    $(DESTDIR)$(PREFIX)/share/man/man5 \
	    $(DESTDIR)$(PREFIX)/share/man/man8
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/msgspool \
	    $(DESTDIR)$(SYSCONFDIR)/msgspool/templates
	install -d -m 0700 $(DESTDIR)$(SYSCONFDIR)/msgspool/secrets
	install -m 0755 $(CGI_BINS) $(DESTDIR)$(CGIDIR)/
	install -m 0755 $(DAEMON) $(BOUNCE) $(FCGI) $(DESTDIR)$(PREFIX)/sbin/
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 conf/mkspool.sh $(DESTDIR)$(LIBEXECDIR)/mkspool
	install -m 0644 $(WEB_CONFS) conf/keys $(wildcard conf/openapi.yaml) \
	    conf/postfix-bounce.cf \
	    $(DESTDIR)$(SHAREDIR)/
	$(SUBST) conf/msgspoold.service.in >$(DESTDIR)$(UNITDIR)/msgspoold.service
	$(SUBST) conf/msgspool.cron.in >$(DESTDIR)$(SHAREDIR)/msgspool.cron
	$(SUBST) conf/msgspool-fcgi.socket.in \
	    >$(DESTDIR)$(UNITDIR)/msgspool-fcgi.socket
	$(SUBST) conf/msgspool-fcgi.service.in \
	    >$(DESTDIR)$(UNITDIR)/msgspool-fcgi.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/msgspoold.service \
	    $(DESTDIR)$(SHAREDIR)/msgspool.cron \
	    $(DESTDIR)$(UNITDIR)/msgspool-fcgi.socket \
	    $(DESTDIR)$(UNITDIR)/msgspool-fcgi.service
	rm -rf $(DESTDIR)$(SHAREDIR)/templates
	cp -R templates $(DESTDIR)$(SHAREDIR)/templates
	for f in $(MAN5) $(MAN8); do \
	    s=$${f##*.}; $(MANSUBST) $$f \
	    >$(DESTDIR)$(PREFIX)/share/man/man$$s/$${f#man/} && \
	    chmod 0644 $(DESTDIR)$(PREFIX)/share/man/man$$s/$${f#man/}; done
	[ -e $(DESTDIR)$(SYSCONFDIR)/msgspool/msgspool.conf ] || \
	    sed -e 's|/usr/local/etc|$(SYSCONFDIR)|' \
	    -e 's|/var/spool/msgspool|$(SPOOLDIR)|' conf/msgspool.conf \
	    >$(DESTDIR)$(SYSCONFDIR)/msgspool/msgspool.conf
	[ -e $(DESTDIR)$(SYSCONFDIR)/msgspool/keys ] || \
	    install -m 0644 conf/keys $(DESTDIR)$(SYSCONFDIR)/msgspool/keys
	@# The spool, its directories with their modes (conf/mkspool.sh).
	conf/mkspool.sh $(DESTDIR)$(SPOOLDIR)
	@if [ -z '$(DESTDIR)' ] && [ "$$(id -u)" = 0 ]; then \
	    getent passwd $(SPOOL_USER) >/dev/null || \
	        useradd --system --no-create-home --home-dir $(SPOOLDIR) \
	        --shell /usr/sbin/nologin --gid $(CGI_GROUP) $(SPOOL_USER); \
	    chown -R $(SPOOL_USER):$(CGI_GROUP) $(SPOOLDIR); \
	    chown $(SPOOL_USER) $(SYSCONFDIR)/msgspool/secrets; \
	    echo "install: spool owned by $(SPOOL_USER):$(CGI_GROUP)"; \
	else \
	    echo "install: as root, chown -R $(SPOOL_USER):$(CGI_GROUP) $(DESTDIR)$(SPOOLDIR)"; \
	fi

# make uninstall: removes what install put there, keeps the spool and the
# config (they hold messages and an operator's settings).
uninstall:
	rm -f $(CGI_PROGS:%=$(DESTDIR)$(CGIDIR)/%) \
	    $(DESTDIR)$(PREFIX)/sbin/msgspoold \
	    $(DESTDIR)$(PREFIX)/sbin/msgspool-bounce \
	    $(DESTDIR)$(PREFIX)/sbin/msgspool-fcgi $(DESTDIR)$(PREFIX)/bin/msgspool \
	    $(DESTDIR)$(LIBEXECDIR)/mkspool
	rm -f $(MAN5:man/%=$(DESTDIR)$(PREFIX)/share/man/man5/%) \
	    $(MAN8:man/%=$(DESTDIR)$(PREFIX)/share/man/man8/%)
	rm -rf $(DESTDIR)$(SHAREDIR)
	-rmdir $(DESTDIR)$(CGIDIR) $(DESTDIR)$(PREFIX)/lib/msgspool

# make deb: the Debian package (debian/, debian/README.Debian), built by
# dpkg-buildpackage -b -us -uc in a copy of the tree's files (those git
# tracks or does not ignore) under $(O)deb/src/, so that nothing is
# written beside the sources; the .deb lands in $(O)deb/, and lintian
# must find no error and no warning in it.
DEB_ARCH	:= $(shell dpkg --print-architecture 2>/dev/null)
DEB_FILE	 = $(O)deb/msgspool_$(VERSION)_$(DEB_ARCH).deb
deb:
	@tests/deps.sh $(DEB_BUILD) $(DEB_DEB)
	rm -rf $(O)deb/src && mkdir -p $(O)deb/src/msgspool
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	    git ls-files -z --cached --others --exclude-standard | \
	    tar --null -T - --ignore-failed-read -cf - ; \
	else tar --exclude=./build -cf - . ; fi | \
	    tar -xf - -C $(O)deb/src/msgspool
	cd $(O)deb/src/msgspool && dpkg-buildpackage -b -us -uc -j$(NPROC)
	rm -f $(O)deb/msgspool_*.deb
	mv $(O)deb/src/msgspool_*.deb $(O)deb/
	lintian --fail-on error,warning $(DEB_FILE)
	@ls -l $(DEB_FILE)

# make check-deb: the package installed, run, upgraded, removed and
# purged in a fresh Debian 12 root made by mmdebstrap (tests/deb/check.sh;
# root, the distribution's mirror), bounded by MSGSPOOL_DEB_TIMEOUT
# (900 s).  The root's tarball is kept in $(O)deb/ between runs.
check-deb: deb
	@timeout $${MSGSPOOL_DEB_TIMEOUT:-900} tests/deb/check.sh $(DEB_FILE) \
	    $(O)deb

# make bench: ratios against baselines measured in the same run; writes
# bench/results.md.  Not a test: it never fails on a figure.
# BASELINE=DIR also measures POST /sms/v1/deliver of another tree's build
# (DIR holding cgi-bin/) in rounds alternating with this one's; against
# the tree before issue 23 (the lists of messages), its last commit d121d50:
#   git worktree add --detach /tmp/base d121d50 && make -C /tmp/base build
#   make bench BASELINE=/tmp/base/build   (or bench/run.py --only none
#   --baseline /tmp/base/build --record: that row alone, into results.md)
BENCH_BINS	 = noop naive durable cgitime
bench: deps-bench
	@$(MAKE) --no-print-directory build $(BENCH_BINS:%=$(O)bench/%) \
	    $(O)bench/noop-fcgi $(O)bench/durable-fcgi
	@MSGSPOOL_BUILD='$(O)' $(PYTHON) bench/run.py \
	    $(if $(BASELINE),--baseline '$(BASELINE)')

deps-bench:
	@tests/deps.sh $(DEB_BUILD) $(DEB_TEST) $(DEB_BENCH)

$(BENCH_BINS:%=$(O)bench/%): $(O)bench/%: bench/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<

$(O)bench/noop-fcgi $(O)bench/durable-fcgi: $(O)bench/%: bench/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $< $(FCGI_LIBS)

# Everything the build made is under build/ (make run's instance in .run/).
clean:
	rm -rf build

include tests/fuzz/fuzz.mk

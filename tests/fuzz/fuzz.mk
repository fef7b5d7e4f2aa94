# tests/fuzz/fuzz.mk: the libFuzzer targets (STYLE 24), included by the
# Makefile.  One target per parser and one per POST program of cgi-bin/:
#
#   config keys tmpl base64 message html-text spool bounce keyword list
#   smpp                 what msgspoold reads from an SMSC
#   request-PROGRAM      the whole request path through cgi_run
#
#   make fuzz                 build, replay tests/fuzz/regressions/, then
#                             fuzz each target for FUZZ_SECONDS (60) from
#                             its seeds in tests/fuzz/corpus/TARGET/
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS='keys request-sms-batch'
#   make fuzz-build           only build build/fuzz/fuzz-TARGET
#
# Everything is built under build/fuzz/ by clang with ASan and UBSan: the
# library by the Makefile's own rules (O=build/fuzz/) with
# -fsanitize=fuzzer-no-link for coverage.  What a run finds goes to
# build/fuzz/corpus/TARGET/ (new inputs) and build/fuzz/artifacts/TARGET/
# (crashes, hangs, leaks); a crash copied into
# tests/fuzz/regressions/TARGET/ is replayed by make check, which also
# fuzzes each target briefly when clang is there (tests/fuzz/run.sh).
# Seeds: tests/fuzz/seeds.py records the black-box tests' requests; the
# dictionaries of tests/fuzz/dict/ hold each format's words.

ifndef FUZZ_CC
FUZZ_CC		:= $(shell command -v clang-14 || command -v clang || echo clang)
endif
FUZZ_SECONDS	?= 60
FUZZ_O		 = build/fuzz/
FUZZ_UNITS	 = config keys tmpl base64 message html-text spool bounce \
		   keyword list
FUZZ_GMIME	 = message bounce
FUZZ_PROGS	 = sms-deliver sms-batch ott-deliver voice-deliver \
		   email-deliver attachments receipts
FUZZ_ALL	 = $(FUZZ_UNITS) smpp $(FUZZ_PROGS:%=request-%)
FUZZ_TARGETS	?= $(FUZZ_ALL)
FUZZ_BINS	 = $(FUZZ_ALL:%=$(FUZZ_O)fuzz-%)
FUZZ_LIBA	 = $(FUZZ_O)lib/libmsgspool.a
FUZZ_SAN	 = -fsanitize=address,undefined -fno-sanitize-recover=all \
		   -fno-omit-frame-pointer
FUZZ_CFLAGS	 = $(BASE_CPPFLAGS) $(JANSSON_CFLAGS) $(NETTLE_CFLAGS) \
		   $(WARN) -O1 -g $(FUZZ_SAN) -Itests/fuzz
FUZZ_DEPS	 = $(FUZZ_O)fuzzutil.o $(FUZZ_LIBA) $(LIB_HDRS) tests/fuzz/fuzzutil.h

# Debian 12's clang and its libFuzzer runtime.
DEB_FUZZ	 = clang-14 libclang-rt-14-dev
DEB_TEST	+= $(DEB_FUZZ)

.PHONY: fuzz-build fuzz-targets fuzz-list

fuzz: deps
	@tests/deps.sh $(DEB_FUZZ)
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_CC='$(FUZZ_CC)' tests/fuzz/run.sh fuzz $(FUZZ_SECONDS) \
	    $(FUZZ_TARGETS)

# The library first, by the Makefile's rules; then the targets, in a make
# that sees it built.
fuzz-build:
	@$(MAKE) --no-print-directory O=$(FUZZ_O) CC='$(FUZZ_CC)' \
	    CFLAGS='-O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link' \
	    $(FUZZ_LIBA)
	@$(MAKE) --no-print-directory fuzz-targets

fuzz-targets: $(FUZZ_BINS)

fuzz-list:
	@echo $(FUZZ_ALL)

$(FUZZ_O)fuzzutil.o: tests/fuzz/fuzzutil.c tests/fuzz/fuzzutil.h $(LIB_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# The email builder of msgspoold (GMime), for message and the requests.
$(FUZZ_O)message.o: spooler/providers/message.c \
    spooler/providers/message.h $(LIB_HDRS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(GMIME_CFLAGS) -fsanitize=fuzzer-no-link \
	    -c -o $@ $<

# A parser's target: tests/fuzz/fuzz_NAME.c ('-' as '_').
define FUZZ_UNIT
$(FUZZ_O)fuzz-$(1): tests/fuzz/fuzz_$(subst -,_,$(1)).c $(FUZZ_DEPS)
	$$(FUZZ_CC) $$(FUZZ_CFLAGS) -fsanitize=fuzzer -o $$@ $$< \
	    $(FUZZ_O)fuzzutil.o $(FUZZ_LIBA) $$(LIBS_BASE)
endef
$(foreach t,$(filter-out $(FUZZ_GMIME),$(FUZZ_UNITS)),\
    $(eval $(call FUZZ_UNIT,$(t))))

# The email builder, and msgspool-bounce's reader (its source included).
$(FUZZ_GMIME:%=$(FUZZ_O)fuzz-%): $(FUZZ_O)fuzz-%: tests/fuzz/fuzz_%.c \
    $(FUZZ_O)message.o spooler/bounce/msgspool-bounce.c $(FUZZ_DEPS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(GMIME_CFLAGS) -I. \
	    -fsanitize=fuzzer -o $@ $< $(FUZZ_O)message.o \
	    $(FUZZ_O)fuzzutil.o $(FUZZ_LIBA) $(LIBS_BASE) $(GMIME_LIBS)

# What msgspoold reads from an SMSC: the smpp provider (provider_smpp.c
# its source included, the rest of SMPP_MODS beside it) with the text
# encoder, on libsmpp34.
FUZZ_SMPP_SRCS	 = $(filter-out spooler/smpp/provider_smpp.c,\
		   $(SMPP_MODS:%=spooler/smpp/%.c)) spooler/smpp/gsm.c \
		   spooler/providers/policy.c
$(FUZZ_O)fuzz-smpp: tests/fuzz/fuzz_smpp.c spooler/smpp/provider_smpp.c \
    $(FUZZ_SMPP_SRCS) $(SPOOLER_HDRS) $(FUZZ_DEPS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(CURL_CFLAGS) $(SMPP_CFLAGS) \
	    -fsanitize=fuzzer -o $@ $< $(FUZZ_SMPP_SRCS) \
	    $(FUZZ_O)fuzzutil.o $(FUZZ_LIBA) $(LIBS_BASE) $(SMPP_LIBS)

# The request targets' helpers: the reply read and checked (cgireply.c),
# a receipt signed as its provider signs it (receiptsign.c).
FUZZ_REQ_OBJS	 = $(FUZZ_O)cgireply.o $(FUZZ_O)receiptsign.o

$(FUZZ_REQ_OBJS): $(FUZZ_O)%.o: tests/fuzz/%.c tests/fuzz/%.h \
    tests/fuzz/fuzzutil.h $(LIB_HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# A program's target: fuzz_request.c around cgi-bin/PROGRAM.c.
$(FUZZ_PROGS:%=$(FUZZ_O)fuzz-request-%): $(FUZZ_O)fuzz-request-%: \
    tests/fuzz/fuzz_request.c cgi-bin/%.c $(FUZZ_O)message.o \
    $(FUZZ_REQ_OBJS) $(FUZZ_REQ_OBJS:$(FUZZ_O)%.o=tests/fuzz/%.h) \
    $(FUZZ_DEPS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I. \
	    -DCGI_SOURCE='"cgi-bin/$*.c"' -DCGI_PROGRAM='"$*"' \
	    -DCGI_ENDPOINT=ep_$(subst -,_,$*) \
	    -fsanitize=fuzzer -o $@ $< $(FUZZ_O)message.o $(FUZZ_REQ_OBJS) \
	    $(FUZZ_O)fuzzutil.o $(FUZZ_LIBA) $(LIBS_BASE) $(MAGIC_LIBS) \
	    $(GMIME_LIBS)

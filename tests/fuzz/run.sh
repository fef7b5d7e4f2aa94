#!/bin/sh
# run.sh MODE [SECONDS [TARGET...]]: run the fuzz targets of build/fuzz/
# (tests/fuzz/fuzz.mk), one line a test: "ok   fuzz ...", "FAIL fuzz ..."
# with the end of its log, and exit 1 when any failed.
#
#   check	for make check (tests/run-all.sh): build them, replay each
#		file of tests/fuzz/regressions/TARGET/, then fuzz each target
#		SECONDS (default 15) from its seeds, stopping at the first
#		crash.  Exits 2 with a SKIP line when clang cannot build a
#		libFuzzer target here.
#   fuzz	for make fuzz (built already): the same replays, then fuzz
#		each target SECONDS (default 60), going on past crashes and
#		hangs (-fork=1), new inputs kept in build/fuzz/corpus/TARGET/.
#
# Crashes, hangs and leaks are written to build/fuzz/artifacts/TARGET/;
# one that is a bug belongs in tests/fuzz/regressions/TARGET/.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-check}
[ $# -gt 0 ] && shift
secs=${1:-}
[ $# -gt 0 ] && shift
fuzz=$top/build/fuzz
make=${MAKE:-make}
failed=0
log=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$log" "$tmp"' EXIT
# Stopped: stop (the EXIT trap cleans up), not go on to the next target.
trap 'exit 130' INT TERM

case $mode in
check)	secs=${secs:-15} ;;
fuzz)	secs=${secs:-60} ;;
*)	echo "usage: run.sh check|fuzz [SECONDS [TARGET...]]" >&2
	exit 64 ;;
esac

# The end of a run's log, without libFuzzer's progress lines.
show() {
	grep -v -e '^#[0-9]' -e '^INFO:' -e '^MS:' -e '^[[:space:]]*$' \
	    -e '^"' "$1" | tail -n 60 | sed 's/^/    /'
}

if [ "$mode" = check ]; then
	cc=${FUZZ_CC:-$(command -v clang-14 || command -v clang)}
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\n'\
'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)'\
'{ (void)d; (void)n; return 0; }\n' >"$tmp/probe.c"
	if [ -z "$cc" ] || ! "$cc" -fsanitize=fuzzer,address,undefined \
	    -o "$tmp/probe" "$tmp/probe.c" >"$log" 2>&1; then
		echo "SKIP fuzz: no clang with libFuzzer here (Debian:" \
		    "clang-14 libclang-rt-14-dev)"
		exit 2
	fi
	if ! "$make" -C "$top" --no-print-directory FUZZ_CC="$cc" \
	    fuzz-build >"$log" 2>&1; then
		echo "FAIL fuzz build"
		tail -n 40 "$log" | sed 's/^/    /'
		exit 1
	fi
fi
if [ $# -eq 0 ]; then
	set -- $("$make" -s -C "$top" --no-print-directory fuzz-list)
fi

for t in "$@"; do
	bin=$fuzz/fuzz-$t
	art=$fuzz/artifacts/$t
	mkdir -p "$art"
	if [ ! -x "$bin" ]; then
		echo "FAIL fuzz $t: $bin is not built (make fuzz-build)"
		failed=$((failed + 1))
		continue
	fi
	# Every crash or hang found once: it must not come back.
	for f in "$top/tests/fuzz/regressions/$t"/*; do
		[ -f "$f" ] || continue
		if "$bin" -timeout=10 -rss_limit_mb=2048 "$f" >"$log" 2>&1; then
			echo "ok   fuzz regression $t/$(basename "$f")"
		else
			echo "FAIL fuzz regression $t/$(basename "$f")"
			show "$log"
			failed=$((failed + 1))
		fi
	done
	[ "$secs" -gt 0 ] || continue
	# A finding not fixed yet: make check does not go looking for it.
	why=$(sed -n "s/^$t  *//p" "$top/tests/fuzz/open-findings" \
	    2>/dev/null)
	if [ "$mode" = check ] && [ -n "$why" ]; then
		echo "SKIP fuzz $t: open finding: $why"
		continue
	fi

	# The positional parameters are libFuzzer's flags from here on (the
	# loop's list was read already).  A library logs each refusal on
	# stderr: closed (-close_fd_mask=2); libFuzzer and the sanitizers
	# report on a copy of it.
	dict=$top/tests/fuzz/dict/${t%%-*}.dict
	set -- -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	    -close_fd_mask=2 -artifact_prefix="$art/" -print_final_stats=1
	[ -f "$dict" ] && set -- "$@" -dict="$dict"
	before=$(ls "$art" | wc -l)
	if [ "$mode" = check ]; then
		work=$tmp/corpus-$t
		mkdir -p "$work"
		"$bin" "$@" "$work" "$top/tests/fuzz/corpus/$t" >"$log" 2>&1
		rc=$?
	else
		work=$fuzz/corpus/$t
		mkdir -p "$work"
		"$bin" "$@" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
		    -ignore_ooms=1 "$work" "$top/tests/fuzz/corpus/$t" \
		    >"$fuzz/artifacts/$t.log" 2>&1
		rc=$?
		cp "$fuzz/artifacts/$t.log" "$log"
	fi
	new=$(($(ls "$art" | wc -l) - before))
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
	    tail -n 1)
	[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\): cov.*/\1/p' \
	    "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ] && [ "$new" -eq 0 ]; then
		echo "ok   fuzz $t (${secs} s, ${runs:-?} runs, ${cov:-cov: ?})"
	else
		echo "FAIL fuzz $t (${secs} s): $new new in" \
		    "build/fuzz/artifacts/$t/"
		show "$log"
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ]

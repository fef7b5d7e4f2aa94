#!/bin/sh
# cgi-post.sh CONFIG PROGRAM SCRIPT_NAME PATH_INFO [NAME=VALUE ...] <BODY:
# run the CGI program PROGRAM as a web server runs it for a POST of BODY
# (standard input, application/json) to SCRIPT_NAME PATH_INFO (the
# latter may be empty), with MSGSPOOL_CONFIG=CONFIG and each NAME=VALUE
# (HTTP_X_API_KEY=..., HTTP_WEBHOOK_ID=...) in an environment of its
# own; prints what the program answered.  For tests/nfs/run.sh, which
# runs it on the client kernels.
set -u
conf=$1 prog=$2 script=$3 info=$4
shift 4
body=$(mktemp) || exit 1
cat >"$body"
env -i MSGSPOOL_CONFIG="$conf" REQUEST_METHOD=POST \
    CONTENT_TYPE=application/json CONTENT_LENGTH="$(wc -c <"$body")" \
    SCRIPT_NAME="$script" PATH_INFO="$info" REQUEST_URI="$script$info" \
    SERVER_PROTOCOL=HTTP/1.1 "$@" "$prog" <"$body"
rc=$?
rm -f "$body"
exit $rc

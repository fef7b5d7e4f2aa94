#!/bin/sh
# lint.sh [FILE]: lint the OpenAPI description (default conf/openapi.yaml)
# with the Redocly CLI version pinned in package.json / package-lock.json
# and the rules of redocly.yaml.  Installs it first (npm ci, from the
# lock file) when tests/openapi/node_modules lacks it or holds another
# version.  Prints one line; exits 0 when there is no error and no
# warning, 1 otherwise (the full report is printed above the line), 2 when
# the validator cannot be installed or run.
#
# Needs Node.js >= 20.19 and npm (the machine's; Debian 12's own nodejs 18
# is too old for this Redocly CLI) and the npm registry for the install.
#
# lint.sh --install: only install the validator (make's deps step); exits 0
# when it is there, 2 (with what to install) when it cannot be.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
install_only=
if [ "${1:-}" = --install ]; then
	install_only=1
	shift
fi
doc=${1:-"$root/conf/openapi.yaml"}

# No telemetry, no update check: the registry is the only network here.
REDOCLY_TELEMETRY=off
REDOCLY_SUPPRESS_UPDATE_NOTICE=true
NO_UPDATE_NOTIFIER=1
export REDOCLY_TELEMETRY REDOCLY_SUPPRESS_UPDATE_NOTICE NO_UPDATE_NOTIFIER

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "openapi lint: FAILED: node and npm are needed (Node.js >= 20.19, e.g. from nodejs.org; Debian 12's nodejs 18 is too old)"
	exit 2
fi

want=$(node -p "require('$here/package.json').devDependencies['@redocly/cli']")
have=$(node -p "try { require('$here/node_modules/@redocly/cli/package.json').version } catch (e) { '' }" 2>/dev/null)
if [ "$have" != "$want" ] || [ ! -x "$here/node_modules/.bin/redocly" ]; then
	log=$(mktemp)
	if ! npm ci --prefix "$here" --no-audit --no-fund --loglevel=error \
	    >"$log" 2>&1; then
		cat "$log"
		rm -f "$log"
		echo "openapi lint: FAILED: npm ci --prefix tests/openapi did not install @redocly/cli@$want"
		exit 2
	fi
	rm -f "$log"
fi

[ -n "$install_only" ] && exit 0

out=$(mktemp)
json=$(mktemp)
trap 'rm -f "$out" "$json"' EXIT
# The JSON report for the counts, the stylish one for people.
"$here/node_modules/.bin/redocly" lint --config "$here/redocly.yaml" \
    --format json "$doc" >"$json" 2>/dev/null
rc=$?
counts=$(node -e '
	const fs = require("fs");
	let t;
	try { t = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).totals; }
	catch (e) { process.exit(1); }
	console.log(t.errors + " " + t.warnings);
' "$json") || {
	"$here/node_modules/.bin/redocly" lint --config "$here/redocly.yaml" "$doc"
	echo "openapi lint: FAILED: the validator did not run (exit $rc)"
	exit 2
}
errors=${counts% *}
warnings=${counts#* }
name=$(basename "$doc")
if [ "$errors" -eq 0 ] && [ "$warnings" -eq 0 ] && [ "$rc" -eq 0 ]; then
	echo "openapi lint: OK: $name valid OpenAPI 3.1, 0 errors, 0 warnings (@redocly/cli $want)"
	exit 0
fi
"$here/node_modules/.bin/redocly" lint --config "$here/redocly.yaml" \
    --format stylish "$doc" 2>&1 | grep -v '[║╔╚]'
echo "openapi lint: FAILED: $name: $errors errors, $warnings warnings (@redocly/cli $want)"
exit 1

#!/usr/bin/env bash
# The TypeScript client's CI (`make client-test`, called by .ci/run): install the
# pinned tools, check that the committed schema.d.ts is what the documents
# generate, type-check, lint the documents with Spectral, and run the main
# flows with the generated client against a real server, and a resumable
# upload with tus-js-client over two replicas (test/tus.test.ts), and /docs
# in headless Chromium: every operation's "Try it" with its shown example
# against `agritrade demo` data (test/docs.test.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(cd ../.. && pwd)"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "client-test: Node.js 20+ and npm are needed (apt-get install nodejs npm, or https://nodejs.org)" >&2
  exit 1
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "client-test: Node.js 20 or newer is needed, found $(node --version)" >&2
  exit 1
fi
# The /docs browser test drives Debian's chromium (puppeteer-core downloads no browser).
chromium="${AGRITRADE_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "client-test: $chromium is needed for the /docs browser test (apt-get install -y chromium, or set AGRITRADE_CHROMIUM)" >&2
  exit 1
fi
export AGRITRADE_CHROMIUM="$chromium"
step() { printf '\n== client: %s\n' "$*"; }
start=$(date +%s)
step "npm ci"
if ! npm ci --prefer-offline --no-audit --no-fund --loglevel=error; then
  if ! npm ping >/dev/null 2>&1; then
    echo "client-test: npm ci failed and the npm registry ($(npm config get registry)) cannot be reached: set npm's registry or proxy (npm config set registry ..., HTTPS_PROXY) and run again" >&2
  fi
  exit 1
fi
step "build the server binary"
mkdir -p .cache
(cd "$root" && go build -o clients/typescript/.cache/agritrade ./cmd/agritrade)
export AGRITRADE_BIN="$PWD/.cache/agritrade"
step "schema.d.ts is current (npm run generate:check)"
npm run --silent generate:check
step "typecheck (tsc --noEmit)"
npm run --silent typecheck
step "Spectral (spectral:oas + .spectral.yaml) over the module documents and the merged one"
npm run --silent lint:openapi
step "main flows with the generated client, tus-js-client over two replicas, and /docs in Chromium, against real servers"
npm test --silent
step "client checks took $(( $(date +%s) - start ))s"

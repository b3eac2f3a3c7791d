#!/usr/bin/env bash
# tools/call with a verified JWT bearer on every request against the same call with auth off
# (BENCHMARKS.md, issue 36 target 5). Three release-built nodes pinned to core 0 (one runtime
# worker each, only one loaded at a time), wrk on core 1, ROUNDS alternating rounds (default 5)
# of WRK_DURATION (default 8s) and WRK_CONNECTIONS (default 64) per case:
#
#   off      no authenticator
#   cached   bearer tokens, the verified-token cache at its default
#   uncached bearer tokens, --auth-verified-token-cache 0: every request verifies the signature
#
# The issuer is local: an RSA key made here (python3's cryptography), its JWKS served on
# loopback by python3 -m http.server, one RS256 token (exp in two hours) sent by every request.
#
#   loadtest/scripts/auth-bench.sh NAME        (wrk's output goes to runs/NAME.txt)
#
# Build first: cargo build --release -p mcp-fleet-node; needs wrk, curl and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1
target=${CARGO_TARGET_DIR:-target}
node_bin=$target/release/mcp-fleet
export MCP_ECHO_LUA=${MCP_ECHO_LUA:-../shared/bench/mcp-echo.lua}
duration=${WRK_DURATION:-8s} connections=${WRK_CONNECTIONS:-64} rounds=${ROUNDS:-5}
issuer=http://127.0.0.1:18099
dir=$(mktemp -d)
mkdir -p runs
out=runs/$name.txt
: >"$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT

python3 - "$dir" "$issuer" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
out, issuer = sys.argv[1], sys.argv[2]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
numbers = key.public_key().public_numbers()
jwk = {"kty": "RSA", "kid": "bench", "alg": "RS256", "use": "sig",
       "n": b64(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")), "e": b64(numbers.e.to_bytes(3, "big"))}
json.dump({"keys": [jwk]}, open(f"{out}/jwks.json", "w"))
now = int(time.time())
header = b64(json.dumps({"alg": "RS256", "kid": "bench", "typ": "at+jwt"}).encode())
claims = {"iss": issuer, "aud": "https://mcp.bench.example/mcp", "sub": "bench", "iat": now, "exp": now + 7200, "scope": "mcp:use"}
signing = f"{header}.{b64(json.dumps(claims).encode())}"
signature = key.sign(signing.encode(), padding.PKCS1v15(), hashes.SHA256())
open(f"{out}/token", "w").write(f"{signing}.{b64(signature)}")
PY
python3 -m http.server 18099 --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
pids+=($!)
export MCP_BEARER=$(cat "$dir/token")

start_node() { # port admin-port extra flags…
  local port=$1 admin=$2
  shift 2
  taskset -c 0 "$node_bin" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --bus memory:// \
    --node-id "bench-auth-$port" --worker-threads 1 "$@" >>"runs/$name.node.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the node on $port did not become ready" >&2
  exit 1
}
auth=(--auth-issuer "$issuer" --auth-audience https://mcp.bench.example/mcp --auth-jwks-url "$issuer/jwks.json"
  --auth-scopes mcp:use)
start_node 18080 19080
start_node 18081 19081 "${auth[@]}"
start_node 18082 19082 "${auth[@]}" --auth-verified-token-cache 0
bench() { # case port script
  echo "== $1" | tee -a "$out"
  taskset -c 1 wrk -t1 -c"$connections" -d"$duration" --latency -s "$3" "http://127.0.0.1:$2/mcp" | tee -a "$out"
}
# A short unreported run on each, so the first case does not pay for a node's warm-up.
taskset -c 1 wrk -t1 -c"$connections" -d2s -s "$MCP_ECHO_LUA" http://127.0.0.1:18080/mcp >/dev/null
for port in 18081 18082; do
  taskset -c 1 wrk -t1 -c"$connections" -d2s -s loadtest/scripts/bearer-echo.lua "http://127.0.0.1:$port/mcp" >/dev/null
done
for round in $(seq 1 "$rounds"); do
  bench "off $round" 18080 "$MCP_ECHO_LUA"
  bench "cached $round" 18081 loadtest/scripts/bearer-echo.lua
  bench "uncached $round" 18082 loadtest/scripts/bearer-echo.lua
done
grep -E '^== |Requests/sec|mcp-echo:' "$out"

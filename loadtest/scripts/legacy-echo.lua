-- wrk script: POST a 2025-11-25 request in one 2025-era session on every request — the
-- session-store benchmark of BENCHMARKS.md (each request loads the session record from the
-- bus keyspace: one GET on Redis). The 2026 counterpart is ../shared/bench/mcp-echo.lua.
--
--   MCP_SESSION_ID=$(loadtest/scripts/legacy-session.sh http://127.0.0.1:18080/mcp) \
--     taskset -c 1 wrk -t1 -c64 -d8s --latency -s loadtest/scripts/legacy-echo.lua http://127.0.0.1:18080/mcp
--
-- Env: MCP_SESSION_ID (the Mcp-Session-Id to send; empty: none, for a node run with
--      --legacy stateless), MCP_METHOD (tools/call, the default: `echo` with MCP_ECHO_TEXT,
--      default "hello"; or ping), MCP_WRK_CHECK=0 to skip the per-response Lua check.
-- At the end prints `legacy-echo: requests=N non200=N bad_body=N` and one JSON line like
-- mcp-echo.lua's (bad_body = a 200 whose body does not carry the expected result).
local session = os.getenv("MCP_SESSION_ID") or ""
local method = os.getenv("MCP_METHOD") or "tools/call"
local text = os.getenv("MCP_ECHO_TEXT") or "hello"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
if session ~= "" then
  wrk.headers["Mcp-Session-Id"] = session
end

local needle
if method == "ping" then
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
  needle = '"result":{}'
else
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
    .. text .. '"}}}'
  needle = '"text":"' .. text .. '"'
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  requests, non200, bad_body = 0, 0, 0
end

if os.getenv("MCP_WRK_CHECK") ~= "0" then
  function response(status, headers, body)
    requests = requests + 1
    if status ~= 200 then
      non200 = non200 + 1
    elseif not string.find(body, needle, 1, true) then
      bad_body = bad_body + 1
    end
  end
end

function done(summary, latency, requests_)
  local r, n, b = 0, 0, 0
  for _, t in ipairs(threads) do
    r = r + t:get("requests")
    n = n + t:get("non200")
    b = b + t:get("bad_body")
  end
  io.write(string.format("legacy-echo: requests=%d non200=%d bad_body=%d\n", r, n, b))
  io.write(string.format("legacy-echo-json: {\"requests\":%d,\"errors_socket\":%d,\"rps\":%.1f,\"lat_mean_us\":%.1f,\"lat_p50_us\":%d,\"lat_p90_us\":%d,\"lat_p99_us\":%d,\"lat_max_us\":%d,\"non200\":%d,\"bad_body\":%d}\n",
    summary.requests,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.requests / (summary.duration / 1e6), latency.mean,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, n, b))
end

-- wrk script: the shared tools/call echo (MCP_ECHO_LUA, default ../shared/bench/mcp-echo.lua)
-- with `Authorization: Bearer $MCP_BEARER` on every request (auth-bench.sh).
dofile(os.getenv("MCP_ECHO_LUA") or "../shared/bench/mcp-echo.lua")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("MCP_BEARER")

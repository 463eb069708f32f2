-- SPDX-License-Identifier: GPL-2.0-or-later
-- sysbench's oltp_read_only, each session also holding --hold-mib MiB of user variables (per-session
-- memory, what a connection reset gives back), for bench/pool-vs-reset.sh.
--   sysbench pool-vs-reset.lua [oltp options] --hold-mib=N --db-ps-mode=disable run
-- A session that loses its connection (KILL CONNECTION) says so ("sberr TID ERRNO"), connects
-- again and goes on ("sbreconnect TID") without taking its variables again: sysbench's own
-- reconnect (--mysql-ignore-errors) crashes with Debian's libmariadb. Every second a line
-- "sb TIME INTERVAL EVENTS QUERIES ERRORS RECONNECTS THREADS" instead of sysbench's report.

require("oltp_read_only")

sysbench.cmdline.options.hold_mib = {"MiB of user variables each session holds (in 8 MiB variables)", 0}

local function hold()
   for i = 1, math.ceil(sysbench.opt.hold_mib / 8) do
      con:query(string.format("SET @memgov_hold_%d = REPEAT('h', %d)", i, 8 * 1048576))
   end
end

local oltp_thread_init, oltp_event = thread_init, event

function thread_init()
   oltp_thread_init()
   hold()
end

function event()
   local ok, e = pcall(oltp_event)
   if ok then
      return
   end
   io.stdout:write(string.format("sberr %d %s\n", sysbench.tid,
      type(e) == "table" and tostring(e.sql_errno) or tostring(e):match("errno = (%d+)") or "?"))
   pcall(close_statements)
   pcall(function() con:disconnect() end)
   con = drv:connect()
   prepare_statements()
   io.stdout:write(string.format("sbreconnect %d\n", sysbench.tid))
   io.stdout:flush()
end

function sysbench.hooks.report_intermediate(stat)
   io.stdout:write(string.format("sb %.3f %.3f %d %d %d %d %d\n", stat.time_total, stat.time_interval, stat.events,
      stat.reads + stat.writes + stat.other, stat.errors, stat.reconnects, stat.threads_running))
   io.stdout:flush()
end

-- SPDX-License-Identifier: GPL-2.0-or-later
-- sysbench script for bench/outcome: one session per thread, each with large per-session
-- buffers (a 32M in-memory temporary table, a 4M sort buffer), asking a grouping query whose
-- temporary table and sort fill them: what a connection storm of reporting queries does to a
-- server's memory. Uses the sbtest tables of oltp_common (prepare them first).
--   sysbench bench/outcome-storm.lua --mysql-socket=... --threads=N --time=S run

require("oltp_common")

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   con:query("SET SESSION tmp_memory_table_size = 32 * 1024 * 1024")
   con:query("SET SESSION max_heap_table_size = 32 * 1024 * 1024")
   con:query("SET SESSION sort_buffer_size = 4 * 1024 * 1024")
end

function thread_done()
   con:disconnect()
end

function event()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   con:query(string.format("SELECT c, SUM(k) FROM sbtest%d GROUP BY c ORDER BY SUM(k) DESC LIMIT 1", t))
end

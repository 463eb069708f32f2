-- SPDX-License-Identifier: GPL-2.0-or-later
-- sysbench script for bench/outcome2: one session per thread, each with large per-session
-- buffers (a 32M in-memory temporary table, a 4M sort buffer), asking a grouping query whose
-- temporary table and sort fill them: what a connection storm of reporting queries does to a
-- server's memory. The query groups 2,500 rows by a 7,680-byte key (c, 120 bytes, 64 times):
-- some 19M of temporary table for the CPU of 2,500 rows, 0.6 s in the VM; grouping a whole
-- table by c (6M for 50,000 rows, 5.5 s) ran the emulated CPU out long before the memory. Uses the sbtest tables of oltp_common (prepare them first). --flavour=mysql
-- sets MySQL's names for the buffers (its internal temporary tables live in the TempTable
-- engine, within the server-wide temptable_max_ram: the storm meets that cap there).
--   sysbench bench/outcome2-storm.lua --mysql-host=... --threads=N --time=S [--flavour=mysql] run

require("oltp_common")

sysbench.cmdline.options.flavour = {"the server's flavour: mariadb or mysql", "mariadb"}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   if sysbench.opt.flavour == "mysql" then
      con:query("SET SESSION tmp_table_size = 32 * 1024 * 1024")
   else
      con:query("SET SESSION tmp_memory_table_size = 32 * 1024 * 1024")
   end
   con:query("SET SESSION max_heap_table_size = 32 * 1024 * 1024")
   con:query("SET SESSION sort_buffer_size = 4 * 1024 * 1024")
end

function thread_done()
   con:disconnect()
end

function event()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   con:query(string.format("SELECT REPEAT(c, 64) AS w, SUM(k) FROM sbtest%d WHERE id <= 2500 GROUP BY w ORDER BY SUM(k) DESC LIMIT 1", t))
end

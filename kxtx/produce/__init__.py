"""`kxtx produce`: exactly-once transactional ingest from files, resumable after a crash.

`inputs` reads files (offsets and line numbers per record), `mapping` turns lines into records,
`checkpoint` records and verifies where each input stands, `loop` runs the transactions.
"""

#: Records per transaction. Measured (bench/bench_produce.py, 1M lines of ~100 B, local broker,
#: 2 cores): 10k -> ~230k rec/s, 50k -> ~275k rec/s, 100k -> no further gain. Commit itself costs
#: ~2-5 ms (more with a big unsent tail); 50k keeps it near 1 % and a crash redoes < 1 s of work.
DEFAULT_RECORDS_PER_TXN = 50_000

"""`kxtx produce`: exactly-once transactional ingest from files, resumable after a crash.

`inputs` reads files (offsets and line numbers per record), `mapping` turns lines into records,
`checkpoint` records and verifies where each input stands, `loop` runs the transactions.
"""

#: Records per transaction: large enough that a commit's cost is a small share of a transaction,
#: small enough that a crash redoes little work; larger gains nothing (see bench/README.md, "Behind
#: produce's constants").
DEFAULT_RECORDS_PER_TXN = 50_000

#: Seconds a transaction may stay open: input that comes slowly (a pipe on stdin) is committed at
#: least this often, so read_committed consumers see it and the transaction stays far within the
#: producer's transaction.timeout.ms (60 s by default), after which the coordinator aborts it.
DEFAULT_SECONDS_PER_TXN = 10.0

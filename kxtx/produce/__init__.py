"""`kxtx produce`: exactly-once transactional ingest from files, resumable after a crash.

`inputs` reads files (offsets and line numbers per record), `mapping` turns lines into records,
`checkpoint` records and verifies where each input stands, `loop` runs the transactions.
"""

#: Records per transaction: large enough that a commit's cost is a small share of a transaction,
#: small enough that a crash redoes little work; larger gains nothing (see bench/README.md, "Behind
#: produce's constants").
DEFAULT_RECORDS_PER_TXN = 50_000

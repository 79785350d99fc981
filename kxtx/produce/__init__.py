"""`kxtx produce`: exactly-once transactional ingest from files, resumable after a crash.

`inputs` reads files (offsets and line numbers per record), `mapping` turns lines into records,
`checkpoint` records and verifies where each input stands, `engine` runs the transactions.
"""

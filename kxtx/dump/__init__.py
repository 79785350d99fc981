"""Decoding `__transaction_state` and `__consumer_offsets`: `runner` runs a dump, `source` and
`rawfetch` read the raw batches, `shards` splits a dump over worker processes, `rows` shapes the output."""

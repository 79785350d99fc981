"""Hanging transactions and transaction inspection: find-hanging, abort, fence, inspect.

`decide` holds the pure rules (unit-tested without a broker), `cluster` the Kafka calls, and
`hanging` / `abort` / `inspect` / `fence` the operations the CLI commands call.
"""

"""Operator tools: find-hanging, abort, fence, inspect; `kxtx cluster` and `kxtx topic create`.

`decide` holds the pure rules (unit-tested without a broker), `calls` the Kafka calls, and
`hanging` / `abort` / `inspection` / `fence` the operations the CLI commands call.
"""

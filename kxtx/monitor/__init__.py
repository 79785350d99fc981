"""`kxtx monitor`: `snapshot` collects one pass over the cluster (through `kxtx.ops`' calls and rules),
`exposition` writes it as Prometheus text, `serve` exports it over HTTP, `check` judges it as a
monitoring plugin."""

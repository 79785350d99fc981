"""`kxtx pipe`: exactly-once consume → PySpark UDF → produce (entry point: kxtx.pipe.modes)."""

"""`kxtx pipe`: exactly-once consume → PySpark UDF → produce (see kxtx.pipe.engine)."""

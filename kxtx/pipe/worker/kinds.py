"""How kxtx calls the UDF on Spark's workers: the kinds `kxtx.pipe.udf` tells apart when it loads it."""

ROW, PANDAS, PANDAS_ITER, ARROW = "row", "pandas", "pandas-iter", "arrow"

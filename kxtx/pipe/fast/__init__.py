"""The pipe's fast paths: Spark's Python daemon importing the installed pyspark, the driver JVM's
class-data archive (the annex: kxtx.fast). Only the standard library here: the daemon imports it first."""

"""produce's fast paths: plain lines and keyed records in blocks, with C loops where built (the annex:
kxtx.fast; the general path is kxtx.produce.loop's, chosen at kxtx.produce.loop._produce_all)."""

"""An example UDF for `kxtx pipe`: add a field to each JSON order, drop cancelled ones."""


def enrich(order: dict):
    if order.get("status") == "cancelled":
        return None  # None drops the record
    return {**order, "total_cents": round(order["amount"] * 100)}

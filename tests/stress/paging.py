"""Two small habits the stress drivers share: send many requests before waiting for any, and
read every page of a list method.

Pipelining matters here for speed only (a verification pass reads thousands of records), but
it also keeps several requests in flight in the server, which is the state the drivers test.
"""

from __future__ import annotations

from typing import Any

from client import Client

Call = tuple[str, dict[str, Any]]
CALL_TIMEOUT = 60.0
PAGE_SIZE = 200  # the protocol's largest `limit`
WINDOW = 200  # requests in flight at once, well inside the default queue bound (256)


def call_all(client: Client, calls: list[Call], timeout: float = CALL_TIMEOUT) -> list[Any]:
    """Send the calls a window at a time, waiting for each window's answers before the next
    (so the server's queue bound is never the limit); the whole responses, in order."""
    responses = []
    for start in range(0, len(calls), WINDOW):
        window = calls[start : start + WINDOW]
        ids = [client.request(method, params) for method, params in window]
        responses += [client.wait_for(request_id, timeout) for request_id in ids]
    return responses


def every_item(
    client: Client, method: str, params: dict[str, Any], timeout: float = CALL_TIMEOUT
) -> list[dict[str, Any]]:
    """Every item of a paged list method (`items` and `next_cursor`), following the cursor."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        page_params = {**params, "limit": PAGE_SIZE}
        if cursor is not None:
            page_params["cursor"] = cursor
        page = client.result(method, page_params, timeout=timeout)
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items

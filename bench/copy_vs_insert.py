"""Server CPU per row: binary COPY against INSERT … SELECT FROM unnest(…), on inbound_events.

Run by bench/copy-vs-insert, which starts the cluster and installs psycopg. Each form stores the
same kind of rows (Adyen-like bodies of about 750 bytes, three kept headers) in batches of BATCH
rows, one batch per commit, as payhook's group-commit writer does; forms alternate, PAIRS times,
in an order that rotates from round to round.
The figure is the backend's own CPU time (utime + stime from /proc) per row, so the client's cost
(Python here) does not count.
"""
import datetime
import json
import os
import random
import string
import sys

import psycopg
from psycopg.types.json import Jsonb
from psycopg.types.numeric import Int4

URL, BATCH, BATCHES, PAIRS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
COLUMNS = "provider, account, dedup_key, event_type, received_at, remote_addr, headers, query, body"
# The statement payhook ran for every batch before 2026-12-02, and (with ON CONFLICT) the one it
# runs for a batch holding duplicates; bodies travel as one bytea sliced by offset and length.
INSERT = f"""INSERT INTO inbound_events ({COLUMNS})
SELECT r.provider, r.account, r.dedup_key, r.event_type, r.received_at, r.remote_addr, r.headers, r.query,
       substring(%s::bytea FROM r.body_start FOR r.body_length)
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::timestamptz[], %s::text[], %s::jsonb[], %s::text[],
            %s::int4[], %s::int4[])
     AS r(provider, account, dedup_key, event_type, received_at, remote_addr, headers, query, body_start, body_length)"""
# As the writer returned them until 2026-12-02; its ON CONFLICT statement now returns no id
# (RETURNING without it measured no different, session 10).
RETURNING = "\nRETURNING id, provider, dedup_key"
COPY = f"COPY inbound_events ({COLUMNS}) FROM STDIN (FORMAT binary)"

connection = psycopg.connect(URL, autocommit=True)
backend = connection.execute("SELECT pg_backend_pid()").fetchone()[0]
serial = 0


def backend_cpu_seconds():
    fields = open(f"/proc/{backend}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rows(count):
    global serial
    made = []
    for _ in range(count):
        serial += 1
        key = f"psp-{os.getpid()}-{serial}-" + "".join(random.choices(string.ascii_lowercase, k=20))
        body = json.dumps({"live": "false", "notificationItems": [{"NotificationRequestItem": {
            "pspReference": key, "eventCode": "AUTHORISATION", "amount": {"value": 1000, "currency": "EUR"},
            "additionalData": {"hmacSignature": "x" * 44}, "merchantReference": f"order-{serial}", "pad": "y" * 500}}]}).encode()
        headers = {"content-type": "application/json", "hmacsignature": "x" * 44, "x-request-id": key}
        made.append(("adyen", "", key, "AUTHORISATION", datetime.datetime.now(datetime.timezone.utc), "127.0.0.1",
                     headers, "", body))
    return made


def insert(batches, statement):
    cursor = connection.cursor(binary=True)
    for batch in batches:
        columns = list(zip(*batch))
        starts, position = [], 1
        for body in columns[8]:
            starts.append(Int4(position))
            position += len(body)
        cursor.execute(statement, [b"".join(columns[8]), *[list(column) for column in columns[:6]],
                                   [Jsonb(h) for h in columns[6]], list(columns[7]), starts,
                                   [Int4(len(body)) for body in columns[8]]])
        cursor.fetchall()


def copy(batches):
    cursor = connection.cursor()
    for batch in batches:
        with cursor.copy(COPY) as stream:
            stream.set_types(["text", "text", "text", "text", "timestamptz", "text", "jsonb", "text", "bytea"])
            for row in batch:
                stream.write_row(row[:6] + (Jsonb(row[6]),) + row[7:])


FORMS = [
    ("COPY (binary)", copy),
    ("INSERT unnest", lambda batches: insert(batches, INSERT + RETURNING)),
    ("INSERT unnest ON CONFLICT", lambda batches: insert(batches, INSERT + "\nON CONFLICT (provider, dedup_key) DO NOTHING" + RETURNING)),
]
print(f"{BATCH} rows per batch, {BATCHES} batches per measurement; server CPU per row (backend utime + stime)")
for pair in range(1, PAIRS + 1):
    # The table grows as the forms run, so the order rotates from round to round: no form is
    # always the one that meets the biggest index.
    order = FORMS[pair % len(FORMS):] + FORMS[:pair % len(FORMS)]
    figures = {}
    for name, store in order:
        batches = [rows(BATCH) for _ in range(BATCHES)]
        before = backend_cpu_seconds()
        store(batches)
        figures[name] = f"{name} {1e6 * (backend_cpu_seconds() - before) / (BATCH * BATCHES):.1f} us"
    print(f"round {pair} (first: {order[0][0]}): " + ", ".join(figures[name] for name, _ in FORMS), flush=True)

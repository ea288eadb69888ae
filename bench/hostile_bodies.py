#!/usr/bin/env python3
"""Trickles maximum-size bodies at payhook from many connections at once (bench/hostile).

    hostile_bodies.py HOST PORT CONNECTIONS BODY_BYTES SECONDS SOURCES

Opens CONNECTIONS connections, spread over SOURCES loopback source addresses (127.0.1.1,
127.0.1.2, ...) so that the per-address connection limit does not refuse them, announces
BODY_BYTES on each and sends the body in equal pieces over SECONDS, so every body is in
payhook's memory at the same time near the end. Prints how many connections were answered,
refused at connect, or closed before their answer.
"""
import asyncio
import sys


async def one(host, port, source, body_bytes, seconds, pieces, counts):
    try:
        reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
    except OSError:
        counts["refused"] += 1
        return
    try:
        writer.write(
            b"POST /webhooks/adyen HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % body_bytes)
        piece = b"x" * (body_bytes // pieces)
        sent = 0
        for index in range(pieces):
            chunk = piece if index < pieces - 1 else b"x" * (body_bytes - sent)
            writer.write(chunk)
            await writer.drain()
            sent += len(chunk)
            await asyncio.sleep(seconds / pieces)
        status = await asyncio.wait_for(reader.readline(), timeout=30)
        if status.startswith(b"HTTP/1.1 "):
            counts["answered"] += 1
            code = "status_" + status[9:12].decode()
            counts[code] = counts.get(code, 0) + 1
        else:
            counts["closed"] += 1
    except (OSError, asyncio.TimeoutError):
        counts["closed"] += 1
    finally:
        writer.close()


async def main():
    host, port, connections, body_bytes, seconds, sources = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    counts = {"answered": 0, "refused": 0, "closed": 0}
    tasks = [one(host, port, "127.0.1.%d" % (1 + index % sources), body_bytes, seconds, 16, counts)
             for index in range(connections)]
    await asyncio.gather(*tasks)
    print(" ".join("%s=%d" % item for item in sorted(counts.items())))


asyncio.run(main())

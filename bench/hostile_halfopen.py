#!/usr/bin/env python3
"""Holds half-open connections at payhook from one address (bench/hostile).

    hostile_halfopen.py HOST PORT CONNECTIONS SECONDS

Keeps CONNECTIONS connections from 127.0.0.1, each having sent part of a request header and
nothing more, re-opening any the server closes, for SECONDS. Prints how many connections it
opened in all and how many were open at the end.
"""
import asyncio
import sys


async def holder(host, port, seconds, stats):
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=("127.0.0.1", 0))
        except OSError:
            await asyncio.sleep(0.05)
            continue
        stats["opened"] += 1
        writer.write(b"POST /webhooks/adyen HTTP/1.1\r\nHost: bench\r\nContent-Type: app")
        stats["open"] += 1
        try:
            await asyncio.wait_for(reader.read(1), timeout=max(0.01, end - loop.time()))
        except (OSError, asyncio.TimeoutError):
            pass
        stats["open"] -= 1
        writer.close()


async def main():
    host, port, connections, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    stats = {"opened": 0, "open": 0}
    tasks = [asyncio.create_task(holder(host, port, seconds, stats)) for _ in range(connections)]
    await asyncio.sleep(seconds - 0.5)
    print("opened=%d held_near_end=%d" % (stats["opened"], stats["open"]))
    await asyncio.gather(*tasks)


asyncio.run(main())

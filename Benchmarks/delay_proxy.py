#!/usr/bin/env python3
"""A TCP relay that puts a round trip between clients and an origin (Python 3 stdlib only).

The benchmark's origin is on loopback, where a round trip costs nothing; a CDN is tens of ms away.
This kernel has no netem, so the delay is made here: every chunk each way is held for half the
round trip, and a connection's first bytes to the origin wait one round trip more (TCP's handshake).
Bytes keep their order; nothing is dropped or throttled (nginx's `limit_rate` still does that).

Usage: delay_proxy.py LISTEN_PORT ORIGIN_PORT RTT_MS   (both on 127.0.0.1; runs until killed)
"""

import asyncio
import sys

TASKS = set()  # the event loop keeps only weak references to tasks


async def relay(reader, writer, delay, first_extra):
    """Copies reader to writer, each chunk written `delay` s after it was read (the first later still)."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def read():
        extra = first_extra
        try:
            while data := await reader.read(1 << 18):
                queue.put_nowait((loop.time() + delay + extra, data))
                extra = 0
        except OSError:
            pass  # a reset ends this direction as an end of stream would
        queue.put_nowait((loop.time() + delay, b""))

    reading = asyncio.create_task(read())
    TASKS.add(reading)
    reading.add_done_callback(TASKS.discard)
    try:
        while True:
            due, data = await queue.get()
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
    finally:
        reading.cancel()


async def connection(client_reader, client_writer, origin_port, half):
    try:
        origin_reader, origin_writer = await asyncio.open_connection("127.0.0.1", origin_port)
    except OSError:
        client_writer.close()
        return
    try:
        await asyncio.gather(relay(client_reader, origin_writer, half, 2 * half),
                             relay(origin_reader, client_writer, half, 0))
    except OSError:
        pass
    finally:
        for w in (origin_writer, client_writer):
            w.close()


def accepted(reader, writer, origin_port, half):
    task = asyncio.create_task(connection(reader, writer, origin_port, half))
    TASKS.add(task)
    task.add_done_callback(TASKS.discard)


async def main():
    listen_port, origin_port, rtt_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    half = rtt_ms / 2000
    server = await asyncio.start_server(lambda r, w: accepted(r, w, origin_port, half), "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    asyncio.run(main())

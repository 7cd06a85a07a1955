"""A stand-in for vLLM's ZmqEventPublisher on real libzmq (pyzmq) and
msgpack, for the interop test: PUB frames (topic, seq as 8 bytes big-endian,
msgpack [ts, [events], dp_rank]), a ROUTER replay socket answering
(client, b"", start) with (client, b"", seq, payload)... then
(client, b"", -1, b"").

It prints "PUB_PORT REPLAY_PORT", publishes the scripted batches of
script(k) (batch 7 is kept for replay but never sent), then an empty batch
every few milliseconds until stdin closes.
"""
import select
import sys
import time

import msgpack
import zmq

BLOCK = 4
BATCHES = 20
DROPPED = 7


def h(k, i):
    """Block i of batch k, in the three encodings engines use."""
    v = k * 10 + i + 1
    if k % 3 == 0:
        return -v  # a signed integer
    if k % 3 == 1:
        return v.to_bytes(8, "big")  # bytes: the low 64 bits, big-endian
    return v


def script(k):
    rank = k % 2
    tokens = [k * 100 + j for j in range(3 * BLOCK)]
    parent = None if k < 2 else h(k - 2, 2)
    stored = ["BlockStored", [h(k, 0), h(k, 1), h(k, 2)], parent, tokens, BLOCK, None, "GPU", None]
    if k % 5 == 4:
        stored.append("a field from the future")
    events = [stored]
    if k % 4 == 3:
        events.append(["BlockRemoved", [h(k - 2, 2)], "GPU"])
    if k % 6 == 5:
        # Offloaded to CPU memory (vLLM's offloading connector).
        events.append(["BlockStored", [h(k, 9)], None, list(range(BLOCK)), BLOCK, None, "CPU", None])
    if k % 12 == 5 and k >= 12:
        # Evicted from CPU memory, named in lower case as some connectors do.
        events.append(["BlockRemoved", [h(k - 6, 9)], "cpu"])
    if k % 6 == 2:
        # A medium the subscriber has no tier for.
        events.append(["BlockStored", [h(k, 8)], None, list(range(BLOCK)), BLOCK, None, "tape", None])
    return [time.time(), events, rank]


def main():
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub_port = pub.bind_to_random_port("tcp://127.0.0.1")
    router = ctx.socket(zmq.ROUTER)
    replay_port = router.bind_to_random_port("tcp://127.0.0.1")
    print(pub_port, replay_port, flush=True)
    buf = []
    seq = 0
    while True:
        r, _, _ = select.select([sys.stdin], [], [], 0)
        if r and not sys.stdin.readline():
            break
        while router.poll(0):
            frames = router.recv_multipart()
            if len(frames) != 3:
                continue
            client, _, start = frames
            start = int.from_bytes(start, "big")
            for s, payload in buf:
                if s >= start:
                    router.send_multipart([client, b"", s.to_bytes(8, "big"), payload])
            router.send_multipart([client, b"", (-1).to_bytes(8, "big", signed=True), b""])
        batch = script(seq) if seq < BATCHES else [time.time(), [], None]
        payload = msgpack.packb(batch, use_bin_type=True)
        buf.append((seq, payload))
        if seq != DROPPED:
            pub.send_multipart([b"kv", seq.to_bytes(8, "big"), payload])
        seq += 1
        time.sleep(0.003)
    pub.close(0)
    router.close(0)
    ctx.term()


if __name__ == "__main__":
    main()

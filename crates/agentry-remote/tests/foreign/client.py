"""A client in another language (Python, nats-py) that speaks Agentry's wire format from its
documentation alone (`agentry_remote::envelope`): every byte below is written by hand.

Usage: client.py NATS_URL NAMESPACE. Prints one line per observation; the Rust test
(`nats_foreign_client_speaks_the_wire.rs`) checks them:
  REPLY <sum>             the answer to calc.Add{a: 20, b: 22}
  FAILURE <byte>          the failure byte answering a request of an unregistered type
  SENT                    a Ping(7), an envelope of another wire version were published
  NOTE <seq> <value>      each Ping the gateway sent to the `py` name (receipt confirmed)
"""

import asyncio
import struct
import sys

import nats

WIRE_VERSION = 2
F_TAG, F_CORR, F_FAILURE, F_RECEIPT = 1, 2, 4, 8


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(n):
    return varint((n << 1) ^ (n >> 63))


def message(type_name, body, version=1):
    name = type_name.encode()
    return bytes([WIRE_VERSION, F_TAG, len(name)]) + name + struct.pack(">IB", version, 0) + body


def parse(payload):
    if payload[0] != WIRE_VERSION:
        raise ValueError(f"wire version {payload[0]}")
    flags, i, out = payload[1], 2, {}
    if flags & F_TAG:
        n = payload[i]
        out["type"] = payload[i + 1 : i + 1 + n].decode()
        out["version"], out["codec"] = struct.unpack(">IB", payload[i + 1 + n : i + 6 + n])
        i += 6 + n
    if flags & F_CORR:
        (out["corr"],) = struct.unpack(">Q", payload[i : i + 8])
        i += 8
    if flags & F_FAILURE:
        out["failure"] = payload[i]
        i += 1
    if flags & F_RECEIPT:
        n = payload[i]
        out["from"] = payload[i + 1 : i + 1 + n].decode()
        out["seq"], out["low"] = struct.unpack(">QQ", payload[i + 1 + n : i + 17 + n])
        i += 17 + n
    out["body"] = payload[i:]
    return out


async def main(url, ns):
    nc = await nats.connect(url)
    notes = asyncio.Queue()

    async def on_note(msg):
        e = parse(msg.data)
        if "from" in e:
            # Confirm the receipt: one range (first, count) to the sender's confirmation subject.
            await nc.publish(f"{ns}.v1.r.{e['from']}.a", struct.pack(">QI", e["seq"], 1))
        await notes.put(e)

    await nc.subscribe(f"{ns}.v1.m.py", cb=on_note)
    await nc.flush()

    reply = parse((await nc.request(f"{ns}.v1.s.calc", message("calc.Add", zigzag(20) + zigzag(22)), timeout=20)).data)
    assert reply["type"] == "calc.Sum", reply
    print("REPLY", reply["body"][0] >> 1, flush=True)

    failure = parse((await nc.request(f"{ns}.v1.s.calc", message("calc.Nope", zigzag(1)), timeout=20)).data)
    print("FAILURE", failure["failure"], flush=True)

    await nc.publish(f"{ns}.v1.m.in", message("test.Ping", varint(7)))
    await nc.publish(f"{ns}.v1.m.in", bytes([1]) + message("test.Ping", varint(8))[1:])
    await nc.flush()
    print("SENT", flush=True)

    for _ in range(3):
        e = await asyncio.wait_for(notes.get(), timeout=20)
        assert e["type"] == "test.Ping", e
        print("NOTE", e["seq"], e["body"][0], flush=True)
    await nc.flush()
    await nc.close()


asyncio.run(main(sys.argv[1], sys.argv[2]))

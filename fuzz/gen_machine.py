#!/usr/bin/env python3
"""Seed corpus for fuzz_machine (fuzz/corpus/machine/): short programs of
the whole machine, with no mistake enabled (the final protocol must pass
every one).  Layout: flags, ncpu, the count of operations, the (op, arg)
pairs, then the scheduling choices, a byte each (sc_check_fuzz()); see
fuzz_machine.c.  Deterministic: the same files every run."""
import os
import random

OPS = ["CREATE", "SLEEP", "WAKE", "EXIT", "CAPTURE", "SIMCAP", "SWAPOUT",
       "SWAPIN", "YIELD", "KSTACK"]


def prog(flags, ncpu, choices, ops):
    b = bytes([flags, ncpu, len(ops)])
    for op, arg in ops:
        b += bytes([OPS.index(op), arg & 0xff])
    return b + choices


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "corpus", "machine")
    os.makedirs(out, exist_ok=True)
    hand = {
        "capture-two": [("CREATE", 0), ("CREATE", 1 + 3), ("CAPTURE", 0),
                        ("CAPTURE", 1), ("YIELD", 7), ("CAPTURE", 0)],
        "sleep-swap": [("CREATE", 2), ("SLEEP", 2), ("YIELD", 5),
                       ("SWAPOUT", 2), ("CAPTURE", 2), ("SWAPIN", 2),
                       ("CAPTURE", 2), ("WAKE", 2), ("CAPTURE", 2)],
        "simcap-exit-reuse": [("CREATE", 0), ("CREATE", 1),
                              ("SIMCAP", 12), ("EXIT", 1),
                              ("CREATE", 1 + 3), ("CAPTURE", 1),
                              ("YIELD", 7)],
        "kstack": [("CREATE", 0), ("CREATE", 3), ("SLEEP", 3),
                   ("KSTACK", 0), ("KSTACK", 3), ("EXIT", 0)],
        # KSTACK with arg >= 128: a snapshot of the whole machine, while
        # a slot's thread captures another and the harness captures.
        "snapshot": [("CREATE", 0), ("CREATE", 1 + 3), ("CREATE", 2 + 6),
                     ("SLEEP", 2), ("SIMCAP", 8 + 0), ("KSTACK", 128),
                     ("CAPTURE", 1), ("KSTACK", 129), ("SWAPOUT", 2),
                     ("KSTACK", 130), ("EXIT", 1), ("KSTACK", 128)],
    }
    rnd = random.Random(11)
    for i, (name, ops) in enumerate(sorted(hand.items())):
        for ncpu in (0, 1, 2):
            # The default schedule for one CPU, choices for the others.
            choices = bytes(rnd.randrange(256) for _ in range(64 * ncpu))
            with open(os.path.join(out, "%s-%d" % (name, ncpu + 1)),
                      "wb") as f:
                f.write(prog(0, ncpu, choices, ops))
    for i in range(12):
        ops = [(rnd.choice(OPS), rnd.randrange(256)) for _ in range(24)]
        choices = bytes(rnd.randrange(256) for _ in range(256))
        with open(os.path.join(out, "random-%02d" % i), "wb") as f:
            f.write(prog(0, rnd.randrange(3), choices, ops))


if __name__ == "__main__":
    main()

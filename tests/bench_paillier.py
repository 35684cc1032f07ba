"""Benchmark: Paillier operations at 2048 bits, fedgauss.paillier next to python-paillier (phe), both with gmpy2,
in one process, per operation (median of `--repeat` batches), with the ratio phe / ours; then fedgauss with the
pure-Python backend.

    python tests/bench_paillier.py [--bits 2048] [--n 200] [--repeat 5]

Operations:
- encrypt, full: a fresh obfuscator r^n computed for each plaintext (phe's `raw_encrypt`; ours with fast=False,
  by anyone holding the public key, and by the key owner through the CRT);
- encrypt, fast: ours with DJN obfuscators h^x (fixed-base table, built once per key and not timed; its build time
  is printed) by the public-key holder and by the key owner. phe has no equivalent;
- encrypt, online: the plaintext part only, given precomputed obfuscators (a pool); phe: `raw_encrypt` with
  `r_value=1` (its cheapest path: the same two multiplications);
- add (ciphertext x ciphertext mod n^2), multiply by a 64-bit plaintext scalar, decrypt.
"""

import argparse, statistics, time

import numpy as np


def per_op(f, n, repeat):
    "Median over `repeat` runs of f() (which performs n operations) / n, in microseconds."
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(times)


def main(bits=2048, n=200, repeat=5):
    import phe
    from phe.util import mulmod, powmod  # what phe's EncryptedNumber.__add__ / __mul__ call (gmpy2 inside)
    from fedgauss import paillier as pl

    pk, sk = pl.generate_paillier_keypair(bits, rng=0)
    ppk = phe.PaillierPublicKey(int(pk.n))
    psk = phe.PaillierPrivateKey(ppk, int(sk.p), int(sk.q))
    rng = np.random.default_rng(1)
    ms = [int(v) for v in rng.integers(0, 2**62, n)]
    t = time.perf_counter()
    pk.obfuscators(1, rng=2)
    t_pub = time.perf_counter() - t
    t = time.perf_counter()
    sk.obfuscators(1, rng=3)
    t_own = time.perf_counter() - t
    cs = sk.encrypt_many(ms, rng=4)
    pcs = [ppk.raw_encrypt(m) for m in ms]
    pool = sk.obfuscators(n * repeat, rng=5)
    chunks = iter([pool[i * n : (i + 1) * n] for i in range(repeat)])
    k = 2**63 - 25
    rows = [
        (
            'encrypt, full r^n (public key)',
            lambda: [ppk.raw_encrypt(m) for m in ms],
            lambda: pk.encrypt_many(ms, fast=False),
        ),
        ('encrypt, full r^n (key owner, CRT)', None, lambda: sk.encrypt_many(ms, fast=False)),
        ('encrypt, DJN table (public key)', None, lambda: pk.encrypt_many(ms)),
        ('encrypt, DJN table (key owner, CRT)', None, lambda: sk.encrypt_many(ms)),
        (
            'encrypt, online (obfuscator pool)',
            lambda: [ppk.raw_encrypt(m, r_value=1) for m in ms],
            lambda: pk.encrypt_many(ms, obfuscators=next(chunks)),
        ),
        (
            'add (c1 c2 mod n^2)',
            lambda: [mulmod(a, b, ppk.nsquare) for a, b in zip(pcs, pcs[1:] + pcs[:1])],
            lambda: [pk.add(a, b) for a, b in zip(cs, cs[1:] + cs[:1])],
        ),
        (
            'multiply by a 64-bit scalar',
            lambda: [powmod(c, k, ppk.nsquare) for c in pcs],
            lambda: [pk.mul_plain(c, k) for c in cs],
        ),
        ('decrypt', lambda: [psk.raw_decrypt(c) for c in pcs], lambda: sk.decrypt_many(cs)),
    ]
    print(f'Paillier, {bits}-bit keys, {n} operations per run, median of {repeat} runs, microseconds per operation')
    print(
        f'(fedgauss DJN tables built once per key: public key {t_pub:.2f} s, key owner {t_own:.2f} s, not in the times)'
    )
    print(f"{'operation':40s} {'phe':>10s} {'fedgauss':>10s} {'phe/ours':>9s}   (* against phe's full encryption)")
    full_phe = float('nan')
    for name, f_phe, f_ours in rows:
        ours = per_op(f_ours, n, repeat)
        if f_phe is None:  # phe has no such path: compare with its full encryption
            print(f'{name:40s} {"-":>10s} {ours:10.1f} {full_phe / ours:8.2f}*')
            continue
        theirs = per_op(f_phe, n, repeat)
        full_phe = theirs if name.startswith('encrypt, full') else full_phe
        print(f'{name:40s} {theirs:10.1f} {ours:10.1f} {theirs / ours:9.2f}')
    print('\npure-Python backend (no gmpy2), same key')
    ppy = pl.PaillierPublicKey(int(pk.n), use_gmpy2=False)
    spy = pl.PaillierPrivateKey(ppy, int(sk.p), int(sk.q))
    m2 = ms[: max(n // 4, 10)]
    cpy = spy.encrypt_many(m2, rng=6)
    for name, f in [
        ('encrypt, full r^n (public key)', lambda: ppy.encrypt_many(m2, fast=False)),
        ('encrypt, DJN table (key owner, CRT)', lambda: spy.encrypt_many(m2)),
        ('decrypt', lambda: spy.decrypt_many(cpy)),
    ]:
        print(f'{name:40s} {per_op(f, len(m2), max(repeat // 2, 1)):10.1f}')


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--bits', type=int, default=2048)
    ap.add_argument('--n', type=int, default=200)
    ap.add_argument('--repeat', type=int, default=5)
    a = ap.parse_args()
    main(a.bits, a.n, a.repeat)

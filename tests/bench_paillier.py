"""Benchmark: Paillier operations at 2048 bits, fedgauss.paillier next to python-paillier (phe), both with gmpy2,
in one process, per operation (median of `--repeat` batches), with the ratio phe / ours (`compare_with_phe`, the
table and figure of nb32's speed section); then fedgauss with the pure-Python backend.

    python tests/bench_paillier.py [--bits 2048] [--n 200] [--repeat 5] [--keys 3]

Operations (see `fedgauss.paillier.compare_with_phe`):
- key generation;
- encrypt, full: a fresh obfuscator r^n computed for each plaintext (phe's `raw_encrypt`; ours with fast=False,
  by anyone holding the public key, and by the key owner through the CRT);
- encrypt, DJN: ours with DJN obfuscators h^x (fixed-base table, built once per key and not timed; its build time
  is printed) by the public-key holder and by the key owner; phe has no equivalent: against its full encryption;
- encrypt, online: the plaintext part only, given precomputed obfuscators (a pool); phe: `raw_encrypt` with
  `r_value=1` (its cheapest path: the same two multiplications);
- add (ciphertext x ciphertext mod n^2), multiply by a 64-bit plaintext scalar, decrypt;
- packed: 64-bit values in 80-bit slots, per value, against phe's operation on one value.
"""

import argparse

import pandas as pd


def main(bits=2048, n=200, repeat=5, keys=3):
    from fedgauss import paillier as pl

    t = pl.compare_with_phe(bits, n, repeat, keys)
    print(f'Paillier, {bits}-bit keys, {n} operations per run, median of {repeat} runs, microseconds per operation')
    built = t.attrs['table_seconds']
    print(
        f"(fedgauss DJN tables built once per key: public key {built['public key']:.2f} s, "
        f"key owner {built['key owner']:.2f} s, not in the times)"
    )
    with pd.option_context('display.width', 120, 'display.max_columns', 10):
        print(t.round(2))
    print('\npure-Python backend (no gmpy2), microseconds per operation')
    pk, sk = pl.generate_paillier_keypair(bits, rng=0)
    ppy = pl.PaillierPublicKey(int(pk.n), use_gmpy2=False)
    spy = pl.PaillierPrivateKey(ppy, int(sk.p), int(sk.q))
    m2 = list(range(max(n // 4, 10)))
    cpy = spy.encrypt_many(m2, rng=6)
    spy.obfuscators(1)  # the table, once per key
    for name, f in [
        ('encrypt, full r^n (public key)', lambda: ppy.encrypt_many(m2, fast=False)),
        ('encrypt, DJN table (key owner, CRT)', lambda: spy.encrypt_many(m2)),
        ('decrypt', lambda: spy.decrypt_many(cpy)),
    ]:
        print(f'{name:40s} {pl.time_per_op(f, len(m2), max(repeat // 2, 1)):10.1f}')


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--bits', type=int, default=2048)
    ap.add_argument('--n', type=int, default=200)
    ap.add_argument('--repeat', type=int, default=5)
    ap.add_argument('--keys', type=int, default=3)
    a = ap.parse_args()
    main(a.bits, a.n, a.repeat, a.keys)

#!/usr/bin/env bash
# s7ab.sh ROUNDS A B: alternated S7 t1m point runs of two binaries; prints the churn ratios
set -u
for r in $(seq 1 $1); do for b in $2 $3; do
  d=${OUT_DIR:-/tmp/prof}/s7ab-$b-$r; rm -rf $d; mkdir -p $d
  timeout 900 /work/main/target/release/nsbench scale --points t1m --servers ours --ours ${BIN_DIR:-/tmp/prof}/ns-$b --measure-ms 10000 --out $d --workdir $d/w > $d/log 2>&1
  python3 - $d/scale.md $b $r <<'PY'
import sys,re
rows={}
for l in open(sys.argv[1]):
    m=re.match(r'\| (.+?) \| ([^|]+) \|$', l.strip())
    if m: rows.setdefault(m.group(1), m.group(2).strip())
g=lambda k: float(rows[k].replace(',',''))
calm, calmp = g('calm reads (req/s)'), g('calm reads p99 (ms)')
# the 1 % churn rows come after the DataVersion ones; find by order
lines=[l for l in open(sys.argv[1]) if l.startswith('| ')]
def after(section, key):
    on=False
    for l in lines:
        if l.startswith('| '+section): on=True
        if on and l.startswith('| '+key): return float(l.split('|')[2].strip().replace(',',''))
    return None
reads=after('1 % change churn: reads','1 % change churn: reads'); p99=after('1 % change churn: reads','… reads p99'); rp99=after('1 % change churn: reads','… registration p99')
print(f"{sys.argv[2]} r{sys.argv[3]}: calm {calm:.0f} churn {reads:.0f} = {reads/calm:.2f}x, p99 {p99/calmp:.2f}x calm, reg p99 {rp99} ms, cold {rows['cold start: all brokers registered (s)']} s, B/pair {rows['steady RSS above empty per (topic, broker) pair (bytes)']}")
PY
done; done

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The benchmarks' figures as SVG charts (gnuplot, Debian's gnuplot-nox).
#
#   bench/plot.sh --run PROGRAM   run a benchmark, its output kept as
#                                 $BENCH_DATA_DIR/NAME.out, stamped with the
#                                 machine and the date (make bench-data)
#   bench/plot.sh OUTDIR          draw every chart whose data is in
#                                 $BENCH_DATA_DIR into OUTDIR (make plots)
#
# Data: cost_bench.dat and thread_bench.dat, which those benchmarks write
# when BENCH_DATA_DIR is set; xfer_bench.out (its per-size table of rates)
# and cache_bench.out (its RESULT line). Each chart says in its footer the
# machine and the date its figures were measured on, from its data's
# '# machine:' and '# date:' lines. A chart whose data is missing is left
# as it is, and said so.
set -euo pipefail

data=${BENCH_DATA_DIR:-bench-data}

stamp_header() {
	local model
	model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
	printf '# machine: %s, %s CPUs, Linux %s\n' "${model:-unknown CPU}" \
		"$(getconf _NPROCESSORS_ONLN)" "$(uname -r)"
	printf '# date: %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
	printf '# load1: %s\n' "$(cut -d' ' -f1 /proc/loadavg)"
}

if [ "${1:-}" = --run ]; then
	prog=$2
	mkdir -p "$data"
	out="$data/$(basename "$prog").out"
	stamp_header >"$out.tmp"
	# The benchmark's own output goes on to the terminal as well.
	BENCH_DATA_DIR=$data "$prog" | tee -a "$out.tmp"
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && mv "$out.tmp" "$out"
	exit "$rc"
fi

outdir=${1:?usage: plot.sh OUTDIR | plot.sh --run PROGRAM}
command -v gnuplot >/dev/null ||
	{ echo "plot.sh: gnuplot not found (Debian: gnuplot-nox)" >&2; exit 1; }
mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
drawn=0

# footer FILE: "measured on MACHINE, DATE (load L)" from FILE's header.
footer() {
	local machine date load
	machine=$(sed -n 's/^# machine: //p' "$1" | head -n 1)
	date=$(sed -n 's/^# date: //p' "$1" | head -n 1)
	load=$(sed -n 's/^# load1: //p' "$1" | head -n 1)
	printf 'measured on %s, %s, load average %s' "${machine:-?}" "${date:-?}" "${load:-?}"
}

# preamble OUTPUT TITLE STAMP [WIDTH,HEIGHT]: SVG, the title with the stamp
# under it in small type, the key below the plot.
preamble() {
	cat <<EOF
set terminal svg size ${4:-800,560} dynamic enhanced font "sans,12" background "white"
set output "$1"
set title "$2\\n{/=9 $3}"
set key below maxrows 4
set grid
EOF
}

missing() {
	echo "plot.sh: no $1 in $data: $2 left as it is (make bench-data)" >&2
}

# The charts are read side by side, so their data come from one run of make
# bench-data: say so when they name more than one machine, and the span of
# their dates.
machines=$(cat "$data"/*.out "$data"/*.dat 2>/dev/null | sed -n 's/^# machine: //p' | sort -u)
if [ "$(grep -c . <<<"$machines")" -gt 1 ]; then
	echo "plot.sh: warning: the data in $data come from more than one machine:" >&2
	sed 's/^/    /' <<<"$machines" >&2
fi
dates=$(cat "$data"/*.out "$data"/*.dat 2>/dev/null | sed -n 's/^# date: //p' | sort -u)
[ -z "$dates" ] || echo "plot.sh: data measured from $(head -n 1 <<<"$dates") to $(tail -n 1 <<<"$dates")"

# ---- rate against message size, xfer_bench (tcp;ofi_rxm, no cost) --------
f="$data/xfer_bench.out"
if [ -r "$f" ]; then
	# The per-size table after "# median slice rate per mode".
	awk '/^# median slice rate per mode/ { on = 1; next }
	     on && /^ *[0-9]/ { print $1, $2, $3, $4, $5, $6; rows = 1; next }
	     on && rows { on = 0 }' "$f" >"$tmp/xfer.txt"
	if [ -s "$tmp/xfer.txt" ]; then
		{
			preamble "$outdir/rate_xfer.svg" "fi\\\\_write message rate over loopback tcp;ofi\\\\_rxm, per mode (xfer\\\\_bench)" "$(footer "$f")"
			cat <<EOF
set logscale xy
set xlabel "message size (bytes)"
set ylabel "writes per second (median slice)"
set format x "%.0s%cB"
plot "$tmp/xfer.txt" u 1:2 w lp lw 2 pt 7 t "app: registered once", \\
     "" u 1:3 w lp lw 2 pt 5 t "lease: mrlease, desc NULL", \\
     "" u 1:4 w lp lw 2 pt 9 t "perop: registered per operation", \\
     "" u 1:5 w lp lw 1 pt 4 dt 2 t "noop: libfabric's noop hook", \\
     "" u 1:6 w lp lw 1 pt 6 dt 3 t "lease0: mrlease, MIN\\\\_SIZE=0"
EOF
		} | gnuplot
		drawn=$((drawn + 1))
	fi
else
	missing xfer_bench.out rate_xfer.svg
fi

# ---- rate against message size under the cost model (cost_bench) --------
f="$data/cost_bench.dat"
if [ -r "$f" ]; then
	model=$(sed -n 's/^# model: //p' "$f")
	{
		preamble "$outdir/rate_cost.svg" "fi\\\\_write rate under the registration cost model ($model), tcp;ofi\\\\_rxm (cost\\\\_bench)" "$(footer "$f")"
		cat <<EOF
set logscale xy
set xlabel "message size (bytes)"
set ylabel "writes per second (median slice, elapsed)"
set format x "%.0s%cB"
plot "$f" u 1:2 w lp lw 2 pt 7 t "app: registered once", \\
     "" u 1:4 w lp lw 2 pt 5 t "lease: mrlease, desc NULL (warm)", \\
     "" u 1:3 w lp lw 2 pt 9 t "perop: registered per operation", \\
     "" u 1:5 w lp lw 1 pt 4 dt 2 t "evict: working set > cache"
EOF
	} | gnuplot
	drawn=$((drawn + 1))

	# ---- the cost model's savings ----------------------------------------
	# Columns, elapsed: 2-5 rates (app perop lease evict), 6-8 lease/app,
	# 9-11 lease/perop, 12-14 evict/perop, 15-17 time saved per write (us),
	# each a median and its quartiles; 18-33 the same by CPU time; 34 the
	# model's charge per registration (us). The ratios are by elapsed time,
	# what the application sees; the time saved by CPU time, comparable
	# with the charge (elapsed time also counts other processes' turns).
	{
		preamble "$outdir/cost_savings.svg" "What the cache saves against registering per operation (cost\\\\_bench, $model)" "$(footer "$f")"
		cat <<EOF
set logscale x
set xlabel "message size (bytes)"
set ylabel "rate / rate registering per operation (elapsed) [quartiles]"
set y2label "µs per write"
set ytics nomirror
set y2tics
set format x "%.0s%cB"
set yrange [0:*]
set y2range [0:*]
plot "$f" u 1:9:10:11 w yerrorlines lw 2 pt 5 t "lease / perop", \\
     "" u (\$1*1.08):12:13:14 w yerrorlines lw 1 pt 4 dt 2 t "evict / perop", \\
     "" u 1:(\$9/\$6) w lp lw 1 pt 7 dt 3 t "app / perop (the limit)", \\
     "" u 1:31 axes x1y2 w lp lw 1 pt 9 lc rgb "#777777" t "CPU time saved per write (right)", \\
     "" u 1:34 axes x1y2 w lp lw 1 pt 2 lc rgb "#bbbbbb" t "model's charge per registration (right)", \\
     1 w l lc rgb "#999999" dt 3 notitle
EOF
	} | gnuplot
	drawn=$((drawn + 1))
else
	missing cost_bench.dat "rate_cost.svg and cost_savings.svg"
fi

# ---- hit latency against cache size (cache_bench) ------------------------
# The four caches, each by its random and same-entry figures, and the
# machine's memory latency; a cache the benchmark was built without (ucx,
# ofi) has no figures and no line.
f="$data/cache_bench.out"
if [ -r "$f" ] && grep -q '^RESULT ' "$f"; then
	res=$(grep '^RESULT ' "$f" | tail -n 1)
	val() { tr ' ' '\n' <<<"$res" | sed -n "s/^$1=//p"; }
	lines=""
	lc=0
	while read -r impl pt label; do
		lc=$((lc + 1))
		for n in 1e3 1e4 1e5 1e6; do
			printf '%s %s %s\n' "$n" "$(val "${impl}_hit_hot_$n")" \
				"$(val "${impl}_hit_rand_$n")"
		done | awk 'NF == 3' >"$tmp/hit_$impl.txt"
		[ -s "$tmp/hit_$impl.txt" ] || continue
		lines="$lines\"$tmp/hit_$impl.txt\" u 1:3 w lp lw 2 pt $pt lc $lc t \"$label, random\", \\
     \"\" u 1:2 w lp lw 1 pt $((pt - 1)) dt 2 lc $lc t \"$label, same entry\", \\
     "
	done <<-'IMPLS'
		mrl 5 mrlease
		mutex_map 7 global-mutex map
		ucx 9 UCX rcache
		ofi 11 libfabric util MR
	IMPLS
	{
		preamble "$outdir/cache_hit.svg" "Cache hit (lookup + lease + release) against cache size (cache\\\\_bench)" "$(footer "$f")"
		cat <<EOF
set logscale xy
set xlabel "cached registrations"
set ylabel "ns per hit (median)"
set xrange [500:2e6]
set format x "10^{%L}"
plot $lines$(val mem_lat) w l lw 1 dt 4 lc rgb "#cc6666" t "memory latency (floor at 10^6)"
EOF
	} | gnuplot
	drawn=$((drawn + 1))
else
	missing cache_bench.out cache_hit.svg
fi

# ---- posting threads (thread_bench) ---------------------------------------
f="$data/thread_bench.dat"
if [ -r "$f" ]; then
	# Columns: 1 size; 2-7 rates; 8-10 nohook scaling, 11-13 lease,
	# 14-16 shared; 17-19 lease/nohook scaling, 20-22 shared/nohook;
	# 23-25 and 26-28 the same two by CPU time (each a median and its
	# quartiles). Left: each mode's scaling; right: the figure with its
	# target, mrlease's scaling over the provider's.
	{
		preamble "$outdir/thread_scaling.svg" "From 1 to 2 posting threads on one thread-safe domain (thread\\\\_bench)" "$(footer "$f")" 960,560
		cat <<EOF
set multiplot layout 1,2 title "From 1 to 2 posting threads on one thread-safe domain (thread\\\\_bench)\\n{/=9 $(footer "$f")}"
unset title
set logscale x
set xlabel "message size (bytes)"
set xrange [40:110000]
set format x "%.0s%cB"
set yrange [0:2.2]
set ylabel "rate with 2 threads / with 1 [quartiles]"
plot "$f" u 1:8:9:10 w yerrorlines lw 2 pt 7 t "no hook", \\
     "" u (\$1*1.08):11:12:13 w yerrorlines lw 2 pt 5 t "mrlease", \\
     "" u (\$1*1.16):14:15:16 w yerrorlines lw 1 pt 9 dt 2 t "mrlease, shared buffer", \\
     1 w l lc rgb "#999999" dt 3 notitle
set yrange [0:1.6]
set ylabel "mrlease's scaling / no hook's [quartiles]"
plot "$f" u 1:17:18:19 w yerrorlines lw 2 pt 5 lc 2 t "elapsed", \\
     "" u (\$1*1.16):20:21:22 w yerrorlines lw 1 pt 9 dt 2 lc 3 t "elapsed, shared buffer", \\
     "" u (\$1*1.08):23:24:25 w yerrorlines lw 2 pt 4 lc 7 t "per CPU second", \\
     "" u (\$1*1.24):26:27:28 w yerrorlines lw 1 pt 8 dt 2 lc 4 t "per CPU second, shared", \\
     0.95 w l lc rgb "#cc6666" dt 4 t "target 0.95"
unset multiplot
EOF
	} | gnuplot
	drawn=$((drawn + 1))
else
	missing thread_bench.dat thread_scaling.svg
fi

echo "plot.sh: $drawn chart(s) in $outdir"

# SPDX-License-Identifier: MIT
# bench/yamux.sh: throughput and receive window over time, one yamux stream
# through the TCP delay line; fixed 256 KiB window vs auto-tuned vs plain TCP.
# Variables: out, title, dir (the CSVs), bdp (bytes).
set terminal pngcairo size 1000,720 font ",10"
set output out
set datafile separator ","
set multiplot layout 2,1 title title
set key outside right
set grid
set ylabel "Mbit/s (per 100 ms)"
set xrange [0:*]
plot dir."/yamux-tcp-1.csv" using 1:2 with lines lw 1.5 title "plain TCP (the line)", \
     dir."/yamux-auto-1.csv" using 1:2 with lines lw 1.5 title "yamux auto-tuned", \
     dir."/yamux-fixed-1.csv" using 1:2 with lines lw 1.5 title "yamux fixed 256 KiB", \
     dir."/yamux-go-fixed-1.csv" using 1:2 with lines lw 1 title "hashicorp/yamux fixed"
set ylabel "receive window (MB)"
set xlabel "time (s)"
plot dir."/yamux-auto-1.csv" using 1:($3/1e6) with lines lw 1.5 title "auto-tuned window", \
     dir."/yamux-auto-1.csv" using 1:($4/1e6) with lines lw 1 title "auto-tuned credit", \
     dir."/yamux-fixed-1.csv" using 1:($3/1e6) with lines lw 1.5 title "fixed window", \
     bdp/1e6 with lines dt 2 title "BDP", 2.5*bdp/1e6 with lines dt 3 title "2.5 BDP"
unset multiplot

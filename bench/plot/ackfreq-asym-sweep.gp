# SPDX-License-Identifier: MIT
# ACK-frequency experiment 3: goodput vs the queue of the 1 Mbit/s ACK
# direction, RFC 9000 acks (off), fixed threshold 10 and auto.
# gnuplot -e "csv='F.csv'; png='OUT.png'; title='T'" bench/plot/ackfreq-asym-sweep.gp
set terminal pngcairo size 900,420 font ",10"
set output png
set datafile separator ","
if (!exists("title")) title = "goodput vs ACK-direction queue"
set title title
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set grid ytics
set yrange [0:*]
set ylabel "goodput (Mbit/s)"
set key outside bottom center horizontal
# every ::1 skips the CSV header row.
plot csv every ::1 using 2:xtic(1) title "off (RFC 9000)" lc rgb "#888888", \
     '' every ::1 using 4 title "fixed 10" lc rgb "#d5803a", \
     '' every ::1 using 5 title "auto" lc rgb "#3a7bd5"

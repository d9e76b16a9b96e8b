# ACK-frequency experiment 3: goodput vs the queue of the 1 Mbit/s ACK
# direction, RFC 9000 acks (off), fixed threshold 10 and auto.
# gnuplot -e "csv='F.csv'; png='OUT.png'" bench/plot/ackfreq-asym-sweep.gp
set terminal pngcairo size 900,420 font ",10"
set output png
set datafile separator ","
set title "100 Mbit/s down, 1 Mbit/s up, 30 ms: goodput vs ACK-direction queue"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set grid ytics
set yrange [0:*]
set ylabel "goodput (Mbit/s)"
set key top left
plot csv using 2:xtic(1) title "off (RFC 9000)" lc rgb "#888888", \
     '' using 4 title "fixed 10" lc rgb "#d5803a", \
     '' using 5 title "auto" lc rgb "#3a7bd5"

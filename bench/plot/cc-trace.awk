# SPDX-License-Identifier: MIT
# Summary of a `bench_cc trace` CSV (bench/cc.sh section 3a) over t >= from:
# one "key value" line per figure. Columns: see bench/cc.c.
BEGIN { FS = "," }
/^t_s/ { next }
/^#/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] ~ /bdp_bytes/) bdp = kv[2] }; next }
$1 < from { prev = $2; lastup = -1; pcub = $14; next }
{
    t = $1; m = $2; mss = $19; bdpk = bdp / mss
    n++; mode[m]++
    probing = (m == 4 || m == 5)
    if (probing) { ps += $12; pl += $13 } else { ns += $12; nl += $13; if ($13 > 0) { nlr++; if (m == 2) nld++ } }
    if ($12 > 0 && $13 > 0.02 * $12) hi++
    if (m == 5 && prev != 5) {
        ups++; if (lastup >= 0) { gap += t - lastup; gapr += $3 - lastr; gaps++ } lastup = t; lastr = $3
    }
    if ($15 > 0) { cb += pcub / bdpk; ca += $14 / bdpk; cn++ }
    pcub = $14
    if (m == 6 && prev != 6) rtts++
    if (m == 3) { cr++; ccw += $9 / bdpk; cif += $10 / bdpk; crl += $13; if ($7 >= 0) { cilt += $7 / bdpk; cil++ } }
    if ($6 >= 0 && $4 > 0) { str += $6 / $4; stn++ }
    cuts += $15; if (m == 3) ccr += $15
    if (probing || m == 2) cpd += $15
    if (m == 6) cpr += $15
    cl += $17; cs += $16
    ccub += $14 / bdpk; q += $18 / bdpk
    prev = m
}
END {
    printf "rounds %d\n", n
    printf "down_pct %.1f\ncruise_pct %.1f\nrefill_pct %.1f\nup_pct %.1f\nprobertt_pct %.1f\n",
        100 * mode[2] / n, 100 * mode[3] / n, 100 * mode[4] / n, 100 * mode[5] / n, 100 * mode[6] / n
    printf "up_phases %d\nup_gap_s %.2f\nup_gap_rounds %.0f\nprobertt_entries %d\n", ups,
        gaps ? gap / gaps : 0, gaps ? gapr / gaps : 0, rtts
    printf "cubic_before_cut_bdp %.2f\ncubic_after_cut_bdp %.2f\n", cn ? cb / cn : 0, cn ? ca / cn : 0
    printf "bbr_loss_probing_pct %.2f\nbbr_loss_other_pct %.3f\nbbr_loss_rounds_other %d\nrounds_over_thresh %d\n",
        ps ? 100 * pl / ps : 0, ns ? 100 * nl / ns : 0, nlr, hi
    printf "cruise_cwnd_bdp %.2f\ncruise_inflight_bdp %.2f\n", cr ? ccw / cr : 0, cr ? cif / cr : 0
    if (cil) printf "cruise_ilt_bdp %.2f\n", cilt / cil; else print "cruise_ilt_bdp unset"
    printf "cruise_lost_pkts %d\nshortterm_rounds %d\n", crl, stn
    if (stn) printf "shortterm_over_max_bw %.2f\n", str / stn; else print "shortterm_over_max_bw -"
    printf "cubic_cuts %d\ncubic_cuts_cruise %d\ncubic_cuts_probe_down %d\ncubic_cuts_per_up %.2f\n",
        cuts, ccr, cpd, ups ? cuts / ups : 0
    printf "cubic_cuts_probertt %d\nbbr_loss_rounds_down %d\n", cpr, nld
    printf "cubic_loss_pct %.3f\ncubic_cwnd_bdp %.2f\nqueue_bdp %.2f\n", cs ? 100 * cl / cs : 0, ccub / n, q / n
}

# shellcheck shell=bash
# The results of several runs of a benchmark, as deploy/local-cluster.sh and deploy/mpi-compare.sh
# report them: medians over the runs in one CSV, the same as a table, latency against size as a
# PNG. Source it (bash).
#
# A run's CSV (alltoall_bench --csv writes one; mpi-compare.sh converts its program's output):
#   method,bytes,calls,latency_us,ratio,cpu_us_per_call,ctx_switches_per_call,
#   frames_per_call_per_node,daemon_frames_per_call_per_node
# in any column order, "-" where a value was not measured.

BENCH_METRICS="latency_us cpu_us_per_call ctx_switches_per_call frames_per_call_per_node daemon_frames_per_call_per_node"

# bench_median OUT BASELINES RUN.csv...: per method and size, the median over the runs of every
# metric ("-" if no run measured it), and ratio = the method's median latency / its baseline's
# median latency at the same size. BASELINES: "method=baseline ..." (e.g. "v1=flat v2=flat").
# Rows by size, then methods in the order the first run lists them.
bench_median() {
  local out=$1 baselines=$2
  shift 2
  awk -F, -v OFS=, -v baselines="$baselines" -v metrics="$BENCH_METRICS" '
    function median(list,   a, n, i, j, t) {
      n = split(list, a, " ")
      if (n == 0) return "-"
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    BEGIN {
      nm = split(metrics, metric, " ")
      nb = split(baselines, pairs, " ")
      for (i = 1; i <= nb; i++) { split(pairs[i], kv, "="); base[kv[1]] = kv[2] }
    }
    FNR == 1 { delete col; for (c = 1; c <= NF; c++) col[$c] = c; next }
    {
      m = $col["method"]; b = $col["bytes"] + 0
      if (!(m in mseen)) { mseen[m] = 1; methods[++nmethods] = m }
      if (!(b in bseen)) { bseen[b] = 1; sizes[++nsizes] = b }
      runs[m, b]++
      for (i = 1; i <= nm; i++) {
        v = (metric[i] in col) ? $col[metric[i]] : "-"
        if (v != "-" && v != "") vals[m, b, metric[i]] = vals[m, b, metric[i]] " " v
      }
    }
    END {
      for (i = 1; i <= nsizes; i++) for (j = i + 1; j <= nsizes; j++) if (sizes[j] < sizes[i]) { t = sizes[i]; sizes[i] = sizes[j]; sizes[j] = t }
      printf "method,bytes,runs,latency_us_median,baseline,ratio,cpu_us_per_call,ctx_switches_per_call,frames_per_call_per_node,daemon_frames_per_call_per_node\n"
      for (i = 1; i <= nsizes; i++) {
        b = sizes[i]
        for (j = 1; j <= nmethods; j++) {
          m = methods[j]
          if (!((m, b) in runs)) continue
          for (k = 1; k <= nm; k++) med[metric[k]] = median(vals[m, b, metric[k]])
          baseline = (m in base) ? base[m] : "-"; ratio = "-"
          if (baseline != "-") {
            bl = median(vals[baseline, b, "latency_us"])
            if (bl != "-" && bl > 0 && med["latency_us"] != "-") ratio = sprintf("%.2f", med["latency_us"] / bl)
          }
          line = m OFS b OFS runs[m, b] OFS med["latency_us"] OFS baseline OFS ratio
          for (k = 2; k <= nm; k++) line = line OFS med[metric[k]]
          print line
        }
      }
    }' "$@" > "$out"
}

# bench_print CSV: a median CSV of bench_median as a Markdown table.
bench_print() {
  awk -F, '
    function cell(v, d) { return (v == "-" || v == "") ? "-" : sprintf("%." d "f", v) }
    NR == 1 {
      print "| bytes per rank | method | runs | latency µs (median) | vs | ratio | CPU µs per call | context switches per call | frames per call per node (veth) | daemon frames per call per node |"
      print "| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
      next
    }
    { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $2, $1, $3, cell($4, 2), $5, $6, cell($7, 1), cell($8, 2), cell($9, 2), cell($10, 2) }' "$1"
}

# bench_plot CSV PNG TITLE: latency against bytes per rank, log-log, one line per method.
bench_plot() {
  local csv=$1 png=$2 title=$3
  if ! command -v gnuplot >/dev/null; then
    echo "$(basename "$0"): gnuplot is missing (deploy/install-deps.sh installs gnuplot-nox); no plot" >&2
    return 1
  fi
  {
    echo "set terminal pngcairo size 1000,650 noenhanced"
    echo "set output '$png'"
    echo "set title '$title'"
    echo "set logscale xy"
    echo "set xlabel 'bytes per rank (M)'"
    echo "set ylabel 'latency per call, µs (median of runs)'"
    echo "set key outside right top"
    echo "set grid"
    awk -F, 'NR > 1 && $4 != "-" {
        if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
        data[$1] = data[$1] $2 " " $4 "\n"
      }
      END {
        for (i = 1; i <= n; i++) printf "$d%d << EOD\n%sEOD\n", i, data[order[i]]
        printf "plot"
        for (i = 1; i <= n; i++) printf "%s $d%d using 1:2 with linespoints title \"%s\"", (i > 1 ? "," : ""), i, order[i]
        printf "\n"
      }' "$csv"
  } | gnuplot
}

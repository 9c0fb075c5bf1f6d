# median(list): the median of the space-separated numbers in `list` (the mean of the middle two
# when their count is even). For the benchmark scripts' medians over interleaved runs:
#   awk -f deploy/lib/median.awk -e '...'
function median(list,   a, n, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

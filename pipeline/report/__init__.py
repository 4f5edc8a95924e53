"""gpfit-report: one self-contained HTML page showing a gpfit run's fits.

Modules, in the order the page is made:
  scan.py    check input and params; one pass: counts and sample
  params.py  find, check and stream the run's parameter shards
  summary.py counts by status and kernel chosen, failure reasons, histograms
             of the parameters (the kernels' from `components`)
  sample.py  which series to plot: named, worst by holdout MASE or standardised nll, random
  data.py    read only those series from the input
  components.py  the posterior mean of each part of a sum of kernels
  plots.py   draw histograms and posterior plots as PNG (matplotlib, Agg)
  page.py    the HTML page, images embedded as base64
  build.py   histograms, plots and page, after the scan
  cli.py     `gpfit-report` options, exit codes
"""

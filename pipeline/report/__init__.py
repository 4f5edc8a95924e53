"""gpfit-report: one self-contained HTML page showing a gpfit run's fits.

Modules, in the order the page is made:
  scan.py    check input and params; one pass: counts and sample
  params.py  find, check and stream the run's parameter shards; its manifest
  summary.py counts by status and kernel chosen, failure reasons, histograms
             of the parameters (the kernels' from `components`)
  sample.py  which series to plot: named, worst by holdout MASE or standardised nll, random
  data.py    read only those series from the input
  nightly.py parameter moves against the previous run; the plotted series'
             predictions rows
  plots.py   draw histograms and posterior plots as PNG (matplotlib, Agg)
  page.py    the HTML page, images embedded as base64
  build.py   histograms, plots (a sum's parts: gpcore.predict.component_means)
             and page, after the scan
  cli.py     `gpfit-report` options, exit codes
"""

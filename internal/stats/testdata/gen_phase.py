"""Fixtures of internal/stats' phase estimate (PhaseMean) and its looks (LookAtEstimate), from an
independent implementation: statsmodels' OLS of the differences on sum-coded phase (the intercept is the
mean of the phases' means), its standard error and residual degrees of freedom, and scipy's t and normal
for the look's z and repeated interval. Run: python3 gen_phase.py (needs numpy, scipy, pandas,
statsmodels)."""
import json
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats

rng = np.random.default_rng(20261127)

cases = []
# (rounds, phases, effect, offsets' size, bound, first round)
specs = [(6, 2, 1.0, 3.0, 2.5, 1), (10, 2, 0.0, 5.0, 2.2, 1), (9, 2, -0.5, 1.0, 3.0, 1),
         (20, 2, 0.3, 4.0, 2.0, 1), (7, 3, 1.5, 2.0, 2.8, 1), (12, 3, 0.0, 0.5, 2.3, 1),
         (15, 3, -1.0, 6.0, 2.1, 2), (8, 4, 0.7, 2.0, 3.5, 1), (30, 2, 0.2, 0.0, 1.96, 1),
         (11, 2, 2.0, 10.0, 2.6, 2), (5, 2, 0.4, 1.0, 4.0, 1), (25, 5, -0.3, 3.0, 2.05, 3)]
for n, phases, effect, size, c, first in specs:
    rounds = list(range(first, first + n))
    off = rng.normal(0, size, phases)
    off -= off.mean()
    phase = [r % phases for r in rounds]
    d = [float(effect + off[p] + rng.normal(0, 1)) for p in phase]
    fit = smf.ols("d ~ C(phase, Sum)", data=pd.DataFrame({"d": d, "phase": phase})).fit()
    mean, se, df = float(fit.params["Intercept"]), float(fit.bse["Intercept"]), int(fit.df_resid)
    sd = float(np.sqrt(fit.scale))
    t = mean / se
    z = float(np.sign(t) * stats.norm.isf(2 * stats.t.sf(abs(t), df) / 2))
    tc = float(stats.t.ppf(stats.norm.cdf(c), df))
    cases.append({"d": d, "phase": phase, "phases": phases, "bound": c, "mean": mean, "se": se, "sd": sd,
                  "df": df, "z": z, "ci_low": mean - tc * se, "ci_high": mean + tc * se})

json.dump({"phase_looks": cases}, open("phase_looks.json", "w"), indent=1)

"""Fixtures of internal/stats' lab-level estimate (LabEffect) from an independent implementation:
statsmodels' OLS of y ~ treated + C(lab) + C(round), the coefficient of treated, its standard error and
the residual degrees of freedom. Cases: every lab in every round (balanced random halves, or shares that
rotate), labs missing from some rounds, a third variant's labs left out, levels from none to ten times the
noise. Run: python3 gen_labs.py (needs numpy, pandas, statsmodels)."""
import json
import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

rng = np.random.default_rng(20261127)
cases = []
# (labs, rounds, effect, lab levels' size, round levels' size, scheme, share of observations dropped)
specs = [(16, 4, 0.6, 5.0, 3.0, "random", 0.0), (16, 2, 0.0, 2.0, 1.0, "random", 0.0),
         (24, 8, -0.4, 10.0, 0.0, "random", 0.0), (4, 3, 1.0, 1.0, 1.0, "rotate", 0.0),
         (8, 5, 0.0, 0.0, 0.0, "rotate", 0.0), (16, 6, 2.0, 3.0, 8.0, "random", 0.1),
         (12, 4, 0.5, 4.0, 2.0, "third", 0.0), (6, 10, -1.5, 2.0, 2.0, "random", 0.2),
         (10, 3, 0.3, 6.0, 0.5, "rotate", 0.05), (20, 7, 0.0, 1.0, 5.0, "third", 0.1),
         (2, 6, 1.0, 1.0, 1.0, "rotate", 0.0), (32, 4, 0.1, 3.0, 3.0, "random", 0.0)]
for labs, rounds, effect, ls, rs, scheme, drop in specs:
    lev = rng.normal(0, ls, labs)
    rlev = rng.normal(0, rs, rounds)
    obs = []
    for r in range(rounds):
        if scheme == "rotate":
            var = [(k + r) % 2 for k in range(labs)]
        elif scheme == "third":
            var = list(rng.permutation([k % 3 for k in range(labs)]))
        else:
            var = list(rng.permutation([k % 2 for k in range(labs)]))
        for k in range(labs):
            if var[k] == 2 or rng.random() < drop:
                continue
            y = 30 + lev[k] + rlev[r] + effect * var[k] + rng.normal(0, 1)
            obs.append({"lab": k + 1, "round": r + 1, "treated": bool(var[k] == 1), "y": float(y)})
    df = pd.DataFrame(obs)
    df["t"] = df["treated"].astype(float)
    fit = smf.ols("y ~ t + C(lab) + C(round)", data=df).fit()
    cases.append({"obs": obs, "mean": float(fit.params["t"]), "se": float(fit.bse["t"]),
                  "df": int(round(fit.df_resid)), "rounds": int(df["round"].nunique())})
json.dump({"lab_effects": cases}, open("lab_effects.json", "w"), indent=1)

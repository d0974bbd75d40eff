"""The tiers that grade: strict (T3, controller + agent/candidate/judge containers), compat (T2),
the unsafe baselines (T0/T1), the judge pool, intake and the one place that picks a tier."""

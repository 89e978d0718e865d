"""`manipgen reproduce`: a paper's headline tables and claims, ours beside the paper's.

One module per paper (its computation and tables; its claims with the paper's values, typed once
from the paper's text); ``papers`` lists them by key and runs one; ``records`` holds what they
return (tables, claims, verdicts). The report writers are in ``host_tools.reports.reproduce``.
"""

"""Model-adaptive collision observer (Birjandi & Haddadin eqs. 9-21), discrete, and the tip wrench (eq. 28).

The model error tau_e = Y_b(q, qd, qdd) dtheta (base regressor, inertial and joint-parameter
columns; dtheta the parameter error) is absorbed by adapting dtheta_hat. Each sample k, with q, qd,
qdd from the estimator (``kalman`` gives qdd) or measured (``adaptive_measured``):
  1. r_k = Y_k theta_hat + tau_f + Y_k dtheta_hat_{k-1} - tau_k (eq. 16; Y theta_hat = rnea with the
     model parameters; tau_f the friction terms beyond viscous + Coulomb, the [fric] block,
     0 unless configured): the external torque estimate, in the joint torque's sign convention.
     Y_k dtheta_hat_{k-1} is eq. 9's Ydot dtheta_hat term integrated over the sample (the change of
     the regressor applied to the last estimate; no jerk estimate);
  2. dtheta_hat_k = dtheta_hat_{k-1} - Y+_P (g .* r_k), g_j = 1 - exp(-K_j T): eq. 10's adaptation
     law dtheta_hat-dot = -Y+ K r integrated, the exact decay of eq. 19 over one sample
     (Y dtheta_hat moves by g_j r_j in joint j), with the weighted pseudo-inverse
     Y+_P = P Y^T (Y P Y^T + lambda I)^-1 (an n x n Cholesky solve);
  3. P_k = P_{k-1} - g_min P Y^T (Y P Y^T + lambda I)^-1 Y P + Q: recursive least squares' parameter
     covariance (templates/rt/adaptive.c.j2), P_0 = diag((prior
     max(|beta_hat_i|, floor max_j |beta_hat_j|))^2) from the model's own base parameters beta_hat,
     Q = drift T P_0; O(n b^2) a sample, or with P kept block-diagonal O(sum_l (l + 1) b_l^2)
     (COVARIANCE_DOC). Refreshing the gain less often was tried and left out: between refreshes
     the old gain over-corrects where the regressor changes fast (a contact's onset: 42 % of r
     removed in one sample instead of 9.5 %).
Why P and not the paper's Y+ = Y^T (Y Y^T)^-1: with more parameters than joints (b > n) one sample
fixes only Y dtheta_hat, and eq. 21's dtheta_hat = Y+ tau_e_hat (the minimum-norm reconstruction,
what this block did before issue #25) forgets every sample what the earlier ones taught about the
other b - n directions; the regressor's change then carries the forgotten part,
Ydot (I - Y+ Y) dtheta, into the residual at about |Ydot (I - Y+ Y) dtheta| / K. Eq. 10 integrated
keeps dtheta_hat's memory, and the covariance P points each correction at the directions the
motion has not yet pinned down, so dtheta_hat -> dtheta on an exciting motion and the residual's
model error -> 0 (Birjandi & Haddadin's claim). Y Y+_P = I as for Y+: eqs. 11-20 (the residual's high-pass
s / (s + K_i) on a contact) hold unchanged. lambda is the variance of the torque equations' noise
(N^2 m^2): small for measured qd, qdd; larger for estimated ones (``manipgen thresholds --tune``
chooses it on a run).
With a constant external torque r decays as r_k+1 = exp(-K T) r_k (eq. 19-20: r is a high-pass of
tau_ext with corner K), so detection latches (det block) rather than relying on r staying high; and
with ``freeze`` (default) the adaptation stops while a collision is latched or a joint's |r| is
above its threshold (the detector's state of the last sample; dtheta_hat and P kept): a contact is
not absorbed into the model error during the detector's debounce either -- with P the correction
goes where the parameters are least known, so an absorbed contact would come back distorted once
the regressor changes -- and r keeps showing it. freeze = 0 is Birjandi & Haddadin's observer (it adapts
through contacts). The first sample, and every in.reset, removes the
whole residual seen then (g = 1, no covariance update: dtheta_hat absorbs it; the direct form under a
rate limit scales g as every sample's, |g .* r| <= rate T, and the rest shows in the next samples' r:
RATE_DOC) and reports r = 0;
in.reset keeps what was learned (dtheta_hat, P). A non-finite regressor or solve (NaN/inf inputs)
re-initialises the observer (dtheta_hat = 0, P = P_0) instead of keeping NaN.
Tip wrench (Birjandi & Haddadin eq. 28): f = J+^T r = (J J^T + lambda_f I)^-1 J r, J the tip Jacobian [v; w]
(base frame), a 6 x 6 Cholesky solve: the force (N) and moment (N m) at the tip that explain r.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict, cast

import casadi as cs
import numpy as np

from codegen.symbolic.functions import FunctionSpec
from codegen.symbolic.params import sample_regressor

from . import registry
from .base import Block, Field, per_joint, sx_function
from .context import Ctx

# the suspect level, a fraction of the detection threshold above which the adaptation holds (with
# freeze): the detector's hysteresis release (det.release, 0.5), the level below which a residual
# counts as collision-free again. Lower holds more of the normal motion's residual (the designed
# thresholds put the worst collision-free |r| at 0.85 of them); it bounds the fastest rate at
# which a contact can be absorbed, K suspect |threshold| (docs/collision.md, "The slowest contact")
SUSPECT = 0.5
# the longest hold at the suspect level (samples, 0.1 s at 1 kHz): held for good, the adaptation
# stops tracking the model error's slow part and the residual runs away from the thresholds designed
# without it (planar2's momentum forms: 4-5 false alarms, 1.9-3.1x the thresholds on the check
# motion); a contact must climb from the suspect level to the threshold within it
SUSPECT_HOLD = 100
# the fastest the adaptation may move the torque it explains, N m/s (N/s) on any joint (RATE_DOC):
# a contact rising to F within t_r keeps at least F - RATE t_r of itself in r. 1 N m/s keeps 80 % of
# the smallest contact collide applies (Birjandi & Haddadin's 5 N m step) over the slowest rise it must
# catch (1 s, issue #46): 0.2 x 5 N m / 1 s; not fitted to any run. The momentum form fed estimates
# (adaptive_momentum and its essential and dense builds) has it by default; collide's set-up
# (host_tools.studies.paper_setups.COLLISION) pins it there too, and on the direct form fed estimates
# (since 2026-12-02 on every estimate feed; not on the exact motion's)
RATE = 1.0
# no limit: the other forms' default (RATE_DOC says why)
NO_RATE = 1e30
RATE_DOC = """The adaptation's rate limit (issue #46, ``rate``): each sample the per-joint fractions g_j
are scaled by min(1, rate T / |g .* r|_2). One sample's correction moves the torque the adaptation
explains (Y dtheta_hat, G dtheta_hat in momentum form) by S (S + lambda I)^-1 (g .* r), S = Y P Y^T,
whose eigenvalues are in [0, 1): the move's 2-norm is at most |g .* r|_2 <= rate T whatever P and
lambda are. The adaptation therefore absorbs a contact at most at ``rate`` on any joint, held or not,
whatever the thresholds, so a contact that ramps at rho > rate to F keeps F (1 - rate / rho) in r
(docs/collision.md, "The slowest contact a model-adaptive observer catches"). A residual below
rate T / g (the model error's routine part) is still removed at the full rate g a sample.
A restart (the first sample, in.reset) removes the whole residual it sees (g = 1, no covariance
update); in the direct form under the same limit (the block's ``restart`` function, since
2026-12-02): absorbed at once, the first sample's residual jumps dtheta_hat along P_0, and the limited
adaptation then unlearns that jump at ``rate`` (planar2, collide: the Kalman-fed observer's largest
threshold 39 N m with the limit and the restart unlimited, 1.63 with both limited).
The momentum form fed estimates has RATE by default (since 2026-11-30; before, NO_RATE). On Liu et
al.'s recorded LWA-4P runs (the nominal model), `manipgen thresholds` designed it as the written config
runs (its thresholds acting on the hold, host_tools.studies.thresholds.holds). Without the limit,
the hold at the suspect level starved the adaptation: with the Kalman q-dot the thresholds summed to
298.7 / 156.0 N m (FinDiff / MovAv run designed on); with the description's linhg estimate they gave
1242 false-alarm samples on the other run and 321 on Liu et al.'s Experiment 1 (the dense update). With RATE
the dense update's sum to 68.6 / 66.6 N m (Kalman) and 71.1 / 79.7 N m (linhg), the sliced default's to
69.9 / 72.4 and 68.3 / 83.0, with no false alarm on the other run or on Experiment 1 (docs/real-data.md).
The figures that first set NO_RATE as the default (54.6 / 48.6 against 69.3 / 67.6 N m)
were replayed with detection off, which the written config does not do. collide's set-up pins RATE for this form too,
but not for adaptive_momentum_measured
(exact q-dot): its thresholds are small, so the hold's bound already reaches rises of about 0.4 s on
planar2, while the limit throttled its routine adaptation (its residual 0.2-0.4 N m on the iiwa) and
cost a false alarm there (kuka_iiwa14 seed 1, check ratio 0.91 -> 1.11; issue #46). The direct form's block default
is NO_RATE; collide's set-up gives it RATE on every estimate feed (the Kalman's, one tip IMU's, one IMU
per link; not the exact motion's, adaptive_measured) since 2026-12-02. Before, it had the limit
with one IMU per link only: fed the Kalman q-ddot, with the restart unlimited, the limit had slowed all
its adaptation (planar2, collide: adaptive's threshold 1.69 -> 39 N m, 14x momentum's, 10 of 12
contacts missed; issue #46), which was read as the q-ddot estimate's error holding the limit; it was
the restart's jump (docs/collision.md, "The restart under the rate limit")."""
# P's structure (COVARIANCE_DOC): "dense" (one block: the full covariance), "link" (a block per
# group of parameters with the same regressor rows) or "diagonal"
COVARIANCE = "dense"
COVARIANCES = ("dense", "link", "diagonal", "sliced")
COVARIANCE_DOC = """The covariance's structure (issue #47: the dense update of the iiwa's 57 base parameters is
about 250,000 instructions a sample on a Cortex-M4F). P is stored as diagonal blocks, row-major one
after another: one block (``dense``, build's default: the full P), a block per group of base parameters
whose regressor column has the same last non-zero row (``link``: on a serial chain joint j's torque
reads only the parameters of links j and beyond, so the group of row l is link l's inertial
parameters with its joint's friction), or one per parameter (``diagonal``). A sample's update is the
dense one (step 3) followed by keeping P's diagonal blocks: W = Y P, S and the correction of
dtheta_hat are those of the dense update from the same block-diagonal P exactly, and each kept block
is a principal block of a positive semi-definite matrix plus Q, so P stays positive definite. With
the rows reversed (J the n x n reversal), S = J L L^T J and V = L^-1 J W keeps W's zero rows: a
column of group l is non-zero in its l + 1 last reversed rows only, so the cost is sum_l (l + 1) b_l^2
rather than n b^2. ``link`` costs the iiwa's M4F step 77,000 instructions instead of 247,000 but
forgets the links' correlations: planar2's model error then converges less far
(tests/codegen/blocks/test_adaptive_convergence.py fails with it), so it is not the default
(docs/target.md, "The model-adaptive observer on the M4F")."""

SLICED_DOC = """The covariance refresh spread over several samples (issue #47, ``covariance="sliced"``): the dense
update of one sample's snapshot, done in slices of a bounded number of multiply-adds, one slice a
sample. At the start of a window the sample's G (Y), u = g .* r, g_min are snapshot (st.obs.gs, u,
gain_w; G is written there by predict itself, an optional output stored only on a sample that begins
with no window in flight, the only samples a window can start on, so the build keeps no G of its own;
G's snapshot and D are stored as their entries that can be non-zero only, row by row, with the
index tables rows, cols and next, and Q as its scale: RAM, issue #47); the next samples run the
slices of SLICE_PHASES in turn (the table ``slices``: phase, first, last + 1 of the rows or columns
it covers): W = G P over P's packed rows (each packed entry P_ic,
i <= c, adds G_ji P_ic to W_jc and G_jc P_ic to W_ji; the regressor's structural zeros skipped),
S = W G^T + lambda I by rows (lower triangle), S = L L^T then V = L^-1 W by columns,
dtheta_hat -= V^T L^-1 u (the correction, applied at that slice), and P -= g_min V^T V + Q by packed
rows. So after the window dtheta_hat and P are the dense update's of the snapshot (equal up to the
order of the sums; tests/codegen/blocks/test_adaptive_sliced.py) and one update is made per window of
N = 1 + len(slices) samples: its fractions are the exact decay over the window,
g_j = 1 - exp(-K_j N T) (rate-limited with the window's N T), and Q = drift N T P_0. P is stored
packed (its upper triangle row by row, b (b + 1) / 2 numbers). A window starts only on a sample that
is not held (with freeze: no latched collision, no joint above its threshold or, within suspect_hold,
above the suspect level). A latched collision, a joint above its threshold, a reset or non-finite
inputs discard an update whose correction is not yet applied (W, S and V are workspace: P and
dtheta_hat are as before it); the suspect level alone does not: the snapshot was taken below it, so
the correction moves the explained torque by at most g_N of a residual below the suspect level, and
discarding every window a suspect residual crosses starved the adaptation (the demo's iiwa run,
docs/target.md: 29 % of the samples above the suspect level instead of 10 %, and a false alarm). Once
the correction is applied, P's slices run to the end of the window whatever happens (they hold the
snapshot's information, taken before). The slices' budget is 2 n b multiply-adds by default (``slice_budget``:
a row of W = G P with no zero skipped; at least the largest single row's or column's), so the worst
sample pays the non-adapting step plus about that many."""
# the sliced update's phases (SLICED_DOC), the numbers in the slice table
SLICE_PHASES = {"w": 1, "s": 2, "v": 3, "correct": 4, "p": 5}
# an inner loop's set-up in multiply-adds (slice_costs): about 30 M4F instructions against 7 a multiply-add
LOOP_COST = 4


def nonzeros(pattern: np.ndarray) -> list[tuple[int, int]]:
    """The regressor's entries that can be non-zero (``pattern``, n x b), row by row: per joint j its
    columns c in ascending order. The sliced update stores G's snapshot and D as these only (SLICED_DOC)."""
    return [(int(j), int(c)) for j, c in zip(*np.nonzero(pattern))]


def sparse_rows(pattern: np.ndarray) -> dict[str, list[int]]:
    """The runtime's index of the stored non-zeros (``nonzeros`` order; manipgen_linalg.h's
    mg_rls_sliced_t): ``rows``, per joint its first entry (and the end, n + 1 numbers); ``cols``, per
    entry its column; ``next``, per joint j and column a (j b + a) the first entry of row j whose
    column is a or more (rows[j + 1] if none)."""
    n, nb = pattern.shape
    rows = [0] + np.cumsum(pattern.sum(axis=1)).astype(int).tolist()
    cols = [c for _, c in nonzeros(pattern)]
    nxt = []
    for j in range(n):
        mine = cols[rows[j] : rows[j + 1]]
        nxt += [rows[j] + int(np.searchsorted(mine, a)) for a in range(nb)]
    return {"rows": rows, "cols": cols, "next": nxt}


def slice_costs(pattern: np.ndarray) -> list[tuple[int, int, int]]:
    """The sliced update's work items in order (SLICED_DOC): (phase, index, cost) for each packed row
    of W's phase, row of S, column of V (the first with S's Cholesky factorisation), the correction
    and each packed row of P's update; ``pattern`` the regressor's non-zeros (n x b). The cost is in
    multiply-adds (about 7 Cortex-M4F instructions each: two loads, a multiply, an add, a store, the
    loop's compare and branch) plus each inner loop's set-up, counted as LOOP_COST of them (a loop's
    start, its bounds and the row's pointers: about 30 instructions on the M4F, so a column of V,
    n (n - 1) / 2 multiply-adds, n divisions and a call, costs about 40 rather than 21)."""
    n, nb = pattern.shape
    items = []
    for i in range(nb):  # W: G_ji P_i,c>=i where G_ji is non-zero, and G_j,c>i P_ic over G's stored entries
        own = int(pattern[:, i].sum()) * (nb - i)
        lower = int(pattern[:, i + 1 :].sum())
        items.append((SLICE_PHASES["w"], i, own + lower + LOOP_COST * n))
    for j in range(n):
        items.append((SLICE_PHASES["s"], j, sum(int(pattern[k].sum()) + LOOP_COST for k in range(j + 1))))
    for c in range(nb):  # L^-1 on one column, n (n - 1) / 2 and n divisions; the factorisation n^3 / 6 with the first
        items.append((SLICE_PHASES["v"], c, n * (n + 1) // 2 + LOOP_COST * n + (n**3 // 6 if c == 0 else 0)))
    # L^-1 u, then per parameter a dot product of n and the finiteness test
    items.append((SLICE_PHASES["correct"], 0, n * (n + 1) // 2 + (n + LOOP_COST) * nb))
    for i in range(nb):
        items.append((SLICE_PHASES["p"], i, n * (nb - i + LOOP_COST)))
    return items


def slice_schedule(pattern: np.ndarray, budget: int | None = None) -> tuple[list[tuple[int, int, int]], int]:
    """The slice table (phase, first, last + 1) and the budget: consecutive items of one phase packed
    greedily while their multiply-adds stay within ``budget`` (default: 2 n b, a row of W = G P with no
    zero skipped, or the largest item if more; SLICED_DOC). The correction is a slice of its own
    (dtheta_hat moves there)."""
    items = slice_costs(pattern)
    largest = max(cost for _, _, cost in items)
    budget = max(largest, 2 * pattern.size) if budget is None else budget
    if budget < largest:
        raise ValueError(f"slice_budget {budget} is below the largest item's {largest} multiply-adds")
    table: list[list[int]] = []
    spent = 0
    for phase, index, cost in items:
        if table and table[-1][0] == phase and phase != SLICE_PHASES["correct"] and spent + cost <= budget:
            table[-1][2] = index + 1
            spent += cost
        else:
            table.append([phase, index, index + 1])
            spent = cost
    return [(a, b, c) for a, b, c in table], budget


# adaptive_momentum_essential's fraction (ESSENTIAL_DOC): the left-out parameters move at most 5 % of
# the torque all of them move at the prior's error
ESSENTIAL = 0.05
# ``essential``'s states: as many as the base parameters' own reduction samples per joint
ESSENTIAL_SAMPLES = 200
ESSENTIAL_DOC = """The adapted parameters (issue #47, ``essential``): 0 (the default) adapts every base parameter;
a fraction f in (0, 1) adapts only the essential ones, the rest keep the model's values
(dtheta_hat = 0 there, no covariance). Each base parameter i is scored by the torque its prior-size
error moves, s_i = max(|beta_hat_i|, floor max_j |beta_hat_j|) RMS_k |Y_b,k e_i|_2 over the random
states the base parameters' own reduction samples (codegen.symbolic.params.sample_states: q in
[-pi, pi], q-dot in [-2, 2], q-ddot in [-6, 6]), beta_hat the description's base parameters; they are
ranked by s_i, and the fewest first ones are kept whose left-out rest moves at most f of what all of
them move: sqrt(sum_left-out s_i^2) <= f sqrt(sum_all s_i^2). The regressor (Y_b, or the momentum
form's Y_p, Y_beta and G) is generated for the kept columns only, and P (dense) is theirs. On the iiwa
f = 0.05 keeps 8 of 57 (MY, XX, ZZ of links 2 and 4, MY and ZZ of link 6) and its Cortex-M4F worst
step is 19,581 instructions instead of 230,068 (f = 0.02: 15 kept, 34,249). A left-out parameter's
error stays in r, on the joints whose own torque is small as much as on the others: collide's iiwa
thresholds (seed 0) rise to 2.6x (f = 0.05) and 2.0x (f = 0.02) adaptive_momentum's, the joint 3
threshold from 0.064 to 0.90 N m, although no contact is missed (docs/target.md, "The model-adaptive
observer on the M4F"). So it is an option (``adaptive_momentum_essential``), not the default."""


def essential_parameters(ctx: Ctx, fraction: float, floor: float) -> list[int]:
    """The base parameters adapted (ESSENTIAL_DOC), in base order: all of them for ``fraction`` 0."""
    nb = ctx.base.n_base
    if fraction == 0.0:
        return list(range(nb))
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"essential: {fraction!r} is not 0 (every base parameter) or a fraction in (0, 1)")
    y = sample_regressor(ctx.dyn, ESSENTIAL_SAMPLES)[:, list(ctx.base.columns)]
    beta = np.abs(ctx.base.values(ctx.robot.standard_parameters()))
    # RMS over the states of |Y e_i|_2: the stacked rows' mean square times n
    score = np.maximum(beta, floor * beta.max()) * np.sqrt(np.mean(y**2, axis=0) * ctx.n)
    order = sorted(range(nb), key=lambda i: (-score[i], i))
    left = np.sqrt(np.cumsum((score[order] ** 2)[::-1])[::-1])  # left[m]: what the m-th on moves
    keep = next((m for m in range(1, nb) if left[m] <= fraction * left[0]), nb)
    return sorted(order[:keep])


def nonzero_pattern(m: cs.SX) -> np.ndarray:
    """Which entries of a symbolic matrix can be non-zero (not a structural or a literal 0)."""
    return np.array([[not m[i, j].is_zero() for j in range(m.size2())] for i in range(m.size1())], dtype=bool)


class Covariance(TypedDict):
    """P's blocks (covariance_blocks), the block's option ``cov``."""

    col: list[int]
    blocks: list[tuple[int, int, int, int]]
    size: int


def covariance_of(block: Block) -> Covariance:
    """An adaptive block's covariance blocks."""
    return cast(Covariance, block.options["cov"])


def covariance_blocks(pattern: np.ndarray, structure: str) -> Covariance:
    """P's blocks for the regressor's non-zero ``pattern`` (n x b): ``col`` the base column at each
    position, ``blocks`` (first position, size, first reversed row n - 1 - last, offset in the packed
    P) and ``size`` the packed P's length (COVARIANCE_DOC)."""
    if structure not in COVARIANCES:
        raise ValueError(f"covariance: {structure!r} is not one of {', '.join(COVARIANCES)}")
    n, nb = pattern.shape
    rows = [np.nonzero(pattern[:, c])[0] for c in range(nb)]
    last = [int(r.max()) if r.size else 0 for r in rows]
    if structure in ("dense", "sliced"):
        groups = [list(range(nb))]
    elif structure == "diagonal":
        groups = [[c] for c in sorted(range(nb), key=lambda c: last[c])]
    else:
        groups = [[c for c in range(nb) if last[c] == row] for row in sorted(set(last))]
    col = [c for g in groups for c in g]
    blocks, start, off = [], 0, 0
    for g in groups:
        blocks.append((start, len(g), n - 1 - max(last[c] for c in g), off))
        start, off = start + len(g), off + len(g) ** 2
    if structure == "sliced":  # the upper triangle, packed row by row
        off = nb * (nb + 1) // 2
    return {"col": col, "blocks": blocks, "size": off}


def build(
    ctx: Ctx,
    k: float | tuple[float, ...] = 100.0,
    lam: float = 1e-6,
    lam_f: float = 1e-6,
    measured: bool = False,
    prior: float = 0.1,
    floor: float = 1e-3,
    drift: float = 1.0 / 60.0,
    integral: bool = False,
    suspect: float = SUSPECT,
    covariance: str = COVARIANCE,
    rate: float | None = None,
    essential: float = 0.0,
    slice_budget: int | None = None,
) -> Block:
    """``measured``: qd and qdd from the inputs ``in.qd_meas``, ``in.qdd_meas`` (IMU-fused estimates as
    Birjandi & Haddadin assumes, or a simulator's truth) instead of the estimator's qd_hat, qdd_hat.
    ``integral``: the momentum form (no qdd; see ``integral_predict``). ``covariance``: P's structure
    (COVARIANCE_DOC). ``essential``: which base parameters are adapted (ESSENTIAL_DOC; 0: all).
    ``slice_budget``: with ``covariance="sliced"``, the multiply-adds a slice may take (SLICED_DOC;
    None: 2 n b, SLICED_DOC)."""
    if covariance == "sliced" and not integral:  # only integral_predict writes G into the snapshot
        raise ValueError("covariance='sliced' needs the momentum form (integral=True): SLICED_DOC")
    n, ts = ctx.n, ctx.ts
    base = ctx.base
    kept = essential_parameters(ctx, essential, floor)
    nb = len(kept)
    model, pi = ctx.model_inputs()
    dth = cs.SX.sym("dtheta", nb)
    laf = cs.SX.sym("lam_f")
    src = motion_source(measured)
    sliced: dict[str, object] = {}

    def window(pattern: np.ndarray) -> int:
        """The samples one update spans (SLICED_DOC): 1, or 1 + the slices of the sliced update."""
        if covariance != "sliced":
            return 1
        sliced["slices"], sliced["budget"] = slice_schedule(pattern, slice_budget)
        sliced.update(sparse_rows(pattern))
        return 1 + len(cast(list[tuple[int, int, int]], sliced["slices"]))

    predict, own_state, pattern, samples = (
        integral_predict(ctx, src[0], dth, kept, window, in_place=covariance == "sliced")
        if integral
        else direct_predict(ctx, src, dth, kept, window)
    )
    cov = covariance_blocks(pattern, covariance)
    pr, fl, dr = cs.SX.sym("prior"), cs.SX.sym("floor"), cs.SX.sym("drift")
    beta = cs.fabs(cs.DM(base.k) @ pi)  # the model's base parameters, |K pi|
    p0 = (pr * cs.fmax(beta[kept], fl * cs.mmax(beta))) ** 2
    scale = dr * (samples * ts)
    prior_fn = sx_function(
        "prior",
        [("cfg.obs.prior", pr), ("cfg.obs.floor", fl), ("cfg.obs.drift", dr)] + model,
        # the sliced update keeps Q's scale and forms Q = scale P_0 row by row (the same product)
        [("st.obs.p0", p0), ("st.obs.drift", scale if covariance == "sliced" else scale * p0)],
        "the prior's variances P_0 (diagonal) and the random walk's growth per update, drift N T P_0"
        + (" (its scale drift N T: Q = scale P_0)" if covariance == "sliced" else ""),
    )
    q, dyn = ctx.sym("q"), ctx.dyn
    j = cs.Function("j", [dyn.q], [dyn.tip_jacobian])(q)
    rr = ctx.sym("r")
    wrench = sx_function(
        "wrench",
        [("out.q_hat", q), ("out.r", rr), ("cfg.obs.lam_f", laf)],
        [("loc.jjt", j @ j.T + laf * cs.SX.eye(6)), ("out.f_tip", j @ rr)],
        "J J^T + lambda_f I and J r (solved in place for f)",
    )
    extra = (motion_inputs(n)[:1] if integral else motion_inputs(n)) if measured else []  # the momentum form: qd only
    return Block(
        kind="obs",
        name=("adaptive_momentum" if integral else "adaptive") + ("_measured" if measured else ""),
        doc=(__doc__ or "")
        + "\n"
        + COVARIANCE_DOC
        + "\n"
        + RATE_DOC
        + ("\n" + INTEGRAL_DOC if integral else "")
        + ("\n" + ESSENTIAL_DOC + "\nAdapted: " + ", ".join(base.names[i] for i in kept) if essential else "")
        + ("\n" + SLICED_DOC if sliced else ""),
        template="adaptive",
        options={"integral": integral, "cov": cov, "adapted": tuple(kept), "window": samples} | sliced,
        inputs=extra,
        config=_config(n, ts, k, lam, lam_f, prior, floor, drift, suspect)
        + [_rate_field(NO_RATE if rate is None else rate)],
        state=_state(n, nb, integral, cov["size"], workspace=not sliced)
        + (_sliced_state(n, nb, int(pattern.sum())) if sliced else [])
        + own_state,
        outputs=[
            Field("r", "real", (n,), "residual r: external joint torque estimate (N m or N)"),
            Field("f_tip", "real", (6,), "tip wrench estimate [f (N); m (N m)], base frame"),
        ],
        functions=[predict, prior_fn, wrench] + ([] if integral else [restart_gain(ctx)]),
        scratch=[Field("jjt", "real", (36,), "J J^T + lambda_f I, then its Cholesky factor (a local of the step)")],
    )


def _config(
    n: int,
    ts: float,
    k: float | tuple[float, ...],
    lam: float,
    lam_f: float,
    prior: float,
    floor: float,
    drift: float,
    suspect: float,
) -> list[Field]:
    """The observer's run-time config: gains, the noise's variance, freeze, the prior."""
    return [
        Field(
            "k_o",
            "real",
            (n,),
            "observer gain K per joint (Birjandi & Haddadin's K; the same config key as the momentum "
            "observer's K_O), 1/s",
            per_joint(k, n),
            low=0.0,
            high=1.0 / ts,
        ),
        Field(
            "lam",
            "real",
            (),
            "variance lambda of the torque equations' noise in the adaptation (N^2 m^2)",
            (lam,),
            low=0.0,
            low_open=True,
        ),
        Field("lam_f", "real", (), "damping lambda_f of J+ (m^2)", (lam_f,), low=0.0, low_open=True),
        Field(
            "freeze",
            "uint8",
            (),
            "1: hold dtheta_hat while a collision is latched or a joint is above threshold, 0: adapt "
            "(Birjandi & Haddadin)",
            (1.0,),
            choices=(0.0, 1.0),
        ),
        Field(
            "suspect",
            "real",
            (),
            "with freeze, hold dtheta_hat also while a joint's |r| is above this fraction of its threshold "
            "(the suspect level; 1: only above the threshold)",
            (suspect,),
            low=0.0,
            high=1.0,
        ),
        Field(
            "suspect_hold",
            "int32",
            (),
            "the longest hold at the suspect level, samples; then the adaptation runs until r is below it again",
            (float(SUSPECT_HOLD),),
            low=0.0,
            high=1e6,
        ),
        Field(
            "prior",
            "real",
            (),
            "prior standard deviation of the model's base parameters, a fraction of each (read at sample 0)",
            (prior,),
            low=0.0,
            low_open=True,
        ),
        Field(
            "floor",
            "real",
            (),
            "the prior's floor: a fraction of the largest base parameter (read at sample 0)",
            (floor,),
            low=0.0,
        ),
        Field(
            "drift",
            "real",
            (),
            "rate at which the parameters' covariance regrows towards the prior's, 1/s (read at sample 0)",
            (drift,),
            low=0.0,
        ),
    ]


def _rate_field(rate: float) -> Field:
    """The adaptation's rate limit (RATE_DOC; NO_RATE: none)."""
    return Field(
        "rate",
        "real",
        (),
        "the fastest the adaptation moves the torque it explains on any joint, N m/s (N/s): a contact "
        "rising faster is not absorbed faster than this (1e30: no limit, Birjandi & Haddadin)",
        (rate,),
        low=0.0,
        low_open=True,
    )


def _state(n: int, nb: int, integral: bool, packed: int, workspace: bool = True) -> list[Field]:
    """The RLS state and its workspaces (templates/rt/adaptive.c.j2). ``workspace`` False (the sliced
    update, SLICED_DOC): no w (its W is st.obs.v and its predict writes D over itself), no y (its predict
    writes G into the snapshot when a window can start) and Q's scale for Q's diagonal."""
    fields = [
        Field("dtheta", "real", (nb,), "dtheta_hat: the adapted base parameters' error estimate"),
        Field("p", "real", (packed,), "P: dtheta_hat's covariance, its diagonal blocks row-major one after another"),
        Field("p0", "real", (nb,), "P_0's diagonal: the prior's variances"),
        Field("drift", "real", (nb,), "Q's diagonal: the covariance's growth per sample"),
        Field("gain", "real", (n,), "workspace: per joint the fraction of r the correction removes"),
        Field("gain_p", "real", (), "workspace: the covariance update's fraction"),
        Field(
            "y",
            "real",
            (nb, n),
            "workspace: " + ("G^T, the low-passed regressor" if integral else "Y_b^T") + " of this sample",
        ),
        Field("w", "real", (n, nb), "workspace: J Y P (rows reversed), then the gain V = L^-1 J Y P"),
        Field("s", "real", (n, n), "workspace: J (Y P Y^T + lambda I) J, then L (its Cholesky factor) below"),
        Field("u", "real", (n,), "workspace: L^-1 J (gain .* r)"),
        Field("held", "int32", (), "samples the adaptation has been held at the suspect level"),
    ]
    if workspace:
        return fields
    scale = Field("drift", "real", (), "Q's scale: the covariance's growth per update is Q = drift P_0")
    return [scale if f.name == "drift" else f for f in fields if f.name not in ("w", "y")]


def _sliced_state(n: int, nb: int, stored: int) -> list[Field]:
    """The sliced update's state (SLICED_DOC): the snapshot (G's ``stored`` entries that can be non-zero,
    row by row), W then V, and where the window is."""
    return [
        Field("gs", "real", (stored,), "the window's snapshot of G: its entries that can be non-zero, row by row"),
        Field("v", "real", (n, nb), "the window's W = G P, then V = L^-1 W"),
        Field("gain_w", "real", (), "the window's covariance fraction g_min"),
        Field("slice", "int32", (), "the next slice of the window's update (1-based; 0: none in flight)"),
    ]


def direct_predict(
    ctx: Ctx, src: tuple[str, str], dth: cs.SX, kept: list[int], window: Callable[[np.ndarray], int]
) -> tuple[FunctionSpec, list[Field], np.ndarray, int]:
    """Birjandi & Haddadin eq. 16: r = Y_b(q, qd, qdd) (theta_hat + dtheta_hat) - tau, with the base
    regressor's ``kept`` columns (ESSENTIAL_DOC); no state of its own; their non-zero pattern, and
    the samples an update spans (``window`` of the pattern: the fractions are the decay over them)."""
    dyn, base = ctx.dyn, ctx.base
    model, pi = ctx.model_inputs()
    y_fn = cs.Function("y", [dyn.q, dyn.qd, dyn.qdd], [dyn.regressor([base.columns[i] for i in kept])])
    q, qd, qdd, tau, kk = (ctx.sym(s) for s in ("q", "qd", "qdd", "tau", "k_o"))
    y = y_fn(q, qd, qdd)
    pattern = nonzero_pattern(y)
    samples = window(pattern)
    terms, tau_f = ctx.friction_terms()
    r = ctx.call("rnea", q, qd, qdd, pi) + tau_f + y @ dth - tau
    rate = cs.SX.sym("rate")
    gain = 1 - cs.exp(-kk * (samples * ctx.ts))
    fn = sx_function(
        "predict",
        [("out.q_hat", q), (src[0], qd), (src[1], qdd), ("in.tau", tau), ("st.obs.dtheta", dth), ("cfg.obs.k_o", kk)]
        + [("cfg.obs.rate", rate)]
        + model
        + terms,
        [
            ("st.obs.y", y),
            ("out.r", r),
            ("st.obs.gain", rate_limited(gain, r, rate, samples * ctx.ts)),
            ("st.obs.gain_p", cs.mmin(gain)),
        ],
        "Y_b (stored as Y^T), r, the fraction of r each joint's correction removes and the covariance's",
    )
    return fn, [], pattern, samples


def restart_gain(ctx: Ctx) -> FunctionSpec:
    """The direct form's fractions at a restart (the first sample, in.reset): the whole residual
    removed (g = 1), under the rate limit as every other correction (RATE_DOC): with ``rate`` 1e30, 1."""
    rr, rate = ctx.sym("r"), cs.SX.sym("rate")
    return sx_function(
        "restart",
        [("out.r", rr), ("cfg.obs.rate", rate)],
        [("st.obs.gain", rate_limited(cs.SX.ones(rr.shape[0]), rr, rate, ctx.ts))],
        "the fractions of r a restart removes: all of it, at most rate T",
    )


def rate_limited(gain: cs.SX, r: cs.SX, rate: cs.SX, ts: float) -> cs.SX:
    """The adaptation's per-joint fractions ``gain`` scaled so that |gain .* r|_2 <= rate T: one
    sample's correction moves the torque the adaptation explains by S (S + lambda I)^-1 (gain .* r),
    whose 2-norm is at most |gain .* r|_2 (RATE_DOC), so the absorbed torque moves by at most ``rate``
    (N m/s or N/s) on any joint; a residual smaller than rate T / g is removed at the full g. (No
    division by 0: the denominator is at least rate T, and rate > 0.)"""
    step = rate * ts
    return gain * (step / cs.fmax(cs.norm_2(gain * r), step))


def momentum_regressors(
    ctx: Ctx, kept: list[int] | None = None, mix: tuple[tuple[float, float], ...] = ((1.0, 0.0), (0.0, 1.0))
) -> cs.Function:
    """(q, qd) -> the base-column regressors (``kept``: of those base parameters only) of
    c_p p + c_beta beta for each (c_p, c_beta) of ``mix`` (the default: Y_p and Y_beta), with the
    generalized momentum p = M(q) qd = Y_p beta and beta(q, qd) = g(q) - C(q, qd)^T qd + friction(qd)
    = Y_beta beta (the momentum observer's terms, codegen.blocks.momentum): both are linear in the
    standard parameters, so their Jacobians with respect to them are free of the parameters, and the
    base identity Y = Y[:, columns] K holds for them as for the inverse dynamics' regressor (a
    direction rnea cannot see has M = 0 and g = 0, so p = 0 and C^T qd = Mdot qd - C qd = 0).

    The Jacobians are CasADi's reverse mode through the same recursions the observer evaluates p and
    beta with (Dynamics.momentum_terms, .gravity, .friction; issue #47): each row's sweep carries joint
    j's axis (and V_j x S_j) outward over links j..n only, the serial chain's triangle, and reads the
    link velocities the momentum terms compute (CSE shares them in a block's function). On the iiwa
    this is 1427 operations for Y_p and Y_beta where the kinetic energy's gradients' Jacobians took
    2226. A scaled row costs about what the unscaled one does (the constant seeds the sweep), so
    integral_predict asks for p / T and beta / 2 and saves two products per entry of G. Asking for
    p / T + beta / 2 and p / T - beta / 2 themselves saved no more: their seeds mix the axis with
    V_j x S_j, so each sweep is denser than either one's."""
    dyn = ctx.dyn
    cols = [ctx.base.columns[i] for i in (range(ctx.base.n_base) if kept is None else kept)]
    mom, dtdq = dyn.momentum_terms(dyn.pi)
    beta = dyn.gravity(dyn.pi) - dtdq + dyn.friction(dyn.qd, dyn.pi)
    return cs.Function(
        "momentum_regressors",
        [dyn.q, dyn.qd],
        [cs.jacobian(cp * mom + cb * beta, dyn.pi)[:, cols] for cp, cb in mix],
    )


INTEGRAL_DOC = """Momentum form (``adaptive_momentum``; issue #25: no q-ddot). Eq. 16's r needs q-ddot at the
sampling instant; a sampled or band-limited q-ddot (an estimator's, an IMU's) misses the jumps of
Coulomb friction at each velocity reversal and standstill, and r carries M (qdd - qdd_hat), up to
2 FC per joint for a sample or more. Integrating the dynamics over the sample instead, as the
momentum observer does, leaves only the friction's integral to approximate:
  u_k = (p_k - p_{k-1}) / T + (beta_k + beta_{k-1}) / 2 - tau_k    (the mean external torque of the
        sample; p and beta with the model's parameters, tau the torque applied over the sample; the
        trapezoid's error is O(T^2 beta-ddot) where beta is smooth, at most FC for the one sample of
        a reversal),
  r0_k = a r0_{k-1} + (1 - a) u_k,   a = exp(-K T)   (per joint: the contact low-passed, as the
        momentum observer's r),
and the same for the regressor, U_k = (Y_p,k - Y_p,k-1) / T + (Y_beta,k + Y_beta,k-1) / 2,
G_k = a G_{k-1} + (1 - a) U_k, so that r0 = G beta - (low-passed tau) exactly and a parameter error
dtheta appears in r0 as -G dtheta. Then r_k = r0_k + G_k dtheta_hat_{k-1} and steps 2-3 above with G
for Y. Only q and qd are read. With the model exact, r is the first-order low-pass K / (s + K) of the
contact (the momentum observer's), not the high-pass; the adaptation then removes the fraction
1 - exp(-K T) a sample of what is left (frozen while a joint is above its threshold). The first
sample and every in.reset start the low-passes at 0 (r = 0); non-finite inputs restart them too.
"""


def integral_predict(
    ctx: Ctx,
    qd_binding: str,
    dth: cs.SX,
    kept: list[int],
    window: Callable[[np.ndarray], int],
    in_place: bool = False,
) -> tuple[FunctionSpec, list[Field], np.ndarray, int]:
    """The momentum form's r and its filtered regressor G (INTEGRAL_DOC). Of the last sample only
    what this one needs is kept: D = a G - (1 - a) (Y_p / T - Y_beta / 2) (n x b) and
    e = a r0 - (1 - a) (p / T - beta / 2) (n), so that G_k = D_{k-1} + (1 - a) (Y_p,k / T + Y_beta,k / 2)
    and r0_k = e_{k-1} + (1 - a) (p_k / T + beta_k / 2 - tau_k): one n x b matrix carried, and the new
    D written to the workspace w (copied over D by the template), not over its own input; ``in_place``
    (the sliced update, which has no w nor y): D stored as its entries that can be non-zero (``nonzeros``)
    and written over itself (each element is read before it is written, as pipeline.RtEmitter._call
    checks, else it goes through a local copy), and G as the same entries into the window's snapshot,
    an optional output (stored only when a window can start, SLICED_DOC). The
    adaptation's fractions are the decay over the samples an update spans (``window`` of G's pattern)."""
    n, ts, nb = ctx.n, ctx.ts, len(kept)
    model, pi = ctx.model_inputs()
    q, qd, tau, kk = (ctx.sym(s) for s in ("q", "qd", "tau", "k_o"))
    rate = cs.SX.sym("rate")
    carry_r, fresh = cs.SX.sym("e", n), cs.SX.sym("restart")
    # Y_p / T and Y_beta / 2, the low-passes' two terms
    yp, yb = momentum_regressors(ctx, kept, ((1 / ts, 0.0), (0.0, 0.5)))(q, qd)
    y_plus, y_minus = yp + yb, yp - yb
    terms, tau_f = ctx.friction_terms()
    p = ctx.call("generalized_momentum", q, qd, pi)
    beta = ctx.call("gravity", q, pi) - ctx.call("ctqd", q, qd, pi) + ctx.call("friction", qd, pi) + tau_f
    a = cs.exp(-kk * ts)
    b = 1 - a
    # G's non-zero pattern: Y_p's and Y_beta's, so their combinations' (D starts at 0 and each sample adds
    # their entries only, so D is exactly 0 elsewhere: those entries are not read, and G, D and
    # G dtheta_hat skip them)
    pattern = nonzero_pattern(y_plus) | nonzero_pattern(y_minus)
    samples = window(pattern)
    bw = b if samples == 1 else 1 - cs.exp(-kk * (samples * ts))  # the decay over the samples an update spans
    entries = nonzeros(pattern)
    if in_place:  # D's entries that can be non-zero, row by row
        stored = cs.SX.sym("d", len(entries))
        carry_nz = cs.SX(n, nb)
        for k, (j, c) in enumerate(entries):
            carry_nz[j, c] = stored[k]
    else:  # stored (b, n) row-major: an n x b matrix column by column, as CasADi reads it
        carry = cs.reshape(cs.SX.sym("d", n * nb), n, nb)
        stored, carry_nz = cs.vec(carry), carry * cs.DM(pattern.astype(float))
    # restart: the low-passes start at 0 (a selection, so a non-finite carry does not pass through)
    g = cs.if_else(fresh, cs.SX.zeros(n, nb), carry_nz + cs.diag(b) @ y_plus)
    r0 = cs.if_else(fresh, cs.SX.zeros(n), carry_r + b * (p / ts + beta / 2 - tau))
    d_next = cs.diag(a) @ g - cs.diag(b) @ y_minus
    if in_place:
        regressor = [("st.obs.gs", cs.vertcat(*[g[j, c] for j, c in entries]))]
        carried = [("st.obs.d", cs.vertcat(*[d_next[j, c] for j, c in entries]))]
    else:
        regressor, carried = [("st.obs.y", g)], [("st.obs.w", d_next)]
    fn = sx_function(
        "predict",
        [
            ("out.q_hat", q),
            (qd_binding, qd),
            ("in.tau", tau),
            ("st.obs.dtheta", dth),
            ("cfg.obs.k_o", kk),
            ("cfg.obs.rate", rate),
            ("st.obs.d", stored),
            ("st.obs.e", carry_r),
            ("st.obs.restart", fresh),
        ]
        + model
        + terms,
        regressor
        + carried
        + [
            ("st.obs.e", a * r0 - b * (p / ts - beta / 2)),
            ("out.r", r0 + g @ dth),
            ("st.obs.gain", rate_limited(bw, r0 + g @ dth, rate, samples * ts)),
            ("st.obs.gain_p", cs.mmin(bw)),
        ],
        "G, the next sample's D and e, r and the adaptation's fractions"
        + (" (G and D: their entries that can be non-zero, row by row)" if in_place else " (G^T; D^T in w)"),
        optional=("st.obs.gs",) if in_place else (),
    )
    d_field = (
        Field(
            "d",
            "real",
            (len(entries),),
            "D: the low-passed regressor's part known from the last sample (its "
            "entries that can be non-zero, row by row)",
        )
        if in_place
        else Field("d", "real", (nb, n), "D^T: the low-passed regressor's part known from the last sample")
    )
    state = [
        d_field,
        Field("e", "real", (n,), "e: the low-passed residual's part known from the last sample"),
        Field("restart", "real", (), "1: the low-passes start again at the next predict (first, reset, non-finite r)"),
    ]
    return fn, state, pattern, samples


def motion_inputs(n: int) -> list[Field]:
    """The extra inputs of the *_measured observers: q-dot and q-ddot from outside the pipeline."""
    return [
        Field("qd_meas", "real", (n,), "measured joint velocity (rad/s or m/s)"),
        Field(
            "qdd_meas",
            "real",
            (n,),
            "measured joint acceleration at this instant, under the torque of the last sample (rad/s^2 or m/s^2)",
        ),
    ]


def motion_source(measured: bool) -> tuple[str, str]:
    """Bindings of q-dot and q-ddot: the measured inputs or the estimator's outputs."""
    return ("in.qd_meas", "in.qdd_meas") if measured else ("out.qd_hat", "out.qdd_hat")


FIELDS = ("k_o", "lam", "lam_f", "freeze", "suspect", "suspect_hold", "prior", "floor", "drift", "rate")
# the damping lambda of Y+ `manipgen thresholds --tune` chooses: 1e-6 adapts to every change, the
# estimator's q-ddot noise included; 1e4 barely adapts (r -> the direct residual)
LAMBDA = registry.Tunable("obs.lam", tuple(10.0**k for k in range(-6, 5)), "the adaptive observer's damping")
ADAPTIVE = registry.Observer(
    name="adaptive",
    summary="model-adaptive observer, estimated q-dot and q-ddot (Birjandi & Haddadin eqs. 9-21)",
    # estimated qd, qdd: the torque equations carry the estimator's q-ddot noise (about 0.3 N m)
    build=lambda ctx: build(ctx, lam=0.1),
    motion=("qd", "qdd"),
    window=10,  # the adaptive residual is a high-pass of the contact: isolate within 10 samples
    fields=FIELDS,
    adaptive=True,
    tunables=(LAMBDA,),
    collide=1,
    imu={"links": True, "tip": True},
)
ADAPTIVE_MEASURED = registry.Observer(
    name="adaptive_measured",
    summary="model-adaptive observer, measured q-dot and q-ddot as inputs (Birjandi & Haddadin's IMU set-up)",
    build=lambda ctx: build(ctx, measured=True),
    motion=("qd", "qdd"),
    measured=True,
    window=10,
    fields=FIELDS,
    adaptive=True,
    tunables=(LAMBDA,),
    collide=1,
)
# the momentum form: lambda = 1e-3 N^2 m^2, about the variance of the low-passed residual's floor
# (the trapezoid of the friction at reversals and sticking, and the estimator's qd; measured
# offline on kuka_iiwa14's collide design run, seed 0, with the exact model: RMS over the joints
# 0.018 N m with exact qd, 0.030 with the Kalman qd), the same with measured and estimated qd
# Its covariance refresh is spread over a window of samples (SLICED_DOC), so that a Cortex-M4F runs it at
# 1 kHz (issue #47); adaptive_momentum_dense (below) makes every sample's dense update. With the rate
# limit the two are equals: over collide's 200 draws (the largest threshold's median x1.00, no miss
# either), on the LWA-4P's real runs (Sum thresholds x1.02-1.09, no false alarm) and in PyBullet
# (docs/target.md, "Asked a third time"). The IMU-fed entry (adaptive_momentum_imu)
# runs the dense update: no microcontroller budget is asked of a pipeline that fuses an IMU per link,
# and there the window cost a false alarm on the iiwa's seed 5 (same section).
ADAPTIVE_MOMENTUM = registry.Observer(
    name="adaptive_momentum",
    summary="model-adaptive observer in momentum form, estimated q-dot (no q-ddot; issue #25), the covariance "
    "refresh spread over a window of samples (a Cortex-M4F runs it at 1 kHz, issue #47)",
    build=lambda ctx: build(ctx, lam=1e-3, integral=True, covariance="sliced", rate=RATE),
    fields=FIELDS,
    adaptive=True,
    tunables=(LAMBDA,),
    collide=2,
    imu={"links": True},
    imu_build="adaptive_momentum_dense",
)
ADAPTIVE_MOMENTUM_MEASURED = registry.Observer(
    name="adaptive_momentum_measured",
    summary="model-adaptive observer in momentum form, measured q-dot as input (reads in.qd_meas only)",
    # no rate limit: its thresholds are small, so the hold's bound already reaches slow rises, and the
    # limit slowed its routine adaptation (0.2-0.4 N m on the iiwa, 20-40x rate T / g): RATE_DOC
    build=lambda ctx: build(ctx, lam=1e-3, measured=True, integral=True),
    measured=True,
    fields=FIELDS,
    adaptive=True,
    tunables=(LAMBDA,),
    collide=2,
)
# the momentum form adapting the essential parameters only (ESSENTIAL_DOC), for microcontrollers: f = ESSENTIAL
ADAPTIVE_MOMENTUM_ESSENTIAL = registry.Observer(
    name="adaptive_momentum_essential",
    summary="model-adaptive observer in momentum form adapting the essential base parameters only "
    "(estimated q-dot; a Cortex-M4F fits it at 1 kHz, issue #47)",
    build=lambda ctx: build(ctx, lam=1e-3, integral=True, essential=ESSENTIAL, rate=RATE),
    fields=FIELDS,
    adaptive=True,
    tunables=(LAMBDA,),
)
# the momentum form with every sample's dense covariance update (the exact recursive least squares, as
# Birjandi & Haddadin's): a host or a larger processor (a Cortex-M4F's worst step: 222 159 instructions,
# docs/target.md); collide's adaptive_momentum_imu runs it
ADAPTIVE_MOMENTUM_DENSE = registry.Observer(
    name="adaptive_momentum_dense",
    summary="model-adaptive observer in momentum form, estimated q-dot, every sample's dense covariance update "
    "(a host's; about 10x adaptive_momentum's worst step, issue #47)",
    build=lambda ctx: build(ctx, lam=1e-3, integral=True, rate=RATE),
    fields=FIELDS,
    adaptive=True,
    tunables=(LAMBDA,),
)
registry.register(
    ADAPTIVE,
    ADAPTIVE_MEASURED,
    ADAPTIVE_MOMENTUM,
    ADAPTIVE_MOMENTUM_MEASURED,
    ADAPTIVE_MOMENTUM_ESSENTIAL,
    ADAPTIVE_MOMENTUM_DENSE,
)

"""What `manipgen collide` compares unless told (a module of its own: the command line's parser reads
it without loading the dynamics)."""

# seed 001's observers with each source of qd, qdd (the Kalman filter's, the plant's exact, simulated
# IMUs'), and the adaptive observer's momentum form (qd only; issue #25) with the same three
DEFAULT_OBSERVERS = (
    "momentum",
    "adaptive",
    "direct",
    "adaptive_measured",
    "direct_measured",
    "adaptive_imu",
    "adaptive_imu_tip",
    "adaptive_momentum",
    "adaptive_momentum_measured",
    "adaptive_momentum_imu",
)

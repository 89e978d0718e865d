"""Joint states written as a ROS 1 bag (``.bag``) with the maintained ``rosbags`` library (no ROS
installation): ``manipgen record --hostile --out run.bag`` (host_tools.data.hostile), so that the bag
route of import-log, identify and thresholds (host_tools.data.ros_bags) can be tried on a log whose
every defect is known.

One ``sensor_msgs/msg/JointState`` per row on one topic (default ``/joint_states``): header stamp =
the row's stamp, received at that stamp; ``name`` the description's joint names, ``position``,
``velocity`` and ``effort`` the row's values. Stamps are made absolute from ``EPOCH`` (a recording's
clock is an epoch's; the reader makes them relative to the first).
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from host_tools.data.ros_bags import JOINT_STATE

EPOCH = 1_700_000_000  # s: the first stamp's second (2023-11-14), as a real recording's clock reads


def joint_states_bag(
    stamps: np.ndarray,
    names: list[str],
    position: np.ndarray,
    velocity: np.ndarray,
    effort: np.ndarray,
    topic: str = "/joint_states",
) -> bytes:
    """Rows (stamps in s from the run's start; values (K, n)) as JointState messages: the bytes of a
    ROS 1 bag (written by rosbags in a temporary folder; the caller writes them where asked, with
    codegen.emit.files' rules for overwriting)."""
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC)
    types: dict[str, Any] = dict(store.types)
    header_fields = {f.name for f in dataclasses.fields(types["std_msgs/msg/Header"])}
    ns = EPOCH * 10**9 + np.round(np.asarray(stamps, float) * 1e9).astype(np.int64)
    with tempfile.TemporaryDirectory(prefix="manipgen_bag_") as tmp:
        path = Path(tmp) / "run.bag"
        with Writer(path) as writer:
            connection = writer.add_connection(topic, JOINT_STATE, typestore=store)
            for k, stamp in enumerate(ns.tolist()):
                header = types["std_msgs/msg/Header"](
                    stamp=types["builtin_interfaces/msg/Time"](sec=stamp // 10**9, nanosec=stamp % 10**9),
                    frame_id="",
                    **({"seq": k} if "seq" in header_fields else {}),
                )
                msg = types[JOINT_STATE](
                    header=header,
                    name=list(names),
                    position=np.asarray(position[k], float),
                    velocity=np.asarray(velocity[k], float),
                    effort=np.asarray(effort[k], float),
                )
                writer.write(connection, stamp, store.serialize_ros1(msg, JOINT_STATE))
        return path.read_bytes()
